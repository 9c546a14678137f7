"""kclient.aio: native asyncio clients on the same sans-IO protocol layer (docs/asyncio.md).

``AIOProducer`` (``await send()`` -> RecordMetadata, batching, flush, close) and
``AIOConsumer`` (``async for``, group membership, commit, seek, getone/getmany) run on asyncio
streams: no thread per call, nothing blocking in the event loop.
"""

from __future__ import annotations

from .consumer import AIOConsumer, ConsumerRecord
from .producer import AIOProducer
from .share_consumer import AIOShareConsumer

__all__ = ["AIOProducer", "AIOConsumer", "ConsumerRecord", "AIOShareConsumer"]
