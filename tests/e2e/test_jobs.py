"""Verification jobs: end to end through the HTTP API, durability across a kill, determinism, and every limit."""

import asyncio
import dataclasses
import os
import signal
import tempfile
import time

import httpx
import pytest

from accountants import registry
from accountants.planning import plan_job
from accountants.verification import (
    BLOCK_TRIALS,
    JobPlan,
    SimulatorChanged,
    block_rng,
    max_detectable_epsilon,
    run_block,
    summarize,
    trials_for_reach,
)
from app import schemas
from app.jobs.manager import JOB_OVERHEAD, JobManager
from app.jobs.runner import InlineRunner, ProcessPoolRunner
from app.jobs.store import JobStore
from app.settings import Settings

from ..support.http import assert_problem
from ..support.jobs import LINEAR, LONG, alive, body, children, wait
from ..support.server import start_server, stop_server

pytestmark = pytest.mark.slow  # live servers and thousands of simulated trials


def test_last_iterate_job_end_to_end(http):
    response = http.post("/v1/jobs", json=body(trials=20000, seed=7))
    assert response.status_code == 202
    job = response.json()
    assert job["status"] == "queued" and response.headers["Location"] == f"/v1/jobs/{job['id']}"
    estimate = job["accounting"]["estimated_seconds"]
    assert estimate > 0  # before the first chunk, the time left is the plan's estimate and the start of the job
    progress = job["progress"]
    assert progress | {"eta_seconds": None} == {
        "completed": 0,
        "total": 20000,
        "trials_per_second": None,
        "eta_seconds": None,
    }
    assert progress["eta_seconds"] >= estimate + JOB_OVERHEAD
    done = wait(http, job["id"])
    assert done["status"] == "succeeded" and done["error"] is None
    assert done["progress"]["completed"] == 20000 and done["finished_at"] and done["started_at"]
    audit, utility = done["result"]["privacy_audit"], done["result"]["utility"]
    assert audit["epsilon_lower_bound"] <= audit["epsilon_exact"] <= audit["epsilon_accounted"]
    assert audit["consistent"] is True and audit["trials"] == 20000
    assert isinstance(utility["within_bound"], bool) and utility["within_bound"]
    assert utility["predicted_bound"] == pytest.approx(utility["measured"]["mean"], rel=0.05)


def test_dp_sgd_audit_has_power(http):
    # z = 1, q = 1, one step: the exact ε is the analytic Gaussian's 4.377; 10^5 trials must certify more than half
    params = {"dataset_size": 1000, "batch_size": 1000, "steps": 1, "noise_multiplier": 1.0}
    job = http.post(
        "/v1/jobs",
        json={
            "algorithm": "dp-sgd",
            "params": params,
            "delta": 1e-5,
            "checks": ["privacy-audit"],
            "trials": 100000,
            "seed": 3,
        },
    ).json()
    audit = wait(http, job["id"])["result"]["privacy_audit"]
    assert audit["epsilon_exact"] == pytest.approx(4.377178096, rel=1e-9)
    assert audit["epsilon_exact"] / 2 < audit["epsilon_lower_bound"] <= audit["epsilon_exact"]


def test_calibrate_first_then_simulate(http):
    params = {k: v for k, v in LINEAR.items() if k != "noise_multiplier"}
    job = http.post("/v1/jobs", json=body(params, target_epsilon=3.0, checks=["privacy-audit"], trials=2000)).json()
    assert job["accounting"]["epsilon_accounted"] <= 3.0
    done = wait(http, job["id"])
    assert done["result"]["noise_multiplier"] == job["accounting"]["noise_multiplier"]
    assert done["result"]["privacy_audit"]["epsilon_accounted"] <= 3.0


def test_idempotency(http):
    key = os.urandom(8).hex()
    first = http.post("/v1/jobs", json=body(trials=256), headers={"Idempotency-Key": key})
    again = http.post("/v1/jobs", json=body(trials=256), headers={"Idempotency-Key": key})
    assert first.status_code == again.status_code == 202
    assert again.json()["id"] == first.json()["id"] and again.headers["Idempotent-Replayed"] == "true"
    other = http.post("/v1/jobs", json=body(trials=512), headers={"Idempotency-Key": key})
    problem = assert_problem(other, 409)
    assert problem["job"] == first.json()["id"]


def test_cancel_queued_running_and_finished(http):
    running = http.post("/v1/jobs", json=body(LONG, trials=12800)).json()
    queued = http.post("/v1/jobs", json=body(LONG, trials=12800, seed=1)).json()
    wait(http, running["id"], until=("running",), timeout=60)
    cancelled = http.delete(f"/v1/jobs/{queued['id']}")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    stopping = http.delete(f"/v1/jobs/{running['id']}")
    assert stopping.status_code == 202 and stopping.json()["cancel_requested"] is True
    assert stopping.json()["status"] == "cancelling"  # a job asked to stop never reads as running
    assert running["id"] not in [j["id"] for j in http.get("/v1/jobs", params={"status": "running"}).json()["jobs"]]
    final = wait(http, running["id"])
    assert final["status"] == "cancelled" and final["progress"]["completed"] < 12800
    assert_problem(http.delete(f"/v1/jobs/{running['id']}"), 409)
    assert_problem(http.delete("/v1/jobs/nope"), 404)
    assert_problem(http.get("/v1/jobs/nope"), 404)


def test_trials_limit_and_validation(http):
    problem = assert_problem(http.post("/v1/jobs", json=body(trials=200001)), 422, ("trials",))
    assert "[2, 200000]" in problem["errors"][0]["allowed"]
    assert_problem(http.post("/v1/jobs", json=body(trials=1)), 422, ("trials",))
    assert_problem(http.post("/v1/jobs", json=body(checks=["speed"])), 422, ("checks", 0))
    assert_problem(http.post("/v1/jobs", json=body(problem={"kind": "cubic"})), 422, ("problem", "kind"))
    assert_problem(http.post("/v1/jobs", json=body(problem={"curvature": -1.0})), 422, ("problem", "curvature"))
    assert_problem(http.post("/v1/jobs", json=body({**LINEAR, "batch_size": 3})), 422, ("params", "batch_size"))
    no_noise = {k: v for k, v in LINEAR.items() if k != "noise_multiplier"}
    assert_problem(http.post("/v1/jobs", json=body(no_noise)), 422, ("params", "noise_multiplier"))
    heavy = assert_problem(
        http.post("/v1/jobs", json=body({**LINEAR, "steps": 10**6}, trials=100000)), 422, ("trials",)
    )
    assert "DPCAL_JOB_MAX_SECONDS" in heavy["detail"] and "reduce trials or steps" in heavy["detail"]
    assert "drop" not in heavy["detail"]  # last-iterate: one simulation serves both checks, dropping one saves nothing
    sgd = {"dataset_size": 1000, "batch_size": 50, "steps": 10**5, "noise_multiplier": 1.0}
    both = {"algorithm": "dp-sgd", "params": sgd, "delta": 1e-5, "trials": 100000}
    heavy_sgd = assert_problem(http.post("/v1/jobs", json=both), 422, ("trials",))
    assert "drop the utility check (about 99% of the time)" in heavy_sgd["detail"]
    heavy_audit = assert_problem(http.post("/v1/jobs", json=both | {"checks": ["privacy-audit"]}), 422, ("trials",))
    assert "utility" not in heavy_audit["detail"] and "drop" not in heavy_audit["detail"]  # only what it can change
    assert_problem(http.post("/v1/jobs", json={**body(), "algorithm": "dp-adam"}), 404)


def test_list_filter_and_pages(http):
    ids = [http.post("/v1/jobs", json=body(trials=128, seed=100 + i)).json()["id"] for i in range(3)]
    for job_id in ids:
        wait(http, job_id)
    first = http.get("/v1/jobs", params={"limit": 2, "status": "succeeded"}).json()
    assert len(first["jobs"]) == 2 and first["next_cursor"] == first["jobs"][-1]["id"]
    assert [j["id"] for j in first["jobs"]] == ids[::-1][:2]
    second = http.get("/v1/jobs", params={"limit": 2, "status": "succeeded", "cursor": first["next_cursor"]}).json()
    assert second["jobs"][0]["id"] == ids[0]
    assert all(j["status"] == "succeeded" for j in first["jobs"] + second["jobs"])
    assert_problem(http.get("/v1/jobs", params={"cursor": "nope"}), 422, ("query", "cursor"))
    assert_problem(http.get("/v1/jobs", params={"status": "sleeping"}), 422, ("query", "status"))


def test_queue_limit_is_429_with_retry_after():
    process, url = start_server({"DPCAL_JOB_MAX_QUEUED": "1", "DPCAL_JOB_WORKERS": "1"})
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            running = http.post("/v1/jobs", json=body(LONG, trials=12800)).json()
            wait(http, running["id"], until=("running",), timeout=60)
            assert http.post("/v1/jobs", json=body(LONG, trials=12800, seed=1)).status_code == 202
            full = http.post("/v1/jobs", json=body(LONG, trials=12800, seed=2))
            assert_problem(full, 429)
            assert int(full.headers["Retry-After"]) > 0
    finally:
        stop_server(process)


def test_time_limit_fails_the_job():
    process, url = start_server({"DPCAL_JOB_TIME_LIMIT": "1", "DPCAL_JOB_WORKERS": "1", "DPCAL_JOB_CHUNK_BLOCKS": "1"})
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            job = http.post("/v1/jobs", json=body(LONG, trials=24000)).json()
            done = wait(http, job["id"], timeout=60)
            assert done["status"] == "failed" and "timed out" in done["error"]["detail"]
            assert done["error"]["type"].endswith("timed-out")
    finally:
        stop_server(process)


def test_kill_and_restart_finishes_the_job_with_the_same_result():
    database = os.path.join(tempfile.mkdtemp(prefix="dpcal-kill-"), "jobs.sqlite3")
    env = {"DPCAL_JOBS_DB": database, "DPCAL_JOB_WORKERS": "1", "DPCAL_JOB_CHUNK_BLOCKS": "2"}
    reference, reference_url = start_server({"DPCAL_JOB_WORKERS": "1"})
    first, url = start_server(env)
    try:
        with httpx.Client(base_url=reference_url, timeout=60) as http:
            expected_id = http.post("/v1/jobs", json=body(LONG, trials=16384, seed=11)).json()["id"]
        with httpx.Client(base_url=url, timeout=60) as http:
            job = http.post("/v1/jobs", json=body(LONG, trials=16384, seed=11)).json()
            waiting = http.post("/v1/jobs", json=body(trials=256, seed=12)).json()
            deadline = time.monotonic() + 60
            while http.get(f"/v1/jobs/{job['id']}").json()["progress"]["completed"] < 2048:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        workers = children(first.pid)
        assert workers, "the server should have started worker processes"
        first.send_signal(signal.SIGKILL)  # no shutdown handler runs: the job stays "running" in the database
        first.wait(timeout=15)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(alive(pid) for pid in workers), "orphaned workers must exit with the service"
        assert JobStore(database).get(job["id"]).status == "running"
        second, url = start_server(env)
        try:
            with httpx.Client(base_url=url, timeout=60) as http:
                done = wait(http, job["id"])
                assert done["status"] == "succeeded" and done["attempts"] == 2
                assert wait(http, waiting["id"])["status"] == "succeeded"  # the queued job stayed queued, then ran
            with httpx.Client(base_url=reference_url, timeout=60) as http:
                expected = wait(http, expected_id)
            assert expected["attempts"] == 1
            assert done["result"] == expected["result"]
        finally:
            stop_server(second)
    finally:
        stop_server(reference)
        if first.poll() is None:
            first.kill()


def validated(request):
    bodies = schemas.RequestBody("Job", schemas.job_fields)
    return bodies.variants[request["algorithm"]].model_validate(request).model_dump(mode="json")


def run_with(manager_settings, runner_factory, request):
    manager = JobManager(manager_settings, runner_factory)
    manager.start()
    try:
        job, _ = manager.submit(validated(request), None)
        deadline = time.monotonic() + 120
        while (state := manager.store.get(job.id)).status not in ("succeeded", "failed", "cancelled"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert state.status == "succeeded", state.error
        return state.result
    finally:
        manager.stop()


def test_same_seed_same_result_whatever_the_chunking_and_the_workers(tmp_path):
    request = body(trials=3000, seed=5) | {"params": LINEAR | {"steps": 60}}
    results = []
    for index, (workers, chunk) in enumerate([(1, 1), (2, 5), (2, 16)]):
        settings = Settings(jobs_db=str(tmp_path / f"{index}.sqlite3"), job_workers=workers, job_chunk_blocks=chunk)
        results.append(run_with(settings, lambda w=workers: ProcessPoolRunner(w), request))
    settings = Settings(jobs_db=str(tmp_path / "inline.sqlite3"), job_chunk_blocks=3)
    results.append(run_with(settings, InlineRunner, request))
    assert results[0] == results[1] == results[2] == results[3]


def test_blocks_draw_from_spawned_seed_sequences():
    import numpy as np

    children = np.random.SeedSequence(42).spawn(5)
    for block in range(5):
        expected = np.random.default_rng(children[block]).random(3)
        assert np.array_equal(block_rng(42, block).random(3), expected)


def test_library_summary_equals_the_job_result(tmp_path):
    request = validated(body(trials=500, seed=9))
    settings = Settings(jobs_db=str(tmp_path / "a.sqlite3"), job_chunk_blocks=2)
    from_job = run_with(settings, InlineRunner, request)
    family = registry.get("dp-sgd-last-iterate")
    plan = plan_job(family, family.parse(request["params"]), 1e-5, ("utility", "privacy-audit"), 500, 9, None)
    blocks = [run_block(family.simulator, plan, b) for b in range(-(-500 // BLOCK_TRIALS))]
    assert summarize(plan, blocks).model_dump(mode="json") == from_job


def test_a_job_that_keeps_crashing_fails_with_the_reason(tmp_path):
    store = JobStore(tmp_path / "crash.sqlite3")
    job, _ = store.create("dp-sgd-last-iterate", {}, "h", {"trials": 64}, 64, None, 10)
    for attempt in range(1, 4):
        claimed = store.claim(f"{os.uname().nodename}:999999999:x", lease=30)  # an owner PID that cannot exist
        assert claimed.attempts == attempt
        settings = Settings(jobs_db=str(tmp_path / "crash.sqlite3"), job_max_attempts=3)
        manager = JobManager(settings, InlineRunner)
        manager.recover()
        manager.store.close()
        expected = "queued" if attempt < 3 else "failed"
        assert store.get(job.id).status == expected
    failed = store.get(job.id)
    assert "stopped before it finished" in failed.error["detail"] and "3 of 3" in failed.error["detail"]


def test_a_job_planned_for_another_simulator_version_fails_saying_so(tmp_path):
    """A job stored before its simulator changed (dp-sgd is at version 3) is not completed with blocks of another
    simulator: it fails with the reason instead of mixing them."""
    family = registry.get("dp-sgd")
    plan = plan_job(
        family, {"dataset_size": 100, "batch_size": 10, "steps": 5, "noise_multiplier": 1.0}, 1e-5, ("utility",), 128, 0
    )
    assert plan.simulator_version == family.simulator.version == 3
    old = dataclasses.replace(plan, simulator_version=1)
    assert JobPlan.from_json(old.to_json() | {"work": old.work}) == old  # plans stored with their total work still load
    store = JobStore(tmp_path / "old.sqlite3")
    job, _ = store.create("dp-sgd", {}, "h", old.to_json(), 128, None, 10)
    store.close()
    manager = JobManager(Settings(jobs_db=str(tmp_path / "old.sqlite3")), InlineRunner)
    manager.start()
    try:
        deadline = time.monotonic() + 60
        while (state := manager.store.get(job.id)).status not in ("succeeded", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        manager.stop()
    assert state.status == "failed" and "planned for version 1 of the dp-sgd simulator" in state.error["detail"]
    with pytest.raises(SimulatorChanged, match="submit the job again"):
        run_block(family.simulator, old, 0)


def test_algorithm_without_simulator_is_a_4xx_naming_those_with_one(tmp_path):
    from accountants.families.dp_sgd import DpSgd
    from accountants.registry import _REGISTRY, register
    from app.main import create_app

    class Plain(DpSgd):
        id = "dp-sgd-no-simulator"
        simulator = None

    register(Plain)
    try:
        app = create_app(Settings(jobs_db=str(tmp_path / "plain.sqlite3")))

        async def post():
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as client:
                return await client.post(
                    "/v1/jobs",
                    json={
                        "algorithm": "dp-sgd-no-simulator",
                        "delta": 1e-5,
                        "params": {"dataset_size": 10, "batch_size": 10, "steps": 1, "noise_multiplier": 1.0},
                    },
                )

        response = asyncio.run(post())
        problem = assert_problem(response, 422, ("algorithm",))
        assert "dp-sgd" in problem["errors"][0]["allowed"] and "dp-sgd-last-iterate" in problem["errors"][0]["allowed"]
        if getattr(app.state, "jobs", None) is not None:
            app.state.jobs.stop()
    finally:
        del _REGISTRY["dp-sgd-no-simulator"]


def test_arithmetic_errors_escaping_a_family_are_a_422_not_a_500(tmp_path):
    """The safety net for values outside double precision that no family rule caught yet: 422, never 500."""
    from accountants.families.dp_sgd import DpSgd
    from accountants.registry import _REGISTRY, register
    from app.main import create_app

    class Fragile(DpSgd):
        id = "dp-sgd-fragile"

        def privacy(self, *args, **kwargs):
            return 1.0 / 0.0

    register(Fragile)
    try:
        app = create_app(Settings(jobs_db=str(tmp_path / "fragile.sqlite3")))

        async def post():
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as client:
                params = {"dataset_size": 10, "batch_size": 10, "steps": 1, "noise_multiplier": 1.0}
                return await client.post(
                    "/v1/privacy", json={"algorithm": "dp-sgd-fragile", "delta": 1e-5, "params": params}
                )

        problem = assert_problem(asyncio.run(post()), 422, ("params",))
        assert problem["type"].endswith("numerical-range") and "ZeroDivisionError" in problem["detail"]
        if getattr(app.state, "jobs", None) is not None:
            app.state.jobs.stop()
    finally:
        del _REGISTRY["dp-sgd-fragile"]


def test_progress_rate_and_the_summary_view(http):
    job_id = http.post("/v1/jobs", json=body(trials=512, seed=5)).json()["id"]
    job = wait(http, job_id)
    assert job["status"] == "succeeded"
    progress = job["progress"]
    assert progress["completed"] == progress["total"] == 512
    assert progress["trials_per_second"] > 0 and progress["eta_seconds"] == 0.0
    listing = http.get("/v1/jobs", params={"view": "summary", "limit": 3}).json()
    summary = listing["jobs"][0]  # the newest job of the shared server (this one or a later one)
    assert set(summary) == {
        "id",
        "algorithm",
        "status",
        "progress",
        "created_at",
        "started_at",
        "updated_at",
        "finished_at",
    }
    assert len(http.get("/v1/jobs", params={"view": "summary", "limit": 3}).content) < len(
        http.get("/v1/jobs", params={"limit": 3}).content
    )
    assert http.get("/v1/jobs", params={"view": "brief"}).status_code == 422


def test_target_power_sizes_the_audit_and_the_job_reaches_it(http):
    """dp-sgd with full batches: its transcript is a Gaussian shift, so the trials a target power needs are known
    before running; a job with that many trials certifies the target."""
    example = dict(registry.get("dp-sgd").job_example or {})
    submitted = http.post("/v1/jobs", json={"algorithm": "dp-sgd", **example, "target_power": 0.5})
    assert submitted.status_code == 202, submitted.text
    job = submitted.json()
    assert job["progress"]["total"] > example["trials"]  # sized for the power, not the trials given
    done = wait(http, job["id"], timeout=600)
    audit = done["result"]["privacy_audit"]
    assert done["status"] == "succeeded"
    assert audit["epsilon_lower_bound"] >= 0.5 * audit["epsilon_accounted"]
    assert audit["max_detectable_epsilon"] >= audit["epsilon_lower_bound"] and audit["informative"]

    out_of_reach = http.post("/v1/jobs", json={"algorithm": "dp-sgd", **example, "target_power": 0.99})
    assert out_of_reach.status_code == 422
    assert out_of_reach.json()["errors"][0]["loc"] == ["target_power"]
    unknown = http.post("/v1/jobs", json=body(target_power=0.5))  # dp-sgd-last-iterate: power unknown beforehand
    assert unknown.status_code == 422 and unknown.json()["errors"][0]["loc"] == ["target_power"]
    # ... but a perfect test's count is known: the fewest trials with max_detectable_epsilon ≥ the target
    accounted = registry.get("dp-sgd-last-iterate").privacy(LINEAR, 1e-5).epsilon
    least = trials_for_reach(1e-5, 0.5 * accounted, 200000)
    assert f"even a perfect test needs {least} trials" in unknown.json()["errors"][0]["message"]
    assert max_detectable_epsilon(least // 2, least // 2, 1e-5) >= 0.5 * accounted
    fewer = least - BLOCK_TRIALS
    assert max_detectable_epsilon(fewer // 2, fewer // 2, 1e-5) < 0.5 * accounted
    weak = body({**LINEAR, "noise_multiplier": 0.05}, target_power=0.5)  # accounted ε in the thousands
    far = http.post("/v1/jobs", json=weak)
    assert far.status_code == 422 and "out of reach within 200000 trials" in far.json()["errors"][0]["message"]


def test_chunks_grow_to_about_a_second_within_the_limit():
    """A chunk starts at one block; after a chunk of b blocks took s seconds (half of it queued behind another), the
    next has about CHUNK_SECONDS of work, at most DPCAL_JOB_CHUNK_BLOCKS blocks and at least one."""
    from types import SimpleNamespace

    from app.jobs.manager import CHUNK_SECONDS, _JobRun
    from app.settings import Settings

    run = _JobRun.__new__(_JobRun)
    run.manager = SimpleNamespace(settings=Settings(job_chunk_blocks=16))
    run._resize(1, 0.2)  # 0.1 s per block
    assert run.chunk == int(CHUNK_SECONDS / 0.1) == 10
    run._resize(10, 0.02)  # very fast blocks: capped
    assert run.chunk == 16
    run._resize(2, 10.0)  # slow blocks: one at a time
    assert run.chunk == 1


@pytest.mark.parametrize("algorithm", [f.id for f in registry.families() if f.job_example is not None])
def test_a_fresh_services_first_estimate_is_within_three_times_the_job(algorithm):
    """A fresh service's example job: the time left it first states (the workers' start while they start, a job's
    fixed cost and the plan's estimate) is within 3× of the time the job then takes (a ratio, not a wall-clock
    figure: both grow on a busy machine, the estimate by the host's contention). It was 0.02 s for a job of 2.4 s, the
    workers' start unaccounted, and 0.78 s for 3.3 s on a busy CI machine before the estimate counted contention."""
    process, url = start_server()
    try:
        family = registry.get(algorithm)
        with httpx.Client(base_url=url, timeout=120) as client:
            submitted = client.post("/v1/jobs", json={"algorithm": algorithm, **family.job_example})
            start = time.monotonic()
            assert submitted.status_code == 202, submitted.text
            first = submitted.json()["progress"]["eta_seconds"]
            job_id = submitted.json()["id"]
            while (job := client.get(f"/v1/jobs/{job_id}").json())["status"] in ("queued", "running"):
                time.sleep(0.05)
            took = time.monotonic() - start
        assert job["status"] == "succeeded"
        assert took / 3 <= first <= 3 * took, (first, took)
    finally:
        stop_server(process)
