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
