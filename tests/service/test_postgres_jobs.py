"""Beyond one machine: the job store on PostgreSQL (a private server on loopback, started and stopped here), API
replicas that only accept jobs (DPCAL_EMBEDDED_WORKERS=0) and `dpcal worker` processes that run them.

Checks: the versioned schema and claims exactly once under concurrent claimers (SQLite and PostgreSQL alike); two APIs
and two workers finish 40 jobs exactly once with the results of the embedded SQLite service for the same seeds; an
Idempotency-Key reused across the two APIs returns one job; a worker killed with SIGKILL mid-job is replaced and the
job finishes with the same result."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..support.jobs import wait
from ..support.postgres import binaries, private_postgres
from ..support.server import ROOT, free_port, start_server, stop_server

pytestmark = [
    pytest.mark.skipif(
        binaries() is None, reason="no PostgreSQL server on this machine (.ci/run installs Debian's postgresql)"
    ),
    pytest.mark.slow,  # each test starts a private PostgreSQL server
]

SMALL = {"dataset_size": 1000, "batch_size": 100, "steps": 20, "noise_multiplier": 1.0}


def _job(seed: int, params: dict[str, object] = SMALL, trials: int = 256) -> dict[str, object]:
    return {
        "algorithm": "dp-sgd",
        "params": params,
        "delta": 1e-5,
        "trials": trials,
        "seed": seed,
        "checks": ["privacy-audit"],
    }


@pytest.fixture(scope="module")
def postgres():
    with private_postgres() as url:
        yield url


def _database(server: str, name: str) -> str:
    """A fresh database on the private server (each test its own)."""
    import sqlalchemy as sa

    engine = sa.create_engine(server.replace("postgresql://", "postgresql+psycopg://"), isolation_level="AUTOCOMMIT")
    with engine.connect() as db:
        db.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
        db.exec_driver_sql(f"CREATE DATABASE {name}")
    engine.dispose()
    return server.rsplit("/", 1)[0] + f"/{name}"


def _claim_all(location: str, start: Any) -> list[str]:
    """Claim jobs until none is left, after every claimer has opened its store (``start``: a barrier shared by all,
    so that a busy machine starting the processes one by one does not let the first claim everything alone)."""
    from app.jobs.store import JobStore

    store = JobStore(location)
    start.wait()
    claimed = []
    while (job := store.claim(f"claimer-{os.getpid()}", 60.0)) is not None:
        claimed.append(job.id)
    store.close()
    return claimed


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_schema_is_versioned_and_each_job_is_claimed_once(backend, postgres, tmp_path):
    from app.jobs.store import MIGRATIONS, JobStore

    location = str(tmp_path / "jobs.sqlite3") if backend == "sqlite" else _database(postgres, "claims")
    store = JobStore(location)
    assert store.migrate() == MIGRATIONS[-1][0]  # applied once; a second start changes nothing
    created = {store.create("dp-sgd", {"k": k}, f"h{k}", {}, 1, None, 10**6)[0].id for k in range(400)}
    store.close()
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, context.Pool(4) as pool:
        start = manager.Barrier(4, timeout=120)
        claims = pool.starmap(_claim_all, [(location, start)] * 4)
    everything = [job for claimed in claims for job in claimed]
    assert len(everything) == len(set(everything)) == 400
    assert set(everything) == created
    assert sum(1 for claimed in claims if claimed) >= 2  # the claimers really ran side by side


def _worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", "worker"],
        cwd=ROOT,
        env={**os.environ, "DPCAL_LOG_LEVEL": "warning", "DPCAL_JOB_WORKERS": "1", **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _results(url: str, ids: list[str]) -> list[dict[str, object]]:
    with httpx.Client(base_url=url, timeout=60) as http:
        jobs = [wait(http, job_id, timeout=600) for job_id in ids]
    assert all(job["status"] == "succeeded" for job in jobs), [job["error"] for job in jobs]
    return jobs


def _cluster(postgres: str, name: str, tmp_path: Path, **extra: str):
    env = {
        "DPCAL_JOBS_DB": _database(postgres, name),
        "DPCAL_EMBEDDED_WORKERS": "0",
        "DPCAL_HOST_DIR": str(tmp_path / "host"),
        "DPCAL_JOB_MAX_QUEUED": "1000",
        **extra,
    }
    apis = [start_server(env) for _ in range(2)]
    workers = [_worker(env) for _ in range(2)]
    return env, apis, workers


def _stop(apis, workers) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
    for process, _ in apis:
        stop_server(process)


def test_two_apis_and_two_workers_share_one_postgresql(postgres, tmp_path):
    env, apis, workers = _cluster(postgres, "cluster", tmp_path)
    reference, reference_url = start_server({"DPCAL_JOB_MAX_QUEUED": "1000"})
    try:
        ids = []
        for seed in range(40):  # alternately to the two APIs
            url = apis[seed % 2][1]
            response = httpx.post(f"{url}/v1/jobs", json=_job(seed), timeout=60)
            assert response.status_code == 202, response.text
            ids.append(response.json()["id"])
        expected = [
            httpx.post(f"{reference_url}/v1/jobs", json=_job(seed), timeout=60).json()["id"] for seed in range(40)
        ]
        jobs = _results(apis[1][1], ids)
        assert [job["attempts"] for job in jobs] == [1] * 40  # each ran exactly once
        assert [job["result"] for job in jobs] == [job["result"] for job in _results(reference_url, expected)]

        key = {"Idempotency-Key": "the-same-request"}
        first = httpx.post(f"{apis[0][1]}/v1/jobs", json=_job(99), headers=key, timeout=60)
        again = httpx.post(f"{apis[1][1]}/v1/jobs", json=_job(99), headers=key, timeout=60)
        assert first.json()["id"] == again.json()["id"]
        assert first.status_code == again.status_code == 202  # as on one API (tests/e2e/test_jobs.py)

        listing = httpx.get(f"{apis[0][1]}/v1/jobs", params={"limit": 5}, timeout=60).json()
        assert len(listing["jobs"]) == 5 and listing["next_cursor"] is not None

        # operations on the store itself: list, show, requeue
        def dpcal(*argv: str) -> str:
            run = subprocess.run(
                [sys.executable, "-m", "app.cli", "jobs", *argv],
                cwd=ROOT,
                env={**os.environ, **env},
                capture_output=True,
                text=True,
                timeout=120,
                check=True,
            )
            return run.stdout

        listed = dpcal("list", "--status", "succeeded", "--limit", "50")
        assert sum(job_id in listed for job_id in ids) == 40
        assert '"status": "succeeded"' in dpcal("show", ids[0])
        assert dpcal("requeue", ids[0]).strip() == f"{ids[0]}: succeeded"  # a finished result is never rerun
    finally:
        _stop(apis, workers)
        stop_server(reference)


def test_a_worker_killed_mid_job_is_replaced_with_the_same_result(postgres, tmp_path):
    from app.jobs.store import JobStore

    long_params = SMALL | {"steps": 400}
    env, apis, workers = _cluster(postgres, "failover", tmp_path, DPCAL_JOB_CHUNK_BLOCKS="1")
    reference, reference_url = start_server({"DPCAL_JOB_CHUNK_BLOCKS": "1"})
    try:
        job_id = httpx.post(f"{apis[0][1]}/v1/jobs", json=_job(7, long_params, 4096), timeout=60).json()["id"]
        store = JobStore(env["DPCAL_JOBS_DB"])
        deadline = time.monotonic() + 300
        while True:  # wait until it runs and has stored progress
            job = store.get(job_id)
            assert job is not None and time.monotonic() < deadline, "the job never started"
            if job.status == "running" and job.completed > 0 and job.owner:
                break
            time.sleep(0.05)
        pid = int(job.owner.split(":")[1])
        assert pid in {w.pid for w in workers}
        os.kill(pid, signal.SIGKILL)
        store.close()
        finished = _results(apis[1][1], [job_id])[0]
        assert finished["attempts"] == 2
        expected = httpx.post(f"{reference_url}/v1/jobs", json=_job(7, long_params, 4096), timeout=60).json()["id"]
        assert finished["result"] == _results(reference_url, [expected])[0]["result"]
    finally:
        _stop(apis, workers)
        stop_server(reference)


def test_an_unreachable_store_is_reported_not_ready(tmp_path):
    """An API whose PostgreSQL is down starts, says so on /healthz, answers 503 on /readyz and on job requests (the
    privacy endpoints keep working)."""
    env = {
        "DPCAL_JOBS_DB": f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere",
        "DPCAL_EMBEDDED_WORKERS": "0",
        "DPCAL_HOST_DIR": str(tmp_path / "host"),
    }
    process, url = start_server(env)
    try:
        health = httpx.get(f"{url}/healthz", timeout=60).json()
        assert health["store"].startswith("postgresql: unreachable") and health["job_runner"].startswith("external")
        ready = httpx.get(f"{url}/readyz", timeout=60)
        assert ready.status_code == 503 and ready.json()["type"] == "urn:dpcal:problem:store-unreachable"
        job = httpx.post(f"{url}/v1/jobs", json=_job(1), timeout=60)
        assert job.status_code == 503 and job.headers["retry-after"] == "5"
        body = {"algorithm": "dp-sgd", "params": SMALL, "delta": 1e-5, "accountant": "rdp"}
        assert httpx.post(f"{url}/v1/privacy", json=body, timeout=60).status_code == 200
    finally:
        stop_server(process)
