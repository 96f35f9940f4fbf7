"""/v1/compose, /v1/compose/calibrate, checkpoints, knob calibration and statements over HTTP (a live server)."""

from __future__ import annotations

import pytest

from accountants import registry

from ..support.params import NSEG_BILINEAR

DELTA = 1e-5
MNIST = {"dataset_size": 60000, "batch_size": 256, "epochs": 60, "noise_multiplier": 1.1}


def _families_with_plans() -> list[str]:
    return [f.id for f in registry.families() if f.plan(f.example, DELTA) is not None]


@pytest.mark.parametrize("algorithm", _families_with_plans())
def test_an_algorithm_node_gives_the_family_answer(http, algorithm):
    family = registry.get(algorithm)
    relation = family.plan(family.example, DELTA).neighbouring
    node = {"type": "algorithm", "algorithm": algorithm, "params": dict(family.example)}
    accountants = ("rdp", "best") if algorithm == "dp-sgd" else ("rdp",)
    for accountant in (*accountants, "paper") if "paper" in family.accountants else accountants:
        own = http.post(
            "/v1/privacy",
            json={"algorithm": algorithm, "params": dict(family.example), "delta": DELTA, "accountant": accountant},
        )
        composed = http.post(
            "/v1/compose", json={"mechanism": node, "delta": DELTA, "accountant": accountant, "neighbouring": relation}
        )
        if accountant == "paper":  # the family's own statement, answered by the family (or refused, its reason)
            assert composed.status_code == own.status_code, composed.text
            assert {**composed.json(), "instance": None} == {**own.json(), "instance": None}
            continue
        assert own.status_code == composed.status_code == 200, composed.text
        # a family may convert a curve linear in α exactly (the composition refines on the grid: within 1e-7)
        assert composed.json()["epsilon"] == pytest.approx(own.json()["epsilon"], rel=1e-7)


def test_paper_calibration_of_an_algorithm_node_is_the_familys(http):
    params = NSEG_BILINEAR | {"dataset_size": 4000, "batch_size": 20}
    own = http.post(
        "/v1/calibrate",
        json={"algorithm": "nseg", "params": params, "target_epsilon": 1.0, "delta": DELTA, "accountant": "paper"},
    )
    node = {"type": "algorithm", "algorithm": "nseg", "params": params | {"noise_multiplier": 1.0}}
    body = {"mechanism": node, "delta": DELTA, "accountant": "paper", "neighbouring": "replace-one"}
    composed = http.post(
        "/v1/compose/calibrate", json=body | {"target_epsilon": 1.0, "calibrate": "/params/noise_multiplier"}
    )
    assert own.status_code == composed.status_code == 200, composed.text
    assert composed.json()["calibrated_value"] == own.json()["calibrated_value"]
    assert composed.json()["calibrated_parameter"] == "/params/noise_multiplier"
    twice = {"type": "repeated", "count": 2, "mechanism": node}
    refused = http.post("/v1/compose", json=body | {"mechanism": twice})
    assert refused.status_code == 422 and refused.json()["errors"][0]["loc"] == ["accountant"], refused.text


def test_every_family_has_a_plan_the_last_iterate_as_one_zcdp_release(http):
    assert _families_with_plans() == [f.id for f in registry.families()]
    family = registry.get("dp-sgd-last-iterate")
    node = {"type": "algorithm", "algorithm": family.id, "params": dict(family.example)}
    twice = {"type": "repeated", "count": 2, "mechanism": node}
    answer = http.post("/v1/compose", json={"mechanism": twice, "delta": DELTA, "neighbouring": "replace-one"}).json()
    tight = next(a for a in answer["accountants"] if a["name"] == "tight")
    assert answer["accountant"] == "rdp" and not tight["applicable"] and "ZCdpEvent" in tight["reason"]
    own = http.post("/v1/privacy", json={"algorithm": family.id, "params": dict(family.example), "delta": DELTA}).json()
    assert answer["rdp"]["orders"] == own["rdp"]["orders"]  # two last iterates: twice the family's Rényi curve
    assert answer["rdp"]["epsilons"] == pytest.approx([2 * e for e in own["rdp"]["epsilons"]], rel=1e-12)
    assert answer["epsilon"] > own["epsilon"]


@pytest.mark.parametrize(
    ("mechanism", "loc"),
    [
        ({"type": "gausian", "noise_multiplier": 1}, ["mechanism", "type"]),
        ({"type": "gaussian"}, ["mechanism", "noise_multiplier"]),
        (
            {"type": "poisson-sampled", "sampling_rate": 2, "mechanism": {"type": "gaussian", "noise_multiplier": 1}},
            ["mechanism", "sampling_rate"],
        ),
    ],
)
def test_a_bad_tree_is_a_422_naming_its_path(http, mechanism, loc):
    answer = http.post("/v1/compose", json={"mechanism": mechanism, "delta": DELTA})
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["loc"] == loc
    assert ".".join(loc) in answer.json()["detail"]


def test_a_pointer_to_a_non_number_is_a_422(http):
    mechanism = {"type": "repeated", "count": 3, "mechanism": {"type": "gaussian", "noise_multiplier": 1}}
    body = {"mechanism": mechanism, "delta": DELTA, "target_epsilon": 1.0, "calibrate": "/mechanism/type"}
    answer = http.post("/v1/compose/calibrate", json=body)
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["loc"] == ["calibrate"]


@pytest.mark.parametrize("accountant", ["rdp", "best"])
def test_checkpoints_equal_separate_privacy_calls(http, accountant):
    body = {"algorithm": "dp-sgd", "params": MNIST, "delta": DELTA, "accountant": accountant}
    answer = http.post("/v1/privacy", json=body | {"checkpoints": [235, 4688, 14063]}).json()
    assert [p["steps"] for p in answer["curve"]] == [235, 4688, 14063]
    for point in answer["curve"]:
        params = MNIST | {"epochs": None, "steps": point["steps"]}
        params.pop("epochs")
        alone = http.post("/v1/privacy", json=body | {"params": params}).json()
        # rdp: the same conversion; tight: each checkpoint is read off the whole run's PLD, within the PLD's
        # stated accuracy (1e-4 relative) of a query on its own
        tolerance = 1e-9 if point["accountant"] == "rdp" else 1e-4
        assert point["epsilon"] == pytest.approx(alone["epsilon"], rel=tolerance)
        assert point["accountant"] == alone["accountant"]
        assert point["epochs"] == pytest.approx(point["steps"] * 256 / 60000)
    assert answer["curve"][-1]["epsilon"] == pytest.approx(
        answer["epsilon"], rel=1e-12 if accountant == "rdp" else 1e-4
    )


def test_epochs_checkpoints_end_each_epoch(http):
    body = {"algorithm": "dp-sgd", "params": MNIST | {"epochs": 3}, "delta": DELTA, "accountant": "rdp"}
    answer = http.post("/v1/privacy", json=body | {"checkpoints": "epochs"}).json()
    assert [p["steps"] for p in answer["curve"]] == [235, 469, 704]


@pytest.mark.parametrize("knob", ["epochs", "steps", "batch_size"])
def test_calibrating_an_integer_knob_stops_just_before_the_target(http, knob):
    # the natural request: the calibrated knob left out of params (dp-sgd then has neither steps nor epochs)
    params = {k: v for k, v in MNIST.items() if k not in ("epochs", knob)}
    if knob == "batch_size":
        params["epochs"] = 60
    body = {"algorithm": "dp-sgd", "params": params, "delta": DELTA, "target_epsilon": 3.0, "accountant": "rdp"}
    answer = http.post("/v1/calibrate", json=body | {"calibrate": knob})
    assert answer.status_code == 200, answer.text
    found = answer.json()
    value = int(found["calibrated_value"])
    assert found["calibrated_parameter"] == knob and found["noise_multiplier"] == 1.1

    def epsilon(v: int) -> float:
        given = params | {knob: v}
        if knob == "steps":
            given.pop("epochs", None)
        alone = {"algorithm": "dp-sgd", "params": given, "delta": DELTA, "accountant": "rdp"}
        return http.post("/v1/privacy", json=alone).json()["epsilon"]

    assert epsilon(value) <= 3.0 < epsilon(value + 1)
    assert found["beyond"]["value"] == value + 1
    assert found["beyond"]["epsilon"] == pytest.approx(epsilon(value + 1), rel=1e-12)


def test_the_statement_states_the_answer_it_accompanies(http):
    body = {"algorithm": "dp-sgd", "params": MNIST | {"neighbouring": "replace-one"}, "delta": DELTA}
    answer = http.post("/v1/privacy", json=body | {"statement": True, "accountant": "rdp"}).json()
    statement = answer["statement"]
    assert f"ε = {answer['epsilon']:.4g}" in statement
    assert f"δ = {DELTA:.3g}" in statement
    assert "replace-one relation" in statement and "one example replaced" in statement
    assert f"{answer['conventions']['steps']} steps" in statement
    assert "from the rdp accountant" in statement
    assert answer["conventions"]["sampling"] in statement and "shuffles" in statement
    assert answer["conventions"]["noise_multiplier_definition"] in statement
    # the hyperparameters it rests on: the noise in both units (replace-one: σ = z·2C) and the sampling rate
    assert "noise multiplier 1.1, noise std σ = 2.2" in statement and "q = 256/60000 = 0.00426667" in statement
    calibrated = http.post(
        "/v1/calibrate",
        json={
            "algorithm": "dp-sgd",
            "params": {k: v for k, v in MNIST.items() if k != "noise_multiplier"},
            "delta": DELTA,
            "target_epsilon": 3.0,
            "accountant": "rdp",
            "statement": True,
        },
    ).json()
    assert f"ε = {calibrated['epsilon']:.4g}" in calibrated["statement"]
    assert f"noise multiplier {calibrated['noise_multiplier']:.6g}" in calibrated["statement"]
    assert "add-remove relation" in calibrated["statement"]


def test_compose_answers_checkpoints_and_a_statement_without_sampling(http):
    mechanism = {"type": "repeated", "count": 10, "mechanism": {"type": "gaussian", "noise_multiplier": 5.0}}
    answer = http.post(
        "/v1/compose", json={"mechanism": mechanism, "delta": DELTA, "checkpoints": {"every": 4}, "statement": True}
    ).json()
    assert [p["steps"] for p in answer["curve"]] == [4, 8, 10]
    assert answer["accountant"] == "tight" and answer["conventions"]["steps"] == 10
    assert "none: every release sees the whole dataset" in answer["statement"]
    assert "shuffles" not in answer["statement"]


def test_a_random_allocation_node_is_the_dp_sgd_balls_in_bins_answer(http):
    """/v1/compose's random-allocation node, repeated over fresh epochs, answers exactly what dp-sgd answers for a
    balls-in-bins loader with those bins (one engine), with its certified bracket; the Rényi row answers its
    certified curve, never below the bracket; a replace-one composition of it is not applicable under tight (the reason given), a 422 for best; and
    num_selected above num_steps is a 422 naming the field."""
    allocation = {
        "type": "random-allocation",
        "num_steps": 100,
        "num_selected": 1,
        "mechanism": {"type": "gaussian", "noise_multiplier": 1.0},
    }
    tree = {"type": "repeated", "count": 3, "mechanism": allocation}
    composed = http.post("/v1/compose", json={"mechanism": tree, "delta": DELTA}).json()
    params = {"dataset_size": 10000, "batch_size": 100, "epochs": 3, "noise_multiplier": 1.0}
    family = http.post(
        "/v1/privacy", json={"algorithm": "dp-sgd", "params": params | {"sampling": "balls-in-bins"}, "delta": DELTA}
    ).json()
    rows = {row["name"]: row for row in composed["accountants"]}
    assert composed["accountant"] == family["accountant"] == "tight"
    assert composed["epsilon"] == pytest.approx(family["epsilon"], rel=1e-12)
    assert 0 < rows["tight"]["epsilon_lower"] <= composed["epsilon"] <= rows["tight"]["epsilon_lower"] * (1 + 1e-3)
    assert rows["rdp"]["applicable"] and rows["rdp"]["epsilon"] >= rows["tight"]["epsilon_lower"]  # certified, looser
    refused = http.post("/v1/compose", json={"mechanism": tree, "delta": DELTA, "neighbouring": "replace-one"}).json()
    assert refused["status"] == 422 and "add/remove" in refused["detail"]
    wrong = http.post("/v1/compose", json={"mechanism": allocation | {"num_selected": 101}, "delta": DELTA})
    assert wrong.status_code == 422
    assert wrong.json()["errors"][0]["loc"] == ["mechanism", "num_selected"]


def test_user_level_over_http_is_the_mixture_node(http):
    """dp-sgd with examples_per_user = 3 over /v1/privacy equals the composition of its per-step mixture of Gaussians
    written as a /v1/compose tree; the conventions say who is protected and the effective q."""
    from scipy import stats

    params = {"dataset_size": 10000, "batch_size": 100, "steps": 500, "noise_multiplier": 2.0, "examples_per_user": 3}
    own = http.post(
        "/v1/privacy", json={"algorithm": "dp-sgd", "params": params, "delta": DELTA, "accountant": "tight"}
    )
    assert own.status_code == 200, own.text
    body = own.json()
    assert body["conventions"]["protects"] == "user" and body["conventions"]["examples_per_user"] == 3
    assert body["conventions"]["sampling_rate"] == 0.01
    mixture = {
        "type": "mixture-of-gaussians",
        "noise_multiplier": 2.0,
        "sensitivities": [0.0, 1.0, 2.0, 3.0],
        "probabilities": [float(p) for p in stats.binom.pmf(range(4), 3, 0.01)],
    }
    tree = {"type": "repeated", "count": 500, "mechanism": mixture}
    composed = http.post("/v1/compose", json={"mechanism": tree, "delta": DELTA, "accountant": "tight"})
    assert composed.status_code == 200, composed.text
    assert composed.json()["epsilon"] == body["epsilon"]
    bad = http.post(
        "/v1/compose",
        json={"mechanism": {**mixture, "probabilities": [0.5, 0.5]}, "delta": DELTA, "accountant": "tight"},
    )
    assert bad.status_code == 422 and "probabilities" in bad.text
