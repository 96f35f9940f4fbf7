"""The command line's light path to a running server: one JSON request with the standard library alone (no httpx, no
pydantic, no accounting library), so ``dpcal --url … privacy|calibrate|utility|statement|algorithms|compose`` costs
little more than Python's own start. Also what the full client (:mod:`app.client`) shares with it: the request bodies
(:func:`body`, :func:`fields`) and the wording of a refusal (:class:`Refused`)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

TIMEOUT = 600.0
"""Seconds a request may take (a heavy answer has the server's own budget, DPCAL_REQUEST_TIMEOUT)."""


class Refused(Exception):
    """The service answered with problem details (4xx/5xx): the status, the title, the detail and the fields named
    (each ``{"loc", "message", "allowed"}``), worded as one line per field."""

    def __init__(self, status: int, title: str, detail: str, fields: Sequence[Mapping[str, Any]] = ()) -> None:
        self.status, self.title, self.detail, self.fields = status, title, detail, list(fields)
        lines = [f"{status} {title}" + ("" if self.fields else f": {detail}")]
        lines += [
            f"  {'.'.join(map(str, f['loc']))}: {f['message']}"
            + (f" (allowed: {f['allowed']})" if f.get("allowed") else "")
            for f in self.fields
        ]
        super().__init__("\n".join(lines))


def fields(**given: Any) -> dict[str, Any]:
    """The given fields as JSON (sequences as lists; None left out: the server's default)."""
    return {
        k: (list(v) if isinstance(v, Sequence) and not isinstance(v, str) else v)
        for k, v in given.items()
        if v is not None
    }


def body(algorithm: str, params: Mapping[str, Any], **given: Any) -> dict[str, Any]:
    """An algorithm's request: its id, its hyperparameters and the other fields given."""
    return {"algorithm": algorithm, "params": dict(params)} | fields(**given)


API_KEY_VARIABLE = "DPCAL_API_KEY"
"""The API key or access token clients send (``Authorization: Bearer``) where none is given: for a server with
DPCAL_AUTH=api-key or oidc."""


def auth_headers(api_key: str | None = None) -> dict[str, str]:
    """``Authorization: Bearer KEY`` for ``api_key``, else for :data:`API_KEY_VARIABLE`, else nothing."""
    key = api_key or os.environ.get(API_KEY_VARIABLE)
    return {"authorization": f"Bearer {key}"} if key else {}


def call(base_url: str, method: str, path: str, payload: Mapping[str, Any] | None = None) -> Any:
    """The JSON answer of ``method path`` on the server at ``base_url``; :class:`Refused` for problem details,
    :class:`OSError` (``urllib.error.URLError``) where the server cannot be reached."""
    data = None if payload is None else json.dumps(payload).encode()
    headers = {"accept": "application/json"} | ({"content-type": "application/json"} if data is not None else {})
    headers |= auth_headers()
    request = urllib.request.Request(base_url.rstrip("/") + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise refused(error.code, str(error.reason), error.read()) from None


def refused(status: int, reason: str, content: bytes) -> Refused:
    """The refusal an error response states (its problem details, or its first 500 characters)."""
    try:
        problem = json.loads(content)
    except ValueError:
        problem = None
    if not isinstance(problem, dict):
        return Refused(status, reason, content.decode(errors="replace")[:500])
    return Refused(
        status, str(problem.get("title", reason)), str(problem.get("detail", "")), problem.get("errors") or []
    )


class Record(dict[str, Any]):
    """A JSON object read by attribute, as the typed answers are (``answer.conventions.steps``); a missing name is an
    :class:`AttributeError`, so ``getattr(answer, name, default)`` works. Item access gives the raw JSON."""

    def __getattr__(self, name: str) -> Any:
        try:
            return readable(self[name])
        except KeyError:
            raise AttributeError(name) from None


def readable(value: Any) -> Any:
    """JSON with its objects as :class:`Record`."""
    if isinstance(value, dict) and not isinstance(value, Record):
        return Record(value)
    if isinstance(value, list):
        return [readable(item) for item in value]
    return value
