"""What the service says about itself: a request id for every request, and log lines as text or JSON.

* **Request id.** Taken from the client's ``X-Request-ID`` where it is a short token (letters, digits, ``._:-``, at
  most 128 characters), else generated; echoed on the response, held in :data:`CURRENT` while the request runs
  and carried to whatever runs for it (a heavy computation's process, a job's record), so that every line logged for
  one request carries its id.
* **Logs.** ``DPCAL_LOG_FORMAT=text`` (default) or ``json``: one JSON object per line (time, level, logger, message,
  request id, principal, and the fields a line adds: method, route, status, latency, accountant, cache),
  tracebacks inside the line. A job's run logs with the id of the request that submitted it. One access line per
  request (``dpcal.access``) with its latency replaces uvicorn's.
"""

from __future__ import annotations

import contextvars
import json
import logging
import logging.config
import re
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

REQUEST_ID_HEADER = "X-Request-ID"


@dataclass
class RequestInfo:
    """What the access line of the request being answered will say beyond its status: its id, who asked (the
    principal, once authenticated) and whether its answer came from the cache (``hit``/``miss``; None where no cache
    was consulted)."""

    id: str
    cache: str | None = None
    principal: str | None = None
    accountant: str | None = None


CURRENT: contextvars.ContextVar[RequestInfo | None] = contextvars.ContextVar("dpcal_request", default=None)
"""The request being answered (None outside one); shared by the threads and tasks working for it."""
FIELDS = ("request_id", "principal", "method", "route", "status", "latency_ms", "accountant", "cache", "client")
"""The fields a log line may add to its message (``extra=``), in the order a JSON line shows them."""

_ACCEPTED_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
access_log = logging.getLogger("dpcal.access")


def request_id(given: str | None) -> str:
    """The client's request id where it is a short token, else a new one (32 hex digits)."""
    if given is not None and _ACCEPTED_ID.fullmatch(given):
        return given
    return uuid.uuid4().hex


def current_id() -> str | None:
    """The id of the request being answered (None outside one)."""
    info = CURRENT.get()
    return None if info is None else info.id


def note_cache(hit: bool) -> None:
    """The answer of the request being answered came from the cache (or not)."""
    info = CURRENT.get()
    if info is not None:
        info.cache = "hit" if hit else "miss"


def note_accountant(report: object) -> None:
    """The accountant whose guarantee the request's answer reports (where the answer names one)."""
    info = CURRENT.get()
    accountant = getattr(report, "accountant", None)
    if info is not None and isinstance(accountant, str):
        info.accountant = accountant


def note_principal(name: str) -> None:
    """The request being answered was authenticated as ``name``."""
    info = CURRENT.get()
    if info is not None:
        info.principal = name


@contextmanager
def working_for(request_id: str | None, principal: str | None = None) -> Iterator[None]:
    """Lines logged inside carry ``request_id`` and ``principal``: a job's run, in a worker, logs with the id of
    the request that submitted it."""
    token = CURRENT.set(RequestInfo(request_id, principal=principal) if request_id else None)
    try:
        yield
    finally:
        CURRENT.reset(token)


class RequestIdFilter(logging.Filter):
    """Adds the current request's id (and principal) to every record that has none."""

    def filter(self, record: logging.LogRecord) -> bool:
        info = CURRENT.get()
        if getattr(record, "request_id", None) is None:
            record.request_id = None if info is None else info.id
        if getattr(record, "principal", None) is None and info is not None:
            record.principal = info.principal
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                line[field] = value
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``level logger [request id] message field=value …``."""

    def format(self, record: logging.LogRecord) -> str:
        rid = getattr(record, "request_id", None)
        fields = " ".join(
            f"{name}={getattr(record, name)}"
            for name in FIELDS[1:]
            if getattr(record, name, None) is not None and name != "route"
        )
        text = f"{record.levelname}: {record.name}{f' [{rid}]' if rid else ''} {record.getMessage()}"
        text = f"{text} {fields}" if fields else text
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def configure(log_format: str, level: str) -> None:
    """This process logs as a server process does (:func:`uvicorn_log_config`): for a process a server starts (a
    heavy computation's)."""
    logging.config.dictConfig(uvicorn_log_config(log_format, level))


def uvicorn_log_config(log_format: str, level: str) -> dict[str, Any]:
    """The logging of a server process (``dpcal serve`` passes it to uvicorn, which applies it in every server
    process): the ``dpcal`` loggers and uvicorn's own in ``log_format`` (uvicorn's access log is off: ``dpcal.access``
    has one line per request). The service embedded in another program (the in-process CLI, tests) logs as that
    program configures."""
    level_name = "DEBUG" if level == "trace" else level.upper()  # uvicorn's trace is below debug
    name = "app.observability.JsonFormatter" if log_format == "json" else "app.observability.TextFormatter"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"dpcal": {"()": name}},
        "filters": {"request_id": {"()": "app.observability.RequestIdFilter"}},
        "handlers": {
            "default": {
                "class": "logging.StreamHandler",
                "formatter": "dpcal",
                "filters": ["request_id"],
                "stream": "ext://sys.stderr",
            }
        },
        "loggers": {
            "dpcal": {"handlers": ["default"], "level": level_name, "propagate": False},
            "uvicorn": {"handlers": ["default"], "level": level_name},
            "uvicorn.error": {"level": level_name},
            "uvicorn.access": {"handlers": [], "propagate": False},
        },
    }


def log_access(scope: Mapping[str, Any], route: str | None, status: int, seconds: float, info: RequestInfo) -> None:
    """The request's access line: method, route (the path template where one matched, else the path), status,
    latency."""
    client = scope.get("client")
    access_log.info(
        "%s %s %d",
        scope.get("method"),
        scope.get("path"),
        status,
        extra={
            "method": scope.get("method"),
            "route": route or scope.get("path"),
            "status": status,
            "latency_ms": round(seconds * 1000.0, 3),
            "cache": info.cache,
            "accountant": info.accountant,
            "request_id": info.id,
            "principal": info.principal,
            "client": None if not client else client[0],
        },
    )
