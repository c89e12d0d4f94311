"""Link flows for console-side tests: a sandbox Link token walked to a given screen through the step endpoint."""

from __future__ import annotations

from console.world.seed_data import PLATFORM_IDS
from tests.conftest import Api


def token_at_allocation(client, workspace) -> str:
    """A Paycrest token (intro skipped) logged in as user_good: its flow waits on the allocation screen."""
    api = Api(client, workspace.secrets["sandbox"])
    token = api.post(
        "/link_tokens",
        json={
            "org_name": "Acme",
            "required_jobs": ["direct_deposit_switch"],
            "platform_id": str(PLATFORM_IDS["paycrest"]),
            "skip_intro_screen": True,
            "allocation": {
                "targets": [{"type": "checking", "routing_number": "011000015", "account_number": "12345678"}]
            },
        },
    ).get_json()["data"]["token"]
    client.get(f"/sandbox/link?token={token}")
    step = {"token": token, "action": "login", "username": "user_good", "password": "pass_good"}
    assert 'data-screen="allocation"' in client.post("/sandbox/link/step", data=step).get_data(as_text=True)
    return token
