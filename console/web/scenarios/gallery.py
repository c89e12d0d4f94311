"""The scenario gallery: every row of the sandbox test data as a Link token body plus what completes it.

Each row can run in the browser (Link opens with the token and the row tells the person what to
type) or headlessly (`POST /v1/sandbox/link_tokens/{id}/complete` with the row's completion body).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from console.link.sandbox_data import FEDERAL_SSNS, sandbox_test_data
from console.web.link import form as linkform
from console.world.seed_data import PLATFORM_IDS

# Test credentials work on every payroll platform; routing straight to one keeps a demo to one click.
DEMO_PLATFORM = "paycrest"
DEMO_PLATFORM_NAME = "Paycrest"
FEDERAL_PROGRAM = linkform.FEDERAL_PROGRAM
FEDERAL_PROGRAM_NAME = "Social Security Retirement"
FEDERAL_NAME = ("Alex", "Doe")


@dataclass(frozen=True)
class Scenario:
    key: str
    group: str
    title: str
    description: str
    preset: str  # which Link token preset the token is built from
    token_overrides: dict[str, Any]
    completion: dict[str, Any]  # body of the headless complete call
    steps: tuple[str, ...]  # what to do in Link, for the browser run

    def token_body(self) -> dict[str, Any]:
        return {**linkform.preset_body(self.preset), **self.token_overrides}


def _opening(preset: str, overrides: dict[str, Any], platform_name: str | None = None) -> str:
    """What Link shows first for the row's token, from the same rule the Link flow follows."""
    from console.web.link import guide as linkguide  # the Link flow's rules: only the browser run needs them

    return linkguide.opening_for_body({**linkform.preset_body(preset), **overrides}, platform_name)


def _login_steps(username: str, password: str, mfa: str | None, code: str) -> tuple[str, ...]:
    steps = [f"{DEMO_PLATFORM_NAME}'s login: username {username}", f"Password {password}"]
    if mfa:
        steps.append(f"{mfa.upper()} code {code}")
    return (*steps, "Choose an allocation and confirm")


def _credentials(data: dict, with_steps: bool = True) -> list[Scenario]:
    platform = {"platform_id": str(PLATFORM_IDS[DEMO_PLATFORM])}
    rows = []
    for row in data["credentials"]:
        wrong = row["error_code"] == "INVALID_CREDENTIALS"
        password = "wrong-password" if wrong else row["password"]
        completion: dict[str, Any] = {
            **platform,
            "credentials": {"username": row["username"], "password": password},
            "allocation": {"type": "full"},
        }
        if row["mfa_method"]:
            completion["mfa"] = {"method": row["mfa_method"], "code": data["mfa_code"]}
        rows.append(
            Scenario(
                key="wrong_password" if wrong else row["username"],
                group="Credentials",
                title="Wrong password" if wrong else row["username"],
                description=row["description"],
                preset="direct",
                token_overrides=platform,
                completion=completion,
                steps=(
                    _opening("direct", platform, DEMO_PLATFORM_NAME),
                    *_login_steps(row["username"], password, row["mfa_method"], data["mfa_code"]),
                )
                if with_steps
                else (),
            )
        )
    return rows


def _wrong_mfa(data: dict, with_steps: bool = True) -> list[Scenario]:
    platform = {"platform_id": str(PLATFORM_IDS[DEMO_PLATFORM])}
    return [
        Scenario(
            key=f"wrong_mfa_{row['method']}",
            group="MFA",
            title=f"Wrong {row['method']} code",
            description=f"A wrong code is refused ({row['wrong_code_error']}); the person can try again.",
            preset="direct",
            token_overrides=platform,
            completion={
                **platform,
                "credentials": {"username": row["username"], "password": data["password"]},
                "mfa": {"method": row["method"], "code": row["wrong_code_example"]},
            },
            steps=(
                _opening("direct", platform, DEMO_PLATFORM_NAME),
                *_login_steps(row["username"], data["password"], row["method"], row["wrong_code_example"])[
                    :-1
                ],
                f"Then the right code {row['right_code']}",
            )
            if with_steps
            else (),
        )
        for row in data["mfa"]
    ]


def _matching(data: dict, with_steps: bool = True) -> list[Scenario]:
    rows = []
    presets = {"one": "prime_one", "several": "prime_several", "none": "prime_none"}
    for row in data["platform_matching"]:
        matched = row["matched_platform_ids"]
        if matched:
            completion = {"matched_platform_id": matched[0], "mfa": {"code": row["mfa_code"]}}
            steps = (
                "Wait for matching",
                "Pick a matched platform",
                f"Pick any verification method, then code {row['mfa_code']}",
            )
        else:
            completion = {
                "platform_id": str(PLATFORM_IDS[DEMO_PLATFORM]),
                "credentials": {"username": "user_good", "password": data["password"]},
            }
            steps = (
                f"Nothing matches: search {DEMO_PLATFORM_NAME}",
                f"Username user_good, password {data['password']}",
            )
        name = row["platform_matching"]["first_name"] + " " + row["platform_matching"]["last_name"]
        rows.append(
            Scenario(
                key=f"prime_{row['case']}",
                group="Platform matching (Prime)",
                title=f"{name}: {row['case']} match" + ("es" if row["case"] == "several" else ""),
                description=row["description"],
                preset=presets[row["case"]],
                token_overrides={},
                completion={**completion, "allocation": {"type": "full"}},
                steps=(
                    _opening(presets[row["case"]], {}) + " (accepting the terms)",
                    *steps,
                    "Choose an allocation and confirm",
                )
                if with_steps
                else (),
            )
        )
    return rows


def _federal(data: dict, with_steps: bool = True) -> list[Scenario]:
    program = str(PLATFORM_IDS[FEDERAL_PROGRAM])
    first, last = FEDERAL_NAME
    return [
        Scenario(
            key=row["scenario"],  # federal_sent, federal_failure, federal_rejected: the test data's own names
            group="Federal benefits",
            title=row["scenario"].replace("_", " "),
            description=row["description"],
            preset="federal",
            token_overrides={},
            completion={
                "program_id": program,
                "federal": {
                    "first_name": first,
                    "last_name": last,
                    "social_security_number": row["social_security_number"],
                },
            },
            steps=(
                _opening("federal", {}, FEDERAL_PROGRAM_NAME),
                f"{FEDERAL_PROGRAM_NAME}: legal name {first} {last}",
                f"SSN {row['social_security_number']}",
                "Confirm",
            )
            if with_steps
            else (),
        )
        for row in data["federal_benefits"]
    ]


def all_scenarios(with_steps: bool = True) -> list[Scenario]:
    """Every runnable row, grouped as the sandbox test data table is.

    `with_steps=False` leaves each row's browser steps empty: a headless run (`console trigger`) needs only
    the token body and the completion, and the steps' wording imports the Link flow's rules (most of the app).
    """
    data = sandbox_test_data()
    return (
        _credentials(data, with_steps)
        + _wrong_mfa(data, with_steps)
        + _matching(data, with_steps)
        + _federal(data, with_steps)
    )


# Keys the federal rows had until 2026-11-28 ("federal_" + a name that already starts with it), still read so
# that a story file or a CI script written with them keeps working.
FORMER_KEYS = {f"federal_{name}": name for name, _ in FEDERAL_SSNS.values()}


def current_key(key: str) -> str:
    """The gallery key `key` names today (a former key maps to its new one)."""
    return FORMER_KEYS.get(key, key)


def get(key: str) -> Scenario | None:
    key = current_key(key)
    return next((s for s in all_scenarios() if s.key == key), None)
