"""The API reference page, from the served OpenAPI document, and its "try it" calls."""

from __future__ import annotations

from flask import abort, render_template, request

from console.core import jsontext
from console.core.errors import FieldError, ValidationFailed
from console.core.routes import Routes
from console.modes import MODES, SANDBOX
from console.web.reference import document as reference
from console.web.shared.apiclient import ApiClient
from console.web.shared.exchanges import view as exchange_view
from console.web.shared.workspace_session import console_key, ensure_workspace

routes = Routes()


@routes.get("/reference", endpoint="reference")
def reference_page():
    doc = reference.document()
    groups = reference.operations_by_tag(doc) if doc else []
    return render_template(
        "console/reference/reference.html",
        doc=doc,
        groups=groups,
        openapi_url=reference.OPENAPI_PATH,
        modes=MODES,
        code_spans=reference.code_spans,
    )


@routes.post("/reference/try")
def reference_try():
    """Call one documented operation with the workspace's key, through the console's ApiClient (so it
    is in the request log); the answer is the exchange, its secret masked."""
    doc = reference.document() or {}
    op = reference.find_operation(doc, request.form.get("method", ""), request.form.get("path", ""))
    if op is None:
        abort(404)
    mode = request.form.get("mode", SANDBOX)
    if mode not in MODES:  # the form offers only these: a tampered request gets the error page, saying why
        raise ValidationFailed([FieldError("mode", f"must be one of {', '.join(MODES)}")])
    path = reference.fill_path(op, {n: request.form.get(f"path.{n}", "") for n in op.path_params})
    if path is None:
        return render_template("console/reference/_try_result.html", message="Fill in every path parameter.")
    params = {n: request.form.get(f"query.{n}", "").strip() for n in op.query_params}
    body = None
    raw = request.form.get("body", "").strip()
    if op.has_body and raw:
        try:
            body = jsontext.loads(raw)
        except jsontext.TooDeep:  # valid JSON, so "not valid JSON" would send the person looking for a typo
            return render_template(
                "console/reference/_try_result.html",
                message=f"The body nests arrays and objects more than {jsontext.MAX_JSON_DEPTH} levels deep.",
            )
        except ValueError:
            return render_template(
                "console/reference/_try_result.html", message="The body is not valid JSON."
            )
    workspace = ensure_workspace()
    key = console_key(workspace, mode)
    if key is None:  # sent anyway, it would only show a 401 without saying why
        return render_template(
            "console/reference/_try_result.html",
            message=f"This workspace has no active {mode} key, so the API would refuse the call (401).",
            missing_key=True,
        )
    row = ApiClient(workspace.id, mode, key).call(op.method, path, body=body, params=params, step="reference")
    return render_template(
        "console/reference/_try_result.html", message=None, exchange=exchange_view(row, key)
    )
