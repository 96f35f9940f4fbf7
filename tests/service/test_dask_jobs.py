"""The Dask backend: a LocalCluster on loopback (started and stopped here) runs jobs' blocks for a job manager that
claims from a SQLite store, as a `dpcal worker` with DPCAL_JOB_BACKEND=dask does. Results are bit-identical to the
local backend for the same seed (three algorithms), and a Dask worker killed mid-job does not lose the job."""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

distributed = pytest.importorskip("distributed")

from accountants import registry  # noqa: E402  (after the skip: the module needs distributed)
from app.jobs.manager import JobManager  # noqa: E402
from app.jobs.runner import InlineRunner  # noqa: E402
from app.settings import Settings  # noqa: E402

pytestmark = pytest.mark.slow  # each test starts a Dask LocalCluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as local:
        yield local


def _bodies() -> list[dict[str, Any]]:
    out = []
    for algorithm in ("dp-sgd", "phased-output-perturbation", "nseg"):
        example = dict(registry.get(algorithm).job_example or {})
        out.append({"checks": ["utility", "privacy-audit"], **example, "algorithm": algorithm, "trials": 512})
    return out


def _run(settings: Settings, bodies: list[dict[str, Any]], runner: Any = None, kill: Any = None) -> list[Any]:
    manager = JobManager(settings, runner_factory=runner)
    manager.start()
    try:
        ids = [manager.submit(body, None)[0].id for body in bodies]
        killed = kill is None
        deadline = time.monotonic() + 600
        while True:
            jobs = [manager.store.get(job_id) for job_id in ids]
            if all(job is not None and job.finished for job in jobs):
                return jobs
            if not killed and any(job is not None and job.completed > 0 for job in jobs):
                kill()
                killed = True
            assert time.monotonic() < deadline, [job.status for job in jobs if job is not None]
            time.sleep(0.05)
    finally:
        manager.stop()


def _settings(tmp_path: Path, name: str, **changes: Any) -> Settings:
    base = Settings(jobs_db=str(tmp_path / f"{name}.sqlite3"), job_workers=1, job_chunk_blocks=1)
    return dataclasses.replace(base, **changes)


def test_dask_results_equal_the_local_ones(cluster, tmp_path):
    bodies = _bodies()
    local = _run(_settings(tmp_path, "local"), bodies, runner=InlineRunner)
    remote = _run(_settings(tmp_path, "dask", job_backend="dask", dask_address=cluster.scheduler_address), bodies)
    assert [job.status for job in remote] == ["succeeded"] * len(bodies)
    assert [job.result for job in remote] == [job.result for job in local]


def test_a_dask_worker_killed_mid_job_does_not_lose_it(cluster, tmp_path):
    body = {**_bodies()[0], "trials": 2048}
    local = _run(_settings(tmp_path, "local"), [body], runner=InlineRunner)

    def kill() -> None:
        pid = next(iter(cluster.workers.values())).process.pid  # a worker process under its nanny
        os.kill(pid, signal.SIGKILL)

    remote = _run(
        _settings(tmp_path, "dask", job_backend="dask", dask_address=cluster.scheduler_address), [body], kill=kill
    )
    assert remote[0].status == "succeeded", remote[0].error
    assert remote[0].result == local[0].result
