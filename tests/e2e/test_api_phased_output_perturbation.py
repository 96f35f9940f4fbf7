"""phased-output-perturbation (Zhang et al. 2022) through the HTTP API: the registry makes it appear, with no edits to app/."""

import math

import pytest

from ..support.http import assert_problem
from ..support.jobs import wait
from ..support.params import POP_E1, POP_SIMULATED, POP_TEST_VECTORS

ALG = "phased-output-perturbation"
CONVEX, C_SC, STRONG = POP_TEST_VECTORS["convex"], POP_TEST_VECTORS["c-sc"], POP_E1


def post(http, path, **body):
    return http.post(path, json={"algorithm": ALG} | body)


def test_listed_with_documented_parameters(http):
    listed = {a["id"]: a for a in http.get("/v1/algorithms").json()}
    assert listed[ALG]["calibrated_parameter"] == "noise_multiplier"
    detail = http.get(f"/v1/algorithms/{ALG}").json()
    assert detail["accountants"] == ["best", "rdp", "tight", "paper"]
    props = detail["parameters"]["properties"]
    for name, symbol in (("lipschitz", "L"), ("smoothness", "ℓ"), ("diameter", "D"), ("phases", "K")):
        assert props[name]["x-symbol"] == symbol and props[name]["description"]
    assert props["problem_class"]["enum"] == ["strongly-convex", "convex", "sc-sc", "c-c", "c-sc"]
    assert "solver_failure_probability" in props and "target_delta" in props
    assert set(detail["verification"]["checks"]) == {"utility", "privacy-audit"}
    assert "audit_solver" in detail["verification"]["problem"]["properties"]
    assert any("Corollary 4.9" in b["name"] for b in detail["bounds"])


def test_privacy_lists_the_plan_and_says_sigma_ignores_the_solver(http):
    response = post(http, "/v1/privacy", params=CONVEX | {"noise_multiplier": 6.0}, delta=1e-5, orders=[2, 8])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["accountant"] == "tight"
    by = {a["name"]: a for a in body["accountants"]}
    assert by["tight"]["epsilon"] <= by["rdp"]["epsilon"] and by["tight"]["epsilon"] <= by["paper"]["epsilon"]
    assert body["rdp"]["epsilons"] == pytest.approx([2 / 72, 8 / 72])  # ρα with ρ = 1/(2z²)
    assert len(body["releases"]) == 12 and body["conventions"]["steps"] == 12
    first = body["releases"][0]
    assert first["noise_std"] == pytest.approx(6.0 * first["sensitivity"])
    details = first["details"]
    assert details["records"] == "1..341" and details["mu_k"] > 0 and details["solver_accuracy_required"] > 0
    assert details["solver_failure_probability"] == pytest.approx(1e-5 / 4)
    assert "does not depend on the base solver" in body["conventions"]["noise_multiplier_definition"]
    assert body["conventions"]["neighbouring"].startswith("replace-one")
    assert any("δ_fail" in w for w in body["warnings"])


def test_calibrate_puts_the_paper_beside_the_rigorous_answer(http):
    body = post(http, "/v1/calibrate", params=C_SC, target_epsilon=1.0, delta=1e-5).json()
    assert body["accountant"] == "tight" and body["epsilon"] <= 1.0
    assert body["paper"]["noise_multiplier"] == pytest.approx(math.sqrt(2 * math.log(2.5e5)))
    assert body["paper"]["epsilon_certified"] < 1.0 and body["paper"]["valid"]
    assert body["noise_multiplier"] < body["paper"]["noise_multiplier"]
    recommended = {r["name"]: r for r in body["recommended"]}
    assert recommended["phases"]["value"] == 12 and recommended["phases"]["applied"]
    assert recommended["regularization"]["applied"] and not recommended["noise_multiplier"]["applied"]
    sources = [b["source"] for b in body["utility"]["bounds"]]
    assert any("as stated" in s for s in sources) and any("corrected" in s for s in sources)
    assert any("exact sum" in s for s in sources)


def test_utility_with_target_delta(http):
    params = C_SC | {"noise_multiplier": math.sqrt(2 * math.log(2.5e5)), "target_delta": 1e-5}
    body = post(http, "/v1/utility", params=params).json()
    values = {b["source"].split(" — ")[0]: b["value"] for b in body["bounds"]}
    assert values["Corollary 4.9 (as stated)"] == pytest.approx(2.357540330033185, rel=1e-9)
    assert values["proof of Corollary 4.9, exact sum"] == pytest.approx(1.6004612190113559, rel=1e-9)


def test_utility_needs_target_delta_and_noise(http):
    response = post(http, "/v1/utility", params=CONVEX)
    assert_problem(response, 422, ("params", "target_delta"), ("params", "noise_multiplier"))


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({k: v for k, v in STRONG.items() if k != "strong_convexity"}, "strong_convexity", "Assumption 3.2"),
        (STRONG | {"smoothness": 0.1}, "smoothness", "at least the strong convexity"),
        (STRONG | {"diameter": 1.0}, "diameter", "not used"),
        (CONVEX | {"dataset_size": 20, "phases": 30}, "phases", "must not exceed dataset_size"),
        (CONVEX | {"strong_convexity": 0.1}, "strong_convexity", "only convex"),
        (C_SC | {"strong_convexity": 0.1}, "strong_convexity", "strong_convexity_y"),
    ],
)
def test_inconsistent_input_is_422_naming_the_rule(http, params, field, words):
    response = post(http, "/v1/privacy", params=params | {"noise_multiplier": 2.0}, delta=1e-5)
    body = assert_problem(response, 422, ("params", field))
    assert words in body["detail"]


def test_solver_failure_beyond_the_budget_is_422(http):
    response = post(
        http, "/v1/privacy", params=CONVEX | {"noise_multiplier": 2.0, "solver_failure_probability": 1e-3}, delta=1e-5
    )
    body = assert_problem(response, 422, ("params", "solver_failure_probability"))
    assert "δ budget" in body["detail"]


def test_target_delta_mismatch_is_422(http):
    response = post(http, "/v1/calibrate", params=CONVEX | {"target_delta": 1e-6}, target_epsilon=1, delta=1e-5)
    assert_problem(response, 422, ("params", "target_delta"))


def test_paper_accountant_outside_its_regime_is_422(http):
    response = post(http, "/v1/calibrate", params=CONVEX, target_epsilon=3.0, delta=1e-5, accountant="paper")
    body = assert_problem(response, 422, ("accountant",))
    assert "ε' ≤ 1" in body["detail"]


def test_verification_job_succeeds(http):
    response = http.post(
        "/v1/jobs",
        json={
            "algorithm": ALG,
            "params": STRONG,
            "delta": 1e-6,
            "target_epsilon": 1.0,
            "trials": 2000,
            "seed": 3,
        },
    )
    assert response.status_code == 202, response.text
    done = wait(http, response.json()["id"])
    assert done["status"] == "succeeded", done
    utility, audit = done["result"]["utility"], done["result"]["privacy_audit"]
    assert utility["within_bound"] and utility["ratio"] < 1
    assert utility["predicted_source"].startswith("proof of Theorem 3.4")
    assert audit["consistent"] and audit["epsilon_exact"] <= audit["epsilon_accounted"] <= 1.0


def test_verification_job_for_the_c_sc_variant(http):
    params = POP_SIMULATED["c-sc"] | {"noise_multiplier": 4.0}
    response = http.post("/v1/jobs", json={"algorithm": ALG, "params": params, "delta": 1e-6, "trials": 128, "seed": 1})
    assert response.status_code == 202, response.text
    done = wait(http, response.json()["id"])
    assert done["status"] == "succeeded", done
    assert done["result"]["utility"]["within_bound"] and done["result"]["privacy_audit"]["consistent"]


def test_job_beyond_the_simulation_limits_is_422(http):
    params = STRONG | {"dataset_size": 10**6, "noise_multiplier": 2.0}
    response = http.post("/v1/jobs", json={"algorithm": ALG, "params": params, "delta": 1e-6, "trials": 100})
    assert_problem(response, 422, ("params", "dataset_size"))
