"""dp-sgd-last-iterate through the HTTP API (the family module only: the registry makes it appear)."""

import pytest

from ..support.http import assert_problem
from ..support.params import LAST_ITERATE_FIG1

PARAMS = LAST_ITERATE_FIG1 | {"steps": 100000, "weak_convexity": 100.0, "clipping": "inactive"}


def test_listed_with_documented_parameters(http):
    assert "dp-sgd-last-iterate" in [a["id"] for a in http.get("/v1/algorithms").json()]
    detail = http.get("/v1/algorithms/dp-sgd-last-iterate").json()
    props = detail["parameters"]["properties"]
    assert props["stepsize"]["x-symbol"] == "λ" and props["weak_convexity"]["x-symbol"] == "m"
    assert detail["accountants"] == ["best", "rdp"]
    assert any("Corollary C.2" in b["name"] for b in detail["bounds"])


def test_privacy_returns_the_min_curve_and_every_bound(http):
    body = http.post(
        "/v1/privacy",
        json={
            "algorithm": "dp-sgd-last-iterate",
            "params": PARAMS | {"noise_multiplier": 1},
            "delta": 1e-5,
            "orders": [2, 4, 8],
        },
    ).json()
    assert body["accountant"] == "rdp" and body["conventions"]["neighbouring"] == "replace-one"
    assert body["conventions"]["released"].startswith("last iterate")
    names = [b["name"] for b in body["bounds"]]
    assert len(names) == 5 and "Composition" in names[-1]
    applicable = [b for b in body["bounds"] if b["applicable"]]
    selected = [b for b in body["bounds"] if b["selected"]]
    assert len(selected) == 1 and "eq. (19)" in selected[0]["name"]
    assert body["rdp"]["epsilons"] == pytest.approx([min(b["rdp"][i] for b in applicable) for i in range(3)])
    assert body["rdp"]["bounds"] == [selected[0]["name"]] * 3
    composition = body["bounds"][-1]
    assert composition["releases"] == "every iterate" and composition["epsilon"] > body["epsilon"]
    unusable = next(b for b in body["bounds"] if "2.2" in b["name"])
    assert not unusable["applicable"] and "diameter" in unusable["reason"] and unusable["rdp"] is None
    assert body["noise"]["noise_std"] == pytest.approx(1e-5)
    tight = next(a for a in body["accountants"] if a["name"] == "tight")
    assert not tight["applicable"] and tight["reason"]


def test_calibrate_with_corollary_c2_beside(http):
    body = http.post(
        "/v1/calibrate", json={"algorithm": "dp-sgd-last-iterate", "params": PARAMS, "target_epsilon": 1, "delta": 1e-5}
    ).json()
    assert body["epsilon"] <= 1 and body["calibrated_parameter"] == "noise_multiplier"
    assert body["paper"]["source"].endswith("Corollary C.2 (corrected σ̄, erratum)")
    assert body["paper"]["epsilon_certified"] is not None and "16α²ε" in body["paper"]["note"]
    assert body["utility"] is None and body["utility_reason"]
    assert any(b["selected"] for b in body["bounds"])


def test_tight_is_422_with_the_reason(http):
    response = http.post(
        "/v1/privacy",
        json={
            "algorithm": "dp-sgd-last-iterate",
            "params": PARAMS | {"noise_multiplier": 1},
            "delta": 1e-5,
            "accountant": "tight",
        },
    )
    body = assert_problem(response, 422, ("accountant",))
    assert body["supported"] == ["best", "rdp"] and "Rényi" in body["detail"]


@pytest.mark.parametrize(
    ("update", "field"),
    [
        ({"batch_size": 3}, ("params", "batch_size")),
        ({"stepsize": 0}, ("params", "stepsize")),
        ({"smoothness": -1}, ("params", "smoothness")),
        ({"clip_norm": None}, ("params", "clip_norm")),
    ],
)
def test_bad_input(http, update, field):
    params = {k: v for k, v in (PARAMS | {"noise_multiplier": 1} | update).items() if v is not None}
    body = assert_problem(
        http.post("/v1/privacy", json={"algorithm": "dp-sgd-last-iterate", "params": params, "delta": 1e-5}), 422, field
    )
    assert next(e for e in body["errors"] if tuple(e["loc"]) == field)["allowed"]


def test_large_stepsize_falls_back_to_composition_with_the_reason(http):
    params = PARAMS | {"stepsize": 0.5, "weak_convexity": 1.0, "clipping": "active", "noise_multiplier": 1}
    body = http.post("/v1/privacy", json={"algorithm": "dp-sgd-last-iterate", "params": params, "delta": 1e-5}).json()
    assert body["bounds"][-1]["selected"]
    assert all(not b["applicable"] for b in body["bounds"][:-1])
    assert "stepsize" in body["bounds"][1]["reason"]
    assert any("no last-iterate bound applies" in w for w in body["warnings"])
