"""Copy-paste snippets for a trainee's exercises: curl, Python and Node, filled with their own key, ids and
the class's root URL (console.training.room), plus the single-file client they download from the server.

The secret is put only into the snippets of its own workspace's training page (rendered for that browser,
never stored, never logged); every other page gets `$API_SECRET` in its place.
"""

from __future__ import annotations

import json
import pprint
import re
from dataclasses import dataclass
from pathlib import Path

from console.training.exercises import WEBHOOK_VERSION

CLIENT = Path(__file__).resolve().parent / "client" / "pcc.py"
TOKEN_BODY = {
    "org_name": "Acme",
    "end_user_id": "user-1",
    "required_jobs": ["direct_deposit_switch"],
    "allocation": {
        "targets": [{"type": "checking", "routing_number": "011000015", "account_number": "1234567890"}]
    },
}
EVENTS = ["account.added", "direct_deposit_switch.added"]
# POST /v1/webhooks requires every field (url, status, enabled_events, version): a body without one is a 400.
WEBHOOK_BODY = {
    "url": "http://<your laptop>:8000/hooks",
    "status": "active",
    "enabled_events": EVENTS,
    "version": WEBHOOK_VERSION,
}


@dataclass(frozen=True)
class Snippet:
    label: str
    language: str  # shell, python, javascript, html
    text: str


@dataclass(frozen=True)
class Facts:
    """What fills the blanks: the trainee's own ids, when they exist yet."""

    secret: str | None  # the trainee's sandbox secret; None: `$API_SECRET`
    held_link_token_id: str | None = None  # exercise 5's token
    webhook_id: str | None = None  # their own (non-inbox) webhook, newest first


def client_source(root: str, scenarios: dict[str, dict]) -> str:
    """pcc.py as served: this server's root and the sandbox scenarios (`trigger`) written into it."""
    source = CLIENT.read_text()
    source = source.replace('DEFAULT_API = ""', f"DEFAULT_API = {json.dumps(root)}", 1)
    table = pprint.pformat(scenarios, width=110, sort_dicts=False)  # a Python literal (True, None)
    return source.replace("SCENARIOS: dict = {}", f"SCENARIOS: dict = {table}", 1)


def _sh(value: str) -> str:
    """A single-quoted shell word."""
    return "'" + value.replace("'", "'\"'\"'") + "'"


def for_exercises(root: str, facts: Facts) -> dict[str, list[Snippet]]:
    """Exercise key -> its snippets, in the order a trainee uses them."""
    api = f"{root}/sandbox/v1"
    key = facts.secret or "$API_SECRET"
    shell_key = _sh(key) if facts.secret else '"$API_SECRET"'
    held = facts.held_link_token_id or "<the held Link token id>"
    hook = facts.webhook_id or "<your webhook id>"
    body = json.dumps(TOKEN_BODY)
    headers = f'-H "x-api-secret: {key}" -H "Service-Version: {WEBHOOK_VERSION}"'
    if not facts.secret:
        headers = f'-H "x-api-secret: $API_SECRET" -H "Service-Version: {WEBHOOK_VERSION}"'
    py_head = (
        "import requests\n\n"
        f'API = "{api}"\n'
        f'HEADERS = {{"x-api-secret": "{key}", "Service-Version": "{WEBHOOK_VERSION}"}}\n'
    )
    node_head = f'const API = "{api}";\nconst HEADERS = {{"x-api-secret": "{key}", "Service-Version": "{WEBHOOK_VERSION}", "Content-Type": "application/json"}};\n'
    get_client = f"curl -O {root}/training/pcc.py"
    return {
        "link_token": [
            Snippet(
                "curl",
                "shell",
                f"curl -s {api}/link_tokens \\\n  {headers} \\\n  -H \"Content-Type: application/json\" \\\n  -d '{body}'",
            ),
            Snippet(
                "Python (pip install requests)",
                "python",
                py_head
                + f"\nbody = {_py(TOKEN_BODY)}\n"
                + 'answer = requests.post(f"{API}/link_tokens", json=body, headers=HEADERS, timeout=10)\n'
                + "answer.raise_for_status()\n"
                + 'print(answer.json()["data"])  # id (for the jobs), token (for Link.open)',
            ),
            Snippet(
                "Node 18+ (save as token.mjs, run node token.mjs)",
                "javascript",
                node_head
                + f"const body = {body};\n"
                + 'const answer = await fetch(`${API}/link_tokens`, {method: "POST", headers: HEADERS, body: JSON.stringify(body)});\n'
                + "console.log((await answer.json()).data);  // id (for the jobs), token (for Link.open)",
            ),
        ],
        "link_sdk": [
            Snippet(
                "index.html (paste the token your backend created in exercise 1)",
                "html",
                "<!doctype html>\n"
                '<button id="connect">Connect payroll</button>\n'
                f'<script src="{root}/static/link.js"></script>\n'
                "<script>\n"
                '  const linkToken = "PASTE_THE_TOKEN_HERE";  // "token" of POST /v1/link_tokens, not its id\n'
                '  document.getElementById("connect").onclick = () => Link.open({\n'
                "    linkToken,\n"
                '    onSuccess: (result) => console.log("success", result),\n'
                '    onExit: () => console.log("closed"),\n'
                "  });\n"
                "</script>",
            ),
            Snippet(
                "Serve it from your laptop, then open http://localhost:8080 (user_good / pass_good)",
                "shell",
                # Not 8000: that is the receiver's port from exercise 3 on, and a file server left running
                # there answers every delivery with 501 (or keeps the receiver from starting).
                "python3 -m http.server 8080    # or: npx --yes http-server -p 8080",
            ),
        ],
        "own_endpoint": [
            Snippet(
                "1. Get the listener from this server (one file, Python 3.9+, no install)",
                "shell",
                get_client,
            ),
            Snippet(
                "2. Relay your deliveries to your endpoint (keep it running)",
                "shell",
                f"python3 pcc.py listen --api {root} --key {shell_key} \\\n  --forward-to http://localhost:8000/hooks",
            ),
            Snippet(
                "Or with this project installed (pip install <checkout>): the same, as `console listen`",
                "shell",
                f"console listen --api {root} --key {shell_key} --forward-to http://localhost:8000/hooks",
            ),
            Snippet(
                "Or register a URL the server reaches itself (the room's LAN, if the trainer allowed it)",
                "shell",
                f'curl -s {api}/webhooks \\\n  {headers} \\\n  -H "Content-Type: application/json" \\\n'
                f"  -d '{json.dumps(WEBHOOK_BODY)}'",
            ),
        ],
        "conformance": [
            Snippet(
                "Python receiver (receiver.py beside pcc.py; pip install flask; flask --app receiver run -p 8000)",
                "python",
                "from flask import Flask, request\n"
                "from pcc import WebhookVerificationError, verify  # or: from console.webhooks import …\n\n"
                f'SECRET = "{key}"\n'
                "app, seen = Flask(__name__), set()  # a table with a unique event_id in production\n\n\n"
                '@app.post("/hooks")\n'
                "def hooks():\n"
                "    try:\n"
                "        body = verify(SECRET, request.headers, request.get_data())  # the raw body\n"
                "    except WebhookVerificationError:\n"
                '        return "bad signature", 400\n'
                '    if body["event_id"] not in seen:  # the same event may arrive twice: answer 2xx again\n'
                '        seen.add(body["event_id"])\n'
                '        print(body["event"], body["payload"])\n'
                '    return "", 200',
            ),
            Snippet(
                "Node receiver (receiver.mjs; node receiver.mjs)",
                "javascript",
                'import http from "node:http";\nimport crypto from "node:crypto";\n\n'
                f'const SECRET = "{key}";\n'
                "const seen = new Set();\n\n"
                "function verify(headers, raw) {\n"
                '  const stamp = headers["x-timestamp"] || "";\n'
                "  if (!/^[0-9]{1,12}$/.test(stamp) || Math.abs(Date.now() / 1000 - Number(stamp)) > 300) return null;\n"
                '  const mac = crypto.createHmac("sha256", SECRET).update(`v2:${stamp}:`).update(raw).digest("hex");\n'
                '  const ok = (headers["x-service-signature"] || "").split(" ").some((item) => {\n'
                '    const [version, value = ""] = item.split("=");\n'
                '    return version === "v2" && value.length === mac.length &&\n'
                "      crypto.timingSafeEqual(Buffer.from(value.toLowerCase()), Buffer.from(mac));\n"
                "  });\n"
                "  if (!ok) return null;\n"
                '  try { const body = JSON.parse(raw); return body && typeof body === "object" && !Array.isArray(body) ? body : null; }\n'
                "  catch { return null; }\n"
                "}\n\n"
                "http.createServer((req, res) => {\n"
                "  const chunks = [];\n"
                '  req.on("data", (chunk) => chunks.push(chunk));\n'
                '  req.on("end", () => {\n'
                "    const body = verify(req.headers, Buffer.concat(chunks));\n"
                '    if (req.url !== "/hooks" || !body) { res.writeHead(400).end("bad signature"); return; }\n'
                "    if (!seen.has(body.event_id)) { seen.add(body.event_id); console.log(body.event, body.payload); }\n"
                "    res.writeHead(200).end();\n"
                "  });\n"
                "}).listen(8000);",
            ),
            Snippet(
                "Run the check (or the button on the Webhooks page), then read the report",
                "shell",
                f"curl -s -X POST {api}/sandbox/webhooks/{hook}/conformance {headers}\n"
                f"curl -s {api}/sandbox/webhooks/{hook}/conformance {headers}",
            ),
        ],
        "missed_webhook": [
            Snippet("curl", "shell", f'curl -s "{api}/jobs?link_token_id={held}" {headers}'),
            Snippet(
                "Python",
                "python",
                py_head
                + f'\nanswer = requests.get(f"{{API}}/jobs", params={{"link_token_id": "{held}"}}, headers=HEADERS, timeout=10)\n'
                + "answer.raise_for_status()\n"
                + 'for job in answer.json()["data"]:\n'
                + '    print(job["id"], job["outcome"])',
            ),
            Snippet(
                "Node 18+",
                "javascript",
                node_head
                + f"const answer = await fetch(`${{API}}/jobs?link_token_id={held}`, {{headers: HEADERS}});\n"
                + "for (const job of (await answer.json()).data) console.log(job.id, job.outcome);",
            ),
        ],
        "switch_outcomes": [
            Snippet(
                "A pending switch: run it, then move your workspace clock past its retry",
                "shell",
                f"python3 pcc.py trigger pending_then_success --api {root} --key {shell_key}\n"
                f"curl -s -X POST {api}/sandbox/clock/advance {headers} \\\n"
                f'  -H "Content-Type: application/json" -d \'{{"seconds": 90}}\'',
            ),
            Snippet(
                "A federal switch: run it, then move your clock one business day",
                "shell",
                f"python3 pcc.py trigger federal_sent --api {root} --key {shell_key}\n"
                f"curl -s -X POST {api}/sandbox/clock/advance {headers} \\\n"
                f'  -H "Content-Type: application/json" -d \'{{"business_days": 1}}\'',
            ),
        ],
    }


def _py(value) -> str:
    """A JSON value as Python source (true/false/null spelled the Python way)."""
    text = json.dumps(value)
    return re.sub(
        r"\b(true|false|null)\b", lambda m: {"true": "True", "false": "False", "null": "None"}[m[0]], text
    )
