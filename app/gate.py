"""The gate every HTTP request passes before any route: it names the request, bounds its body and says how it went.

A plain ASGI middleware (Starlette's ``BaseHTTPMiddleware`` would hide the client's disconnection from the endpoints,
and abandoned heavy computations would run on). For every HTTP request it

* gives it an id (the client's ``X-Request-ID`` where acceptable, :func:`~app.observability.request_id`), echoed
  on the response and on every log line written for it;
* refuses a method a documented path does not serve (405, ``Allow`` listing every method the OpenAPI document gives
  that path — the router alone names only its first route's), then, before any parsing, a body declared larger
  than the limit (413), a POST body that is not JSON (415), a body that grows past the limit as it arrives,
  whatever its encoding (chunked: 413 as soon as the limit is crossed, the rest never read), and a body still
  arriving after :data:`BODY_SECONDS` (408);
* answers HEAD for every GET (the same status and headers, no body);
* adds the security headers to every response (no MIME sniffing, no framing, no referrer);
* writes one access line (method, route, status, latency, cache) and counts the request in ``/metrics``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

from fastapi import Request
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import metrics, observability, problems

JSON_MEDIA_TYPES = ("application/json",)
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"})
BODY_SECONDS = 30.0
"""A request body must have arrived whole within this time (then 408): a client sending it byte by byte holds no
connection longer."""
SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"referrer-policy", b"no-referrer"),
)


class RequestGate:
    """The gate (module docstring)."""

    def __init__(self, app: ASGIApp, max_body_bytes: int, documented: Callable[[], Mapping[str, Any]] = dict) -> None:
        """``documented()``: the OpenAPI document's ``paths`` (read on the first request, once the routes exist)."""
        self.app, self.max_body_bytes, self._documented = app, max_body_bytes, documented

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request = Request(scope)
        info = observability.RequestInfo(observability.request_id(request.headers.get(observability.REQUEST_ID_HEADER)))
        token = observability.CURRENT.set(info)
        response = _Response(send, info.id)
        routed = scope  # the scope the router sees (and notes the matched route in)
        try:
            problem = self._refusal(request)
            if problem is None and scope["method"] in BODY_METHODS:
                receive, problem = await self._buffered(receive)
            if problem is not None:
                await problems.problem_response(request, problem)(scope, receive, response.send)
            elif scope["method"] == "HEAD":  # every GET answers HEAD
                routed = {**scope, "method": "GET"}
                await self.app(routed, receive, _headers_only(response.send))
            else:
                await self.app(scope, receive, response.send)
        finally:
            observability.CURRENT.reset(token)
            route = getattr(routed.get("route"), "path", None)  # the template the router matched
            seconds = time.perf_counter() - started
            observability.log_access(scope, route, response.status, seconds, info)
            metrics.observe_request(route, request.method, response.status, seconds)

    async def _buffered(self, receive: Receive) -> tuple[Receive, problems.ApiProblem | None]:
        """The whole body read here, whatever its encoding, within the limit and :data:`BODY_SECONDS` (413 past
        the limit, the rest never read; 408 for a body still arriving after that time); then ``receive`` replays
        it as one message and passes on what follows (the client's disconnection)."""
        parts, size = [], 0
        try:
            async with asyncio.timeout(BODY_SECONDS):  # one timer for the whole body (not one per chunk)
                while True:
                    message = await receive()
                    if message["type"] != "http.request":  # the client left: the route sees it
                        return _replay(message, receive), None
                    size += len(message.get("body", b""))
                    if size > self.max_body_bytes:
                        return receive, self._too_large()
                    parts.append(message.get("body", b""))
                    if not message.get("more_body", False):
                        body = {"type": "http.request", "body": b"".join(parts), "more_body": False}
                        return _replay(body, receive), None
        except TimeoutError:
            return receive, _too_slow()

    def _too_large(self) -> problems.ApiProblem:
        return problems.ApiProblem(
            413,
            "too-large",
            "Request body too large",
            f"the body is limited to {self.max_body_bytes} bytes (DPCAL_MAX_BODY_BYTES)",
        )

    def _refusal(self, request: Request) -> problems.ApiProblem | None:
        allowed = self.methods_at(request.url.path)
        if allowed and request.method not in allowed:
            detail = f"{request.method} is not served at this path; it serves {', '.join(allowed)}"
            return problems.ApiProblem(
                405, "method-not-allowed", "Method not allowed", detail, headers={"Allow": ", ".join(allowed)}
            )
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            return self._too_large()
        given = request.headers.get("content-type")
        if request.method == "POST" and allowed and not _is_json(given):
            return problems.ApiProblem(
                415,
                "unsupported-media-type",
                "Unsupported media type",
                "the body must be sent as application/json (Content-Type: application/json), got "
                f"{'no Content-Type' if given is None else repr(given)}",
            )
        return None

    def methods_at(self, path: str) -> tuple[str, ...]:
        """The methods the OpenAPI document gives ``path`` (HEAD wherever GET is), sorted; empty for a path it does
        not document (the router answers those)."""
        return next((methods for pattern, methods in self._paths if pattern.fullmatch(path)), ())

    @cached_property
    def _paths(self) -> list[tuple[re.Pattern[str], tuple[str, ...]]]:
        # each path template as the router compiles it (a ``{parameter}`` is one path segment)
        return [(compile_path(path)[0], _methods(item)) for path, item in self._documented().items()]


class _Response:
    """``send`` adding the request id and the security headers, remembering the status."""

    def __init__(self, send: Send, request_id: str) -> None:
        self._send, self._id = send, request_id.encode()
        self.started, self.status = False, 500  # a response never started: the server answers 500 or drops it

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started, self.status = True, message["status"]
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"]
            message = {**message, "headers": [*headers, (b"x-request-id", self._id), *SECURITY_HEADERS]}
        await self._send(message)


def _replay(first: Message, receive: Receive) -> Receive:
    """``receive`` that returns ``first``, then what ``receive`` returns."""
    pending = [first]

    async def receiving() -> Message:
        return pending.pop() if pending else await receive()

    return receiving


def _too_slow() -> problems.ApiProblem:
    return problems.ApiProblem(
        408, "request-timeout", "Request body too slow", f"the body must arrive within {BODY_SECONDS:g} seconds"
    )


def _headers_only(send: Send) -> Send:
    """``send`` without the body of the response (for HEAD)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.body":
            if message.get("more_body", False):
                return
            message = {"type": "http.response.body", "body": b"", "more_body": False}
        await send(message)

    return sending


def _methods(item: Mapping[str, Any]) -> tuple[str, ...]:
    methods = {key.upper() for key in item if key.upper() in HTTP_METHODS}
    return tuple(sorted(methods | ({"HEAD"} if "GET" in methods else set())))


def _is_json(content_type: str | None) -> bool:
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    return media_type in JSON_MEDIA_TYPES or media_type.endswith("+json")
