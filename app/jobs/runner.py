"""Where blocks of trials run. The manager only needs :class:`Runner`: submit a run of blocks, get a future of its raw
results. :class:`ProcessPoolRunner` is the embedded default; a distributed backend (Ray) would implement the same two
methods, and because every block draws from its own ``SeedSequence`` child the results would not change."""

from __future__ import annotations

import multiprocessing
import os
from abc import ABC, abstractmethod
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import numpy as np

from accountants import registry
from accountants.verification import Plan, run_block

from ..host import exit_with_parent


def run_blocks(plan_json: dict[str, Any], first: int, last: int) -> dict[str, np.ndarray]:
    """Blocks ``first``..``last`` of a plan, concatenated in block order (runs in a worker process)."""
    plan = Plan.from_json(plan_json)
    simulator = registry.get(plan.algorithm).simulator
    if simulator is None:  # pragma: no cover - the API refuses such jobs
        raise RuntimeError(f"{plan.algorithm} has no simulator")
    results = [run_block(simulator, plan, block) for block in range(first, last + 1)]
    return {name: np.concatenate([getattr(r, name) for r in results]) for name in ("utility", "score_in", "score_out")}


class Runner(ABC):
    """Executes runs of blocks; results must depend only on the plan and the block indices."""

    workers: int

    @abstractmethod
    def submit(self, plan: Plan, first: int, last: int) -> Future[dict[str, np.ndarray]]:
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

    def submit(self, plan: Plan, first: int, last: int) -> Future[dict[str, np.ndarray]]:
        return self._pool.submit(run_blocks, plan.to_json(), first, last)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class InlineRunner(Runner):
    """Runs in the calling thread (the CLI's in-process mode, and tests)."""

    workers = 1

    def submit(self, plan: Plan, first: int, last: int) -> Future[dict[str, np.ndarray]]:
        future: Future[dict[str, np.ndarray]] = Future()
        try:
            future.set_result(run_blocks(plan.to_json(), first, last))
        except Exception as error:
            future.set_exception(error)
        return future

    def shutdown(self) -> None:
        pass
