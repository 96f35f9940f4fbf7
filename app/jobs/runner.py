"""Where blocks of trials run. The manager only needs :class:`Runner`: submit a run of blocks, get a future of its raw
results. :class:`ProcessPoolRunner` is the embedded default; :class:`DaskRunner` sends the runs to a Dask cluster
(``DPCAL_JOB_BACKEND=dask``). Every block draws from its own ``SeedSequence`` child, so the results do not depend on
where or in which grouping the blocks run. A runner whose backend is lost (a dead pool, an unreachable cluster) fails
its futures with :class:`RunnerLost`: the manager then requeues the job, which resumes from its stored chunks."""

from __future__ import annotations

import multiprocessing
import os
import time
from abc import ABC, abstractmethod
from concurrent.futures import Future, ProcessPoolExecutor, wait
from typing import Any

import numpy as np

from accountants import registry
from accountants.verification import JobPlan, run_block

from ..host import contention, exit_with_parent


def run_blocks(plan_json: dict[str, Any], first: int, last: int) -> dict[str, np.ndarray]:
    """Blocks ``first``..``last`` of a plan, concatenated in block order (runs in a worker process)."""
    plan = JobPlan.from_json(plan_json)
    simulator = registry.get(plan.algorithm).simulator
    if simulator is None:  # pragma: no cover - the API refuses such jobs
        raise RuntimeError(f"{plan.algorithm} has no simulator")
    results = [run_block(simulator, plan, block) for block in range(first, last + 1)]
    return {name: np.concatenate([getattr(r, name) for r in results]) for name in ("utility", "score_in", "score_out")}


class RunnerLost(RuntimeError):
    """The backend running the blocks is gone (not the simulation's own error): the job is recovered, not failed."""


class Runner(ABC):
    """Executes runs of blocks; results must depend only on the plan and the block indices."""

    workers: int

    def ready(self, timeout: float) -> bool:
        """Whether the workers are started (waiting at most ``timeout`` seconds); a job is claimed only then, so its
        running time and rate measure the run, not the workers' start."""
        return True

    def startup_left(self) -> float:
        """Seconds until the workers are expected to be started (0 once they are)."""
        return 0.0

    @abstractmethod
    def submit(self, plan: JobPlan, first: int, last: int) -> Future[dict[str, np.ndarray]]:
        """Start blocks ``first``..``last``; the future yields their raw results."""

    @abstractmethod
    def shutdown(self) -> None:
        """Stop the workers (pending runs are cancelled)."""


MIN_START_SECONDS = 0.5
"""The least a spawned worker's start is expected to take (Python and the accounting library with every family)."""


def _start_worker(parent: int) -> None:
    """A worker's initializer: it exits with the service (after a kill, a worker would wait forever on its own task
    queue), and it has imported the library with every family (this module's imports) before its first task."""
    exit_with_parent(parent, 0, 1.0)


def _started() -> int:
    return os.getpid()


LOADED_CPU_SECONDS = time.process_time()
"""This process's CPU time when this module was loaded: Python, the service and the library with every family, which
is what a spawned worker loads before its first task."""


def _expected_start() -> float:
    """Seconds the workers are expected to take to start: :data:`LOADED_CPU_SECONDS`, stretched by the host's
    :func:`~app.host.contention` (measured 1–1.6 × the CPU time on a 2-core machine at a load of 3–4.5)."""
    return max(MIN_START_SECONDS, LOADED_CPU_SECONDS * contention())


class ProcessPoolRunner(Runner):
    """A local pool of worker processes (spawned, so they share no state with the service; they exit when the
    service process dies), started as soon as it is made: a first job does not wait for Python and the library to
    load in its workers, and its estimate says how long they still need while they do."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(os.getpid(),),
        )
        self._created = time.monotonic()
        self._expected = _expected_start()
        self._starting = [self._pool.submit(_started) for _ in range(workers)]  # one per worker: each one spawns

    def ready(self, timeout: float) -> bool:
        _, pending = wait(self._starting, timeout=timeout)
        return not pending

    def startup_left(self) -> float:
        if all(future.done() for future in self._starting):
            return 0.0
        elapsed = time.monotonic() - self._created
        return max(0.1 * self._expected, self._expected - elapsed, 0.5 * elapsed)  # overdue: a busier host than read

    def submit(self, plan: JobPlan, first: int, last: int) -> Future[dict[str, np.ndarray]]:
        return self._pool.submit(run_blocks, plan.to_json(), first, last)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class InlineRunner(Runner):
    """Runs in the calling thread (the CLI's in-process mode, and tests)."""

    workers = 1

    def submit(self, plan: JobPlan, first: int, last: int) -> Future[dict[str, np.ndarray]]:
        future: Future[dict[str, np.ndarray]] = Future()
        try:
            future.set_result(run_blocks(plan.to_json(), first, last))
        except Exception as error:
            future.set_exception(error)
        return future

    def shutdown(self) -> None:
        pass


class DaskRunner(Runner):
    """Runs of blocks as tasks on a Dask cluster at ``address`` (``DPCAL_DASK_ADDRESS``), from the process that runs
    jobs (a ``dpcal worker``), never from an API process. A Dask worker lost mid-task has its task rerun elsewhere by
    the scheduler; a lost scheduler fails the futures with :class:`RunnerLost`."""

    def __init__(self, address: str, timeout: float = 30.0) -> None:
        import distributed

        client_class: Any = distributed.Client  # distributed is not typed
        self._client: Any = client_class(address, timeout=timeout, set_as_default=False)
        self.workers = max(1, sum(self._client.nthreads().values()))

    def submit(self, plan: JobPlan, first: int, last: int) -> Future[dict[str, np.ndarray]]:
        out: Future[dict[str, np.ndarray]] = Future()
        try:
            task = self._client.submit(run_blocks, plan.to_json(), first, last, pure=False, retries=2)
        except Exception as error:  # the client cannot reach the scheduler
            out.set_exception(RunnerLost(f"the Dask cluster is unreachable: {type(error).__name__}: {error}"))
            return out

        def done(finished: Any) -> None:
            try:
                out.set_result(finished.result())
            except Exception as error:
                out.set_exception(_lost(error))

        task.add_done_callback(done)
        return out

    def shutdown(self) -> None:
        self._client.close()


def _lost(error: Exception) -> Exception:
    """The Dask error as the manager should see it: a lost worker, scheduler or connection is :class:`RunnerLost`;
    anything raised by the simulation itself is passed on."""
    from distributed import KilledWorker
    from distributed.comm.core import CommClosedError

    if isinstance(error, KilledWorker | CommClosedError | OSError | TimeoutError) or type(error).__name__ in (
        "CancelledError",
        "FutureCancelledError",
    ):
        return RunnerLost(f"the Dask cluster lost the task: {type(error).__name__}: {error}")
    return error
