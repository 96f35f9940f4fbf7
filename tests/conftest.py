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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules with slow tests first, each module's tests kept together (its fixtures set up once per worker): the
    long ones start at once on both cores, and the short ones fill the gaps at the end (``--dist worksteal``)."""
    slow_modules = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    order = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (item.nodeid.split("::")[0] not in slow_modules, order[id(item)]))


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
