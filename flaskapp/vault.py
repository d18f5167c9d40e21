"""Encryption at rest of the secrets a workspace stores: its judge API keys
(`judging.models.StoredKey`) and its webhook signing secret
(`flaskapp.models.NotificationSettings`).

Fernet (AES-128-CBC with an HMAC-SHA256, from `cryptography`) under the keys of the
server's environment: ``FLASK_KEY_ENCRYPTION_KEYS="newest,older,..."`` (each a
URL-safe base64 32-byte Fernet key, ``Fernet.generate_key()``). The newest encrypts;
every listed key decrypts (`MultiFernet`), so an operator rotates by putting a new key
first, running ``manage.py rotate_stored_keys`` (re-encrypts every stored key with the
newest) and then dropping the old one.

With ``FLASK_DEV=1`` and no key configured, a random development key is derived from a
file kept beside ``dev-secret-key`` (created once, mode 600, never committed). Without
either, storing or using a stored key is refused with `VaultUnavailable`, whose message
tells the operator what to set; nothing is ever encrypted under a key in the source.

Nothing here logs, and no error message holds a plaintext, a ciphertext or a key.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

from flaskapp.secret_key import dev_secret_key

NOT_CONFIGURED = (
    "keys cannot be stored on this server: its operator has not set "
    "FLASK_KEY_ENCRYPTION_KEYS (one or more Fernet keys, newest first, e.g. the output "
    "of `python -c 'from cryptography.fernet import Fernet; "
    "print(Fernet.generate_key().decode())'`); environment-variable keys still work"
)
BAD_KEY = (
    "FLASK_KEY_ENCRYPTION_KEYS holds a value that is not a Fernet key (entry {n}: each "
    "must be 32 URL-safe base64-encoded bytes)"
)
UNREADABLE = (
    "the stored key cannot be decrypted with the server's FLASK_KEY_ENCRYPTION_KEYS "
    "(was the key that encrypted it dropped before `rotate_stored_keys` ran?)"
)


class VaultUnavailable(Exception):
    """No usable encryption key is configured, or a ciphertext cannot be read with
    the configured ones. The message is for the operator and holds no secret."""


def _fernets() -> list[Fernet]:
    configured = list(getattr(settings, "KEY_ENCRYPTION_KEYS", []) or [])
    if not configured:
        dev_file = getattr(settings, "KEY_ENCRYPTION_DEV_FILE", "")
        if not dev_file:
            raise VaultUnavailable(NOT_CONFIGURED)
        # Derived from the random file's text, so the writer that makes the dev
        # secret key safe under concurrent start-up makes this one safe too.
        seed = dev_secret_key(Path(dev_file))
        digest = hashlib.sha256(seed.encode("utf-8")).digest()
        configured = [base64.urlsafe_b64encode(digest).decode()]
    fernets = []
    for n, key in enumerate(configured, start=1):
        try:
            fernets.append(Fernet(key))
        except (ValueError, TypeError):
            raise VaultUnavailable(BAD_KEY.format(n=n)) from None
    return fernets


def vault() -> MultiFernet:
    """The server's keys, newest first; `VaultUnavailable` when none is usable."""
    return MultiFernet(_fernets())


def vault_problem() -> str:
    """Why keys cannot be stored here ("" when they can): for forms and the API."""
    try:
        _fernets()
    except VaultUnavailable as exc:
        return str(exc)
    return ""


def encrypt(plaintext: str) -> str:
    """The ciphertext (a Fernet token, text) of `plaintext` under the newest key."""
    return vault().encrypt(plaintext.encode("utf-8")).decode("ascii")


def decrypt(ciphertext: str) -> str:
    """The plaintext of `ciphertext`; `VaultUnavailable` when no configured key
    reads it (the message names neither)."""
    try:
        return vault().decrypt(ciphertext.encode("ascii")).decode("utf-8")
    except (InvalidToken, UnicodeError):
        raise VaultUnavailable(UNREADABLE) from None


def rotate(ciphertext: str) -> str:
    """`ciphertext` re-encrypted under the newest key (`MultiFernet.rotate`);
    `VaultUnavailable` when no configured key reads it."""
    try:
        return vault().rotate(ciphertext.encode("ascii")).decode("ascii")
    except (InvalidToken, UnicodeError):
        raise VaultUnavailable(UNREADABLE) from None


def newest_key_reads(ciphertext: str) -> bool:
    """Whether `ciphertext` is already encrypted under the newest key."""
    try:
        _fernets()[0].decrypt(ciphertext.encode("ascii"))
    except (InvalidToken, UnicodeError):
        return False
    return True
