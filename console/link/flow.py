"""The Link flow: one state machine that the screens and headless completion both drive.

Each step names the state it comes from; a request made for a screen the flow has already left
(refresh, back button, double submit) raises `StaleStep` and changes nothing, so a token can never
create a second account or job. Every step first checks the token's expiry on the workspace clock,
and every mutating step bumps the session's version so two concurrent submits cannot both act.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import select

from console.accounts.models import Account
from console.clock.services import now
from console.core.errors import ServiceError
from console.extensions import db
from console.link import checks, outcomes, sandbox_data
from console.link import models as m
from console.link.models import LinkSession
from console.link_tokens.models import LinkToken
from console.link_tokens.services import has_expired
from console.workspaces.models import Workspace
from console.world import services as world
from console.world.models import BENEFITS, Employer, Platform

MAX_MFA_ATTEMPTS = 5
MFA_METHODS = ("sms", "email", "totp")


class LinkError(ServiceError):
    """An error Link shows on screen; headless completion returns it as a 400 with the same code."""

    type = "LINK_ERROR"

    def __init__(self, code: str, message: str, *, recoverable: bool) -> None:
        super().__init__(message, code=code)
        self.recoverable = recoverable


class StaleStep(Exception):
    """The request was made for a screen the flow has left; show the current one instead."""


def route_of(token: LinkToken) -> str:
    """How the person reaches a platform with this token (one of the models' routes)."""
    if token.account_id:
        return m.UPDATE
    if token.platform_id or token.employer_id:
        return m.DIRECT
    if token.platform_matching:
        return m.MATCHING
    return m.STANDARD


def load(link_token: LinkToken) -> Flow:
    """The flow of a token, starting it on first use and stopping it if the token has expired."""
    workspace = db.session.get(Workspace, link_token.workspace_id)
    row = db.session.scalar(select(LinkSession).where(LinkSession.link_token_id == link_token.id))
    flow = Flow(link_token, row, workspace)
    if row is None:
        flow.start()
    flow.check_expiry()
    return flow


class Flow:
    """A token's flow for one request: the session row plus the client events this request caused."""

    def __init__(self, link_token: LinkToken, row: LinkSession | None, workspace: Workspace) -> None:
        self.token = link_token
        self.row: LinkSession = row  # type: ignore[assignment]  # set by start() when None
        self.workspace = workspace
        self.at: datetime = now(workspace)
        self.events: list[dict[str, Any]] = []
        self.error: LinkError | None = None

    # -- bookkeeping ---------------------------------------------------------------------------

    @property
    def state(self) -> str:
        return self.row.state

    @property
    def platform(self) -> Platform | None:
        return world.get_platform(self.row.platform_id) if self.row.platform_id else None

    @property
    def sandbox(self) -> bool:
        return self.token.mode == "sandbox"

    def emit(self, name: str, payload: dict[str, Any]) -> None:
        self.events.append({"name": name, "payload": payload})

    def _goto(self, state: str) -> None:
        previous = self.row.state or None
        self.row.state = state
        self.row.error_code = self.row.error_message = None
        self.row.updated_at = self.at
        self.emit("screen_transition", {"from": previous, "to": state})

    def _expect(self, *states: str) -> None:
        """Refuse a step made from another screen, then claim the row (optimistic lock)."""
        if self.row.state not in states:
            raise StaleStep(self.row.state)
        self.row.updated_at = self.at
        db.session.flush()

    def _warn(self, code: str, message: str) -> None:
        """A recoverable error: the person stays on the screen and may retry."""
        self.row.error_code, self.row.error_message = code, message
        self.error = LinkError(code, message, recoverable=True)
        self.emit("error", {"code": code, "message": message, "recoverable": True, "screen": self.row.state})

    def _fail(self, code: str, message: str, *, state: str = m.FAILED) -> None:
        """A terminal error: the flow ends on the error (or expired) screen."""
        screen = self.row.state
        self._goto(state)
        self.row.error_code, self.row.error_message = code, message
        self.error = LinkError(code, message, recoverable=False)
        self.emit("error", {"code": code, "message": message, "recoverable": False, "screen": screen})
        self._finish()

    def _finish(self) -> None:
        """End the flow; the person's matching data is erased now (spec section 8)."""
        self.row.completed_at = self.at
        self.token.platform_matching = None
        if self.row.matched_platforms:
            # What was matched stays (the console shows it); who it was matched through does not.
            keep = ("platform_id", "platform_name")
            self.row.matched_platforms = [{k: x[k] for k in keep} for x in self.row.matched_platforms]

    # -- start and expiry ----------------------------------------------------------------------

    def start(self) -> None:
        route = route_of(self.token)
        self.row = LinkSession(
            workspace_id=self.token.workspace_id,
            mode=self.token.mode,
            link_token_id=self.token.id,
            route=route,
            state="",
            started_at=self.at,
            updated_at=self.at,
            created_at=self.at,
        )
        db.session.add(self.row)
        if has_expired(self.token, self.at):
            return  # opened too late: check_expiry ends it before anything is shown or created
        # Platform matching keeps its intro: it is where the person accepts the terms (spec rule 1).
        if self.token.skip_intro_screen and route != m.MATCHING:
            self._after_intro()
        else:
            self._goto(m.INTRO)
        db.session.flush()

    def check_expiry(self) -> None:
        if not self.row.finished and has_expired(self.token, self.at):
            self._fail(
                "LINK_TOKEN_EXPIRED", "This link has expired. Start again from the app.", state=m.EXPIRED
            )

    def raise_if_error(self) -> None:
        if self.error is not None:
            raise self.error

    # -- intro, matching, search ---------------------------------------------------------------

    def accept_terms(self) -> None:
        self._expect(m.INTRO)
        self._after_intro()

    def _after_intro(self) -> None:
        route = self.row.route
        if route == m.MATCHING:
            self._goto(m.MATCHING_WAIT)
        elif route == m.UPDATE:
            self._enter_update()
        elif route == m.DIRECT:
            employer = world.get_employer(self.token.employer_id) if self.token.employer_id else None
            platform = (
                world.get_platform(self.token.platform_id) if self.token.platform_id else employer.platform
            )
            # A token naming both keeps the employer only when it is on that platform.
            self._choose(
                platform, employer if employer and employer.platform_id == platform.id else None, via="token"
            )
        else:
            self._goto(m.SEARCH)

    def finish_matching(self) -> None:
        """Run platform matching and show the matches, or fall back to the standard search."""
        self._expect(m.MATCHING_WAIT)
        self.row.matched_platforms = matches = checks.matches(self.token)
        self._goto(m.MATCHES if matches else m.SEARCH)

    def choose_match(self, platform_id: str) -> None:
        self._expect(m.MATCHES)
        match = next((x for x in self.row.matched_platforms or [] if x["platform_id"] == platform_id), None)
        if match is None:
            self._warn("INVALID_SELECTION", "Choose one of the listed payroll providers.")
            return
        self.row.platform_id, self.row.employer_id = _uuid(match["platform_id"]), _uuid(match["employer_id"])
        self.row.employment_id, self.row.person_id = _uuid(match["employment_id"]), _uuid(match["person_id"])
        self.row.scenario, self.row.via_platform_matching = "success", True
        self.emit("select_platform", checks.platform_payload(self.platform, "matching"))
        self._goto(m.MFA_METHOD)

    def mfa_options(self) -> list[str]:
        """Methods offered on the MFA method screen: the platform's, else SMS and email."""
        platform = self.platform
        methods = [x for x in (platform.mfa_methods if platform else []) if x in MFA_METHODS]
        return methods or ["sms", "email"]

    def choose_mfa_method(self, method: str) -> None:
        self._expect(m.MFA_METHOD)
        if method not in self.mfa_options():
            self._warn("INVALID_MFA_METHOD", "Choose one of the listed verification methods.")
            return
        self.row.mfa_method = method
        self._goto(m.MFA)

    def select(self, kind: str, ident: str) -> None:
        """Pick an employer or a platform (payroll or benefits program) on the search screen."""
        self._expect(m.SEARCH)
        employer = world.get_employer(ident) if kind == "employer" else None
        platform = (
            employer.platform if employer else world.get_platform(ident) if kind == "platform" else None
        )
        if platform is None:
            self._warn("INVALID_SELECTION", "That employer or payroll provider was not found. Search again.")
            return
        self._choose(platform, employer, via="search")

    def to_search(self) -> None:
        """Leave a suggested platform for the standard search ("not my payroll provider")."""
        self._expect(m.LOGIN, m.FEDERAL, m.MATCHES)
        if self.row.route == m.UPDATE:
            raise StaleStep(self.row.state)
        if self.row.route == m.DIRECT and self.row.state in (m.LOGIN, m.FEDERAL):
            self.emit("incorrect_platform_given", checks.platform_payload(self.platform, "token"))
        self._clear_platform()
        self._goto(m.SEARCH)

    def _clear_platform(self) -> None:
        row = self.row
        row.platform_id = row.employer_id = row.person_id = row.employment_id = None
        row.scenario = row.mfa_method = row.sandbox_username = None
        row.via_platform_matching = False

    def _choose(self, platform: Platform, employer: Employer | None, *, via: str) -> None:
        if employer is not None:
            self.emit("select_employer", checks.employer_payload(employer))
        self.emit("select_platform", checks.platform_payload(platform, via))
        reason = checks.unsupported_reason(self.token, platform)
        if reason:
            if via == "search":
                self._warn("PLATFORM_NOT_SUPPORTED", reason + " Choose another employer or provider.")
            else:
                self._fail("PLATFORM_NOT_SUPPORTED", reason)
            return
        self.row.platform_id = platform.id
        self.row.employer_id = employer.id if employer is not None else None
        self._goto(m.FEDERAL if platform.type == BENEFITS else m.LOGIN)

    # -- on-demand update ----------------------------------------------------------------------

    def _enter_update(self) -> None:
        """Straight to the account's platform; login is skipped unless MFA is enabled there."""
        account = db.session.get(Account, self.token.account_id)
        platform = world.get_platform(account.platform_id) if account else None
        if account is None or platform is None:
            self._fail("ACCOUNT_NOT_FOUND", "The account to update no longer exists.")
            return
        self.row.platform_id = platform.id
        self.emit("select_platform", checks.platform_payload(platform, "account"))
        if platform.type == BENEFITS:
            self._goto(m.FEDERAL)  # no login is kept for benefits: the identity is entered again
            return
        self._apply_login(checks.check_update(self.token.mode, account))

    def _apply_login(self, login: checks.Login) -> None:
        """Act on a login check: an error screen, MFA, or the logged-in account."""
        platform = self.platform
        assert platform is not None
        if login.error == checks.ACCOUNT_LOCKED:
            self._fail(login.error, f"Your {platform.name} account is locked. Contact your employer.")
            return
        if login.error:
            self._warn(login.error, "The username or password is incorrect. Check them and try again.")
            return
        row = self.row
        row.scenario, row.sandbox_username = login.scenario, login.sandbox_username
        row.person_id, row.employment_id = login.person_id, login.employment_id
        row.employer_id = login.employer_id or row.employer_id
        if login.choose_mfa_method:
            self._goto(m.MFA_METHOD)
        elif login.mfa_method:
            row.mfa_method = login.mfa_method
            self._goto(m.MFA)
        else:
            self._logged_in()

    # -- login, MFA, federal identity ----------------------------------------------------------

    def login(self, username: str, password: str) -> None:
        self._expect(m.LOGIN)
        platform = self.platform
        assert platform is not None
        self.row.login_attempts += 1
        self.emit("login_attempt", {"platform_id": str(platform.id), "attempt": self.row.login_attempts})
        self._apply_login(
            checks.check_login(self.token.mode, platform, username, password, self.row.employer_id)
        )

    def submit_mfa(self, code: str) -> None:
        self._expect(m.MFA)
        if (code or "").strip() == sandbox_data.MFA_CODE:
            self._logged_in()
            return
        self.row.mfa_attempts += 1
        if self.row.mfa_attempts >= MAX_MFA_ATTEMPTS:
            self._fail("MFA_ATTEMPTS_EXCEEDED", "Too many incorrect codes. Start again from the app.")
        else:
            self._warn("INVALID_MFA_CODE", "That code is not right. Check it and try again.")

    def _logged_in(self) -> None:
        """Login is complete: the account exists from here (an update reuses the token's account)."""
        account = outcomes.login_account(self)
        self.row.account_id = account.id
        ids = {"account_id": str(account.id), "platform_id": str(account.platform_id)}
        self.emit("login", ids | {"platform_name": account.platform_name})
        if account.kind == BENEFITS:
            self.row.allocation = {"type": "full", "value": None, "target_index": 0}
            self.emit("input_allocation", outcomes.allocation_event(self))
            self._goto(m.CONFIRM)
        else:
            self._goto(m.ALLOCATION)

    def submit_federal(self, first_name: str, last_name: str, ssn: str) -> None:
        self._expect(m.FEDERAL)
        platform = self.platform
        assert platform is not None
        try:
            first, last, digits = checks.clean_identity(first_name, last_name, ssn)
        except ValueError as exc:
            self._warn("INVALID_IDENTITY", str(exc))
            return
        self.row.login_attempts += 1
        self.emit("login_attempt", {"platform_id": str(platform.id), "attempt": self.row.login_attempts})
        scenario = checks.check_beneficiary(self.token.mode, platform, first, last, digits)
        if scenario is None:
            self._warn(
                checks.BENEFICIARY_NOT_FOUND,
                f"We could not find an enrolled {platform.name} beneficiary with that name and Social "
                "Security number. Check them and try again.",
            )
            return
        self.row.scenario, self.row.federal_ssn_last_four = scenario, digits[-4:]
        self._logged_in()

    # -- allocation, confirm, back, exit -------------------------------------------------------

    def choose_allocation(self, kind: str, value: Any, target_index: Any = 0) -> None:
        self._expect(m.ALLOCATION)
        try:
            self.row.allocation = outcomes.clean_allocation(self, kind, value, target_index)
        except ValueError as exc:
            self._warn("INVALID_ALLOCATION", str(exc))
            return
        self.emit("input_allocation", outcomes.allocation_event(self))
        self._goto(m.CONFIRM)

    def confirm(self) -> None:
        """Submit the switch: at most one job per token, whatever is clicked or resent."""
        self._expect(m.CONFIRM)
        if self.row.job_id is not None or outcomes.token_has_job(self.token):
            raise StaleStep(self.row.state)
        job = outcomes.submit_switch(self)
        self.row.job_id = job.id
        if job.outcome in ("error", "failure"):
            self._fail("SWITCH_FAILED", "Your direct deposit could not be updated. No change was made.")
            return
        self._goto(m.DONE)
        self.emit("success", outcomes.success_payload(self, job))
        self._finish()

    def back_target(self, state: str) -> str | None:
        """Where "back" leads from a screen; None where going back would undo a login or a switch."""
        route, row = self.row.route, self.row
        if state in (m.LOGIN, m.FEDERAL) and route in (m.STANDARD, m.MATCHING):
            return m.SEARCH
        if state == m.MFA and row.login_attempts:
            return m.LOGIN
        if state == m.MFA and route == m.MATCHING:
            return m.MFA_METHOD
        if state == m.MFA_METHOD and route == m.MATCHING:
            return m.MATCHES
        if state == m.SEARCH and route == m.MATCHING and row.matched_platforms:
            return m.MATCHES
        platform = self.platform
        if state == m.CONFIRM and platform is not None and platform.type != BENEFITS:
            return m.ALLOCATION
        return None

    def back(self, from_state: str) -> None:
        """Go one screen back where that cannot undo a login or a switch."""
        self._expect(from_state)
        target = self.back_target(from_state)
        if target is None:
            raise StaleStep(self.row.state)
        if target == m.SEARCH:
            self._clear_platform()
        self._goto(target)

    def exit(self) -> None:
        """The person closed Link: an unfinished flow ends here (a new token is needed to retry)."""
        screen, completed = self.row.state, self.row.state == m.DONE
        if not self.row.finished:
            self._expect(screen)
            self._goto(m.EXITED)
            self._finish()
        self.emit("exit", {"screen": screen, "completed": completed})


def _uuid(value: str | None) -> uuid.UUID | None:
    return uuid.UUID(value) if value else None
