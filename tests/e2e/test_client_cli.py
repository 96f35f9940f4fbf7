"""The Python client (sync and async) and the CLI, against a live server on loopback (and the CLI in-process)."""

import asyncio
import json
import subprocess
import sys

import pytest

from app.client import AsyncDpcalClient, DpcalClient, DpcalProblem

from ..support.params import LAST_ITERATE_SMALL as LAST
from ..support.params import MNIST
from ..support.server import ROOT

pytestmark = pytest.mark.slow  # live servers and thousands of simulated trials


def test_sync_client(live_server):
    with DpcalClient(live_server) as client:
        assert client.health().status == "ok"
        assert "dp-sgd" in [a.id for a in client.algorithms()]
        assert client.algorithm("dp-sgd").parameters["properties"]["batch_size"]["x-symbol"]
        answer = client.calibrate("dp-sgd", MNIST, target_epsilon=3.0, delta=1e-5)
        assert answer.epsilon <= 3.0 and answer.conventions.steps == 14063
        again = client.privacy("dp-sgd", {**MNIST, "noise_multiplier": answer.noise_multiplier}, 1e-5)
        assert again.epsilon <= 3.0
        assert client.utility("dp-sgd", MNIST).bounds == []
        without_epochs = {k: v for k, v in MNIST.items() if k != "epochs"} | {"noise_multiplier": 1.1}
        epochs = client.calibrate("dp-sgd", without_epochs, 3.0, 1e-5, accountant="rdp", calibrate="epochs")
        assert epochs.calibrated_parameter == "epochs" and epochs.epsilon <= 3.0 < epochs.beyond.epsilon


def test_client_raises_problems_with_field_messages(live_server):
    with DpcalClient(live_server) as client:
        with pytest.raises(DpcalProblem) as info:
            client.privacy("dp-sgd", {**MNIST, "batch_size": 10**6, "noise_multiplier": 1.0}, 1e-5)
        assert info.value.status == 422
        assert [e.loc for e in info.value.errors] == [["params", "batch_size"]]
        assert "batch_size" in str(info.value)
        with pytest.raises(DpcalProblem) as info:
            client.algorithm("nope")
        assert info.value.status == 404 and info.value.problem.algorithms


def test_async_client(live_server):
    async def run():
        async with AsyncDpcalClient(live_server) as client:
            answers = await asyncio.gather(
                client.calibrate("dp-sgd", MNIST, 1.0, 1e-5), client.calibrate("dp-sgd", MNIST, 8.0, 1e-5)
            )
            with pytest.raises(DpcalProblem):
                await client.privacy("dp-sgd", MNIST, 1e-5)  # no noise given
            return answers

    strict, loose = asyncio.run(run())
    assert strict.noise_multiplier > loose.noise_multiplier


def test_clients_compose_and_calibrate_an_event_tree(live_server):
    from accountants.mechanisms.gaussian import gaussian_epsilon

    tree = {"type": "repeated", "count": 50, "mechanism": {"type": "gaussian", "noise_multiplier": 4.0}}
    with DpcalClient(live_server) as client:
        answer = client.compose(tree, 1e-5, accountant="tight", checkpoints=[10, 50])
        assert answer.epsilon == pytest.approx(gaussian_epsilon(4.0, 1e-5, 50), rel=1e-9)  # exact GDP composition
        assert [p.steps for p in answer.curve] == [10, 50]
        assert answer.curve[0].epsilon == pytest.approx(gaussian_epsilon(4.0, 1e-5, 10), rel=1e-9)
        found = client.compose_calibrate(tree, "/mechanism/noise_multiplier", 1.0, 1e-5, accountant="tight")
        assert gaussian_epsilon(found.calibrated_value, 1e-5, 50) == pytest.approx(1.0, rel=1e-6)

    async def run():
        async with AsyncDpcalClient(live_server) as client:
            return await client.compose(tree, 1e-5, accountant="rdp")

    assert asyncio.run(run()).accountant == "rdp"


def dpcal(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )


@pytest.mark.parametrize("remote", [True, False], ids=["--url", "in-process"])
def test_cli_calibrate(live_server, remote):
    url = ["--url", live_server] if remote else []
    result = dpcal(
        "calibrate",
        "dp-sgd",
        "-p",
        "dataset_size=60000",
        "-p",
        "batch_size=256",
        "-p",
        "epochs=60",
        "--target-epsilon",
        "3",
        "--delta",
        "1e-5",
        "--json",
        *url,
    )
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["epsilon"] <= 3 and body["calibrated_parameter"] == "noise_multiplier"
    summary = dpcal(
        "calibrate", "dp-sgd", "--params", json.dumps(MNIST), "--target-epsilon", "3", "--delta", "1e-5", *url
    )
    assert summary.returncode == 0 and "noise_multiplier = " in summary.stdout and "ceil" in summary.stdout
    knob = ["-p", "dataset_size=60000", "-p", "batch_size=256", "-p", "noise_multiplier=1.1", "--calibrate", "epochs"]
    epochs = dpcal("calibrate", "dp-sgd", *knob, "--target-epsilon", "3", "--delta", "1e-5", "--json", *url)
    assert epochs.returncode == 0, epochs.stderr
    found = json.loads(epochs.stdout)
    assert found["calibrated_parameter"] == "epochs" and found["epsilon"] <= 3 < found["beyond"]["epsilon"]


def test_cli_compose_reads_a_tree_from_a_file_or_standard_input(live_server, tmp_path):
    """`dpcal compose FILE|-`: the tree's privacy (50 Gaussians: exact GDP), and --calibrate at a pointer."""
    from accountants.mechanisms.gaussian import gaussian_epsilon

    tree = {"type": "repeated", "count": 50, "mechanism": {"type": "gaussian", "noise_multiplier": 4.0}}
    path = tmp_path / "tree.json"
    path.write_text(json.dumps(tree))
    answer = dpcal("compose", str(path), "--delta", "1e-5", "--json", "--url", live_server)
    assert answer.returncode == 0, answer.stderr
    assert json.loads(answer.stdout)["epsilon"] == pytest.approx(gaussian_epsilon(4.0, 1e-5, 50), rel=1e-9)
    found = subprocess.run(
        [sys.executable, "-m", "app.cli", "compose", "-", "--delta", "1e-5", "--accountant", "tight", "--calibrate",
         "/mechanism/noise_multiplier", "--target-epsilon", "1"],
        input=json.dumps(tree), capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("compose: /mechanism/noise_multiplier = ") and "ε = 1 ≤ 1" in found.stdout
    missing = dpcal("compose", str(tmp_path / "none.json"), "--delta", "1e-5")
    assert missing.returncode == 2 and "cannot read the tree" in missing.stderr


def test_the_cli_imports_nothing_heavy_before_it_needs_the_service():
    """`dpcal --url …` is the light path: the command line's module loads no web client, no pydantic and no
    accounting library (a remote call then costs ~0.1 s of CPU: benchmarks/cli.py)."""
    code = "import sys, app.cli; print(sorted(m for m in ('httpx', 'pydantic', 'accountants', 'numpy') if m in sys.modules))"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    assert run.returncode == 0 and run.stdout.strip() == "[]", (run.stdout, run.stderr)


def test_cli_privacy_algorithms_utility(live_server):
    result = dpcal(
        "privacy",
        "dp-sgd",
        "--params",
        json.dumps({**MNIST, "noise_multiplier": 1.1}),
        "--delta",
        "1e-5",
        "--url",
        live_server,
    )
    assert result.returncode == 0 and "ε = " in result.stdout
    first = result.stdout.splitlines()[0]  # a tight answer: no Rényi order beside it
    assert "(accountant: tight)" in first and "order" not in first
    assert "sampling assumed: Poisson" in result.stdout and "add-remove" in result.stdout  # the assumptions, always
    assert "dp-sgd" in dpcal("algorithms", "--url", live_server).stdout
    assert "dataset_size (n)" in dpcal("algorithms", "dp-sgd").stdout
    assert "no utility bound" in dpcal("utility", "dp-sgd", "--params", json.dumps(MNIST)).stdout


def test_cli_reports_problems_with_exit_status_2(live_server):
    result = dpcal(
        "privacy",
        "dp-sgd",
        "--params",
        json.dumps({**MNIST, "noise_multiplier": -1}),
        "--delta",
        "1e-5",
        "--url",
        live_server,
    )
    assert result.returncode == 2 and "params.noise_multiplier" in result.stderr
    assert dpcal("privacy", "dp-sgd", "-p", "oops", "--delta", "1e-5").returncode == 2


def test_cli_unreachable_server_is_exit_status_1():
    result = dpcal("algorithms", "--url", "http://127.0.0.1:9")
    assert result.returncode == 1 and "cannot reach" in result.stderr


def test_cli_openapi_matches_file(tmp_path):
    target = tmp_path / "openapi.json"
    assert dpcal("openapi", "-o", str(target)).returncode == 0
    assert target.read_text() == (ROOT / "openapi" / "openapi.json").read_text()


def test_client_jobs(live_server):
    with DpcalClient(live_server) as client:
        job = client.submit_job("dp-sgd-last-iterate", LAST, 1e-5, trials=1000, seed=4, idempotency_key="client-1")
        assert (
            client.submit_job("dp-sgd-last-iterate", LAST, 1e-5, trials=1000, seed=4, idempotency_key="client-1").id
            == job.id
        )
        seen = []
        done = client.wait_job(job.id, interval=0.05, progress=seen.append)
        assert done.status == "succeeded" and seen[-1].status == "succeeded"
        assert done.result.privacy_audit.consistent
        with pytest.raises(DpcalProblem) as info:
            client.cancel_job(job.id)
        assert info.value.status == 409


@pytest.mark.parametrize("remote", [True, False], ids=["--url", "in-process"])
def test_cli_verify(live_server, remote):
    url = ["--url", live_server] if remote else []
    verify = ("verify", "dp-sgd-last-iterate", "--params", json.dumps(LAST), "--delta", "1e-5", "--trials", "2000")
    result = dpcal(*verify, "--seed", "7", *url)
    assert result.returncode == 0, result.stderr
    assert "succeeded" in result.stdout and "consistent" in result.stdout and "within the bound" in result.stdout
    assert "2000/2000 trials" in result.stderr  # the progress bar
    as_json = dpcal(*verify, "--seed", "7", "--json", *url)
    body = json.loads(as_json.stdout)
    assert body["status"] == "succeeded" and body["result"]["seed"] == 7


def test_cli_verify_sizes_the_audit_for_a_target_power(live_server):
    params = json.dumps({"dataset_size": 1000, "batch_size": 1000, "steps": 10})
    args = ("verify", "dp-sgd", "--params", params, "--delta", "1e-5", "--target-epsilon", "3", "--checks")
    run = dpcal(*args, "privacy-audit", "--target-power", "0.5", "--json", "--url", live_server)
    assert run.returncode == 0, run.stderr
    job = json.loads(run.stdout)
    audit = job["result"]["privacy_audit"]
    assert job["progress"]["total"] != 1000 and audit["epsilon_lower_bound"] >= 0.5 * audit["epsilon_accounted"]
    refused = dpcal(*args, "privacy-audit", "--target-power", "0.999", "--url", live_server)
    assert refused.returncode == 2 and "target_power" in refused.stderr


def test_cli_verify_same_answer_in_process_and_remote(live_server):
    args = (
        "verify",
        "dp-sgd",
        "--params",
        json.dumps({"dataset_size": 100, "batch_size": 100, "steps": 3, "noise_multiplier": 1.0}),
        "--delta",
        "1e-5",
        "--checks",
        "privacy-audit",
        "--trials",
        "3000",
        "--seed",
        "2",
        "--json",
    )
    remote = json.loads(dpcal(*args, "--url", live_server).stdout)["result"]
    local = json.loads(dpcal(*args).stdout)["result"]
    assert remote == local


def test_cli_verify_rejected_input_is_exit_status_2(live_server):
    result = dpcal(
        "verify",
        "dp-sgd-last-iterate",
        "--params",
        json.dumps(LAST | {"batch_size": 3}),
        "--delta",
        "1e-5",
        "--url",
        live_server,
    )
    assert result.returncode == 2 and "params.batch_size" in result.stderr


def test_cli_into_a_closed_pipe_exits_quietly(live_server):
    shell = (
        f"{sys.executable} -m app.cli privacy dp-sgd -p dataset_size=60000 -p batch_size=256 -p epochs=60 "
        f"-p noise_multiplier=1.1 --delta 1e-5 --accountant rdp --url {live_server} --json | head -1"
    )
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", shell], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "{" and "Traceback" not in result.stderr and not result.stderr.strip()


def test_cli_version_and_url_from_the_environment(live_server):
    from app import __version__

    version = dpcal("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"dpcal {__version__}"
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "algorithms", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
        env={**__import__("os").environ, "DPCAL_URL": "http://127.0.0.1:9"},  # nothing listens there
    )
    assert result.returncode == 1 and "127.0.0.1:9" in result.stderr  # the variable was used as --url


def test_cli_progress_without_a_terminal_is_one_line_per_update(live_server):
    params = '{"dataset_size": 20, "batch_size": 2, "steps": 1000, "stepsize": 0.1, "clip_norm": 1, "smoothness": 1, '
    params += '"weak_convexity": 0, "clipping": "inactive", "noise_multiplier": 2}'  # ~0.5 s: polled while it runs
    run = dpcal(
        "verify", "dp-sgd-last-iterate", "--params", params, "--delta", "1e-5", "--trials", "2048", "--url", live_server
    )
    assert run.returncode == 0, run.stderr
    lines = run.stderr.strip().splitlines()
    assert "\r" not in run.stderr and lines[-1] == "succeeded 2048/2048 trials"
    assert len(lines) >= 2 and all(line.endswith(" s left") for line in lines[:-1]), lines  # the time left until done
    quiet = dpcal("verify", "dp-sgd-last-iterate", "--params", params, "--delta", "1e-5", "--trials", "128", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == "" and "succeeded" in quiet.stdout


def test_cli_summary_shows_the_paper_and_the_winning_bound(live_server):
    nseg = dpcal(
        "calibrate",
        "nseg",
        "--params",
        '{"dataset_size": 10000, "batch_size": 10, "lipschitz": 2.414, '
        '"smoothness": 1.0, "diameter": 2.828, "dimension": 10}',
        "--target-epsilon",
        "1",
        "--delta",
        "1e-5",
        "--url",
        live_server,
    )
    assert nseg.returncode == 0, nseg.stderr
    assert "\n  paper: " in nseg.stdout
    last = dpcal(
        "privacy",
        "dp-sgd-last-iterate",
        "--params",
        '{"dataset_size": 10000, "batch_size": 10, "steps": 100000, '
        '"stepsize": 1e-5, "clip_norm": 10.0, "smoothness": 1.0, "weak_convexity": 100.0, "clipping": "inactive", '
        '"noise_multiplier": 1.0}',
        "--delta",
        "1e-5",
        "--url",
        live_server,
    )
    assert last.returncode == 0, last.stderr
    assert "\n  winning bound: " in last.stdout


def test_cli_checkpoint_table_and_statement(live_server):
    params = json.dumps({**MNIST, "epochs": 3, "noise_multiplier": 1.1})
    common = ("--params", params, "--delta", "1e-5", "--accountant", "rdp", "--url", live_server)
    table = dpcal("privacy", "dp-sgd", *common, "--checkpoints", "epochs")
    assert table.returncode == 0 and "ε over training:" in table.stdout
    rows = [line.split() for line in table.stdout.splitlines() if line.strip().endswith(" rdp")]
    assert [int(row[0]) for row in rows] == [235, 469, 704]  # the steps at which each of the 3 epochs ends
    as_json = json.loads(dpcal("privacy", "dp-sgd", *common, "--checkpoints", "235,469,704", "--json").stdout)
    assert [float(row[2]) for row in rows] == pytest.approx([p["epsilon"] for p in as_json["curve"]], rel=1e-5)
    statement = dpcal("statement", "dp-sgd", *common)
    assert statement.returncode == 0 and statement.stdout.startswith("Privacy statement for dp-sgd")
    assert f"ε = {as_json['epsilon']:.4g}" in statement.stdout
    bad = dpcal("privacy", "dp-sgd", *common, "--checkpoints", "every:x")
    assert bad.returncode == 2 and "--checkpoints" in bad.stderr
