"""Making, hashing and sealing API secrets."""

from __future__ import annotations

import base64
import hashlib
import secrets

from cryptography.fernet import Fernet

# The prefix names the mode so a developer can tell keys apart at a glance; it grants nothing.
PREFIXES = {"sandbox": "sk_sandbox_", "development": "sk_dev_", "production": "sk_live_"}


def new_secret(mode: str) -> str:
    return PREFIXES[mode] + secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _fernet() -> Fernet:
    # Flask imported here, not at the top: the client commands (`console listen`, `console trigger`) read
    # PREFIXES and must start without the server's frameworks (tests/unit/test_trigger_startup.py).
    from flask import current_app

    # Derived from SECRET_KEY so there is one secret to configure, not two.
    digest = hashlib.sha256(b"api-secret-encryption:" + current_app.config["SECRET_KEY"].encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def seal(secret: str) -> bytes:
    return _fernet().encrypt(secret.encode("utf-8"))


def unseal(ciphertext: bytes) -> str:
    return _fernet().decrypt(ciphertext).decode("utf-8")
