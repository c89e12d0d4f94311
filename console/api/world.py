"""Platforms, employers and the combined search Link uses (the simulated world, read-only)."""

from __future__ import annotations

from flask import jsonify, request

from console.api.pagination import (
    TEXT_TAG,
    UUID_TAG,
    decode_list_cursor,
    encode_list_cursor,
    filtered_list_name,
    page_limit,
    paginate,
)
from console.core.errors import FieldError, NotFound, ValidationFailed, shown
from console.core.routes import Routes
from console.link_tokens.validation import JOB_NAMES
from console.world import services as world
from console.world.models import BENEFITS, PAYROLL, Employer, Platform

routes = Routes()

PLATFORM_TYPES = (PAYROLL, BENEFITS)
SEARCH_LIST = "search"  # the name its cursors carry (the other lists' are their tables')


def platform_json(platform: Platform) -> dict:
    return {
        "id": str(platform.id),
        "name": platform.name,
        "type": platform.type,
        "partner": platform.is_partner,
        "supported_jobs": list(platform.supported_jobs),
        "amount_supported": platform.supports_amounts,
        "mfa_methods": list(platform.mfa_methods),
        "login_hint": platform.login_hint,
    }


def employer_json(employer: Employer) -> dict:
    return {
        "id": str(employer.id),
        "name": employer.name,
        "platform_id": str(employer.platform_id),
        "platform_name": employer.platform.name,
        "industry": employer.industry,
        "city": employer.city,
        "state": employer.state,
    }


def _bool_arg(name: str, errors: list[FieldError]) -> bool | None:
    value = request.args.get(name)
    if value is None:
        return None
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    errors.append(FieldError(name, "must be true or false"))
    return None


def _jobs_arg(errors: list[FieldError]) -> list[str] | None:
    """`supported_jobs` as a comma-separated list (or repeated parameter) of job names."""
    raw = [part for value in request.args.getlist("supported_jobs") for part in value.split(",") if part]
    unknown = [job for job in raw if job not in JOB_NAMES]
    if unknown:
        errors.append(
            FieldError("supported_jobs", f"unknown job {unknown[0]!r}; known: {', '.join(JOB_NAMES)}")
        )
    return raw or None


@routes.get("/platforms")
def list_platforms():
    errors: list[FieldError] = []
    kind = request.args.get("type")
    if kind is not None and kind not in PLATFORM_TYPES:
        errors.append(FieldError("type", f"must be one of {', '.join(PLATFORM_TYPES)}"))
    jobs = _jobs_arg(errors)
    amounts = _bool_arg("amount_supported", errors)
    if errors:
        raise ValidationFailed(errors)
    query = world.list_platforms(
        q=request.args.get("q"), type=kind, supported_jobs=jobs, amount_supported=amounts
    )
    return jsonify(
        paginate(query, order_by=[Platform.name, Platform.id], serialize=platform_json, descending=False)
    )


@routes.get("/platforms/<platform_id>")
def get_platform(platform_id: str):
    platform = world.get_platform(platform_id)
    if platform is None:
        raise NotFound(f"No platform with id {shown(platform_id)}.")
    return jsonify({"data": platform_json(platform)})


@routes.get("/employers")
def list_employers():
    query = world.list_employers(q=request.args.get("q"))
    return jsonify(
        paginate(query, order_by=[Employer.name, Employer.id], serialize=employer_json, descending=False)
    )


@routes.get("/employers/<employer_id>")
def get_employer(employer_id: str):
    employer = world.get_employer(employer_id)
    if employer is None:
        raise NotFound(f"No employer with id {shown(employer_id)}.")
    return jsonify({"data": employer_json(employer)})


@routes.get("/search")
def search():
    """Employers and platforms together, best matches first (what Link's search screen shows)."""
    errors: list[FieldError] = []
    jobs = _jobs_arg(errors)
    limit = page_limit()
    cursor = request.args.get("cursor")
    after = (
        decode_list_cursor(cursor, filtered_list_name(SEARCH_LIST), (TEXT_TAG, UUID_TAG))
        if cursor is not None
        else None
    )
    if errors:
        raise ValidationFailed(errors)
    try:
        hits, more = world.search_page(
            request.args.get("q"), limit=limit, after=tuple(after) if after else None, required_jobs=jobs
        )
    except world.NotInSearch:
        raise ValidationFailed([FieldError("cursor", "is not a cursor this list returned")]) from None
    data = [
        {
            "type": hit.kind,
            "id": str(hit.id),
            "name": hit.name,
            "platform_id": str(hit.platform.id),
            "platform_name": hit.platform.name,
            "platform_type": hit.platform.type,
        }
        for hit in hits
    ]
    # Paginated like every collection (it answered the best `limit` hits with next_cursor null, as if no more).
    next_cursor = (
        encode_list_cursor(filtered_list_name(SEARCH_LIST), [hits[-1].kind, hits[-1].id])
        if more and hits
        else None
    )
    return jsonify({"meta": {"count": len(data), "next_cursor": next_cursor}, "data": data})
