"""Crash-safe replacement of segments by a cleaned one, with Kafka's file suffixes.

The cleaner writes ``<base>.log.cleaned``, ``<base>.index.cleaned`` (``base``: the first
replaced segment's base offset) and ``<base>.end.cleaned`` (the offset after the replaced
segments) and fsyncs them; renaming them to ``.swap``, the log file last, is the commit point.
The replaced segments are then deleted and the swap files renamed over ``<base>.log`` /
``<base>.index``.  On start-up :func:`recover` discards every ``.cleaned`` file (an unfinished
cleaning) and completes every ``.swap``: segments whose base offset lies in the swap's range
``[base, end)`` are deleted and the swap file takes the first one's name.  (Kafka takes the
range's end from the swap file's last offset; the ``.end`` file also covers a replaced tail
whose records were all removed.)
"""

from __future__ import annotations

import logging
import os
import re
import signal
from pathlib import Path

from kclient.broker.log.entries import EntryWalk
from kclient.broker.log.segment import segment_name

log = logging.getLogger(__name__)

CLEANED, SWAP = ".cleaned", ".swap"
#: Test hook: a process whose environment names a step here kills itself (SIGKILL) at that
#: step of a cleaning: "cleaned" (files written), "swap" (committed), "deleted" (old gone).
CRASH_ENV = "KCLIENT_CLEANER_CRASH_AT"
_SWAP_FILE = re.compile(r"^(\d{20})\.log\.swap$")
_SEGMENT_FILE = re.compile(r"^(\d{20})\.(log|index|timeindex)$")


def paths(directory: Path, base: int, suffix: str) -> tuple[Path, Path]:
    """``(log, index)`` paths of segment ``base`` with ``suffix`` ("" for the live files)."""
    return (
        directory / (segment_name(base, ".log") + suffix),
        directory / (segment_name(base, ".index") + suffix),
    )


def fsync_dir(directory: Path) -> None:
    """fsync a directory so renames and unlinks in it survive a crash."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def end_path(directory: Path, base: int, suffix: str) -> Path:
    """The file holding the end offset of the segments a cleaned segment replaces."""
    return directory / (segment_name(base, ".end") + suffix)


def write_end(directory: Path, base: int, end: int) -> None:
    """Write and fsync ``<base>.end.cleaned``."""
    with open(end_path(directory, base, CLEANED), "w", encoding="ascii") as f:
        f.write(str(end))
        f.flush()
        os.fsync(f.fileno())


def commit(directory: Path, base: int) -> None:
    """Rename the fsynced ``.cleaned`` files to ``.swap`` (the log file last: commit point)."""
    (log_c, index_c), (log_s, index_s) = (
        paths(directory, base, CLEANED),
        paths(directory, base, SWAP),
    )
    os.replace(index_c, index_s)
    os.replace(end_path(directory, base, CLEANED), end_path(directory, base, SWAP))
    os.replace(log_c, log_s)
    fsync_dir(directory)


def finish(directory: Path, base: int) -> None:
    """Rename the ``.swap`` files over the live ones (the replaced segments are gone)."""
    (log_s, index_s), (log_l, index_l) = paths(directory, base, SWAP), paths(directory, base, "")
    os.replace(index_s, index_l)
    os.replace(log_s, log_l)
    end_path(directory, base, SWAP).unlink(missing_ok=True)
    fsync_dir(directory)


def discard(directory: Path, base: int) -> None:
    """Remove the ``.cleaned`` and ``.swap`` files of ``base`` (an abandoned cleaning)."""
    for suffix in (CLEANED, SWAP):
        for path in (*paths(directory, base, suffix), end_path(directory, base, suffix)):
            path.unlink(missing_ok=True)


def crash_point(step: str) -> None:
    """Kill this process at ``step`` when ``$KCLIENT_CLEANER_CRASH_AT`` names it (crash tests)."""
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def _next_offset(path: Path, base: int) -> int:
    """Offset after the last valid entry of a segment file (``base`` when it has none)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        last = base - 1
        for info in EntryWalk(fd, 0, os.fstat(fd).st_size, validate=True, min_offset=base):
            last = info.last_offset
        return last + 1
    finally:
        os.close(fd)


def recover(directory: Path) -> set[int]:
    """Discard ``.cleaned`` files, complete interrupted swaps; the base offsets of the swapped-in
    segments (their indexes were removed: the caller rebuilds them)."""
    names = sorted(p.name for p in directory.iterdir())
    for name in names:
        if name.endswith(CLEANED):
            log.warning("%s: discarding %s of an interrupted cleaning", directory.name, name)
            (directory / name).unlink(missing_ok=True)
    swapped = set()
    for name in names:
        match = _SWAP_FILE.match(name)
        if match:
            swapped.add(_complete(directory, int(match.group(1))))
    for name in names:
        if name.endswith((".index" + SWAP, ".end" + SWAP)):
            (directory / name).unlink(missing_ok=True)
    if names:
        fsync_dir(directory)
    return swapped


def _complete(directory: Path, base: int) -> int:
    """Delete the segments a swap file replaces and give it the first one's name."""
    log_s, index_s = paths(directory, base, SWAP)
    end = _next_offset(log_s, base)
    try:
        end = max(end, int(end_path(directory, base, SWAP).read_text(encoding="ascii")))
    except (OSError, ValueError):
        pass
    for path in sorted(directory.iterdir()):
        match = _SEGMENT_FILE.match(path.name)
        if match and base <= int(match.group(1)) < max(end, base + 1):
            path.unlink(missing_ok=True)
    index_s.unlink(missing_ok=True)
    os.replace(log_s, paths(directory, base, "")[0])
    log.warning(
        "%s: completed the interrupted swap of segment %d (offsets up to %d)",
        directory.name,
        base,
        end,
    )
    return base


__all__ = [
    "CLEANED",
    "CRASH_ENV",
    "SWAP",
    "commit",
    "crash_point",
    "discard",
    "end_path",
    "finish",
    "fsync_dir",
    "paths",
    "recover",
    "write_end",
]
