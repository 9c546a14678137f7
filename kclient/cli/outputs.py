"""How ``kclient consume`` prints a message: raw, JSON with metadata, or a kcat-style format."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import IO

from .encoding import encode_field

__all__ = ["Formatter", "render_format", "json_encoding"]

_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\r": "\r", "\\0": "\0", "\\\\": "\\"}
_TOKEN = re.compile(r"%[tpokshTSK%]|\\[ntr0\\]")


def _headers_text(headers: list[tuple[str, bytes | None]], binary: str | None) -> str:
    """Headers as name=value,name=value."""
    return ",".join(f"{k}={encode_field(v, binary) or ''}" for k, v in headers)


def render_format(
    fmt: str,
    topic: str,
    partition: int,
    offset: int,
    key: bytes | None,
    value: bytes | None,
    timestamp: int,
    headers: list[tuple[str, bytes | None]],
    binary: str | None = None,
) -> str:
    """Expand kcat's %t %p %o %k %s %h %T %S %K and the \\n \\t escapes."""

    def expand(m: re.Match[str]) -> str:
        tok = m.group(0)
        if tok in _ESCAPES:
            return _ESCAPES[tok]
        return {
            "%t": lambda: topic,
            "%p": lambda: str(partition),
            "%o": lambda: str(offset),
            "%k": lambda: encode_field(key, binary) or "",
            "%s": lambda: encode_field(value, binary) or "",
            "%h": lambda: _headers_text(headers, binary),
            "%T": lambda: str(timestamp),
            "%S": lambda: str(len(value) if value is not None else -1),
            "%K": lambda: str(len(key) if key is not None else -1),
            "%%": lambda: "%",
        }[tok]()

    return _TOKEN.sub(expand, fmt)


def json_encoding(
    key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]]
) -> str | None:
    """None when key, value and header values are all UTF-8 text (written as they are), else
    "base64" for all of them: JSON has no bytes, and a lossy escape would be ambiguous."""
    try:
        for data in (key, value, *(v for _, v in headers)):
            if data is not None:
                data.decode("utf-8")
    except UnicodeDecodeError:
        return "base64"
    return None


class Formatter:
    """Writes each consumed message to stdout in the chosen output format."""

    def __init__(self, args: argparse.Namespace, out: IO[bytes] | None = None) -> None:
        self.args = args
        self.out = out or sys.stdout.buffer

    def write(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: list[tuple[str, bytes | None]],
    ) -> None:
        """Print one message."""
        a = self.args
        if a.fmt is not None:
            text = render_format(
                a.fmt, topic, partition, offset, key, value, timestamp, list(headers), a.binary
            )
            self.out.write(text.encode("utf-8", errors="surrogateescape"))
        elif a.format == "json":
            binary = a.binary or json_encoding(key, value, headers)
            obj = {
                "topic": topic,
                "partition": partition,
                "offset": offset,
                "timestamp": timestamp,
                "encoding": binary or "utf-8",
                "key": encode_field(key, binary),
                "value": encode_field(value, binary),
                "headers": [[k, encode_field(v, binary)] for k, v in headers],
            }
            self.out.write(json.dumps(obj, ensure_ascii=False).encode() + b"\n")
        else:
            self.out.write(self._raw(key, value) + b"\n")

    def _raw(self, key: bytes | None, value: bytes | None) -> bytes:
        """The value (and -K key) as bytes: untouched unless --binary."""
        a = self.args

        def field(data: bytes | None) -> bytes:
            if a.binary:
                return (encode_field(data, a.binary) or "").encode()
            return data or b""

        if a.key_separator is not None:
            return field(key) + a.key_separator.encode() + field(value)
        return field(value)

    def flush(self) -> None:
        """Flush stdout."""
        self.out.flush()
