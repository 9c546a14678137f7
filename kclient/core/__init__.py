"""The sans-IO core: every conversation with a broker, written once.

A conversation is a generator that yields :mod:`kclient.core.steps` (a request to send, a pause)
and is resumed with the answer (a response, or an exception thrown in).  It does no I/O, holds no
thread and knows nothing of asyncio, so the threaded driver (:func:`kclient.io.driver.run`) and the
asyncio driver (:func:`kclient.aio.driver.run`) run the same code.  See DESIGN.md.
"""

from .steps import Conversation, Gather, RawExchange, Request, Sleep, Step

__all__ = ["Conversation", "Gather", "RawExchange", "Request", "Sleep", "Step"]
