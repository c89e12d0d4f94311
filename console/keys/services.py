"""Creating, authenticating, rolling and revoking API keys."""

from __future__ import annotations

import functools
import hmac
import uuid
from dataclasses import dataclass
from datetime import timedelta

from flask import current_app
from sqlalchemy import Select, bindparam, func, inspect, select

from console.core.errors import FieldError, Forbidden, NotFound, Unauthorized, ValidationFailed, shown
from console.core.timeutil import utcnow
from console.db.direct import Direct
from console.db.locking import lock_row
from console.db.rows import Snapshot
from console.extensions import db
from console.keys import secrets as key_secrets
from console.keys.models import ApiKey
from console.modes import MODES, URL_PREFIXES
from console.workspaces.models import Workspace

# How long a rolled key's secret keeps working, as offered by the console and `console keys roll --grace`.
GRACE_PERIODS = {
    "none": timedelta(0),
    "1h": timedelta(hours=1),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
}


DEFAULT_KEYS_PER_MODE = 10


def keys_per_mode() -> int:
    """`API_KEYS_PER_MODE`: the active keys a workspace may hold in each mode."""
    return int(current_app.config.get("API_KEYS_PER_MODE", DEFAULT_KEYS_PER_MODE))


def active_count(workspace_id: uuid.UUID, mode: str) -> int:
    """Keys of the workspace and mode that are neither revoked nor rolled (a rolled key in its grace period
    is on its way out and does not count)."""
    return (
        db.session.scalar(
            select(func.count()).where(
                ApiKey.workspace_id == workspace_id,
                ApiKey.mode == mode,
                ApiKey.revoked_at.is_(None),
                ApiKey.expires_at.is_(None),
            )
        )
        or 0
    )


@dataclass(frozen=True)
class CreatedKey:
    """A new key and its secret: the only time the secret is available in clear."""

    key: ApiKey
    secret: str


def create_key(
    workspace_id: uuid.UUID, mode: str, label: str = "", *, strongest: str | None = None
) -> CreatedKey:
    """A new key; refused (403 KEY_LIMIT_REACHED) when the workspace already has `API_KEYS_PER_MODE`
    active keys in this mode, and (403 MODE_NOT_HELD) when `mode` is stronger than `strongest`: the mode of the
    secret a console browser opened the workspace with, which gives no more than that mode's access."""
    if mode not in MODES:
        raise ValidationFailed([FieldError("mode", f"must be one of {', '.join(MODES)}")])
    if strongest is not None and MODES.index(mode) > MODES.index(strongest):
        raise Forbidden(
            f"This browser opened the workspace with a {strongest} secret, which gives no {mode} access: "
            f"its owner creates {mode} keys (console keys create --mode {mode}, or their own browser).",
            code="MODE_NOT_HELD",
        )
    # Lock the workspace row so two concurrent creates cannot both pass the quota.
    lock_row(Workspace, workspace_id)
    limit = keys_per_mode()
    if active_count(workspace_id, mode) >= limit:
        raise Forbidden(
            f"This workspace already has {limit} active {mode} keys, the limit per mode. "
            "Revoke one you no longer use before creating another.",
            code="KEY_LIMIT_REACHED",
        )
    return _insert_key(workspace_id, mode, label)


def _insert_key(workspace_id: uuid.UUID, mode: str, label: str) -> CreatedKey:
    secret = key_secrets.new_secret(mode)
    key = ApiKey(
        workspace_id=workspace_id,
        mode=mode,
        label=label[:120],
        secret_hash=key_secrets.hash_secret(secret),
        secret_ciphertext=key_secrets.seal(secret),
        secret_last4=secret[-4:],
    )
    db.session.add(key)
    db.session.flush()
    return CreatedKey(key, secret)


@functools.cache
def _key_by_hash() -> Select:
    """The key with this hash and its workspace, in one query (built once: every API request runs it).

    Plain columns, not entities: the ORM's loading of two objects cost more than the query itself.
    """
    keys, workspaces = ApiKey.__table__, Workspace.__table__
    return (
        select(*keys.c, *workspaces.c)
        .join_from(keys, workspaces, keys.c.workspace_id == workspaces.c.id)
        .where(keys.c.secret_hash == bindparam("digest"))
    )


@functools.cache
def _direct_key_by_hash() -> Direct:
    # Run on the DBAPI cursor: SQLAlchemy's execution layer cost more than the query itself.
    return Direct(_key_by_hash())


@functools.cache
def _attribute_names(model: type) -> tuple[str, ...]:
    """The model's attribute name for each column of its table, in the table's order (the query's)."""
    mapper = inspect(model)
    return tuple(mapper.get_property_by_column(column).key for column in model.__table__.c)


def _key_with_workspace(digest: str) -> Snapshot | None:
    row = _direct_key_by_hash().first(db.session.connection(), {"digest": digest})
    if row is None:
        return None
    key_names, workspace_names = _attribute_names(ApiKey), _attribute_names(Workspace)
    n = len(key_names)
    workspace = Snapshot(Workspace, dict(zip(workspace_names, row[n:], strict=True)))
    return Snapshot(ApiKey, dict(zip(key_names, row[:n], strict=True)), {"workspace": workspace})


def authenticate(secret: str | None, mode: str) -> Snapshot:
    """The active key for this secret in this mode, with its workspace, as snapshots; or `Unauthorized`.

    Snapshots (`console.db.rows.Snapshot`), not ORM objects: every API request reads its key and
    workspace, few change them (those take `rows.entity` of them).

    The secret is found by its hash, so no comparison ever runs over the secret
    itself; the stored hash is still compared in constant time as a second guard.
    """
    if secret is None:
        raise Unauthorized("Missing x-api-secret header.", code="MISSING_API_SECRET")
    if not secret:
        # Granian (`console run`) hands the app an empty value for a header sent with non-ASCII bytes: a
        # secret pasted with a stray typographic character would otherwise read as "missing".
        raise Unauthorized(
            "The x-api-secret header is empty (a value with non-ASCII characters arrives empty).",
            code="MISSING_API_SECRET",
        )
    digest = key_secrets.hash_secret(secret)
    key = _key_with_workspace(digest)
    if key is None or not hmac.compare_digest(key.secret_hash, digest):
        if "****" in secret:
            # The banner's masked form (`make run` with its output not a terminal): say where a whole one is.
            raise Unauthorized(
                "The x-api-secret is a masked secret (as `make run` prints it when its output is not a "
                "terminal), not the secret itself: `console keys create --mode sandbox` prints a new one.",
            )
        raise Unauthorized(
            "The x-api-secret is not a valid API secret: send a whole secret as it was shown when created "
            "(`console keys create`, or the console's API keys page).",
        )
    if key.revoked_at is not None:
        raise Unauthorized("This API key has been revoked.", code="API_KEY_REVOKED")
    # Real time, not a workspace clock: advancing the sandbox clock must not expire a credential.
    if key.expires_at is not None and utcnow() >= key.expires_at:
        raise Unauthorized(
            "This API key was rolled and its grace period has ended; use the key that replaced it.",
            code="API_KEY_EXPIRED",
        )
    if key.mode != mode:
        # Same message shape as a wrong secret, plus the hint a developer needs: which base URL.
        raise Unauthorized(
            f"This API key belongs to {key.mode} mode and is not valid at the {mode} base URL: "
            f"send it to paths starting {URL_PREFIXES[key.mode]}/v1/.",
            code="WRONG_MODE",
        )
    return key


def list_keys(workspace_id: uuid.UUID | None = None) -> list[ApiKey]:
    query = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
    if workspace_id is not None:
        query = query.where(ApiKey.workspace_id == workspace_id)
    return list(db.session.scalars(query))


def get_key(key_id: uuid.UUID | str, workspace_id: uuid.UUID | None = None) -> ApiKey:
    try:
        ident = uuid.UUID(str(key_id))
    except ValueError as exc:
        raise NotFound(f"No API key with id {shown(key_id)}.") from exc
    key = db.session.get(ApiKey, ident)
    if key is None or (workspace_id is not None and key.workspace_id != workspace_id):
        raise NotFound(f"No API key with id {shown(key_id)}.")
    return key


def revoke_key(key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = utcnow()
    return key


def roll_key(key: ApiKey, grace: timedelta = timedelta(0)) -> CreatedKey:
    """Create `key`'s replacement; `key` stops working now, or after `grace` (real time), as Stripe does.

    Its webhooks move to the replacement at once: webhooks are signed with their owner's secret, so
    they must follow the key the customer now holds (during the grace period a receiver should
    accept both secrets; see docs/webhooks.md). Rolling again never extends an earlier deadline.
    """
    from console.webhooks.services import reassign_owner  # webhooks import keys: import here

    if grace < timedelta(0) or grace > max(GRACE_PERIODS.values()):
        raise ValidationFailed([FieldError("grace", "must be one of " + ", ".join(GRACE_PERIODS))])
    if grace == timedelta(0):
        revoke_key(key)
    elif key.revoked_at is None:
        deadline = utcnow() + grace
        key.expires_at = min(key.expires_at, deadline) if key.expires_at is not None else deadline
    # A replacement, not one more: the rolled key stops counting (revoked, or expiring), so never refused.
    created = _insert_key(key.workspace_id, key.mode, key.label)
    reassign_owner(key, created.key)
    return created


def grace_period(name: str) -> timedelta:
    """A grace period by its name in GRACE_PERIODS ("none", "1h", "24h", "7d")."""
    try:
        return GRACE_PERIODS[name]
    except KeyError:
        raise ValidationFailed([FieldError("grace", "must be one of " + ", ".join(GRACE_PERIODS))]) from None


def secret_of(key: ApiKey) -> str:
    """The key's secret in clear, for signing webhooks. Never log or render it."""
    return key_secrets.unseal(key.secret_ciphertext)


def key_for_secret(secret: str | None) -> ApiKey:
    """The active key a pasted secret belongs to, in any mode; `ValidationFailed` on the `secret` field.

    What the console's *Open a key's workspace* uses: holding a secret already gives full API access to its
    workspace in its mode, so seeing that workspace in the console gives nothing more, provided the workspace
    has no key of a stronger mode (development, production; revoked ones included) whose secrets, calls and
    data the console would show; such a workspace opens only with a secret of its strongest mode. The
    messages never repeat the secret. Found by its hash, as `authenticate` does.
    """
    pasted = (secret or "").strip()
    if not pasted:
        raise ValidationFailed(
            [FieldError("secret", "Paste an API secret (sk_sandbox_…, sk_dev_… or sk_live_…).")]
        )
    digest = key_secrets.hash_secret(pasted)
    key = db.session.scalars(select(ApiKey).where(ApiKey.secret_hash == digest)).first()
    if key is None or not hmac.compare_digest(key.secret_hash, digest):
        raise ValidationFailed(
            [FieldError("secret", "No API key has this secret: check that you copied all of it.")]
        )
    if key.revoked_at is not None or (key.expires_at is not None and utcnow() >= key.expires_at):
        raise ValidationFailed(
            [FieldError("secret", "This key was revoked or rolled: use a key that works.")]
        )
    stronger = stronger_modes_held(key)
    if stronger:
        # The console reveals, rolls, revokes and creates every mode's keys of the workspace it shows: opened
        # with a sandbox secret it handed out the workspace's development and production secrets, which that
        # secret's own API access never reaches (WRONG_MODE). Only a secret of the strongest mode the
        # workspace has keys of opens it (a revoked key's mode counts: its calls and data are still there).
        raise ValidationFailed(
            [
                FieldError(
                    "secret",
                    f"This {key.mode} key's workspace also has {' and '.join(stronger)} keys, which the "
                    f"console would show: paste the secret of one of its active {stronger[-1]} keys to open it.",
                )
            ]
        )
    return key


def still_opens(key: ApiKey | None, workspace_id: uuid.UUID) -> bool:
    """Whether a console browser that opened `workspace_id` with `key`'s secret may still show it: the key is
    the workspace's, active, and the workspace has gained no key of a stronger mode since (`key_for_secret`'s
    rule, kept for as long as the browser holds the workspace, not only when it opened it)."""
    if key is None or key.workspace_id != workspace_id or key.revoked_at is not None:
        return False
    if key.expires_at is not None and utcnow() >= key.expires_at:
        return False
    return not stronger_modes_held(key)


def stronger_modes_held(key: ApiKey) -> list[str]:
    """The modes, weakest first, stronger than `key`'s in which its workspace holds a key, revoked ones
    included: their calls and data stay in the workspace (the request log shows them), and the console
    could make a new key of that mode."""
    wanted = list(MODES[MODES.index(key.mode) + 1 :])  # MODES runs weakest first: sandbox moves no real money
    if not wanted:
        return []
    held = set(
        db.session.scalars(
            select(ApiKey.mode)
            .where(
                ApiKey.workspace_id == key.workspace_id,
                ApiKey.mode.in_(wanted),
            )
            .distinct()
        )
    )
    return [mode for mode in wanted if mode in held]
