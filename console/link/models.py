"""The Link session: one row per Link token, recording where its flow stands and what it produced."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from console.db.base import CreatedAtMixin, IdMixin
from console.extensions import db

# Routes: how the person reaches a platform.
STANDARD, DIRECT, MATCHING, UPDATE = "standard", "direct", "matching", "update"

# States (screens). Terminal states never change again.
INTRO = "intro"
MATCHING_WAIT = "matching"
MATCHES = "matches"
MFA_METHOD = "mfa_method"
SEARCH = "search"
LOGIN = "login"
MFA = "mfa"
FEDERAL = "federal"
ALLOCATION = "allocation"
CONFIRM = "confirm"
DONE = "success"
FAILED = "error"
EXPIRED = "expired"
EXITED = "exited"
TERMINAL = (DONE, FAILED, EXPIRED, EXITED)


# What the SDK sends as its page's origin from a page opened as a file (file://) or a sandboxed frame: a
# browser gives such a page an opaque origin, "null". Link's frame cannot open there (frame-ancestors).
OPAQUE_ORIGIN = "null"


class LinkSession(IdMixin, CreatedAtMixin, db.Model):
    __tablename__ = "link_sessions"
    __table_args__ = (Index("ix_link_sessions_scope_created", "workspace_id", "mode", "created_at"),)

    workspace_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("workspaces.id", ondelete="CASCADE"))
    mode: Mapped[str] = mapped_column(String(16))
    # Unique: a token has exactly one flow, so two tabs (or a refresh) share it.
    link_token_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("link_tokens.id", ondelete="CASCADE"), unique=True
    )
    route: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16))
    platform_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("world_platforms.id"))
    employer_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("world_employers.id"))
    account_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("accounts.id", ondelete="SET NULL"))
    job_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"))
    # Development/production: the world person behind the login or match, and the employment switched.
    person_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("world_people.id"))
    employment_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("world_employments.id"))
    # Sandbox: the test username (or federal test scenario) that picks the job scenario.
    sandbox_username: Mapped[str | None] = mapped_column(String(120))
    scenario: Mapped[str | None] = mapped_column(String(64))
    mfa_method: Mapped[str | None] = mapped_column(String(16))
    login_attempts: Mapped[int] = mapped_column(default=0)
    mfa_attempts: Mapped[int] = mapped_column(default=0)
    # Platform matching results: [{"platform_id", "platform_name", "employment_id", "employer_name"}].
    matched_platforms: Mapped[list[Any] | None]
    # The person's choice: {"type": "full" | "amount" | "percent", "value": int | None, "target_index": int}.
    allocation: Mapped[dict[str, Any] | None]
    # Last four SSN digits of a federal submission, for the confirm screen; the full number is never kept.
    federal_ssn_last_four: Mapped[str | None] = mapped_column(String(4))
    # The latest error shown (recoverable or terminal), e.g. INVALID_CREDENTIALS.
    error_code: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(String(400))
    # Development/production: the deposit split before and after the switch, for the console.
    allocations_before: Mapped[list[Any] | None]
    allocations_after: Mapped[list[Any] | None]
    via_platform_matching: Mapped[bool] = mapped_column(default=False)
    # The SDK's parent page origin when Link was opened from a page other than this service's own
    # (the console's launcher): training exercise 2 checks that a trainee embedded Link themselves.
    # OPAQUE_ORIGIN when that page has none (opened as a file), where Link cannot show: said to the trainee.
    embedding_origin: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[datetime]  # workspace clock
    updated_at: Mapped[datetime]  # workspace clock
    completed_at: Mapped[datetime | None]  # workspace clock: when a terminal state was reached
    # Optimistic lock: a second concurrent submit of the same step fails instead of acting twice.
    version: Mapped[int] = mapped_column(default=1)

    __mapper_args__ = {"version_id_col": version}

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL
