"""The service under load: heavy answers have a time budget and are really stopped, at most DPCAL_MAX_HEAVY run at
once (503 + Retry-After beyond), cheap answers never wait for them, and `dpcal serve --workers 2` runs each job once
and survives a kill of its supervisor."""

from __future__ import annotations

import signal
import threading
import time

import httpx
import pytest

from app.jobs.store import JobStore

from ..support.http import assert_problem
from ..support.jobs import LONG, alive, body, children, wait
from ..support.params import MNIST
from ..support.server import start_server, stop_server, tree_cpu_seconds, wait_until_idle

pytestmark = pytest.mark.slow

# a tight calibration that computes for several seconds (a million steps: each PLD of the search composes ~10⁶
# knots in extended precision; ~6.5 s on a quiet 2-core machine)
SLOW = {
    "algorithm": "dp-sgd",
    "params": {"dataset_size": 10**7, "batch_size": 1000, "steps": 1_000_000},
    "target_epsilon": 1.0,
    "delta": 1e-5,
    "accountant": "tight",
}
CHEAP = {
    "algorithm": "dp-sgd",
    "params": MNIST | {"noise_multiplier": 1.1},
    "delta": 1e-5,
    "accountant": "rdp",
}


def test_a_request_over_budget_is_stopped_and_answered_504():
    process, url = start_server({"DPCAL_REQUEST_TIMEOUT": "2"})
    try:
        wait_until_idle(process.pid)  # the fork server and the job workers have finished importing
        response = httpx.post(f"{url}/v1/calibrate", json=SLOW, timeout=60)
        body = assert_problem(response, 504)  # answered at the budget, not after the computation
        assert "DPCAL_REQUEST_TIMEOUT" in body["detail"] and "2 s" in body["detail"] and "rdp" in body["detail"]
        assert body["budget_seconds"] == 2
        assert_stopped(process.pid)
        assert 'dpcal_overloaded_total{reason="timeout"} 1.0' in httpx.get(f"{url}/metrics").text
    finally:
        stop_server(process)


def test_heavy_requests_beyond_the_limit_get_503_while_cheap_ones_answer():
    process, url = start_server({"DPCAL_MAX_HEAVY": "1", "DPCAL_REQUEST_TIMEOUT": "120"})
    try:
        outcome: dict[str, httpx.Response | Exception] = {}

        def slow() -> None:
            try:
                outcome["slow"] = httpx.post(f"{url}/v1/calibrate", json=SLOW, timeout=120)
            except Exception as error:  # pragma: no cover - reported below
                outcome["slow"] = error

        runner = threading.Thread(target=slow)
        runner.start()
        deadline = time.monotonic() + 60
        while not computing(process.pid):  # the slow request holds the only slot
            assert time.monotonic() < deadline and runner.is_alive(), "the slow request never started computing"
            time.sleep(0.05)
        with httpx.Client(base_url=url, timeout=60) as http:
            refused = http.post("/v1/calibrate", json={**SLOW, "target_epsilon": 2.5})
            body = assert_problem(refused, 503)
            assert int(refused.headers["Retry-After"]) >= 1 and "DPCAL_MAX_HEAVY" in body["detail"]
            cheap = http.post("/v1/privacy", json=CHEAP)  # the slot is still taken: cheap answers do not need it
            assert cheap.status_code == 200 and cheap.json()["accountant"] == "rdp"
            assert runner.is_alive()
            assert http.get("/healthz").status_code == 200
            scraped = http.get("/metrics").text
            assert 'dpcal_overloaded_total{reason="busy"} 1.0' in scraped and "dpcal_heavy_running 1.0" in scraped
        runner.join(timeout=120)
        assert isinstance(outcome["slow"], httpx.Response) and outcome["slow"].status_code == 200
        assert outcome["slow"].json()["epsilon"] <= 3.0
    finally:
        stop_server(process)


def heavy_processes(server: int) -> list[int]:
    """The server's heavy-computation processes (computing, or kept warm between requests): its fork server's
    children."""
    found = []
    for pid in children(server):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if b"forkserver" in cmdline.read():
                    found += children(pid)
        except OSError:  # gone meanwhile
            continue
    return found


def computing(server: int, window: float = 0.2) -> bool:
    """Whether a heavy computation runs: one of the server's heavy-computation processes used CPU in the last
    ``window`` seconds (a warm one waiting for its next request sleeps)."""
    before = {pid: tree_cpu_seconds(pid) for pid in heavy_processes(server)}
    time.sleep(window)
    alive = set(heavy_processes(server))
    return any(tree_cpu_seconds(pid) - spent > 0.02 for pid, spent in before.items() if pid in alive)


def assert_stopped(server: int) -> None:
    """The heavy computation is stopped, not left to finish: no heavy-computation process computes any more (the
    one that did was killed), and the server's processes used little more CPU time meanwhile
    (SLOW needs several more CPU seconds than the budget or the client's patience gave it; CPU time, not wall
    time, so a busy machine does not change the verdict)."""
    before = tree_cpu_seconds(server)
    deadline = time.monotonic() + 60
    while computing(server):
        assert time.monotonic() < deadline, "the computation never stopped"
    assert tree_cpu_seconds(server) - before < 1.5, "the computation kept running after its request ended"


def test_a_client_that_leaves_stops_its_computation():
    process, url = start_server({"DPCAL_MAX_HEAVY": "1", "DPCAL_REQUEST_TIMEOUT": "120"})
    try:
        wait_until_idle(process.pid)
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{url}/v1/calibrate", json=SLOW, timeout=1.0)  # the client gives up after 1 s
        assert_stopped(process.pid)
        heavy = {**SLOW, "target_epsilon": 1.5}  # the slot is free again
        assert httpx.post(f"{url}/v1/calibrate", json=heavy, timeout=120).status_code == 200
    finally:
        stop_server(process)


def test_identical_requests_are_answered_from_the_cache(http):
    body = {**CHEAP, "accountant": "best", "params": {**CHEAP["params"], "noise_multiplier": 1.234}}
    first = http.post("/v1/privacy", json=body).json()
    second = http.post("/v1/privacy", json=body).json()
    assert first == second and first["accountant"] == "tight"


def test_two_server_processes_run_each_job_once_and_survive_a_kill(tmp_path):
    database = str(tmp_path / "jobs.sqlite3")
    env = {"DPCAL_JOBS_DB": database, "DPCAL_JOB_WORKERS": "1", "DPCAL_JOB_CHUNK_BLOCKS": "2"}
    first, url = start_server(env, "--workers", "2")
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            ids = [http.post("/v1/jobs", json=body(trials=256, seed=seed)).json()["id"] for seed in range(4)]
            for job_id in ids:  # every request may land on either process; each job runs once
                done = wait(http, job_id, timeout=240)
                assert done["status"] == "succeeded" and done["attempts"] == 1
            # ~4 s of trials (LONG: ~16 ms per block of 64): still running when the supervisor is killed below
            long = http.post("/v1/jobs", json=body(LONG, trials=16384, seed=11)).json()
            deadline = time.monotonic() + 120
            while http.get(f"/v1/jobs/{long['id']}").json()["progress"]["completed"] < 1024:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        servers = children(first.pid)
        assert len(servers) >= 2, "two server processes"
        everything = servers + [grandchild for pid in servers for grandchild in children(pid)]
        first.send_signal(signal.SIGKILL)  # the supervisor dies without stopping anything
        first.wait(timeout=15)
        deadline = time.monotonic() + 15
        while any(alive(pid) for pid in everything) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(alive(pid) for pid in everything), "server and worker processes exit with the supervisor"
        assert JobStore(database).get(long["id"]).status == "running"
        second, url = start_server(env, "--workers", "2")
        try:
            with httpx.Client(base_url=url, timeout=60) as http:
                done = wait(http, long["id"], timeout=240)
                assert done["status"] == "succeeded" and done["attempts"] == 2
                assert done["progress"]["completed"] == 16384
        finally:
            stop_server(second)
    finally:
        if first.poll() is None:
            first.kill()


def test_one_principal_flooding_does_not_stop_another(tmp_path):
    """DPCAL_AUTH=api-key: alice's heavy requests beyond her share are 503 while bob's run, and her queued jobs
    beyond DPCAL_PRINCIPAL_MAX_QUEUED are 429 while bob's are accepted."""
    from app.auth import digest

    from ..support.jobs import body as job_body

    database = str(tmp_path / "jobs.sqlite3")
    store = JobStore(database)
    for name in ("alice", "bob"):
        store.add_key(name, "jobs", digest(f"key-{name}"))
    store.close()
    env = {
        "DPCAL_JOBS_DB": database,
        "DPCAL_AUTH": "api-key",
        "DPCAL_MAX_HEAVY": "2",  # each principal's share: 1
        "DPCAL_PRINCIPAL_MAX_QUEUED": "2",
        "DPCAL_EMBEDDED_WORKERS": "0",  # jobs stay queued
        "DPCAL_REQUEST_TIMEOUT": "120",
    }
    alice, bob = ({"Authorization": f"Bearer key-{name}"} for name in ("alice", "bob"))
    process, url = start_server(env)
    try:
        outcome: dict[str, httpx.Response] = {}
        runner = threading.Thread(
            target=lambda: outcome.update(slow=httpx.post(f"{url}/v1/calibrate", json=SLOW, headers=alice, timeout=120))
        )
        runner.start()
        deadline = time.monotonic() + 60
        while not computing(process.pid):
            assert time.monotonic() < deadline and runner.is_alive(), "alice's request never started computing"
            time.sleep(0.05)
        with httpx.Client(base_url=url, timeout=120) as http:
            again = http.post("/v1/calibrate", json={**SLOW, "target_epsilon": 2.5}, headers=alice)
            assert_problem(again, 503)
            assert "alice" in again.json()["detail"] and "DPCAL_PRINCIPAL_MAX_HEAVY" in again.json()["detail"]
            other = http.post("/v1/privacy", json={**CHEAP, "accountant": "tight"}, headers=bob)
            assert other.status_code == 200 and other.json()["accountant"] == "tight"  # a heavy answer for bob
            for trials in (64, 128):
                assert http.post("/v1/jobs", json=job_body(trials=trials), headers=alice).status_code == 202
            full = http.post("/v1/jobs", json=job_body(trials=192), headers=alice)
            assert_problem(full, 429)
            assert "alice" in full.json()["detail"] and int(full.headers["Retry-After"]) >= 1
            assert http.post("/v1/jobs", json=job_body(trials=192), headers=bob).status_code == 202
        runner.join(timeout=120)
        assert outcome["slow"].status_code == 200
    finally:
        stop_server(process)
