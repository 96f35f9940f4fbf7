"""The error answers the routes document (each an RFC 9457 problem)."""

from __future__ import annotations

from typing import Any

from ..problems import PROBLEM_MEDIA_TYPE

PROBLEM_CONTENT = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"content": PROBLEM_CONTENT, "description": "Malformed JSON."},
    404: {"content": PROBLEM_CONTENT, "description": "Unknown algorithm (the problem lists the valid ids)."},
    413: {"content": PROBLEM_CONTENT, "description": "Request body too large."},
    415: {"content": PROBLEM_CONTENT, "description": "The body is not sent as application/json."},
    422: {"content": PROBLEM_CONTENT, "description": "Invalid input: each offending field with what is allowed."},
    503: {
        "content": PROBLEM_CONTENT,
        "description": "Every heavy-computation slot of the host is busy (DPCAL_MAX_HEAVY); retry after Retry-After "
        "seconds, or ask for the rdp accountant.",
    },
    504: {
        "content": PROBLEM_CONTENT,
        "description": "The computation exceeded the request budget (DPCAL_REQUEST_TIMEOUT) and was stopped.",
    },
}
POST_ERRORS: dict[int | str, dict[str, Any]] = {k: ERRORS[k] for k in (400, 404, 413, 415, 422, 503, 504)}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The documented error answers with these statuses."""
    return {status: ERRORS[status] for status in statuses}
