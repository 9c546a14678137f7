"""A broker before 0.10 as the handshake sees one (for the old-broker fallback's tests): it
answers Metadata v0 and closes the connection on any other request (ApiVersions included),
as Kafka 0.8/0.9 close on an API key they do not know."""

from __future__ import annotations

import socket

from kclient.protocol.apis import API_VERSIONS, METADATA
from kclient.protocol.framing import ServerProtocol

__all__ = ["serve_like_0_9"]


def serve_like_0_9(c: socket.socket) -> None:
    """Serve one accepted connection as a 0.9 broker until it closes (ends on OSError too)."""
    proto = ServerProtocol({API_VERSIONS.key: API_VERSIONS, METADATA.key: METADATA})
    try:
        while data := c.recv(65536):
            for req in proto.receive_bytes(data):
                if req.header.api_key != METADATA.key or req.header.api_version != 0:
                    c.close()
                    return
                c.sendall(proto.encode_response(req.header, {"brokers": [], "topics": []}))
    except OSError:
        pass
