"""Bytes on a text line: as they are, base64 or hex (``--binary``), for byte-exact round trips
between ``kclient produce`` and ``kclient consume``."""

from __future__ import annotations

import base64
import binascii

__all__ = ["BINARY_FORMATS", "decode_field", "encode_field"]

BINARY_FORMATS = ("base64", "hex")


def decode_field(data: bytes, binary: str | None) -> bytes:
    """The bytes a produced key, value or header value stands for."""
    if binary is None:
        return data
    try:
        if binary == "base64":
            return base64.b64decode(data, validate=True)
        return bytes.fromhex(data.decode("ascii"))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"not {binary}: {data[:40]!r} ({exc})") from None


def encode_field(data: bytes | None, binary: str | None) -> str | None:
    """A consumed key, value or header value as text (None stays None)."""
    if data is None:
        return None
    if binary == "base64":
        return base64.b64encode(data).decode("ascii")
    if binary == "hex":
        return data.hex()
    return data.decode("utf-8", errors="backslashreplace")
