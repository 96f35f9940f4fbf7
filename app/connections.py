"""Connections that cannot be held open by a slow client: a deadline for every request's headers.

uvicorn bounds the idle time between requests on a kept-alive connection (``timeout_keep_alive``), and the request
gate (:mod:`app.gate`) bounds the time a body may take; nothing bounds the headers. A client sending them a byte at a
time ("slow loris") would hold its connection, and a few thousand such clients every file descriptor, for ever.

:class:`BoundedHeaders` is uvicorn's httptools protocol with one more timer: armed when a connection opens and when a
new request's first byte arrives, cancelled when that request's headers are complete. When it fires, the client is
sent ``408 Request Timeout`` and the connection is closed. The deadline is ``DPCAL_HEADER_TIMEOUT`` seconds
(:mod:`app.settings`); a proxy in front of the service should have its own (``deploy/``: nginx's
``client_header_timeout``).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .settings import Settings

TIMEOUT_RESPONSE = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


@functools.cache
def header_seconds() -> float:
    """``DPCAL_HEADER_TIMEOUT`` (read once per process: ``dpcal serve`` checked the settings before starting)."""
    return Settings.from_env().header_timeout


class BoundedHeaders(HttpToolsProtocol):
    """uvicorn's httptools protocol, with a deadline for each request's headers (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._header_deadline = self.loop.call_later(header_seconds(), self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if not self.transport.is_closing():
            self.transport.write(TIMEOUT_RESPONSE)
            self.transport.close()
