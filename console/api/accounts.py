"""GET /v1/accounts, /v1/accounts/{id}, and an account's employment and income."""

from __future__ import annotations

import uuid

from flask import g, jsonify, request

from console.accounts import services
from console.accounts.models import Account
from console.api.pagination import paginate
from console.core.errors import FieldError, ValidationFailed
from console.core.routes import Routes

routes = Routes()


def _filters() -> dict:
    errors, filters = [], {}
    end_user_id = request.args.get("end_user_id")
    if end_user_id is not None:
        if not end_user_id or len(end_user_id) > 255:
            errors.append(FieldError("end_user_id", "must be 1 to 255 characters"))
        filters["end_user_id"] = end_user_id
    link_token_id = request.args.get("link_token_id")
    if link_token_id is not None:
        try:
            filters["link_token_id"] = uuid.UUID(link_token_id)
        except ValueError:
            errors.append(FieldError("link_token_id", "must be a UUID"))
    if errors:
        raise ValidationFailed(errors)
    return filters


@routes.get("/accounts")
def list_accounts():
    """Accounts of this workspace and mode, newest first; filter by `end_user_id` or `link_token_id`."""
    query = services.accounts_query(g.workspace.id, g.api_mode, **_filters())
    return jsonify(
        paginate(query, order_by=[Account.created_at, Account.id], serialize=services.serialize_account)
    )


@routes.get("/accounts/<account_id>")
def get_account(account_id: str):
    account = services.get_account(g.workspace.id, g.api_mode, account_id)
    return jsonify({"data": services.serialize_account(account)})


@routes.get("/accounts/<account_id>/employment")
def get_account_employment(account_id: str):
    account = services.get_account(g.workspace.id, g.api_mode, account_id)
    return jsonify({"data": services.get_employment(account)})


@routes.get("/accounts/<account_id>/income")
def get_account_income(account_id: str):
    account = services.get_account(g.workspace.id, g.api_mode, account_id)
    return jsonify({"data": services.get_income(account)})
