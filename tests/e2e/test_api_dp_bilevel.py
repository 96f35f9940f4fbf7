"""dp-bilevel through the HTTP API (the family module only: the registry makes it appear)."""

import math

import pytest

from ..support.http import assert_problem
from ..support.jobs import wait
from ..support.params import BILEVEL_CONSTANTS, BILEVEL_MINI_BATCH

PARAMS = {
    "dataset_size": 100000,
    "dimension_x": 10,
    "dimension_y": 10,
    "steps": 100,
    "inner_steps": 1000,
    "inner_rounds": 2,
    **BILEVEL_CONSTANTS,
}
MINI = PARAMS | BILEVEL_MINI_BATCH


def post(http, path, **body):
    return http.post(path, json={"algorithm": "dp-bilevel"} | body)


def test_listed_with_documented_parameters(http):
    assert "dp-bilevel" in [a["id"] for a in http.get("/v1/algorithms").json()]
    detail = http.get("/v1/algorithms/dp-bilevel").json()
    props = detail["parameters"]["properties"]
    assert props["regularization"]["x-symbol"] == "λ" and props["strong_convexity"]["x-symbol"] == "μ_g"
    assert props["lipschitz_f"]["x-symbol"] == "L₀^f" and props["inner_steps"]["x-symbol"] == "T_GD"
    assert all(p.get("description") and p.get("examples") for p in props.values())
    assert detail["accountants"] == ["best", "rdp", "tight", "paper"]
    assert any("printed split" in b["name"] for b in detail["bounds"])
    assert detail["verification"]["problem"]["properties"]["kind"]["enum"] == ["quadratic", "ridge-tuning"]


def test_privacy_names_the_three_mechanisms_and_every_accountant(http):
    body = post(http, "/v1/privacy", params=PARAMS | {"noise_multiplier": 60.0}, delta=1e-5).json()
    assert body["accountant"] == "tight" and body["conventions"]["neighbouring"] == "replace-one"
    assert "z·√K" in body["conventions"]["noise_multiplier_definition"]
    names = [r["name"] for r in body["releases"]]
    assert len(names) == 3 and "outer" in names[2] and names[0].startswith("inner solve")
    assert body["releases"][2]["count"] == 100 and body["releases"][0]["count"] == 100 * 2000
    assert body["releases"][2]["noise_std"] == pytest.approx(60.0 * 2 * 50.0 / 100000)
    assert body["releases"][0]["noise_multiplier"] == pytest.approx(60.0 * math.sqrt(2000))
    values = {a["name"]: a for a in body["accountants"]}
    assert values["tight"]["epsilon"] <= values["rdp"]["epsilon"]
    assert body["epsilon"] == values["tight"]["epsilon"] and body["noise"]["sensitivity"] == pytest.approx(1e-3)


def test_calibrate_shows_printed_and_corrected_splits(http):
    body = post(http, "/v1/calibrate", params=PARAMS | {"initial_suboptimality": 1.0}, target_epsilon=1.0, delta=1e-5)
    body = body.json()
    assert body["epsilon"] <= 1.0 and body["calibrated_parameter"] == "noise_multiplier"
    total = 1.0 * math.sqrt(math.log(101 / 1e-5)) + 1.0
    assert f"{total:.6g}" == "5.01597"
    assert "5.01597" in body["paper"]["note"] and any("5.01597" in w for w in body["warnings"])
    paper = next(a for a in body["accountants"] if a["name"] == "paper")
    assert "corrected split" in paper["method"] and paper["epsilon"] == pytest.approx(1.0, abs=1e-9)
    assert paper["noise_multiplier"] > body["noise_multiplier"]
    assert body["paper"]["epsilon_certified"] < 1.0 and body["paper"]["certified_by"] == "tight"
    kinds = {b["kind"] for b in body["utility"]["bounds"]}
    assert kinds == {"explicit bound", "rate with unit constants"}
    assert {r["name"] for r in body["recommended"]} >= {"regularization", "steps", "stepsize", "inner_steps"}
    assert len(body["releases"]) == 3


def test_utility_labels_explicit_and_rate_forms(http):
    body = post(
        http,
        "/v1/utility",
        params=MINI | {"noise_multiplier": 5.0, "initial_suboptimality": 1.0, "epsilon": 1.0},
    ).json()
    measures = [b["measure"] for b in body["bounds"]]
    assert any("4D + √(12·L·Δ_λ/T)" in m for m in measures)
    assert any("K₃/√b_out" in m for m in measures) and any("as printed" in m for m in measures)
    printed = next(b for b in body["bounds"] if "as printed" in b["measure"])
    assert not printed["applicable"] and "as printed (superseded" in printed["source"]
    assert any(r["name"] == "batch_size_outer" for r in body["recommended"])


@pytest.mark.parametrize(
    ("update", "field"),
    [
        ({"batch_size_outer": 10}, ("params", "batch_size_outer")),
        ({"variant": "mini-batch", "batch_size_outer": 10}, ("params", "batch_size_inner")),
        ({"variant": "mini-batch", "batch_size_outer": 10, "batch_size_inner": 10**6}, ("params", "batch_size_inner")),
        ({"smoothness_g": 0.1}, ("params", "smoothness_g")),
        ({"regularization": 0}, ("params", "regularization")),
        ({"inner_rounds": 65}, ("params", "inner_rounds")),
    ],
)
def test_inconsistent_input_is_422_naming_the_rule(http, update, field):
    body = assert_problem(
        post(http, "/v1/privacy", params=PARAMS | {"noise_multiplier": 1.0} | update, delta=1e-5), 422, field
    )
    assert next(e for e in body["errors"] if tuple(e["loc"]) == field)["allowed"]


def test_small_outer_batch_is_refused_naming_the_minimum(http):
    response = post(http, "/v1/calibrate", params=MINI | {"batch_size_outer": 10}, target_epsilon=1.0, delta=1e-5)
    body = assert_problem(response, 422, ("params", "batch_size_outer"))
    error = next(e for e in body["errors"] if e["loc"] == ["params", "batch_size_outer"])
    minimum = int(error["allowed"].split("[")[1].split(",")[0])
    assert f"the minimum is {minimum}" in error["message"] and "Lemma 2.2" in error["message"]
    ok = post(http, "/v1/calibrate", params=MINI | {"batch_size_outer": minimum}, target_epsilon=1.0, delta=1e-5)
    assert ok.status_code == 200 and ok.json()["epsilon"] <= 1.0
    refused = post(
        http, "/v1/calibrate", params=MINI | {"batch_size_outer": minimum - 1}, target_epsilon=1.0, delta=1e-5
    )
    assert_problem(refused, 422, ("params", "batch_size_outer"))


def test_accountants_that_do_not_apply_are_422_with_the_reason(http):
    # batches drawn without replacement: the certified PLD of the sampled releases, below the rdp bound
    tight = post(http, "/v1/privacy", params=MINI | {"noise_multiplier": 5.0}, delta=1e-5, accountant="tight").json()
    by_name = {a["name"]: a for a in tight["accountants"]}
    assert tight["accountant"] == "tight" and by_name["tight"]["epsilon_lower"] <= tight["epsilon"]
    rdp = post(http, "/v1/privacy", params=MINI | {"noise_multiplier": 5.0}, delta=1e-5, accountant="rdp").json()
    assert tight["epsilon"] < rdp["epsilon"]
    # batches drawn with replacement: no accountant reads them; only the paper's statement, as printed
    wr = MINI | {"sampling": "with-replacement", "noise_multiplier": 30.0, "inner_noise_multiplier": 3000.0}
    body = assert_problem(post(http, "/v1/privacy", params=wr, delta=1e-5), 422, ("accountant",))
    assert body["supported"] == ["paper"] and "with replacement" in body["detail"]
    paper = post(http, "/v1/privacy", params=wr, delta=1e-5, accountant="paper").json()
    assert paper["accountant"] == "paper" and "not certified" in paper["accountants"][2]["guarantee"]


def test_verification_job_succeeds(http):
    params = {
        "dataset_size": 100000,
        "dimension_x": 2,
        "dimension_y": 2,
        "steps": 10,
        "inner_steps": 100,
        **BILEVEL_CONSTANTS,
    }
    response = http.post(
        "/v1/jobs",
        json={
            "algorithm": "dp-bilevel",
            "params": params,
            "delta": 1e-5,
            "target_epsilon": 2.0,
            "trials": 128,
            "seed": 11,
        },
    )
    assert response.status_code == 202, response.text
    job = response.json()
    assert job["accounting"]["epsilon_accounted"] <= 2.0 and job["accounting"]["predicted_bound"] > 0
    done = wait(http, job["id"])
    assert done["status"] == "succeeded", done["error"]
    utility, audit = done["result"]["utility"], done["result"]["privacy_audit"]
    assert utility["within_bound"] and 0 < utility["ratio"] < 1 and utility["measured"]["trials"] == 128
    assert audit["consistent"] and audit["epsilon_lower_bound"] <= audit["epsilon_accounted"] <= 2.0
    assert done["result"]["params"]["inner_noise_multiplier"] == pytest.approx(
        done["result"]["noise_multiplier"] * math.sqrt(100)
    )


def test_job_refuses_dimensions_it_cannot_simulate(http):
    params = PARAMS | {"noise_multiplier": 5.0, "dimension_y": 100}
    response = http.post("/v1/jobs", json={"algorithm": "dp-bilevel", "params": params, "delta": 1e-5})
    assert_problem(response, 422, ("params", "dimension_y"))
