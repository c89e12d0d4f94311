"""Rate limits on the console's creating requests: per client address, and joins per cohort.

Everything an anonymous visitor can create has a per-owner cap in its service (profiles per browser,
cohorts per trainer, trainees per cohort, keys per workspace and mode, webhooks per key); a bot that drops
its cookie between requests is a new owner each time, so the console also limits how fast one client
address may create:

- `CONSOLE_CREATES_PER_MINUTE` (default 60; 0: off): the POSTs that create something (a workspace, on
  the first action, Reset or a presenter restart; a presenter profile; a cohort; a join) per client
  address per minute. Beyond it the page says when to try again (429 `RATE_LIMIT_EXCEEDED`, `Retry-After`).
- `TRAINING_JOINS_PER_MINUTE` (default 30; 0: off): joins per cohort per minute, whoever sends them.
- `CONSOLE_PAGES_PER_SECOND` (default 50 on a server; 0: off): console requests of any kind (pages, their live polls,
  actions; not the API, static files, `/healthz` or the inbox) per client address per second. Beyond it a
  short 429 with `Retry-After`, answered before the page's turn is waited for or anything rendered: 40 clients
  loading pages as fast as they answered took most of both cores (`python -m bench.neighbours`).

The client address is the connection's peer, unless that peer is one of `TRUSTED_PROXIES` (comma-separated
addresses or CIDRs, empty by default): then it is the nearest address in `X-Forwarded-For` that is not a
trusted proxy. A header from anyone else is ignored, so a client cannot choose its own address.

Counted by the API's rate-limit machinery (console.api.ratelimit: a moving window, in the storage
`RATELIMIT_STORAGE_URI` names, shared by processes and, on Redis, by machines), in a table of its own.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from flask import Flask, current_app, request
from limits import RateLimitItemPerMinute, RateLimitItemPerSecond

from console.api.ratelimit import counters_for
from console.core.errors import RateLimited
from console.core.networks import IPNetwork, parse_networks

DEFAULT_CREATES_PER_MINUTE = 60
DEFAULT_JOINS_PER_MINUTE = 30
DEFAULT_PAGES_PER_SECOND = 0  # off unless configured; a server's environment default is 50 (console.config)
# The most either setting may be: each counter keeps one time per allowed request.
MAX_PER_MINUTE = 10_000


def parse_proxies(value: str | list | tuple | None) -> tuple[IPNetwork, ...]:
    """`TRUSTED_PROXIES`: comma-separated addresses or CIDRs; a malformed entry stops the start, named."""
    return parse_networks(
        value, "TRUSTED_PROXIES", "an address or network (write e.g. 127.0.0.1 or 10.0.0.0/8)"
    )


def _per_minute(app: Flask, name: str, default: int) -> int:
    value = int(app.config.get(name, default) or 0)
    if not 0 <= value <= MAX_PER_MINUTE:
        raise ValueError(f"{name} must be between 0 (off) and {MAX_PER_MINUTE:,}, not {value}")
    return value


@dataclass(frozen=True)
class Throttle:
    creates_per_minute: int
    joins_per_minute: int
    proxies: tuple[IPNetwork, ...]
    counters: object | None  # console.api.ratelimit counters; None when every limit is off
    pages_per_second: int = DEFAULT_PAGES_PER_SECOND

    def hit(self, amount: int, key: str, message: str) -> None:
        if not amount or self.counters is None:
            return
        verdict = self.counters.hit(RateLimitItemPerMinute(amount), key)
        if not verdict.allowed:
            wait = verdict.reset_after
            raise RateLimited(
                f"{message} Try again in {wait} second{'' if wait == 1 else 's'}.", retry_after=wait
            )


def init_app(app: Flask) -> None:
    """Read and check the settings (a malformed one stops the start) and open the counters."""
    creates = _per_minute(app, "CONSOLE_CREATES_PER_MINUTE", DEFAULT_CREATES_PER_MINUTE)
    joins = _per_minute(app, "TRAINING_JOINS_PER_MINUTE", DEFAULT_JOINS_PER_MINUTE)
    proxies = parse_proxies(app.config.get("TRUSTED_PROXIES"))
    pages = _per_minute(app, "CONSOLE_PAGES_PER_SECOND", DEFAULT_PAGES_PER_SECOND)
    capacity = max(creates, joins, pages)
    counters = (
        counters_for(app.config["RATELIMIT_STORAGE_URI"], capacity, table="console") if capacity else None
    )
    app.extensions["console_throttle"] = Throttle(creates, joins, proxies, counters, pages)


def page_wait() -> int | None:
    """One console request from this client address: None when allowed, else the seconds until it would be.

    Under `console run` the run slots' middleware counts it first, before the request waits for a turn
    (`page_rate`); then this does not count it again."""
    from console.runslots import RATE_CHECKED

    if request.environ.get(RATE_CHECKED):
        return None
    throttle = current_app.extensions.get("console_throttle")
    return page_rate(throttle)(request.environ, client_address()) if throttle is not None else None


def page_rate(throttle: Throttle | None):
    """The per-address page rate as a function of (environ, address): None, or the seconds to wait."""

    def refuse(_environ: dict, address: str) -> int | None:
        if throttle is None or not throttle.pages_per_second or throttle.counters is None:
            return None
        verdict = throttle.counters.hit(
            RateLimitItemPerSecond(throttle.pages_per_second), f"console-pages/{address}"
        )
        return None if verdict.allowed else max(1, int(verdict.reset_after))

    return refuse


def _throttle() -> Throttle:
    return current_app.extensions["console_throttle"]


def _trusted(address: str, proxies: tuple[IPNetwork, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def client_address() -> str:
    """Who sent this request: the peer, or behind `TRUSTED_PROXIES` the nearest untrusted forwarded address."""
    return address_of(
        request.remote_addr or "", request.headers.getlist("X-Forwarded-For"), _throttle().proxies
    )


def environ_address(proxies: tuple[IPNetwork, ...]):
    """`client_address` for a WSGI environ, before Flask has a request (the run slots' queue per address)."""

    def of(environ: dict) -> str:
        forwarded = environ.get("HTTP_X_FORWARDED_FOR")
        return address_of(environ.get("REMOTE_ADDR") or "", [forwarded] if forwarded else [], proxies)

    return of


def address_of(peer: str, forwarded_headers: list[str], proxies: tuple[IPNetwork, ...]) -> str:
    """The client an address limit counts: see `client_address`, an IPv6 client by its /64 (`owner_of`)."""
    if not proxies or not _trusted(peer, proxies):
        return owner_of(peer)
    forwarded = [part.strip() for header in forwarded_headers for part in header.split(",") if part.strip()]
    # Right to left: each trusted proxy appended the address it heard from; the first one not ours is the client.
    for address in reversed(forwarded):
        if not _trusted(address, proxies):
            return owner_of(address)
    return owner_of(forwarded[0] if forwarded else peer)


IPV6_OWNER_PREFIX = 64


def owner_of(address: str) -> str:
    """Who holds `address`, for counting: an IPv6 address stands for its /64, the block one host or home is given
    (each address in it counted on its own gave a client 2^64 fresh limits); an IPv4-mapped one for its IPv4."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, IPV6_OWNER_PREFIX), strict=False))
    return address


def check_address() -> None:
    """One creating request from this client address; RateLimited past CONSOLE_CREATES_PER_MINUTE."""
    throttle = _throttle()
    throttle.hit(
        throttle.creates_per_minute,
        f"console-address/{client_address()}",
        f"Too many new workspaces, profiles, classes or joins from your address: at most "
        f"{throttle.creates_per_minute} a minute.",
    )


def check_joins(cohort_id: object) -> None:
    """One join of this cohort; RateLimited past TRAINING_JOINS_PER_MINUTE."""
    throttle = _throttle()
    throttle.hit(
        throttle.joins_per_minute,
        f"cohort-join/{cohort_id}",
        f"This class is taking many joins at once (at most {throttle.joins_per_minute} a minute).",
    )
