"""The threaded driver: runs the sans-IO core's conversations on blocking sockets and threads."""

from .driver import ConnectionTransport, Transport, run

__all__ = ["ConnectionTransport", "Transport", "run"]
