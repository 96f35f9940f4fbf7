"""Verification-job throughput: trials per second of each family's example job in one process (utility and audit
apart), then of one job on the local worker pool with 1, 2 and 4 worker processes and on a Dask LocalCluster
(2 single-threaded workers on loopback), on this machine, in one process.

The job: DP-SGD on 1000 records, batches of 50, 100 steps (utility and privacy audit; its per-trial training loop
is the slowest simulation), 1024 trials, timed after a warm-up job (worker processes started). Each
backend runs the same job from a fresh SQLite store; the results are checked to be identical.

Run: ``python benchmarks/jobs.py`` (needs the ``test`` extra, or ``dask``: distributed).
"""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/http.py would shadow the standard library's http (imported by Dask) from this script's folder
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import dataclasses  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

from accountants import registry  # noqa: E402
from app.jobs.manager import JobManager  # noqa: E402
from app.jobs.runner import DaskRunner, ProcessPoolRunner, Runner  # noqa: E402
from app.settings import Settings  # noqa: E402

TRIALS = 1024
PARAMS = {"dataset_size": 1000, "batch_size": 50, "steps": 100, "noise_multiplier": 1.0}


def finish(manager: JobManager, job_id: str) -> Any:
    """Wait for a job; its result."""
    while not (job := manager.store.get(job_id)) or not job.finished:
        time.sleep(0.01)
    return job.result


def run(runner: Callable[[], Runner]) -> tuple[float, Any]:
    """Seconds from submission to the result, and the result."""
    body = {
        "algorithm": "dp-sgd",
        "params": PARAMS,
        "delta": 1e-5,
        "checks": ["utility", "privacy-audit"],
        "trials": TRIALS,
        "seed": 3,
    }
    with tempfile.TemporaryDirectory() as folder:
        settings = dataclasses.replace(Settings(), jobs_db=f"{folder}/jobs.sqlite3", job_max_work=1e15)
        manager = JobManager(settings, runner_factory=runner)
        manager.start()
        try:
            finish(manager, manager.submit(body | {"trials": 128, "seed": 0}, None)[0].id)  # workers started
            start = time.perf_counter()
            result = finish(manager, manager.submit(body, None)[0].id)
            return time.perf_counter() - start, result
        finally:
            manager.stop()


def per_family() -> None:
    """Trials per second of one process for each family's example job, utility and audit apart (4 blocks each)."""
    from accountants.planning import plan_job
    from accountants.verification import BLOCK_TRIALS, run_block

    print(f"per family, one process, {4 * BLOCK_TRIALS} trials of each example job:")
    for family in registry.families():
        simulator, example = family.simulator, family.job_example
        if simulator is None or example is None:
            continue
        rates = []
        for check in ("utility", "privacy-audit"):
            if check not in simulator.checks:
                rates.append("      —")
                continue
            plan = plan_job(
                family,
                example["params"],
                example["delta"],
                (check,),
                4 * BLOCK_TRIALS,
                int(example.get("seed", 0)),
                example.get("problem"),
                example.get("target_epsilon"),
            )
            start = time.perf_counter()
            for block in range(4):
                run_block(simulator, plan, block)
            rates.append(f"{4 * BLOCK_TRIALS / (time.perf_counter() - start):7.0f}")
        print(f"  {family.id:28s} utility {rates[0]} trials/s   audit {rates[1]} trials/s")


def main() -> None:
    from distributed import LocalCluster

    per_family()

    print(f"dp-sgd job {PARAMS}, {TRIALS} trials (utility + audit)")
    results = {}
    for workers in (1, 2, 4):
        seconds, results[workers] = run(lambda w=workers: ProcessPoolRunner(w))
        print(f"  local pool, {workers} worker process(es): {TRIALS / seconds:9.0f} trials/s ({seconds:.2f} s)")
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        seconds, dask_result = run(lambda: DaskRunner(cluster.scheduler_address))
    print(f"  Dask LocalCluster, 2 workers:           {TRIALS / seconds:9.0f} trials/s ({seconds:.2f} s)")
    assert all(result == dask_result for result in results.values()), "backends disagree"
    print("  results identical across backends")


if __name__ == "__main__":
    main()
