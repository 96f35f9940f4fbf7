"""private-mirror-descent through the HTTP API (the family module only: the registry makes it appear)."""

import math

import pytest

from ..support.http import assert_problem
from ..support.jobs import wait
from ..support.params import MIRROR_DELTA, MIRROR_GAME

ALGORITHM = "private-mirror-descent"
PARAMS, DELTA = MIRROR_GAME, MIRROR_DELTA


def by_name(items, name):
    return next(item for item in items if item["name"] == name)


def test_listed_with_documented_parameters(http):
    listed = {a["id"]: a for a in http.get("/v1/algorithms").json()}
    assert listed[ALGORITHM]["calibrated_parameter"] == "stepsize"
    detail = http.get(f"/v1/algorithms/{ALGORITHM}").json()
    assert detail["accountants"] == ["best", "rdp", "tight", "paper"]
    props = detail["parameters"]["properties"]
    symbols = {name: p.get("x-symbol") for name, p in props.items()}
    assert symbols["stepsize"] == "η" and symbols["samples_per_step"] == "K" and symbols["lipschitz"] == "L₀"
    assert symbols["second_order_smoothness"] == "L₂" and symbols["dimension_y"] == "d₂"
    assert all(p.get("description") and p.get("examples") for p in props.values())
    assert "[R]" in detail["summary"] and "[D]" in detail["summary"]
    assert detail["verification"]["checks"] == ["utility", "privacy-audit"]
    assert {b["kind"] for b in detail["bounds"]} == {"privacy", "utility"}


def test_privacy_names_every_accountant_and_the_knob(http):
    response = http.post(
        "/v1/privacy", json={"algorithm": ALGORITHM, "params": PARAMS | {"stepsize": 0.0125}, "delta": DELTA}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    rdp = by_name(body["accountants"], "rdp")
    assert body["accountant"] == "tight" and rdp["epsilon"] == pytest.approx(0.8746, abs=2e-3)
    assert body["noise"] is None
    conventions = body["conventions"]
    assert conventions["neighbouring"] == "replace-one" and conventions["steps"] == 2666
    assert "ε₀ = 4ηL₀/B" in conventions["noise_multiplier_definition"]
    tight, paper = by_name(body["accountants"], "tight"), by_name(body["accountants"], "paper")
    assert tight["applicable"] and tight["epsilon"] == body["epsilon"] < rdp["epsilon"]
    assert "bounded-range releases read as blocks of 64 adaptive steps" in tight["method"]
    assert tight["epsilon_lower"] <= tight["epsilon"]
    assert paper["applicable"] and paper["epsilon"] > rdp["epsilon"]
    assert [r["count"] for r in body["releases"]] == [2665, 2665]
    assert body["releases"][0]["details"]["epsilon0"] == pytest.approx(4 * 0.0125 / 12)
    assert sum(b["selected"] for b in body["bounds"]) == 1
    assert not any("tight accountant exceeds" in w for w in body["warnings"])


def test_calibrate_returns_the_stepsize_with_the_paper_and_recommendations(http):
    response = http.post(
        "/v1/calibrate", json={"algorithm": ALGORITHM, "params": PARAMS, "target_epsilon": 1.0, "delta": DELTA}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["calibrated_parameter"] == "stepsize" and body["epsilon"] <= 1.0
    assert body["noise_multiplier"] is None and body["noise_std"] is None and body["noise"] is None
    values = {a["name"]: a["calibrated_value"] for a in body["accountants"]}
    assert body["calibrated_value"] == max(values.values()) == values[body["accountant"]]
    k = 2 * 2666  # Prop. 3.3 as printed: η = Bε/(16L₀√(TK log(1/δ)))
    printed = 12 * 1.0 / (16 * math.sqrt(2666 * math.log(1 / DELTA)))
    assert values["paper"] == pytest.approx(printed, rel=1e-9) and str(k) in body["paper"]["note"]
    assert body["paper"]["valid"] is True and body["paper"]["epsilon_certified"] < 1.0
    kinds = [b["kind"] for b in body["utility"]["bounds"]]
    assert "explicit bound" in kinds and "rate with unit constants" in kinds
    assert {r["name"] for r in body["recommended"]} >= {"batch_size", "steps", "samples_per_step", "stepsize"}
    again = http.post(
        "/v1/privacy",
        json={"algorithm": ALGORITHM, "params": PARAMS | {"stepsize": body["calibrated_value"]}, "delta": DELTA},
    ).json()
    assert again["epsilon"] <= 1.0


def test_utility(http):
    body = http.post("/v1/utility", json={"algorithm": ALGORITHM, "params": PARAMS | {"stepsize": 0.0125}}).json()
    assert body["bounds"][0]["kind"] == "explicit bound" and body["bounds"][0]["value"] > 0
    sco = {"variant": "sco", "dataset_size": 1000, "dimension_x": 8, "lipschitz": 1.0, "smoothness": 0.0}
    body = http.post("/v1/utility", json={"algorithm": ALGORITHM, "params": sco | {"batch_size": 10}}).json()
    assert body["bounds"] == [] and "calibrate" in body["reason"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"samples_per_step": 0}, "samples_per_step"),
        ({"batch_size": 64000}, "batch_size"),
        ({"steps": 5000}, "steps"),
        ({"variant": "bias-reduced", "steps": 10}, "steps"),
        ({"variant": "sco"}, "dimension_y"),
    ],
)
def test_inconsistent_input_is_a_422_naming_the_rule(http, change, field):
    response = http.post(
        "/v1/privacy", json={"algorithm": ALGORITHM, "params": PARAMS | {"stepsize": 0.01} | change, "delta": DELTA}
    )
    assert_problem(response, 422, ("params", field))


def test_privacy_without_stepsize_and_uncalibratable_targets(http):
    response = http.post("/v1/privacy", json={"algorithm": ALGORITHM, "params": PARAMS, "delta": DELTA})
    body = assert_problem(response, 422, ("params", "stepsize"))
    assert "privacy knob" in body["detail"]
    response = http.post(
        "/v1/calibrate",
        json={"algorithm": ALGORITHM, "params": PARAMS | {"steps": 1}, "target_epsilon": 1.0, "delta": DELTA},
    )
    assert_problem(response, 422, ("target_epsilon",))


def test_verification_job_with_utility_and_audit(http):
    params = PARAMS | {"dataset_size": 400, "dimension_x": 4, "dimension_y": 4, "batch_size": 10}
    job = http.post(
        "/v1/jobs",
        json={
            "algorithm": ALGORITHM,
            "params": params,
            "delta": 1e-5,
            "target_epsilon": 4.0,
            "checks": ["utility", "privacy-audit"],
            "trials": 2048,
            "seed": 3,
        },
    )
    assert job.status_code == 202, job.text
    accounting = job.json()["accounting"]
    assert accounting["noise_multiplier"] is None and accounting["epsilon_accounted"] <= 4.0
    done = wait(http, job.json()["id"])
    assert done["status"] == "succeeded", done["error"]
    utility, audit = done["result"]["utility"], done["result"]["privacy_audit"]
    assert utility["within_bound"] and utility["ratio"] < 1
    assert audit["consistent"] and 0 < audit["epsilon_lower_bound"] <= audit["epsilon_accounted"]
    assert "log-likelihood ratio" in audit["method"]
    assert done["result"]["params"]["stepsize"] > 0


def test_job_refuses_what_it_cannot_simulate(http):
    response = http.post(
        "/v1/jobs",
        json={"algorithm": ALGORITHM, "params": PARAMS | {"dimension_x": 500, "stepsize": 0.01}, "delta": 1e-5},
    )
    assert_problem(response, 422, ("params", "dimension_x"))


@pytest.mark.parametrize("variant", ["second-order", "sco"])
def test_privacy_and_an_algorithm_node_answer_the_same_over_http(http, variant):
    """/v1/privacy and /v1/compose with an algorithm node: the same ε from rdp, tight and best (one engine)."""
    params = PARAMS | {"stepsize": 0.0125}
    if variant == "sco":
        params = {"variant": "sco", "dataset_size": 4000, "dimension_x": 8, "lipschitz": 1.0, "smoothness": 0.0,
                  "batch_size": 40, "stepsize": 0.002}  # fmt: skip
    node = {"type": "algorithm", "algorithm": ALGORITHM, "params": params}
    for accountant in ("rdp", "tight", "best"):
        family = http.post(
            "/v1/privacy", json={"algorithm": ALGORITHM, "params": params, "delta": DELTA, "accountant": accountant}
        )
        composed = http.post(
            "/v1/compose",
            json={"mechanism": node, "delta": DELTA, "accountant": accountant, "neighbouring": "replace-one"},
        )
        assert family.status_code == composed.status_code == 200, (family.text, composed.text)
        assert family.json()["epsilon"] == composed.json()["epsilon"], accountant
