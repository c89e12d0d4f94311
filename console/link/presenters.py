"""What a Link screen shows, computed from the flow: masked destinations, accounts, amounts, options.

Masking happens here, before anything reaches a template, so a screen can never print a full
phone number, email, account number or SSN.
"""

from __future__ import annotations

from typing import Any

from console.extensions import db
from console.jobs.models import Job
from console.link import models as m
from console.link import sandbox_data
from console.link.flow import Flow
from console.link.outcomes import FULL
from console.world import services as world
from console.world.models import BENEFITS

METHOD_LABELS = {"sms": "Text message", "email": "Email", "totp": "Authenticator app"}


def mask_phone(phone: str) -> str:
    return f"(•••) •••-{phone[-4:]}" if phone else ""


def mask_email(email: str) -> str:
    local, _, domain = (email or "").partition("@")
    return f"{local[:1]}•••@{domain}" if domain else ""


def mask_account(number: str) -> str:
    return f"••••{(number or '')[-4:]}"


def dollars(cents: int | None) -> str:
    return f"${(cents or 0) / 100:,.2f}"


def allocation_text(allocation: dict[str, Any] | None) -> str:
    """How an allocation reads on screen, e.g. "$50.00 of each paycheck"."""
    if not allocation or allocation.get("type") == FULL:
        return "Your entire paycheck"
    if allocation["type"] == "amount":
        return f"{dollars(allocation['value'])} of each paycheck"
    return f"{allocation['value']}% of each paycheck"


def destination(flow: Flow, method: str) -> str:
    """Where a code for `method` goes, masked: the world person's own contacts, or sandbox stand-ins."""
    if method == "totp":
        return "your authenticator app"
    person = world.get_person(flow.row.person_id) if flow.row.person_id else None
    phone = person.phone if person else sandbox_data.SANDBOX_PHONE
    email = person.email if person else sandbox_data.SANDBOX_EMAIL
    return mask_phone(phone) if method == "sms" else mask_email(email)


def targets(flow: Flow) -> list[dict[str, Any]]:
    return [
        {
            "index": i,
            "type": t["type"],
            "masked": mask_account(t["account_number"]),
            "label": f"{t['type'].title()} {mask_account(t['account_number'])}",
        }
        for i, t in enumerate(flow.token.targets)
    ]


def search_results(flow: Flow, q: str) -> list[dict[str, Any]]:
    """Employers, payroll platforms and benefits programs for the search screen."""
    hits = world.search(q, limit=12)
    return [
        {
            "kind": hit.kind,
            "id": str(hit.id),
            "name": hit.name,
            "detail": hit.platform.name
            if hit.kind == "employer"
            else ("Federal benefits" if hit.platform.type == BENEFITS else "Payroll provider"),
            "color": hit.platform.brand_color,
        }
        for hit in hits
    ]


TEMPLATES = {m.DONE: "success", m.FAILED: "error", m.EXPIRED: "error", m.EXITED: "exit", "invalid": "error"}
TITLES = {
    m.INTRO: "Welcome",
    m.MATCHING_WAIT: "Finding your account",
    m.MATCHES: "Choose your account",
    m.MFA_METHOD: "Verify it's you",
    m.SEARCH: "Search",
    m.LOGIN: "Log in",
    m.MFA: "Verification code",
    m.FEDERAL: "Verify your identity",
    m.ALLOCATION: "Allocation",
    m.CONFIRM: "Confirm",
    m.DONE: "Done",
    m.EXITED: "Closed",
}
ERROR_TITLES = {
    "INVALID_LINK_TOKEN": "This link is not valid",
    "INVALID_ORIGIN": "Link cannot talk to this page",
    "LINK_TOKEN_EXPIRED": "This link has expired",
    "ACCOUNT_LOCKED": "Your account is locked",
    "PLATFORM_NOT_SUPPORTED": "This provider can't be used here",
    "SWITCH_FAILED": "We couldn't update your direct deposit",
    "MFA_ATTEMPTS_EXCEEDED": "Too many incorrect codes",
    "ACCOUNT_NOT_FOUND": "Account not found",
}


def base_context(state: str, mode: str) -> dict[str, Any]:
    """Every key a Link template may read, with empty defaults (templates run with StrictUndefined)."""
    return {
        "state": state,
        "template": TEMPLATES.get(state, state),
        "title": TITLES.get(state, "Link"),
        "mode": mode,
        "org_name": "",
        "link_token_id": "",
        "route": "",
        "platform": None,
        "employer": None,
        "error_code": None,
        "error_message": None,
        "targets": [],
        "target": None,
        "preset": None,
        "preset_text": "",
        "no_splitting": False,
        "can_back": False,
        "can_leave_platform": False,
        "sandbox": mode == "sandbox",
        "mfa_code_hint": sandbox_data.MFA_CODE,
        "q": "",
        "results": [],
        "no_match": False,
        "matches": [],
        "methods": [],
        "method_label": "",
        "destination": "",
        "allocation_text": "",
        "federal": False,
        "ssn_last_four": None,
        "outcome": None,
    }


def problem_context(code: str, message: str, mode: str) -> dict[str, Any]:
    ctx = base_context("invalid", mode)
    ctx.update(error_code=code, error_message=message, title=ERROR_TITLES.get(code, "Something went wrong"))
    return ctx


def screen(flow: Flow, *, q: str = "") -> dict[str, Any]:
    """The template context of the flow's current screen."""
    row, token = flow.row, flow.token
    platform = flow.platform
    ctx = base_context(row.state, token.mode)
    ctx.update(
        org_name=token.org_name,
        link_token_id=str(token.id),
        route=row.route,
        platform=platform,
        employer=world.get_employer(row.employer_id) if row.employer_id else None,
        error_code=row.error_code,
        error_message=row.error_message,
        targets=targets(flow),
        preset=token.preconfigured_allocation,
        preset_text=allocation_text(token.preconfigured_allocation) if token.preconfigured_allocation else "",
        no_splitting=token.disable_direct_deposit_splitting,
        can_back=not row.finished and flow.back_target(row.state) is not None,
        can_leave_platform=row.route == m.DIRECT and row.state in (m.LOGIN, m.FEDERAL),
    )
    if row.state in (m.FAILED, m.EXPIRED):
        ctx["title"] = ERROR_TITLES.get(row.error_code or "", "Something went wrong")
    if row.state == m.SEARCH:
        ctx.update(q=q, results=search_results(flow, q))
        ctx["no_match"] = row.route == m.MATCHING and row.matched_platforms == []
    if row.state == m.MATCHES:
        ctx["matches"] = row.matched_platforms or []
    if row.state == m.MFA_METHOD:
        ctx["methods"] = [
            {"value": x, "label": METHOD_LABELS[x], "destination": destination(flow, x)}
            for x in flow.mfa_options()
        ]
    if row.state == m.MFA and row.mfa_method:
        ctx["method_label"] = METHOD_LABELS.get(row.mfa_method, row.mfa_method)
        ctx["destination"] = destination(flow, row.mfa_method)
    chosen = row.allocation or None
    ctx["allocation_text"] = allocation_text(chosen)
    ctx["target"] = ctx["targets"][(chosen or {}).get("target_index") or 0] if ctx["targets"] else None
    ctx["federal"] = platform is not None and platform.type == BENEFITS
    ctx["ssn_last_four"] = row.federal_ssn_last_four
    if row.job_id:
        job = db.session.get(Job, row.job_id)
        ctx["outcome"] = job.outcome if job else None
    return ctx
