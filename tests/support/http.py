"""Assertions on the service's answers."""

from __future__ import annotations

PROBLEM = "application/problem+json"


def assert_problem(response, status, *fields):
    """An RFC 9457 problem with this status naming each of ``fields`` (as locations); its body."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    assert {"type", "title", "status", "detail"} <= body.keys()
    assert body["status"] == status
    named = {tuple(e["loc"]) for e in body.get("errors") or []}
    for field in fields:
        assert field in named, (field, named)
    return body
