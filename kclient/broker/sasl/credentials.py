"""SASL users of the mini-broker, stored as Kafka stores SCRAM credentials: per mechanism a salt,
a stored key, a server key and an iteration count (``ScramCredential``), never the password.

PLAIN logins are checked against the SCRAM-SHA-512 entry (the password is salted and hashed the
same way and compared in constant time), so a PLAIN user needs no plaintext copy either.  The
file is JSON: ``{"users": {"alice": {"SCRAM-SHA-256": {"salt": b64, "stored_key": b64,
"server_key": b64, "iterations": 4096}, "SCRAM-SHA-512": {...}}}}``; ``kclient broker
--sasl-user alice:secret`` adds users hashed at start.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from pathlib import Path

from scramp import ScramMechanism

__all__ = ["CredentialStore", "ScramCredential", "SCRAM_MECHANISMS", "MIN_ITERATIONS"]

SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
MIN_ITERATIONS = 4096  # Kafka's ScramMechanism minimum
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


@dataclass(frozen=True)
class ScramCredential:
    """One user's SCRAM secret for one mechanism (RFC 5802: what a server keeps)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_json(self) -> dict[str, object]:
        """The JSON form (keys base64)."""
        b64 = base64.b64encode
        return {
            "salt": b64(self.salt).decode(),
            "stored_key": b64(self.stored_key).decode(),
            "server_key": b64(self.server_key).decode(),
            "iterations": self.iterations,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ScramCredential:
        """Read the JSON form back."""

        def raw(key: str) -> bytes:
            return base64.b64decode(str(data[key]))

        return cls(raw("salt"), raw("stored_key"), raw("server_key"), int(str(data["iterations"])))

    def matches(self, mechanism: str, password: str) -> bool:
        """Whether ``password`` derives this credential (a PLAIN login), in constant time."""
        name = _HASHES[mechanism]
        salted = hashlib.pbkdf2_hmac(name, password.encode("utf-8"), self.salt, self.iterations)
        client_key = hmac.new(salted, b"Client Key", name).digest()
        return hmac.compare_digest(hashlib.new(name, client_key).digest(), self.stored_key)


class CredentialStore:
    """User name -> mechanism -> :class:`ScramCredential`; thread-safe for reads."""

    def __init__(self) -> None:
        self.users: dict[str, dict[str, ScramCredential]] = {}

    def __len__(self) -> int:
        return len(self.users)

    def add_user(self, name: str, password: str, iterations: int = MIN_ITERATIONS) -> None:
        """Salt and hash ``password`` for every SCRAM mechanism (the password is not kept)."""
        if not name or not password:
            raise ValueError("a SASL user needs a name and a password")
        if iterations < MIN_ITERATIONS:
            raise ValueError(f"SCRAM iterations must be at least {MIN_ITERATIONS}")
        entry = {}
        for mechanism in SCRAM_MECHANISMS:
            salt = os.urandom(32)
            info = ScramMechanism(mechanism).make_auth_info(password, iterations, salt)
            entry[mechanism] = ScramCredential(info[0], info[1], info[2], info[3])
        self.users[name] = entry

    def scram(self, mechanism: str, name: str) -> ScramCredential | None:
        """The user's credential for ``mechanism``, or None for an unknown user."""
        return self.users.get(name, {}).get(mechanism)

    def check_plain(self, name: str, password: str) -> bool:
        """A PLAIN login: the password against the salted SCRAM-SHA-512 credential."""
        credential = self.scram("SCRAM-SHA-512", name)
        return credential is not None and credential.matches("SCRAM-SHA-512", password)

    def save(self, path: str | Path) -> None:
        """Write the store as JSON (mode 0600: salted keys still allow offline guessing)."""
        data = {
            "users": {
                name: {m: c.to_json() for m, c in entry.items()}
                for name, entry in sorted(self.users.items())
            }
        }
        target = Path(path)
        target.write_text(json.dumps(data, indent=1) + "\n")
        target.chmod(0o600)

    @classmethod
    def load(cls, path: str | Path) -> CredentialStore:
        """Read a store written by :meth:`save`; ValueError naming the file when malformed."""
        store = cls()
        try:
            data = json.loads(Path(path).read_text())
            for name, entry in data["users"].items():
                store.users[name] = {
                    m: ScramCredential.from_json(c)
                    for m, c in entry.items()
                    if m in SCRAM_MECHANISMS
                }
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(
                f"sasl.credentials.file {str(path)!r} cannot be read: {exc!r}"
            ) from exc
        return store
