"""Verification-job throughput: trials per second of each family's example job in one process (utility and audit
apart), then of one job on the local worker pool with 1, 2 and 4 worker processes and on a Dask LocalCluster
(2 single-threaded workers on loopback), on this machine, in one process.

The job: DP-SGD on 1000 records, batches of 50, 100 steps (utility and privacy audit; its per-trial training loop
is the slowest simulation), 1024 trials, timed after a warm-up job (worker processes started). Each
backend runs the same job from a fresh SQLite store; the results are checked to be identical.

First, the dp-sgd utility simulation against the per-trial loop it replaced (benchmarks/dp_sgd_per_trial.py, frozen
from when issue 18 was filed) on five setups.

``python benchmarks/jobs.py --calibrate`` measures each simulator's seconds per estimated operation instead (the
values of ``seconds_per_operation`` in each family's ``simulate`` module) and compares the estimates with the time.

Run: ``python benchmarks/jobs.py`` (needs the ``test`` extra, or ``dask``: distributed).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from accountants import registry
from app.jobs.manager import JobManager
from app.jobs.runner import DaskRunner, ProcessPoolRunner, Runner
from app.settings import Settings

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
        settings = dataclasses.replace(Settings(), jobs_db=f"{folder}/jobs.sqlite3", job_max_seconds=1e7)
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
    from accountants.planning import plan_example
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
            plan = plan_example(family, (check,), 4 * BLOCK_TRIALS)
            start = time.perf_counter()
            for block in range(4):
                run_block(simulator, plan, block)
            rates.append(f"{4 * BLOCK_TRIALS / (time.perf_counter() - start):7.0f}")
        print(f"  {family.id:28s} utility {rates[0]} trials/s   audit {rates[1]} trials/s")


DP_SGD_SETUPS = (
    ("the family's example (full batch)", {"dataset_size": 1000, "batch_size": 1000, "steps": 10}),
    ("the job below (Poisson, 50 of 1000)", PARAMS),
    ("fixed-size, 50 of 1000", PARAMS | {"sampling": "fixed-size", "neighbouring": "replace-one"}),
    ("Poisson, 100 of 5000, 300 steps", {"dataset_size": 5000, "batch_size": 100, "steps": 300}),
    ("Poisson, 200 of 2000", {"dataset_size": 2000, "batch_size": 200, "steps": 100}),
)


def dp_sgd_against_per_trial() -> None:
    """The dp-sgd utility simulation against the per-trial loop it replaced (benchmarks/dp_sgd_per_trial.py): the
    same plan and data, best of 3 runs of 256 trials (vectorised) and of 32 trials (per trial)."""
    from accountants.families.dp_sgd.simulate import _train
    from accountants.planning import plan_job
    from accountants.synthetic.logistic import logistic_data
    from accountants.verification import block_rng

    spec = importlib.util.spec_from_file_location("dp_sgd_per_trial", Path(__file__).with_name("dp_sgd_per_trial.py"))
    assert spec is not None and spec.loader is not None
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    family = registry.get("dp-sgd")
    print("dp-sgd utility simulation, trials/s: vectorised vs the per-trial loop it replaced (issue 18)")
    for name, params in DP_SGD_SETUPS:
        plan = plan_job(family, params | {"noise_multiplier": 1.0}, 1e-5, ("utility",), 256, 0, None, None)
        features, labels = logistic_data(0, plan.problem["records"], plan.problem["dimension"])

        def vectorised(plan: Any = plan, features: Any = features, labels: Any = labels) -> None:
            _train(block_rng(0, 0), 256, features, labels, plan.params, plan.problem)

        def per_trial(plan: Any = plan, features: Any = features, labels: Any = labels) -> None:
            rng = block_rng(0, 0)
            for _ in range(32):
                reference.train_one(rng, features, labels, plan.params, plan.problem)

        fast, slow = 256 / best_seconds(vectorised), 32 / best_seconds(per_trial)
        print(f"  {name:38s} {fast:8.0f} vs {slow:6.0f} trials/s   {fast / slow:5.1f}×")


def best_seconds(run: Callable[[], None], repeat: int = 3) -> float:
    """The shortest of ``repeat`` timings."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


DIMENSIONS = (("nseg", 2), ("nseg", 64), ("nispp", 2), ("nispp", 64))
"""Setups beside the examples (dimension 10): the bilinear simulators' work grows with d as their time does."""


def calibrate() -> None:
    """Each simulator's seconds per estimated operation, part by part (the plan's work_by_check), on its family's
    example job run in this process, the fixed cost per block taken out: the values of each simulator's
    ``seconds_per_operation``; and the estimate against the time measured with the values in the code, then the
    estimates of the bilinear simulators at dimensions 2 and 64. The service refuses jobs above
    DPCAL_JOB_MAX_SECONDS by these estimates: each should be within 3× of its time up to one speed factor of this
    machine (the median of measured/estimated), which is printed with every setup outside it."""
    from accountants.planning import plan_example, plan_job
    from accountants.verification import BLOCK_SECONDS, block_sizes, run_block

    ratios: dict[str, float] = {}

    def timed(family: Any, plan: Any) -> float:
        blocks = len(block_sizes(plan.trials))

        def run() -> None:
            for block in range(blocks):
                run_block(family.simulator, plan, block)

        return best_seconds(run)

    print("seconds per operation (example jobs, one part at a time) and the estimate in the code against the time:")
    for family in registry.families():
        simulator, example = family.simulator, family.job_example
        if simulator is None or example is None:
            continue
        for check in simulator.checks:
            plan = plan_example(family, (check,))
            seconds = timed(family, plan)
            ((part, operations),) = plan.work_by_check.items()
            rate = max(seconds - BLOCK_SECONDS * len(block_sizes(plan.trials)), 0.1 * seconds) / operations
            ratios[f"{family.id} {check}"] = seconds / plan.estimated_seconds
            print(
                f"  {family.id:28s} {check:14s} {part:14s} {rate:9.2e} s/op   measured {seconds:7.3f} s, "
                f"estimated {plan.estimated_seconds:7.3f} s ({seconds / plan.estimated_seconds:4.2f}×)"
            )
    for family_id, dimension in DIMENSIONS:
        family = registry.get(family_id)
        example = family.job_example
        assert example is not None
        params = dict(example["params"]) | {"dimension": dimension}
        plan = plan_job(family, params, example["delta"], ("utility",), 64, 0, None, example.get("target_epsilon"))
        seconds = timed(family, plan)
        ratios[f"{family_id} utility at d = {dimension}"] = seconds / plan.estimated_seconds
        print(
            f"  {family_id:28s} utility at d = {dimension:<3d} measured {seconds:7.3f} s, "
            f"estimated {plan.estimated_seconds:7.3f} s ({seconds / plan.estimated_seconds:4.2f}×)"
        )
    speed = statistics.median(ratios.values())
    off = {key: round(r / speed, 2) for key, r in ratios.items() if not 1 / 3 <= r / speed <= 3}
    print(
        f"machine factor (median measured/estimated) {speed:.2f}; setups off by more than 3× after it: {off or 'none'}"
    )


def main() -> None:
    from distributed import LocalCluster

    if "--calibrate" in sys.argv:
        calibrate()
        return

    dp_sgd_against_per_trial()
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
