"""The error answers the routes document (each an RFC 9457 problem)."""

from __future__ import annotations

from typing import Any

from ..problems import PROBLEM_MEDIA_TYPE

PROBLEM_CONTENT = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"content": PROBLEM_CONTENT, "description": "Malformed JSON."},
    401: {
        "content": PROBLEM_CONTENT,
        "description": "No live API key or valid token (DPCAL_AUTH=api-key or oidc; for accounting only with "
        "DPCAL_AUTH_ACCOUNTING=required): send Authorization: Bearer <key or token>.",
    },
    403: {
        "content": PROBLEM_CONTENT,
        "description": "The principal's scope does not allow this (read: no submit or cancel), or a token grants "
        "no dpcal scope.",
    },
    404: {"content": PROBLEM_CONTENT, "description": "Unknown algorithm (the problem lists the valid ids)."},
    408: {"content": PROBLEM_CONTENT, "description": "The request body did not arrive within 30 seconds."},
    413: {"content": PROBLEM_CONTENT, "description": "Request body too large (declared, or received in chunks)."},
    415: {"content": PROBLEM_CONTENT, "description": "The body is not sent as application/json."},
    429: {
        "content": PROBLEM_CONTENT,
        "description": "The requester's request rate is spent (DPCAL_PRINCIPAL_RATE, DPCAL_PRINCIPAL_BURST; under "
        "DPCAL_AUTH api-key or oidc); retry after Retry-After seconds.",
    },
    422: {
        "content": PROBLEM_CONTENT,
        "description": "Invalid input: each offending field with what is allowed. Besides this document's schemas, "
        "the rules a JSON schema cannot state answer 422 too: an algorithm's own conditions on its parameters "
        "(e.g. exactly one of steps and epochs; the noise knob required for privacy, which calibration computes; "
        "values whose products leave double precision); limits the operator sets (DPCAL_JOB_MAX_TRIALS, "
        "DPCAL_JOB_MAX_SECONDS); an event tree's size and depth; a cursor this endpoint did not return; and a "
        "calibration target no noise can meet (calibration-infeasible, naming the reachable targets).",
    },
    503: {
        "content": PROBLEM_CONTENT,
        "description": "At capacity: every heavy-computation slot of the host is busy (DPCAL_MAX_HEAVY), the "
        "requester's share of them is in use (DPCAL_PRINCIPAL_MAX_HEAVY), too many cheap computations wait "
        "(DPCAL_MAX_CHEAP_WAITING), or the identity provider cannot be reached; retry after Retry-After seconds, or "
        "ask for the rdp accountant.",
    },
    504: {
        "content": PROBLEM_CONTENT,
        "description": "The computation exceeded the request budget (DPCAL_REQUEST_TIMEOUT) and was stopped.",
    },
}
POST_ERRORS: dict[int | str, dict[str, Any]] = {
    k: ERRORS[k] for k in (400, 401, 404, 408, 413, 415, 422, 429, 503, 504)
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The documented error answers with these statuses."""
    return {status: ERRORS[status] for status in statuses}
