"""File regions: slices of segment files handed to the network layer (``os.sendfile``).

A segment's file descriptor is owned by a :class:`FileHandle` that closes it only when nobody
references it any more, so a region taken just before retention deletes its segment stays
readable: the file is unlinked from the directory but its open descriptor keeps the data alive.
"""

from __future__ import annotations

import os
import threading


class FileHandle:
    """An open file descriptor closed explicitly (``close``) or when garbage collected."""

    __slots__ = ("fd", "path", "_lock", "__weakref__")

    def __init__(self, path: os.PathLike[str] | str, flags: int = os.O_RDWR | os.O_CREAT) -> None:
        """Open ``path`` (created if missing) for reading and writing."""
        self.path = os.fspath(path)
        self.fd: int = os.open(self.path, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        """True once the descriptor was closed."""
        return self.fd < 0

    def close(self) -> None:
        """Close the descriptor once (idempotent, thread-safe)."""
        with self._lock:
            fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        """Release the descriptor when the last segment or region referencing it is gone."""
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown, nothing to report to
            pass


def pread_exact(fd: int, size: int, position: int) -> bytes:
    """Read up to ``size`` bytes at ``position`` (fewer only at end of file)."""
    data = os.pread(fd, size, position)
    if len(data) == size or not data:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, position + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


class FileRegion:
    """``size`` bytes of an open segment file starting at ``position``, sent with sendfile."""

    __slots__ = ("file", "position", "size", "_owner")

    def __init__(
        self, file: int, position: int, size: int, owner: FileHandle | None = None
    ) -> None:
        """``file`` is an open fd; ``owner`` keeps that fd open while this region lives."""
        self.file = file
        self.position = position
        self.size = size
        self._owner = owner

    def __len__(self) -> int:
        return self.size

    def fileno(self) -> int:
        """The file descriptor, so ``os.sendfile(sock, region.fileno(), ...)`` reads naturally."""
        return self.file

    def read(self) -> bytes:
        """The region's bytes (for paths without sendfile, and for tests)."""
        if self.size <= 0:
            return b""
        return pread_exact(self.file, self.size, self.position)

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.file}, position={self.position}, size={self.size})"


__all__ = ["FileHandle", "FileRegion", "pread_exact"]
