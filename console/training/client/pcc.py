"""pcc.py: the training room's single-file client for this service (Python 3.9+, standard library only).

Downloaded from the server (`curl -O <server>/training/pcc.py`), it needs no install and no checkout:

    python3 pcc.py listen --key sk_sandbox_… --forward-to http://localhost:8000/hooks
    python3 pcc.py trigger pending_then_success --key sk_sandbox_…
    python3 pcc.py trigger --list

and, imported beside your receiver, checks a delivery's signature:

    from pcc import WebhookVerificationError, verify

`listen` registers a relayed webhook for your sandbox key and forwards each delivery, signed exactly as a
direct one, to your local endpoint (the server need not reach your laptop); `trigger` runs a sandbox scenario
headlessly (a Link token created by you, then completed), as `console listen` and `console trigger` do. The
key can come from the environment instead (CONSOLE_API_SECRET), which keeps it out of your shell history.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import signal
import sys
import time
import urllib.error
import urllib.request
import uuid
from datetime import datetime
from urllib.parse import urlsplit

# Filled in by the server that serves this file: its public root, and the sandbox scenarios by key in the
# server's order, each with its group, description, aliases, token body and completion (console.trigger.table).
DEFAULT_API = ""
SCENARIOS: dict = {}

VERSION = "2023-11-22"
TOLERANCE_SECONDS = 300
IDLE_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 30.0
EXCERPT_BYTES = 1024
REPORT_TRIES = 3


class WebhookVerificationError(Exception):
    """A delivery that is not signed with your key, or is too old or too new, or not a JSON object."""


def verify(secret, headers, raw_body, tolerance=TOLERANCE_SECONDS, now=None):
    """Check a delivery's `x-service-signature` (v2=<hex HMAC-SHA256 of "v2:<timestamp>:<raw body>">) and
    `x-timestamp`; return the parsed body. `headers`: any mapping (Flask's request.headers will do)."""
    if not secret:
        raise WebhookVerificationError("no signing secret configured")
    if isinstance(raw_body, str):
        raw_body = raw_body.encode("utf-8")
    found = {str(k).lower(): v for k, v in headers.items()}
    signature, stamp = found.get("x-service-signature"), (found.get("x-timestamp") or "").strip()
    if not signature:
        raise WebhookVerificationError("missing x-service-signature header")
    if not stamp.isdigit() or len(stamp) > 12:
        raise WebhookVerificationError("missing or invalid x-timestamp header")
    now = time.time() if now is None else now
    if now - int(stamp) > tolerance:
        raise WebhookVerificationError("message timestamp too old")
    if int(stamp) - now > tolerance:
        raise WebhookVerificationError("message timestamp is in the future")
    content = b"v2:" + stamp.encode() + b":" + raw_body
    expected = hmac.new(secret.encode("utf-8"), content, hashlib.sha256).hexdigest().encode()
    matched = False
    for item in signature.split():
        name, _, value = item.partition("=")
        if name == "v2":
            matched |= hmac.compare_digest(expected, value.lower().encode())
    if not matched:
        raise WebhookVerificationError("no matching signature")
    try:
        body = json.loads(raw_body)
    except RecursionError as exc:  # a signed body of thousands of nested brackets: refused, not a crash
        raise WebhookVerificationError("body is JSON nested too deeply") from exc
    except ValueError as exc:
        raise WebhookVerificationError("body is not valid JSON") from exc
    if not isinstance(body, dict):
        raise WebhookVerificationError("body is not a JSON object")
    return body


class Problem(Exception):
    """A problem retrying cannot fix (a wrong key, a URL that is not the service)."""


class Unavailable(Exception):
    """The service did not answer usefully this time (down, restarting, rate limited)."""

    def __init__(self, text, wait=None):
        super().__init__(text)
        self.wait = wait  # seconds the service asked to wait (429 Retry-After), if it said


def report(base, key, webhook_id, attempt_id, result):
    """Record a forwarded delivery's result, retrying a busy service a few times; a note for the log line.
    Unreported, the lease runs out and the delivery is handed out again (at least once)."""
    path = f"/sandbox/listen/{webhook_id}/deliveries/{attempt_id}/result"
    for attempt in range(REPORT_TRIES):
        try:
            status, parsed = call(base, key, path, result)
        except Unavailable as exc:
            time.sleep(exc.wait or 2**attempt)
            continue
        return "" if status == 200 else f"  (not recorded: {message(parsed, status)})"
    return "  (not recorded: service unavailable; it will be delivered again)"


# The other modes' key prefixes (console.keys.secrets.PREFIXES; this file imports nothing of the project).
OTHER_MODES_KEYS = {"development": "sk_dev_", "production": "sk_live_"}


def sandbox_base(api):
    """The sandbox API base from what you gave: the server's root, `.../sandbox` or `.../sandbox/v1`.
    Another mode's base URL (`…/development`, or the production `…/v1` the server's banner lists too) is
    refused by name before any call: taken as a root, it became `…/development/sandbox/v1`, a path you never
    wrote, which the service answered with a 404 (as `console listen` does: console/listener.py)."""
    base = api.rstrip("/")
    path = urlsplit(base).path
    other, root = None, base
    if path.endswith(("/development", "/development/v1")):
        other, root = "development", base[: base.rfind("/development")]
    elif path == "/v1":
        other, root = "production", base[: -len("/v1")]
    if other:
        raise Problem(
            f"{api} is the {other} API's base URL; pcc.py listen and pcc.py trigger use the sandbox: give "
            f"the server's root ({root}) or its sandbox base URL ({root}/sandbox), and a sandbox key."
        )
    if base.endswith("/v1"):
        return base
    if base.endswith("/sandbox"):
        return base + "/v1"
    return base + "/sandbox/v1"


def check_sandbox_key(key):
    """Refuse another mode's key by name before any call: the service's WRONG_MODE 401 says to call the key's
    own base URL, which these commands cannot."""
    other = next((mode for mode, prefix in OTHER_MODES_KEYS.items() if key.startswith(prefix)), None)
    if other:
        raise Problem(
            f"--key is a {other} key ({OTHER_MODES_KEYS[other]}…); pcc.py listen and pcc.py trigger use the "
            "sandbox: give a sandbox key (sk_sandbox_…, from the console's API keys page)."
        )


def call(base, key, path, body=None):
    """POST (or GET without a body) to the sandbox API: (status, parsed JSON)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method="POST" if data is not None else "GET")
    request.add_header("x-api-secret", key)
    request.add_header("Service-Version", VERSION)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    # Redirects are not followed: urllib would send the x-api-secret header on to the redirect's host.
    opener = urllib.request.build_opener(NoRedirect())
    try:
        with opener.open(request, timeout=15) as answer:
            status, raw, kind = answer.status, answer.read(), answer.headers.get("Content-Type", "")
            retry_after = None
    except urllib.error.HTTPError as exc:
        status, raw, kind = exc.code, exc.read(), exc.headers.get("Content-Type", "")
        retry_after = exc.headers.get("Retry-After")
        if 300 <= status < 400:
            where = exc.headers.get("Location", "?")
            raise Problem(
                f"{base}{path} answered {status}, a redirect to {where}: the key is not sent on to it; "
                "give --api as this service's own URL"
            ) from None
    except (urllib.error.URLError, OSError) as exc:
        raise Unavailable(f"cannot connect to {base}: {getattr(exc, 'reason', exc)}") from None
    if status == 429:
        wait = (
            min(float(retry_after or 1), 5.0)
            if str(retry_after or "1").replace(".", "", 1).isdigit()
            else 1.0
        )
        raise Unavailable(f"rate limited; retry after {wait:g} s", wait)
    if status >= 500:
        raise Unavailable(f"the service answered {status}")
    if not kind.startswith("application/json"):
        raise Problem(f"{base}{path} answered {status} without JSON: is --api this service's URL?")
    parsed = json.loads(raw)
    if status in (401, 403):
        raise Problem(f"the service refused the key: {message(parsed, status)}")
    return status, parsed


def message(parsed, status):
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return f"{error.get('code')}: {error.get('message')}" if isinstance(error, dict) else f"HTTP {status}"


def forward(url, item):
    """Post one relayed delivery to the local endpoint as received: the result to report."""
    started = time.perf_counter()
    request = urllib.request.Request(
        url, data=item["body"].encode("utf-8"), method=item["method"], headers=item["headers"]
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect())
    try:
        with opener.open(request, timeout=float(item.get("timeout_seconds") or 15)) as answer:
            status, raw = answer.status, answer.read(EXCERPT_BYTES)
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read(EXCERPT_BYTES)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        kind = "timeout" if "timed out" in str(reason) else "connection failed"
        return {"latency_ms": ms(started), "error": f"{kind}: {reason} ({urlsplit(url).netloc})"}
    result = {"latency_ms": ms(started), "status_code": status}
    if raw:
        result["response_excerpt"] = raw.decode("utf-8", errors="replace")
    return result


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # a direct delivery does not follow redirects either
        return None


def ms(started):
    return int((time.perf_counter() - started) * 1000)


def now():
    return datetime.now().strftime("%H:%M:%S")


def listen(api, key, forward_to, events=None, version=None):
    check_sandbox_key(key)
    base, webhook, backoff = sandbox_base(api), None, 1.0
    while True:
        try:
            if webhook is None:
                body = {}
                if events:
                    body["enabled_events"] = events
                if version:
                    body["version"] = version
                status, parsed = call(base, key, "/sandbox/listen", body)
                if status != 200:
                    raise Problem(f"could not open a listener: {message(parsed, status)}")
                webhook = parsed["data"]
                print(
                    f"Ready: relaying sandbox webhook {webhook['id']} ({', '.join(webhook['enabled_events'])}; "
                    f"version {webhook['version']}) to {forward_to}. Ctrl-C stops.",
                    flush=True,
                )
            status, parsed = call(base, key, f"/sandbox/listen/{webhook['id']}/poll", {})
            if status == 404:
                webhook = None
                continue
            if status != 200:
                raise Problem(f"polling failed: {message(parsed, status)}")
            items = parsed["data"]["requests"]
            for item in items:
                result = forward(forward_to, item)
                note = report(base, key, webhook["id"], item["attempt_id"], result)
                shown = result.get("status_code") or result.get("error")
                kind = item.get("event_type") or item.get("kind")
                line = f"{now()}  {kind:<30} {item.get('event_id') or '-':<36}  {shown}  {result['latency_ms']} ms"
                print(line + note, flush=True)
            backoff = 1.0
            if not items:
                time.sleep(IDLE_SECONDS)
        except Unavailable as exc:
            wait = exc.wait or backoff
            print(f"{now()}  service unavailable ({exc}); retrying in {wait:g} s", flush=True)
            time.sleep(wait)
            backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)


def listing(scenarios):
    """Lines of `trigger --list`: each scenario by group, in the table's order, with the other names it answers
    to. `console trigger --list` prints these same lines (console/trigger.py calls this function)."""
    lines, group = [], None
    for key, scenario in scenarios.items():
        if scenario["group"] != group:
            group = scenario["group"]
            lines.append(f"{group}:")
        also = f" (also: {', '.join(scenario['aliases'])})" if scenario["aliases"] else ""
        lines.append(f"  {key:<24} {scenario['description']}{also}")
    return lines


def scenario_key(name):
    """The key of the scenario `name` names (its key or one of its aliases), or None."""
    if name in SCENARIOS:
        return name
    return next((key for key, scenario in SCENARIOS.items() if name in scenario["aliases"]), None)


def trigger(api, key, name):
    check_sandbox_key(key)
    base = sandbox_base(api)
    found = scenario_key(name)
    if found is None:
        raise Problem(f"unknown scenario {name!r}; `python3 pcc.py trigger --list` shows them")
    scenario = SCENARIOS[found]
    body = dict(scenario["token_body"], end_user_id=f"user_{uuid.uuid4().hex[:8]}")
    status, parsed = call(base, key, "/link_tokens", body)
    if status != 200:
        raise Problem(f"creating the Link token failed: {message(parsed, status)}")
    token = parsed["data"]["id"]
    status, parsed = call(base, key, f"/sandbox/link_tokens/{token}/complete", scenario["completion"])
    name = found
    if status != 200:
        return f"{name}: Link token {token} stopped with {message(parsed, status)}"
    data = parsed["data"]
    return (
        f"{name}: Link token {token}, job {data['job_id']}, outcome {data['outcome']} (flow {data['state']})"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(prog="pcc.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("listen", "relay your sandbox deliveries to a local endpoint"),
        ("trigger", "run a sandbox scenario"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument(
            "--api", default=os.environ.get("CONSOLE_API") or DEFAULT_API, help="the server's root URL"
        )
        command.add_argument(
            "--key", default=os.environ.get("CONSOLE_API_SECRET"), help="your sandbox API secret"
        )
    commands.choices["listen"].add_argument(
        "--forward-to", required=True, help="e.g. http://localhost:8000/hooks"
    )
    commands.choices["listen"].add_argument("--events", help="comma-separated event types; default: all")
    commands.choices["listen"].add_argument("--version", help=f"payload version; default: {VERSION}")
    commands.choices["trigger"].add_argument("scenario", nargs="?")
    commands.choices["trigger"].add_argument("--list", action="store_true", help="list the scenarios")
    args = parser.parse_args(argv)
    if args.command == "trigger" and args.list:
        if not SCENARIOS:  # this copy did not come from a server, which writes the scenarios in
            print("No scenarios in this copy: download pcc.py from the server (<server>/training/pcc.py).")
        for line in listing(SCENARIOS):
            print(line)
        return 0
    if not args.api or not args.key:
        parser.error("give --api and --key (or set CONSOLE_API and CONSOLE_API_SECRET)")
    # Ctrl-C and SIGTERM stop it cleanly, even when started where SIGINT is ignored (`cmd &` in a script,
    # where Python would not install its own handler).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        if args.command == "listen":
            events = [e.strip() for e in (args.events or "").split(",") if e.strip()] or None
            listen(args.api, args.key, args.forward_to, events, args.version)
        else:
            if not args.scenario:
                parser.error("name a scenario (--list shows them)")
            print(trigger(args.api, args.key, args.scenario))
    except KeyboardInterrupt:
        print("Stopped.")
    except (Problem, Unavailable) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
