"""Friendly input: the closest valid name for a misspelt field or algorithm, other spellings accepted, 415 for a body
that is not JSON, a warning for δ ≥ 1/n, and calibration failures that state what is reachable."""

import pytest

from accountants import registry
from accountants.errors import CalibrationError, ParameterError

from ..support.http import assert_problem
from ..support.params import MNIST as MNIST_EPOCHS

MNIST = MNIST_EPOCHS | {"noise_multiplier": 1.1}


def test_misspelt_parameter_gets_did_you_mean(http):
    params = {**MNIST, "batch_sise": 256}
    del params["batch_size"]
    body = assert_problem(
        http.post("/v1/privacy", json={"algorithm": "dp-sgd", "params": params, "delta": 1e-5}),
        422,
        ("params", "batch_sise"),
    )
    error = next(e for e in body["errors"] if e["loc"] == ["params", "batch_sise"])
    assert "did you mean 'batch_size'?" in error["message"]


def test_misspelt_enum_values_and_event_types_get_did_you_mean(http):
    body = {"algorithm": "dp-sgd", "params": MNIST | {"sampling": "posson"}, "delta": 1e-5, "accountant": "tigth"}
    errors = {tuple(e["loc"]): e["message"] for e in http.post("/v1/privacy", json=body).json()["errors"]}
    assert errors[("params", "sampling")].endswith("did you mean 'poisson'?")
    assert errors[("accountant",)].endswith("did you mean 'tight'?")
    tree = {"type": "gausian", "noise_multiplier": 1}
    composed = http.post("/v1/compose", json={"mechanism": tree, "delta": 1e-5}).json()
    assert composed["errors"][0]["message"] == "unknown event type 'gausian'; did you mean 'gaussian'?"


def test_misspelt_body_field_gets_did_you_mean(http):
    response = http.post(
        "/v1/privacy", json={"algorithm": "dp-sgd", "params": MNIST, "delta": 1e-5, "acountant": "rdp"}
    )
    body = assert_problem(response, 422, ("acountant",))
    assert "did you mean 'accountant'?" in body["detail"]


def test_misspelt_algorithm_gets_did_you_mean(http):
    body = assert_problem(http.post("/v1/privacy", json={"algorithm": "dp-sdg", "params": {}, "delta": 1e-5}), 404)
    assert "did you mean 'dp-sgd'?" in body["detail"] and body["algorithms"] == registry.ids()


def test_library_names_the_closest_field_too():
    with pytest.raises(ParameterError, match="did you mean 'noise_multiplier'"):
        registry.get("dp-sgd").privacy({**MNIST, "noise_multiplyer": 1.0}, 1e-5)


def test_us_spelling_of_neighbouring_is_accepted(http):
    answers = [
        http.post(
            "/v1/privacy",
            json={"algorithm": "dp-sgd", "params": {**MNIST, name: "replace-one"}, "delta": 1e-5, "accountant": "rdp"},
        ).json()
        for name in ("neighbouring", "neighboring")
    ]
    assert answers[0] == answers[1] and answers[0]["conventions"]["neighbouring"] == "replace-one"


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_a_body_that_is_not_json_is_415(http, content_type):
    headers = {} if content_type is None else {"content-type": content_type}
    response = http.post("/v1/privacy", content=b'{"algorithm": "dp-sgd"}', headers=headers)
    body = assert_problem(response, 415)
    assert "application/json" in body["detail"]


def test_json_with_a_charset_is_accepted(http):
    response = http.post(
        "/v1/utility",
        content=b'{"algorithm": "dp-sgd", "params": {"dataset_size": 10, "batch_size": 2, "steps": 1}}',
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert response.status_code == 200


def test_delta_at_least_one_over_n_is_warned(http):
    params = {**MNIST, "dataset_size": 50000}
    weak = http.post("/v1/privacy", json={"algorithm": "dp-sgd", "params": params, "delta": 0.5, "accountant": "rdp"})
    assert any("1/dataset_size" in w for w in weak.json()["warnings"])
    usual = http.post("/v1/privacy", json={"algorithm": "dp-sgd", "params": params, "delta": 1e-6, "accountant": "rdp"})
    assert not any("1/dataset_size" in w for w in usual.json()["warnings"])


@pytest.mark.parametrize("family", registry.families(), ids=lambda f: f.id)
def test_every_family_warns_for_delta_at_least_one_over_n(family):
    n = family.parse(family.example).dataset_size
    report = family.privacy(family.example, min(2.0 / n, 0.5))
    assert any("1/dataset_size" in w for w in report.warnings)


def test_unreachable_target_states_the_reachable_range_not_a_placeholder():
    params = {"dataset_size": 10, "batch_size": 10, "steps": 10**12}
    with pytest.raises(CalibrationError) as info:
        registry.get("dp-sgd").calibrate(params, 1e-3, 1e-10, "rdp")
    message = str(info.value)
    assert "reachable targets are ε ≥" in message and "1e+12" not in message


def test_uncertifiable_delta_says_so_instead_of_a_placeholder():
    # a billion steps at δ = 1e-295: the atoms at +∞ of the discretised releases alone exceed δ at any noise
    params = {"dataset_size": 10**9, "batch_size": 100, "steps": 10**9}
    report = registry.get("dp-sgd").calibrate(params, 2.0, 1e-295, "best")
    tight = next(a for a in report.accountants if a.name == "tight")
    assert not tight.applicable and "1e+12" not in tight.reason and "no finite ε" in tight.reason
