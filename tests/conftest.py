"""Shared fixtures: a real uvicorn server on loopback, started by the tests themselves (:mod:`tests.support.server`).

The suite mirrors the code: ``unit/`` (the accounting spine and mechanisms), ``families/`` (each algorithm family,
and a family registered from the test folder), ``service/`` (the app in process, and the project's plumbing), ``e2e/``
(a live server: every test there is marked ``slow``). Shared helpers and the independent oracles live in
``support/``. No web import at module level: library tests run without the web stack."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from .support.server import start_server, stop_server

if TYPE_CHECKING:
    import httpx


@pytest.fixture(scope="session")
def live_server() -> Iterator[str]:
    process, url = start_server()
    yield url
    stop_server(process)


@pytest.fixture
def http(live_server: str) -> Iterator[httpx.Client]:
    import httpx

    with httpx.Client(base_url=live_server, timeout=60) as client:
        yield client
