"""Base classes of kclient's errors and the code -> class registry (see :mod:`.errors`)."""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "KafkaError",
    "ProtocolDecodeError",
    "UnsupportedCodecError",
    "BrokerResponseError",
    "UnrecognizedBrokerError",
    "error_for_code",
    "raise_for_code",
    "code_for_exception",
    "all_error_classes",
]

_BY_CODE: dict[int, type[BrokerResponseError]] = {}
_UNRECOGNIZED: dict[int, type[BrokerResponseError]] = {}


def _rebuild(
    cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]
) -> BaseException:
    """Recreate an exception without calling __init__, so pickling keeps every attribute."""
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class KafkaError(Exception):
    """Base of every error kclient raises, client-side and broker-reported alike."""

    retriable: ClassVar[bool] = False
    invalid_metadata: ClassVar[bool] = False

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by args and attributes (exceptions cross process boundaries, e.g. in Spark)."""
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


class ProtocolDecodeError(KafkaError):
    """Bytes that cannot be decoded: truncated frames, garbage, lying length fields."""


class UnsupportedCodecError(KafkaError):
    """A compression codec that is unknown or whose Python package is not installed."""


class BrokerResponseError(KafkaError):
    """An error code a broker put in a response; one subclass per Kafka error code."""

    errno: ClassVar[int] = -1
    message: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    description: ClassVar[str] = ""
    # where it happened, set on errors whose reader knows (kclient.simple's fetcher, per
    # partition; CorruptRecordError always has ``offset``); absent otherwise
    topic: str
    partition: int
    offset: int | None

    def __init_subclass__(
        cls,
        errno: int | None = None,
        message: str | None = None,
        retriable: bool = False,
        invalid_metadata: bool = False,
        **kwargs: Any,
    ) -> None:
        """Register a class per code; subclasses without ``errno`` inherit their parent's."""
        super().__init_subclass__(**kwargs)
        if errno is None:
            return
        cls.errno, cls.message = errno, message or f"ERROR_{errno}"
        cls.retriable, cls.invalid_metadata = retriable, invalid_metadata
        cls.description = " ".join((cls.__doc__ or "").split())
        _BY_CODE.setdefault(errno, cls)

    def __init__(self, context: str = "", *args: Any) -> None:
        """Keep ``context``: what the error was about, e.g. ``"topic events partition 0"``."""
        super().__init__(context, *args)
        self.context = str(context)

    def __str__(self) -> str:
        """Kafka's name, the code, the context and Kafka's description."""
        about = f" for {self.context}" if self.context else ""
        text = f"{self.message} (error {self.errno}){about}"
        return f"{text}: {self.description}" if self.description else text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.context!r})"


class UnrecognizedBrokerError(BrokerResponseError):
    """The broker answered with an error code this client does not know."""

    message: ClassVar[str] = "UNRECOGNIZED_ERROR_CODE"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle through the code: the per-code classes are made on demand."""
        return (_rebuild_unrecognized, (self.errno, self.args, dict(self.__dict__)))


def _rebuild_unrecognized(code: int, args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    """Recreate an UnrecognizedBrokerError for ``code`` after unpickling."""
    return _rebuild(error_for_code(code), args, state)


def error_for_code(code: int) -> type[BrokerResponseError]:
    """The class for a Kafka error code; unknown codes get a cached class keeping the code."""
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls
    if code == 0:
        raise ValueError("error code 0 (NONE) means success; it has no error class")
    cls = _UNRECOGNIZED.get(code)
    if cls is None:
        cls = type(f"UnrecognizedBrokerError{code}", (UnrecognizedBrokerError,), {})
        cls.errno = code
        cls.description = f"The broker returned error code {code}, unknown to this client."
        _UNRECOGNIZED[code] = cls
    return cls


def raise_for_code(code: int, context: str = "") -> None:
    """Raise the error for ``code`` with ``context``; do nothing for 0 (NONE)."""
    if code:
        raise error_for_code(code)(context)


def code_for_exception(exc: BaseException) -> int:
    """The error code a broker sends for ``exc``: its ``errno``, else -1 UNKNOWN_SERVER_ERROR."""
    return exc.errno if isinstance(exc, BrokerResponseError) else -1


def all_error_classes() -> dict[int, type[BrokerResponseError]]:
    """Every known code and its class, in code order (for docs and the broker)."""
    return dict(sorted(_BY_CODE.items()))
