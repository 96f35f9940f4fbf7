"""Cheap computations admitted a few at a time (app.compute.CheapAdmission): waiters keep their place in line, a
waiter past its budget gets 503 without taking or leaking a slot, a full waiting room is 503 at once."""

from __future__ import annotations

import asyncio
import threading

import pytest

from app.compute import CheapAdmission
from app.problems import ApiProblem
from app.settings import Settings


class Client:
    async def is_disconnected(self) -> bool:
        return False


def test_waiters_are_served_in_order_and_one_past_its_budget_leaks_no_slot():
    settings = Settings(request_timeout=30.0, max_cheap=1)
    admission = CheapAdmission(slots=1, waiting=3)
    release = threading.Event()
    order: list[str] = []

    async def scenario() -> None:
        holder = asyncio.create_task(admission.run(Client(), settings, release.wait, ()))
        await asyncio.sleep(0.05)
        first = asyncio.create_task(admission.run(Client(), settings, order.append, ("first",)))
        await asyncio.sleep(0.3)  # the first waiter has polled (and kept its place) at least once
        second = asyncio.create_task(admission.run(Client(), settings, order.append, ("second",)))
        await asyncio.sleep(0.05)
        impatient = Settings(request_timeout=0.3, max_cheap=1)
        with pytest.raises(ApiProblem) as refused:
            await admission.run(Client(), impatient, order.append, ("impatient",))
        assert refused.value.status == 503 and "request budget" in refused.value.detail
        release.set()
        await asyncio.gather(holder, first, second)
        assert order == ["first", "second"]
        assert not admission._for_this_loop().locked() and admission.queued == 0  # every slot handed back

    asyncio.run(scenario())


def test_a_full_waiting_room_is_503_at_once():
    settings = Settings(max_cheap=1, max_cheap_waiting=0)
    admission = CheapAdmission(slots=1, waiting=0)
    release = threading.Event()

    async def scenario() -> None:
        holder = asyncio.create_task(admission.run(Client(), settings, release.wait, ()))
        await asyncio.sleep(0.05)
        with pytest.raises(ApiProblem) as refused:
            await admission.run(Client(), settings, print, ())
        assert refused.value.status == 503 and "DPCAL_MAX_CHEAP_WAITING" in refused.value.detail
        release.set()
        await holder

    asyncio.run(scenario())
