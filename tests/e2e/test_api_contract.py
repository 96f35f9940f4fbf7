"""The HTTP contract of issue "HTTP API v1", for dp-sgd, against a live uvicorn server."""

import math

import pytest

from accountants import registry

from ..support.http import assert_problem
from ..support.oracles import DPA_ORDERS, dpa_poisson_event, dpa_rdp_epsilon
from ..support.params import MNIST
from ..support.server import wait_until_ready

PROBLEM = "application/problem+json"


def post(http, path, body):
    return http.post(path, json=body)


def test_healthz(http):
    body = http.get("/healthz").json()
    assert body["status"] == "ok" and body["version"]


def test_algorithms(http):
    listed = http.get("/v1/algorithms").json()
    dp_sgd = next(a for a in listed if a["id"] == "dp-sgd")
    assert dp_sgd["accountants"][0] == "best" and dp_sgd["source"] and dp_sgd["title"]
    detail = http.get("/v1/algorithms/dp-sgd").json()
    props = detail["parameters"]["properties"]
    assert props["dataset_size"]["x-symbol"] == "n" and props["dataset_size"]["x-unit"] == "records"
    assert all(p.get("description") for p in props.values())
    assert detail["assumptions"] and detail["bounds"]
    assert all(b["conditions"] is not None and b["source"] for b in detail["bounds"])


def test_unknown_algorithm_is_404_listing_ids(http):
    body = assert_problem(http.get("/v1/algorithms/dp-adam"), 404, ("algorithm",))
    assert "dp-sgd" in body["algorithms"]
    body = assert_problem(post(http, "/v1/privacy", {"algorithm": "dp-adam", "params": {}, "delta": 1e-5}), 404)
    assert body["algorithms"] == registry.ids()


def test_privacy_contract(http):
    params = {**MNIST, "noise_multiplier": 1.1, "epoch_rounding": "floor"}
    body = post(http, "/v1/privacy", {"algorithm": "dp-sgd", "params": params, "delta": 1e-5}).json()
    expected = registry.get("dp-sgd").privacy(params, 1e-5)
    assert body["epsilon"] == pytest.approx(expected.epsilon, rel=1e-12)
    # a1: best is the PLD (tight) answer, an upper bound within 1e-3 of the exact 2.381598 (anchor a1, dp_accounting's PLD at vdi 1e-5)
    assert 2.381598 <= body["epsilon"] <= 2.381598 * (1 + 1e-3)
    assert body["delta"] == 1e-5 and body["accountant"] == "tight"
    assert 8 < body["optimal_order"] < 8.2
    assert len(body["rdp"]["orders"]) == len(body["rdp"]["epsilons"]) > 150
    names = {a["name"]: a for a in body["accountants"]}
    assert names["tight"]["applicable"] and names["tight"]["epsilon"] == body["epsilon"]
    assert "privacy-loss distribution" in names["tight"]["method"]
    assert names["rdp"]["epsilon"] == pytest.approx(2.5965420, rel=1e-6)  # refined order (grid: 2.596556)
    assert not names["paper"]["applicable"] and names["paper"]["reason"]
    assert body["noise"] == {
        "noise_multiplier": 1.1,
        "noise_std": 1.1,
        "sensitivity": 1.0,
        "sensitivity_rule": body["noise"]["sensitivity_rule"],
        "units": body["noise"]["units"],
        "sensitivity_exact": True,  # a clip norm is exact; dp-mf's strategy sensitivities may be bounds
        "sensitivity_attained": None,
        "worst_pattern": None,
    }
    assert body["conventions"]["neighbouring"] == "add-remove"
    assert body["conventions"]["steps"] == 14062 and "floor" in body["conventions"]["step_rule"]
    assert isinstance(body["warnings"], list)


def test_privacy_on_dp_accountings_grid_matches_it(http):
    params = {"dataset_size": 100000, "batch_size": 1000, "steps": 1000, "noise_multiplier": 1.0}
    body = post(
        http,
        "/v1/privacy",
        {
            "algorithm": "dp-sgd",
            "params": params,
            "delta": 1e-5,
            "accountant": "rdp",
            "orders": DPA_ORDERS.tolist(),
            "refine_order": False,
        },
    )
    body = body.json()
    assert body["rdp"]["orders"] == sorted(DPA_ORDERS.tolist())
    assert body["epsilon"] == pytest.approx(2.101365272, rel=1e-8)  # a2, exact fractional orders (opacus)
    theirs, _ = dpa_rdp_epsilon(dpa_poisson_event(0.01, 1.0, 1000), 1e-5)
    assert body["epsilon"] <= theirs


def test_replace_one_reports_the_doubled_sensitivity(http):
    params = {
        **MNIST,
        "noise_multiplier": 1.1,
        "clip_norm": 0.5,
        "sampling": "fixed-size",
        "neighbouring": "replace-one",
    }
    body = post(http, "/v1/privacy", {"algorithm": "dp-sgd", "params": params, "delta": 1e-5}).json()
    assert body["noise"]["sensitivity"] == 1.0 and body["noise"]["noise_std"] == pytest.approx(1.1)
    assert "2·clip_norm" in body["conventions"]["noise_multiplier_definition"]


def test_full_batch_best_is_the_exact_analytic_gaussian(http):
    params = {"dataset_size": 100, "batch_size": 100, "steps": 100, "noise_multiplier": 10.0}
    body = post(http, "/v1/privacy", {"algorithm": "dp-sgd", "params": params, "delta": 1e-5}).json()
    assert body["accountant"] == "tight"
    assert body["epsilon"] == pytest.approx(4.377178096, rel=1e-9)  # a4 ≡ b1
    rdp = next(a for a in body["accountants"] if a["name"] == "rdp")
    assert rdp["epsilon"] > body["epsilon"]


def test_calibrate_contract(http):
    body = post(
        http, "/v1/calibrate", {"algorithm": "dp-sgd", "params": MNIST, "target_epsilon": 3.0, "delta": 1e-5}
    ).json()
    assert body["calibrated_parameter"] == "noise_multiplier"
    assert body["calibrated_value"] == body["noise_multiplier"]
    assert body["noise_std"] == pytest.approx(body["noise_multiplier"])  # clip_norm 1
    assert body["epsilon"] <= 3.0 and body["target_epsilon"] == 3.0
    assert body["rdp"]["orders"] and body["optimal_order"]
    assert body["utility"] is None and body["utility_reason"]
    assert body["paper"] is None and body["paper_reason"]
    assert body["conventions"]["steps"] == 14063  # ceil, stated
    # the answer is the smallest: 1e-4 below it (the tight calibration's tolerance) the certified ε exceeds the target
    below = {**MNIST, "noise_multiplier": body["noise_multiplier"] * (1 - 1e-4)}
    assert post(http, "/v1/privacy", {"algorithm": "dp-sgd", "params": below, "delta": 1e-5}).json()["epsilon"] > 3


def test_utility_has_no_bound_with_a_reason(http):
    body = post(http, "/v1/utility", {"algorithm": "dp-sgd", "params": MNIST}).json()
    assert body["bounds"] == [] and "utility" in body["reason"]


def test_unsupported_accountant_names_supported_ones(http):
    body = assert_problem(
        post(
            http,
            "/v1/privacy",
            {
                "algorithm": "dp-sgd",
                # ten billion steps: a composition too wide for the PLD accountant's window, so tight steps aside
                "params": {"dataset_size": 1000, "batch_size": 10, "steps": 10**10, "noise_multiplier": 1.0},
                "delta": 1e-5,
                "accountant": "tight",
            },
        ),
        422,
        ("accountant",),
    )
    assert body["supported"] == ["best", "rdp"]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (
            '{"algorithm": "dp-sgd", "params": {"dataset_size": NaN, "batch_size": 2, "steps": 1}, "delta": 1e-5}',
            ("params", "dataset_size"),
        ),
        (
            '{"algorithm": "dp-sgd", "params": {"dataset_size": 10, "batch_size": 2, "steps": 1, "noise_multiplier": '
            'Infinity}, "delta": 1e-5}',
            ("params", "noise_multiplier"),
        ),
        (
            '{"algorithm": "dp-sgd", "params": {"dataset_size": 10, "batch_size": 2, "steps": 1, "noise_multiplier": 1},'
            ' "delta": 1e999}',
            ("delta",),
        ),
        (
            '{"algorithm": "dp-sgd", "params": {"dataset_size": 10, "batch_size": 2, "steps": 1, "noise_multiplier": '
            '1e400}, "delta": 1e-5}',
            ("params", "noise_multiplier"),
        ),
        (
            '{"algorithm": "dp-sgd", "params": {"dataset_size": 1' + "0" * 400 + ', "batch_size": 2, "steps": 1}, '
            '"delta": 1e-5}',
            ("params", "dataset_size"),
        ),
        (
            '{"algorithm": "dp-sgd", "params": {"dataset_size": "10", "batch_size": 2, "steps": 1}, "delta": 1e-5}',
            ("params", "dataset_size"),
        ),
        (
            '{"algorithm": "dp-sgd", "params": {"dataset_size": 10, "batch_size": 2, "steps": true}, "delta": 1e-5}',
            ("params", "steps"),
        ),
        ('{"algorithm": "dp-sgd", "params": {"dataset_size": 10, "batch_size": 2, "steps": 1}}', ("delta",)),
        ('{"algorithm": "dp-sgd", "delta": 1e-5}', ("params",)),
        ('{"params": {}, "delta": 1e-5}', ("algorithm",)),
        ('{"algorithm": "dp-sgd", "params": [], "delta": 1e-5}', ("params",)),
        (
            '{"algorithm": "dp-sgd", "params": {"dataset_size": 10, "batch_size": 20, "steps": 1, "noise_multiplier": 1},'
            ' "delta": 1e-5}',
            ("params", "batch_size"),
        ),
        (
            '{"algorithm": "dp-sgd", "params": {"dataset_size": 10, "batch_size": 2, "steps": 1}, "delta": 1e-5}',
            ("params", "noise_multiplier"),
        ),
        (
            '{"algorithm": "dp-sgd", "params": {"dataset_size": 10, "batch_size": 2, "steps": 1, "noise_multiplier": 1},'
            ' "delta": 1e-5, "orders": [0.5]}',
            ("orders", 0),
        ),
        (
            '{"algorithm": "dp-sgd", "params": {"dataset_size": 10, "batch_size": 2, "steps": 1, "noise_multiplier": 1},'
            ' "delta": 1e-5, "extra": 1}',
            ("extra",),
        ),
    ],
)
def test_bad_input_is_a_problem_naming_the_field(http, raw, field):
    response = http.post("/v1/privacy", content=raw, headers={"content-type": "application/json"})
    body = assert_problem(response, 422, field)
    error = next(e for e in body["errors"] if tuple(e["loc"]) == field)
    assert error["message"]


def test_malformed_json_is_400(http):
    assert_problem(http.post("/v1/privacy", content=b"{", headers={"content-type": "application/json"}), 400)


def test_infeasible_calibration_is_a_problem(http):
    params = {"dataset_size": 10, "batch_size": 10, "steps": 10**12}
    body = assert_problem(
        post(http, "/v1/calibrate", {"algorithm": "dp-sgd", "params": params, "target_epsilon": 1e-3, "delta": 1e-10}),
        422,
    )
    assert body["errors"][0]["loc"] == ["target_epsilon"]


def test_too_large_body_is_413(http):
    body = {"algorithm": "dp-sgd", "params": {}, "delta": 1e-5, "pad": "x" * 2_000_000}
    assert_problem(post(http, "/v1/privacy", body), 413)


def test_unknown_route_and_method_are_problems(http):
    assert_problem(http.get("/v2/privacy"), 404)
    assert_problem(http.post("/v2/privacy", content=b"x"), 404)  # an unknown path is not a 415
    assert_problem(http.get("/v1/privacy"), 405)


def test_every_undocumented_method_is_405_with_every_documented_one_allowed(http):
    """Every documented path, every method it does not document: 405 (before any check of the body, so a body-less
    POST is not a 415) with ``Allow`` naming exactly its documented methods (and HEAD with GET) — also where two
    routes share the path (GET and POST /v1/jobs; GET and DELETE /v1/jobs/{job_id})."""
    paths = http.get("/openapi.json").json()["paths"]
    methods = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
    for template, item in paths.items():
        documented = {m.upper() for m in item if m.upper() in methods}
        documented |= {"HEAD"} if "GET" in documented else set()
        path = template.replace("{algorithm_id}", "dp-sgd").replace("{job_id}", "0" * 32)
        for method in sorted(methods - documented):
            response = http.request(method, path)
            assert response.status_code == 405, (method, path, response.status_code)
            assert set(response.headers["allow"].split(", ")) == documented, (method, path)
            if method != "HEAD":
                assert_problem(response, 405)


def test_answers_never_contain_non_finite_numbers(http):
    params = {"dataset_size": 10**12, "batch_size": 1, "steps": 10**12, "noise_multiplier": 1e-3}
    response = post(http, "/v1/privacy", {"algorithm": "dp-sgd", "params": params, "delta": 1e-300})
    assert response.status_code in (200, 422)
    if response.status_code == 200:
        assert math.isfinite(response.json()["epsilon"])


@pytest.mark.parametrize("path", ["/", "/healthz", "/readyz", "/docs", "/v1/algorithms", "/openapi.json"])
def test_every_get_answers_head_with_its_headers_and_no_body(http, path):
    """Load balancers and uptime checks probe with HEAD (it was 405)."""
    wait_until_ready(str(http.base_url).rstrip("/"))  # /readyz is 503 while the fork server starts
    get, head = http.get(path), http.head(path)
    assert head.status_code == get.status_code == 200 and head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]
    assert head.headers["content-length"] == get.headers["content-length"]
    assert http.head("/v1/privacy").status_code == 405  # a POST route stays POST


def test_the_documents_introduction_names_every_operation(http):
    """The intro of /docs lists the operations a client calls (it omitted /v1/compose)."""
    document = http.get("/openapi.json").json()
    intro = document["info"]["description"]
    for path, operations in document["paths"].items():
        if path.startswith("/v1/") and "{" not in path:
            for method in operations:
                assert f"`{method.upper()} {path}`" in intro, (method, path)
