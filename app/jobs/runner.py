"""Where blocks of trials run. The manager only needs :class:`Runner`: submit a run of blocks, get a future of its raw
results. :class:`ProcessPoolRunner` is the embedded default; :class:`DaskRunner` sends the runs to a Dask cluster
(``DPCAL_JOB_BACKEND=dask``). Every block draws from its own ``SeedSequence`` child, so the results do not depend on
where or in which grouping the blocks run. A runner whose backend is lost (a dead pool, an unreachable cluster) fails
its futures with :class:`RunnerLost`: the manager then requeues the job, which resumes from its stored chunks."""

from __future__ import annotations

import multiprocessing
import os
from abc import ABC, abstractmethod
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import numpy as np

from accountants import registry
from accountants.verification import JobPlan, run_block

from ..host import exit_with_parent


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

    @abstractmethod
    def submit(self, plan: JobPlan, first: int, last: int) -> Future[dict[str, np.ndarray]]:
        """Start blocks ``first``..``last``; the future yields their raw results."""

    @abstractmethod
    def shutdown(self) -> None:
        """Stop the workers (pending runs are cancelled)."""


class ProcessPoolRunner(Runner):
    """A local pool of worker processes (spawned, so they share no state with the service; they exit when the
    service process dies)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=exit_with_parent,  # after a kill, a worker would wait forever on its own task queue
            initargs=(os.getpid(), 0, 1.0),
        )

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
