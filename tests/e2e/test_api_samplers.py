"""The loaders over HTTP: the README's shuffle example and the fields that declare a loader."""

from __future__ import annotations

import pytest

from accountants.mechanisms.gaussian import gaussian_epsilon

SHUFFLE = {"dataset_size": 60000, "batch_size": 256, "epochs": 60, "noise_multiplier": 1.1, "sampling": "shuffle"}


def test_the_readme_shuffle_example(http):
    answer = http.post("/v1/privacy", json={"algorithm": "dp-sgd", "params": SHUFFLE, "delta": 1e-5}).json()
    assert answer["epsilon"] == pytest.approx(gaussian_epsilon(1.1, 1e-5, 60), rel=1e-9)
    assert f"{answer['epsilon']:.4g}" == "54.05"
    beside = next(a for a in answer["accountants"] if a["name"] == "poisson-assumed")
    assert f"{beside['epsilon']:.4g}" == "2.597"
    assert beside["applicable"] is False and beside["guarantee"] == "not valid for this loader"
    assert "no amplification" in " ".join(answer["warnings"])


def test_truncated_poisson_needs_its_cap_over_http(http):
    params = SHUFFLE | {"sampling": "truncated-poisson"}
    answer = http.post("/v1/privacy", json={"algorithm": "dp-sgd", "params": params, "delta": 1e-5})
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["loc"] == ["params", "max_batch_size"]
    ok = http.post(
        "/v1/privacy",
        json={"algorithm": "dp-sgd", "params": params | {"max_batch_size": 300}, "delta": 1e-5, "accountant": "rdp"},
    )
    assert ok.status_code == 200 and ok.json()["conventions"]["sampling"].startswith("truncated Poisson")


def test_the_readme_balls_in_bins_example(http):
    """The README's worked example: the shuffle run with a balls-in-bins loader is a Poisson-level ε (below the
    Poisson answer at q = b/n here), bracketed; with persistent bins it is 48.59."""
    params = SHUFFLE | {"sampling": "balls-in-bins"}
    answer = http.post("/v1/privacy", json={"algorithm": "dp-sgd", "params": params, "delta": 1e-5}).json()
    tight = next(a for a in answer["accountants"] if a["name"] == "tight")
    assert answer["accountant"] == "tight" and f"{answer['epsilon']:.5g}" == "2.3409"
    # the lower bound's last digit moves across machines (2.33925 here, 2.33931 there: its bracketed laws' bisections
    # and FFTs round with the CPU's kernels), well inside its own certified gap to the upper bound
    assert tight["epsilon_lower"] == pytest.approx(2.3392, abs=2e-4) and tight["epsilon_lower"] <= answer["epsilon"]
    poisson = http.post(
        "/v1/privacy", json={"algorithm": "dp-sgd", "params": params | {"sampling": "poisson"}, "delta": 1e-5}
    ).json()
    assert answer["epsilon"] < poisson["epsilon"] == pytest.approx(2.3818, abs=1e-4)
    persistent = http.post(
        "/v1/privacy", json={"algorithm": "dp-sgd", "params": params | {"bins": "persistent"}, "delta": 1e-5}
    ).json()
    assert f"{persistent['epsilon']:.4g}" == "48.59"


@pytest.mark.parametrize("bins", ["fresh", "persistent"])
def test_balls_in_bins_privacy_calibration_checkpoints_and_statement(http, bins):
    """Each bin mode over HTTP: privacy (tight, bracketed, the conventions name the bins), a calibration whose σ gives
    the target back through /v1/privacy, ε after each epoch (non-decreasing, the last one the whole run's) and a
    statement that names the loader."""
    params = {"dataset_size": 5000, "batch_size": 100, "epochs": 4, "sampling": "balls-in-bins", "bins": bins}
    request = {"algorithm": "dp-sgd", "delta": 1e-5}
    found = http.post("/v1/calibrate", json=request | {"params": params, "target_epsilon": 2.0}).json()
    assert found.get("accountant") == "tight", found
    sigma = found["noise_multiplier"]
    answer = http.post(
        "/v1/privacy",
        json=request
        | {
            "params": params | {"noise_multiplier": sigma},
            "checkpoints": "epochs",
            "statement": True,
        },
    ).json()
    assert "epsilon" in answer, answer
    assert answer["epsilon"] <= 2.0 * (1 + 1e-9) and answer["epsilon"] == pytest.approx(2.0, rel=2e-3)
    assert f"{bins} bins" in answer["conventions"]["step_rule"]
    curve = [point["epsilon"] for point in answer["curve"]]
    assert len(curve) == 4 and curve == sorted(curve) and curve[-1] == pytest.approx(answer["epsilon"], rel=1e-9)
    assert "balls-in-bins" in answer["statement"]
