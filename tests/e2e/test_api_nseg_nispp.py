"""nseg and nispp through the HTTP API: documented, answered, refused with the rule, and verified by jobs."""

import pytest

from ..support.http import assert_problem
from ..support.jobs import wait
from ..support.params import NSEG_BILINEAR

BILINEAR = NSEG_BILINEAR
SINGLE = BILINEAR | {"dataset_size": 10000, "batch_size": 10}


@pytest.mark.parametrize("algorithm", ["nseg", "nispp"])
def test_listed_with_documented_parameters(http, algorithm):
    assert algorithm in [a["id"] for a in http.get("/v1/algorithms").json()]
    detail = http.get(f"/v1/algorithms/{algorithm}").json()
    props = detail["parameters"]["properties"]
    assert props["lipschitz"]["x-symbol"] == "M" and props["diameter"]["x-symbol"] == "D"
    assert props["passes"]["enum"] == ["single", "multi"] if "enum" in props["passes"] else True
    assert detail["accountants"] == ["best", "rdp", "tight", "paper"]
    assert detail["verification"]["checks"] == ["utility", "privacy-audit"]
    if algorithm == "nispp":
        assert props["regularization"]["x-symbol"] == "λ" and props["inner_tolerance"]["x-symbol"] == "ν"


def test_nseg_privacy_names_the_conventions(http):
    body = http.post(
        "/v1/privacy", json={"algorithm": "nseg", "params": SINGLE | {"noise_multiplier": 3.73}, "delta": 1e-5}
    ).json()
    assert body["accountant"] == "tight" and body["epsilon"] == pytest.approx(1.0, abs=1e-3)
    assert body["conventions"]["neighbouring"] == "replace-one" and body["conventions"]["steps"] == 500
    assert body["noise"]["sensitivity"] == pytest.approx(2 * 2.414 / 10)
    assert body["releases"][0]["count"] == 1000 and body["releases"][0]["composition"].startswith("parallel")
    paper = next(a for a in body["accountants"] if a["name"] == "paper")
    assert paper["applicable"] and "holds" in paper["guarantee"]


def test_calibrate_returns_paper_utility_and_recommendations(http):
    body = http.post(
        "/v1/calibrate",
        json={"algorithm": "nispp", "params": SINGLE | {"batch_size": 22}, "target_epsilon": 1, "delta": 1e-5},
    ).json()
    assert body["epsilon"] <= 1 and body["calibrated_parameter"] == "noise_multiplier"
    assert body["paper"]["valid"] and body["paper"]["epsilon_certified"] < 1
    kinds = {b["kind"] for b in body["utility"]["bounds"]}
    assert kinds == {"explicit bound", "rate with unit constants"}
    applied = {r["name"] for r in body["recommended"] if r["applied"]}
    assert applied == {"steps", "regularization", "inner_tolerance"}


def test_multi_pass_paper_under_noising_is_a_warning(http):
    params = BILINEAR | {"dataset_size": 100, "batch_size": 1, "passes": "multi"}
    body = http.post(
        "/v1/calibrate", json={"algorithm": "nseg", "params": params, "target_epsilon": 1, "delta": 1e-5}
    ).json()
    assert body["paper"]["valid"] is False and any("under-noises" in w for w in body["warnings"])
    assert any("not certified for replace-one" in b["name"] and not b["selected"] for b in body["bounds"])
    tight = http.post(
        "/v1/privacy",
        json={"algorithm": "nseg", "params": params | {"noise_multiplier": 5}, "delta": 1e-5, "accountant": "tight"},
    ).json()
    by_name = {a["name"]: a for a in tight["accountants"]}
    assert tight["accountant"] == "tight" and by_name["tight"]["epsilon_lower"] <= tight["epsilon"]


def test_utility_endpoint(http):
    body = http.post("/v1/utility", json={"algorithm": "nseg", "params": SINGLE | {"noise_multiplier": 3.73}}).json()
    assert body["bounds"][0]["kind"] == "explicit bound" and body["bounds"][0]["value"] > 0
    assert {r["name"] for r in body["recommended"]} == {"steps", "stepsize"}


@pytest.mark.parametrize(
    ("algorithm", "update", "field", "words"),
    [
        ("nseg", {"steps": 600}, ("params", "steps"), "2TB"),
        ("nseg", {"steps": 0}, ("params", "steps"), ""),
        ("nispp", {"steps": 0}, ("params", "steps"), ""),
        ("nispp", {"steps": 1001}, ("params", "steps"), "KB"),
        ("nseg", {"batch_size": 20000}, ("params", "batch_size"), "dataset_size"),
        ("nispp", {"noise_multiplier": None, "noise_std": 0.1}, ("params", "regularization"), "noise_std"),
    ],
)
def test_inconsistent_input_is_4xx_naming_the_rule(http, algorithm, update, field, words):
    params = {k: v for k, v in (SINGLE | {"noise_multiplier": 2.0} | update).items() if v is not None}
    body = assert_problem(
        http.post("/v1/privacy", json={"algorithm": algorithm, "params": params, "delta": 1e-5}), 422, field
    )
    error = next(e for e in body["errors"] if tuple(e["loc"]) == field)
    assert error["allowed"] and words in error["message"]


def test_nseg_single_pass_job_with_utility_and_audit(http):
    request = {
        "algorithm": "nseg",
        "params": SINGLE,
        "target_epsilon": 1.0,
        "delta": 1e-5,
        "trials": 1000,
        "seed": 4,
    }
    response = http.post("/v1/jobs", json=request)
    assert response.status_code == 202
    done = wait(http, response.json()["id"])
    assert done["status"] == "succeeded", done["error"]
    utility, audit = done["result"]["utility"], done["result"]["privacy_audit"]
    assert utility["within_bound"] and utility["ratio"] < 1
    assert audit["epsilon_lower_bound"] <= audit["epsilon_accounted"] <= 1.0 and audit["consistent"]
    assert audit["epsilon_exact"] == pytest.approx(audit["epsilon_accounted"], rel=1e-9)


@pytest.mark.parametrize(
    "params",
    [SINGLE | {"batch_size": 22}, BILINEAR | {"dataset_size": 400, "batch_size": 20, "passes": "multi"}],
    ids=["single", "multi"],
)
def test_nispp_job_with_utility(http, params):
    request = {"algorithm": "nispp", "params": params, "target_epsilon": 1.0, "delta": 1e-5, "trials": 128}
    request["checks"] = ["utility"]
    response = http.post("/v1/jobs", json=request)
    assert response.status_code == 202
    done = wait(http, response.json()["id"])
    assert done["status"] == "succeeded", done["error"]
    assert done["result"]["utility"]["within_bound"] and done["result"]["utility"]["ratio"] < 1


def test_job_refuses_an_instance_it_cannot_build(http):
    request = {
        "algorithm": "nseg",
        "params": SINGLE | {"lipschitz": 1.0, "noise_multiplier": 2.0},
        "delta": 1e-5,
        "trials": 100,
    }
    body = assert_problem(http.post("/v1/jobs", json=request), 422, ("params", "lipschitz"))
    assert "smoothness·diameter/2" in body["detail"]
