"""Where answers are computed: cheap ones at once, heavy ones bounded.

* **Cheap** answers (closed forms, Rényi curves; :class:`accountants.family.Cost`) run in the server's thread pool,
  at most ``DPCAL_MAX_CHEAP`` at once per process (:class:`CheapAdmission`): many at once would only share the
  interpreter lock with the event loop, and ``/healthz`` would wait behind them. A further one waits without a
  thread (at most ``DPCAL_MAX_CHEAP_WAITING`` of them, then 503 with Retry-After) for ``DPCAL_REQUEST_TIMEOUT`` at
  most (then 503), and stops waiting when its client leaves. They never wait for a heavy one: heavy work runs in
  other processes.
* **Heavy** answers (privacy-loss distributions, optimal compositions, searches over them) each run in a process of
  their own: one kept warm since it answered an earlier request (:mod:`app.heavy`), or a new one forked from a fork
  server that has imported the library once. At most ``DPCAL_MAX_HEAVY`` run at once
  on this host (one lock file per slot, shared by every server process; a further request gets 503 with
  Retry-After). Each has ``DPCAL_REQUEST_TIMEOUT`` seconds; past that, or when its client disconnects, the process
  is killed, so nothing keeps computing for a client that left, and the request answers 504 naming the budget.
* **Identical requests** are answered from a bounded LRU cache of reports (``DPCAL_CACHE_SIZE`` per process).
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import multiprocessing
import multiprocessing.forkserver
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from accountants.family import AlgorithmFamily, Cost, Operation

from . import heavy, metrics, observability, worker
from .heavy import HeavyProcess, HeavyProcesses
from .host import HostSlots
from .problems import ApiProblem
from .settings import Settings

_log = logging.getLogger("dpcal.compute")

RETRY_AFTER_SECONDS = 2
_POLL_SECONDS = 0.2
"""How often a waiting request (heavy, or cheap waiting for a slot) checks whether its client is still there."""


class AnswerCache:
    """The last ``size`` reports, by endpoint and canonical request body (used from the event loop only)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, Any] = OrderedDict()

    @staticmethod
    def key(kind: str, body: dict[str, Any]) -> str:
        return kind + json.dumps(body, sort_keys=True, separators=(",", ":"))

    def get(self, key: str) -> Any | None:
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        return None

    def put(self, key: str, value: Any) -> None:
        if self.size == 0:
            return
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


class CheapAdmission:
    """At most ``slots`` cheap computations of this process at once, at most ``waiting`` more queued (first come,
    first served). Used from the event loop only; bound to the loop it is first used in (a new loop — a test's new
    client — gets fresh slots)."""

    def __init__(self, slots: int, waiting: int) -> None:
        self.slots, self.waiting = slots, waiting
        self.queued = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None

    def _for_this_loop(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._semaphore is None or loop is not self._loop:
            self._loop, self._semaphore, self.queued = loop, asyncio.Semaphore(self.slots), 0
        return self._semaphore

    async def run(
        self, request: Request, settings: Settings, function: Callable[..., Any], args: tuple[Any, ...]
    ) -> Any:
        """``function(*args)`` in the thread pool once a slot is free (503 when too many wait, or past the budget;
        499 when the client left while waiting)."""
        semaphore = self._for_this_loop()
        if semaphore.locked():
            await self._wait(request, settings, semaphore)
        else:
            await semaphore.acquire()
        metrics.CHEAP_RUNNING.inc()
        try:
            return await run_in_threadpool(function, *args)
        finally:
            metrics.CHEAP_RUNNING.dec()
            semaphore.release()

    async def _wait(self, request: Request, settings: Settings, semaphore: asyncio.Semaphore) -> None:
        if self.queued >= self.waiting:
            metrics.OVERLOADED.labels("cheap").inc()
            raise cheap_busy(settings, "waiting")
        self.queued += 1
        acquiring = asyncio.ensure_future(semaphore.acquire())  # one place in the queue, kept while polling
        try:
            await wait_while_connected(
                request,
                lambda: asyncio.shield(acquiring),
                settings.request_timeout,
                lambda: cheap_busy(settings, "budget"),
                "cheap",
            )
        except BaseException:
            if acquiring.done() and not acquiring.cancelled():
                semaphore.release()  # acquired as the wait was given up: hand the slot on
            else:
                acquiring.cancel()
            raise
        finally:
            self.queued -= 1


async def wait_while_connected(
    request: Request,
    awaited: Callable[[], Awaitable[Any]],
    seconds: float,
    over: Callable[[], ApiProblem],
    reason: str,
) -> None:
    """Await ``awaited()`` for at most ``seconds``, looking every :data:`_POLL_SECONDS` whether the client is still
    there (499 when it left, the wait abandoned); past the time, ``over()`` is raised and counted as an overload for
    ``reason`` in ``/metrics``."""
    deadline = time.monotonic() + seconds
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            metrics.OVERLOADED.labels(reason).inc()
            raise over()
        try:
            await asyncio.wait_for(awaited(), timeout=min(_POLL_SECONDS, remaining))
            return
        except TimeoutError:
            if await request.is_disconnected():
                raise client_gone() from None


class Compute:
    """Answers requests for the API (one per server process)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.slots = HostSlots(settings.host_directory / "heavy", settings.max_heavy)
        self.running_by: collections.Counter[str] = collections.Counter()
        """Heavy computations running in this process by requester (DPCAL_AUTH=api-key: its share is bounded)."""
        self.cache = AnswerCache(settings.cache_size)
        self.cheap = CheapAdmission(settings.max_cheap, settings.max_cheap_waiting)
        self.ready = threading.Event()
        """Set once the fork server runs: a heavy request starts at once."""
        self._warming, self._warming_lock = False, threading.Lock()
        self._context = multiprocessing.get_context("forkserver")
        # each forked child runs the main script (`dpcal`, or `python -m app.cli`) again: multiprocessing's
        # "__main__" preload does not take effect. With what that script imports preloaded, that costs ~1 ms.
        self._context.set_forkserver_preload(["app.worker", "app.client"])
        self.processes = HeavyProcesses(self._context, settings.max_heavy, (settings.log_format, settings.log_level))
        """Heavy-computation processes kept warm between requests (:mod:`app.heavy`)."""

    def warm(self) -> None:
        """Start the fork server in the background (once), so the first heavy request does not pay its imports;
        :attr:`ready` is set when it runs (``/readyz`` is 503 until then)."""
        with self._warming_lock:
            if self._warming:
                return
            self._warming = True
        threading.Thread(target=self._start_fork_server, name="dpcal-forkserver", daemon=True).start()

    def _start_fork_server(self) -> None:
        multiprocessing.forkserver.ensure_running()
        self.ready.set()

    async def answer(
        self, request: Request, family: AlgorithmFamily[Any], operation: Operation, body: Any, args: tuple[Any, ...]
    ) -> Any:
        """``family.<operation>(*args)``: from the cache, in the thread pool (cheap) or in its own process (heavy).

        ``body`` (the validated request) keys the cache; ``args[0]`` are the hyperparameters."""
        accountant = getattr(body, "accountant", "best")
        return await self.call(
            request,
            operation.value + "/" + family.id,
            body,
            lambda: family.cost(operation, args[0], accountant),  # validates the parameters: microseconds
            worker.family_operation,
            (family.id, operation.value, *args),
        )

    async def call(
        self,
        request: Request,
        kind: str,
        body: Any,
        cost: Callable[[], Cost],
        function: Callable[..., Any],
        args: tuple[Any, ...],
    ) -> Any:
        """``function(*args)`` (a module-level function, so a heavy call can run in another process): from the cache
        (keyed by ``kind`` and the validated ``body``), in the thread pool if ``cost()`` is cheap, else in a process
        of its own with the time budget."""
        key = AnswerCache.key(kind, body.model_dump(mode="json"))
        cached = self.cache.get(key)
        observability.note_cache(cached is not None)
        if cached is not None:
            observability.note_accountant(cached)
            return cached
        if cost() is Cost.CHEAP:
            report = await self.cheap.run(request, self.settings, function, args)
        else:
            report = await self._heavy(request, function, args)
        self.cache.put(key, report)
        observability.note_accountant(report)
        return report

    async def _heavy(self, request: Request, function: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        requester: str | None = getattr(request.state, "requester", None)
        if requester is not None and self.running_by[requester] >= self.settings.heavy_per_principal:
            metrics.OVERLOADED.labels("share").inc()
            raise share_used(self.settings, requester)
        slot = self.slots.try_acquire()
        if slot is None:
            metrics.OVERLOADED.labels("busy").inc()
            raise busy(self.settings)
        metrics.HEAVY_RUNNING.inc()
        if requester is not None:
            self.running_by[requester] += 1
        try:
            running = await run_in_threadpool(self._start, function, args)
            answered = False
            try:
                status, value = await self._wait(request, running)
                answered = True
            finally:
                await run_in_threadpool(self._end, running, answered)
        finally:
            HostSlots.release(slot)
            metrics.HEAVY_RUNNING.dec()
            if requester is not None:
                self.running_by[requester] -= 1
                if not self.running_by[requester]:  # no entry per past client: the counter stays small
                    del self.running_by[requester]
        if status == "error":
            raise value
        return value

    def _start(self, function: Callable[..., Any], args: tuple[Any, ...]) -> HeavyProcess:
        """A warm process (or a new one) that computes ``function(*args)`` from now on."""
        request = (function, args, observability.current_id())
        try:
            return _handed(self.processes.take(), request)
        except OSError:  # a warm process that died since it answered (killed from outside): a fresh one
            return _handed(self.processes.start(), request)

    def _end(self, running: HeavyProcess, answered: bool) -> None:
        """After answering, the process waits for the next request; over budget or for a departed client (or if it
        died) it is killed."""
        if answered:
            self.processes.give_back(running)
        else:
            heavy.kill(running)

    async def _wait(self, request: Request, running: HeavyProcess) -> tuple[str, Any]:
        """The child's ("ok" | "error", value); kills it past the budget (504) or when the client leaves."""
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        fd = running.connection.fileno()
        loop.add_reader(fd, _resolve, ready)
        try:
            await wait_while_connected(
                request,
                lambda: asyncio.shield(ready),
                self.settings.request_timeout,
                lambda: timed_out(self.settings),
                "timeout",
            )
        finally:
            loop.remove_reader(fd)
        # the event loop (uvloop) leaves the pipe non-blocking, and an answer larger than the pipe's buffer is still
        # being written when the first bytes arrive: read it whole, blocking, off the event loop
        os.set_blocking(fd, True)
        try:
            outcome: tuple[str, Any] = await run_in_threadpool(running.connection.recv)
        except (EOFError, OSError):  # the pipe closed (EOF) or was reset: the process died before it answered
            raise process_died(running) from None
        return outcome


def _handed(process: HeavyProcess, request: tuple[Any, ...]) -> HeavyProcess:
    """``process``, sent ``request``; killed if the request could not be sent."""
    try:
        heavy.send(process, request)
    except BaseException:
        heavy.kill(process)
        raise
    return process


def _resolve(ready: asyncio.Future[None]) -> None:
    """The answer's pipe is readable: wake the waiting request (once)."""
    if not ready.done():
        ready.set_result(None)


def client_gone() -> ApiProblem:
    """The client left while its heavy answer was computed: the computation was stopped (nobody reads this)."""
    return ApiProblem(499, "client-closed-request", "Client closed the request", "the computation was stopped")


def busy(settings: Settings) -> ApiProblem:
    return ApiProblem(
        503,
        "heavy-capacity",
        "Heavy computations at capacity",
        f"all {settings.max_heavy} heavy-computation slots of this host are busy (DPCAL_MAX_HEAVY); retry after "
        f"{RETRY_AFTER_SECONDS} s, or ask for accountant 'rdp' (a Rényi bound, answered at once)",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        max_heavy=settings.max_heavy,
    )


def cheap_busy(settings: Settings, why: str) -> ApiProblem:
    """Too many cheap computations wait in this process (``why`` = "waiting"), or one waited its whole budget."""
    reason = (
        f"{settings.max_cheap_waiting} cheap computations already wait here (DPCAL_MAX_CHEAP_WAITING)"
        if why == "waiting"
        else f"no cheap-computation slot came free within the request budget of {settings.request_timeout:g} s"
    )
    return ApiProblem(
        503,
        "cheap-capacity",
        "Computations at capacity",
        f"{reason}; {settings.max_cheap} run at once per server process (DPCAL_MAX_CHEAP); retry after "
        f"{RETRY_AFTER_SECONDS} s",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def share_used(settings: Settings, requester: str) -> ApiProblem:
    return ApiProblem(
        503,
        "heavy-share",
        "Heavy computations at this requester's share",
        f"{requester} already runs {settings.heavy_per_principal} heavy computations here "
        f"(DPCAL_PRINCIPAL_MAX_HEAVY); retry after {RETRY_AFTER_SECONDS} s, or ask for accountant 'rdp'",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def process_died(running: HeavyProcess) -> ApiProblem:
    """The computation's process ended without an answer (killed from outside, out of memory, or unable to start):
    logged with its exit code; the client may retry (a fresh process computes it)."""
    code = None if running.process is None else running.process.exitcode
    metrics.HEAVY_DIED.inc()
    _log.error("a computation process ended without an answer (exit code %s)", code)
    return ApiProblem(
        503,
        "computation-process-died",
        "Computation process ended",
        f"the process computing this answer ended without one (exit code {code}); retry after {RETRY_AFTER_SECONDS} s",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        exit_code=code,
    )


def timed_out(settings: Settings) -> ApiProblem:
    budget = settings.request_timeout
    return ApiProblem(
        504,
        "computation-timeout",
        "Computation over budget",
        f"the answer needs more than the request budget of {budget:g} s (DPCAL_REQUEST_TIMEOUT) and was stopped; "
        "ask for accountant 'rdp' (a Rényi bound, answered at once), or ask the operator for a larger "
        "DPCAL_REQUEST_TIMEOUT",
        budget_seconds=budget,
    )
