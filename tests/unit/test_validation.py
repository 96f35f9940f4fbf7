"""Bad input raises a ValueError subclass naming the parameter and its allowed range (the established libraries
accept much of it: NaN → ε = 0, δ > 1 → negative ε, hangs …)."""

import math

import pytest

from accountants import registry
from accountants.errors import ParameterError
from accountants.events import GaussianEvent, PoissonSampledEvent, SampledWithoutReplacementEvent, SelfComposedEvent
from accountants.mechanisms.gaussian import gaussian_epsilon
from accountants.mechanisms.poisson_gaussian import poisson_subsampled_gaussian_rdp
from accountants.mechanisms.sampled_wor_gaussian import sampled_without_replacement_gaussian_rdp
from accountants.rdp import RdpAccountant

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize("q", [1.5, 0.0, -0.1, NAN, INF, "0.1", None])
def test_sampling_rate_outside_unit_interval(q):
    with pytest.raises(ValueError, match=r"sampling_rate.*\(0, 1\]"):
        poisson_subsampled_gaussian_rdp(q, 1.0, [2.0])
    with pytest.raises(ValueError, match=r"sampling_rate.*\(0, 1\]"):
        PoissonSampledEvent(q, GaussianEvent(1.0))
    with pytest.raises(ValueError, match=r"sampling_rate.*\(0, 1\]"):
        sampled_without_replacement_gaussian_rdp(q, 1.0, [2.0])


@pytest.mark.parametrize("z", [0.0, -1.0, NAN, INF, -INF, 5e-324, 1e-160])
def test_noise_multiplier_not_positive_finite(z):
    with pytest.raises(ValueError, match=r"noise_multiplier.*> 0"):
        poisson_subsampled_gaussian_rdp(0.01, z, [2.0])
    with pytest.raises(ValueError, match=r"noise_multiplier.*> 0"):
        GaussianEvent(z)
    with pytest.raises(ValueError, match=r"noise_multiplier.*> 0"):
        gaussian_epsilon(z, 1e-5)


@pytest.mark.parametrize("orders", [[NAN], [1.0], [0.5, 2.0], [INF], [], [[2.0]], ["a"], [2e5]])
def test_orders(orders):
    with pytest.raises(ValueError, match=r"orders.*\(1, 100000\]"):
        poisson_subsampled_gaussian_rdp(0.01, 1.0, orders)


@pytest.mark.parametrize("delta", [0.0, 1.0, 1.5, -1e-5, NAN, INF])
def test_delta_outside_open_unit_interval(delta):
    event = SelfComposedEvent(PoissonSampledEvent(0.01, GaussianEvent(1.0)), 100)
    with pytest.raises(ValueError, match=r"delta.*\(0, 1\)"):
        RdpAccountant().epsilon(event, delta)
    with pytest.raises(ValueError, match=r"delta.*\(0, 1\)"):
        gaussian_epsilon(1.0, delta)
    with pytest.raises(ValueError, match=r"delta.*\(0, 1\)"):
        registry.get("dp-sgd").privacy(
            {"dataset_size": 100, "batch_size": 1, "steps": 100, "noise_multiplier": 1.0}, delta
        )


@pytest.mark.parametrize("steps", [0, -5, 10.5, NAN, INF, True, "10"])
def test_steps_must_be_positive_integers(steps):
    with pytest.raises(ValueError, match=r"count.*integer"):
        SelfComposedEvent(GaussianEvent(1.0), steps)
    with pytest.raises(ValueError, match=r"steps") as info:
        registry.get("dp-sgd").privacy(
            {"dataset_size": 100, "batch_size": 10, "steps": steps, "noise_multiplier": 1.0}, 1e-5
        )
    assert "integer" in str(info.value)


def test_batch_larger_than_dataset():
    with pytest.raises(ValueError, match=r"batch_size.*dataset_size.*\[1, 100\]"):
        registry.get("dp-sgd").privacy(
            {"dataset_size": 100, "batch_size": 101, "steps": 10, "noise_multiplier": 1.0}, 1e-5
        )
    with pytest.raises(ValueError, match=r"sample_size.*<= 100"):
        SampledWithoutReplacementEvent(100, 101, GaussianEvent(1.0))


FAMILY_BASE = {"dataset_size": 60000, "batch_size": 256, "steps": 1000, "noise_multiplier": 1.1}


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("dataset_size", NAN, "integer"),
        ("dataset_size", 0, ">= 1"),
        ("batch_size", INF, "integer"),
        ("noise_multiplier", NAN, ">= 1e-12"),
        ("noise_multiplier", INF, ">= 1e-12"),
        ("noise_multiplier", 0.0, ">= 1e-12"),
        ("noise_multiplier", -2.0, ">= 1e-12"),
        ("noise_multiplier", 5e-324, ">= 1e-12"),
        ("noise_multiplier", 1e7, "<= 1e+06"),
        ("clip_norm", NAN, "> 0"),
        ("epochs", -1.0, "> 0"),
        ("sampling", "cyclic", "poisson, fixed-size, shuffle, balls-in-bins, truncated-poisson"),
        ("neighbouring", "swap", "add-remove, replace-one"),
        ("dataset_size", 10**13, "<= 1e+12"),
    ],
)
def test_family_fields_name_field_and_range(field, value, allowed):
    params = dict(FAMILY_BASE)
    params[field] = value
    if field == "epochs":
        params.pop("steps")
    with pytest.raises(ParameterError) as info:
        registry.get("dp-sgd").privacy(params, 1e-5)
    message = str(info.value)
    assert message.startswith(field) and allowed in message, message
    assert info.value.issues[0].loc == (field,)


def test_unknown_field_lists_the_known_ones():
    with pytest.raises(ParameterError, match=r"noise: unknown field.*noise_multiplier"):
        registry.get("dp-sgd").privacy(FAMILY_BASE | {"noise": 1.0}, 1e-5)


def test_every_issue_is_reported_at_once():
    with pytest.raises(ParameterError) as info:
        registry.get("dp-sgd").privacy({"dataset_size": -1, "batch_size": NAN, "steps": 1.5}, 1e-5)
    assert {issue.field for issue in info.value.issues} == {"dataset_size", "batch_size", "steps"}


def test_fixed_size_requires_replace_one():
    with pytest.raises(ParameterError, match=r"neighbouring.*replace-one"):
        registry.get("dp-sgd").privacy(FAMILY_BASE | {"sampling": "fixed-size"}, 1e-5)


def test_missing_noise_for_privacy():
    params = {k: v for k, v in FAMILY_BASE.items() if k != "noise_multiplier"}
    with pytest.raises(ParameterError, match=r"noise_multiplier.*required"):
        registry.get("dp-sgd").privacy(params, 1e-5)


def test_unknown_accountant():
    with pytest.raises(ValueError, match=r"accountant.*best, rdp, tight, paper"):
        registry.get("dp-sgd").privacy(FAMILY_BASE, 1e-5, accountant="gdp")


def test_inapplicable_accountant_names_the_usable_ones():
    from accountants.errors import UnsupportedAccountantError

    with pytest.raises(UnsupportedAccountantError, match=r"paper.*use one of: best, rdp"):
        registry.get("dp-sgd").privacy(FAMILY_BASE, 1e-5, accountant="paper")


def test_noise_std_is_checked_through_the_multiplier_it_gives():
    with pytest.raises(ParameterError, match=r"noise_std: gives noise_multiplier .* outside \[1e-12, 1e\+06\]"):
        registry.get("dp-sgd").privacy(
            {k: v for k, v in FAMILY_BASE.items() if k != "noise_multiplier"} | {"noise_std": 1e-20}, 1e-5
        )


def test_many_unknown_names_are_one_issue_naming_the_first_and_the_count():
    params = {"dataset_size": 60000, "batch_size": 256, "epochs": 60} | {f"x{i}": 1 for i in range(10**4)}
    with pytest.raises(ParameterError) as raised:
        registry.get("dp-sgd").parse(params)
    (issue,) = raised.value.issues
    assert issue.message.startswith("has 10000 unknown fields ('x0', 'x1'") and "noise_multiplier" in issue.message
    fifty = {"dataset_size": 60000, "batch_size": 256, "epochs": 60} | {f"x{i}": 1 for i in range(50)}
    with pytest.raises(ParameterError) as each:
        registry.get("dp-sgd").parse(fifty)
    assert len(each.value.issues) == 50 and each.value.issues[0].message == "unknown field"  # each, up to 50


def test_errors_name_the_first_fifty_issues_and_count_the_rest(tmp_path):
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings

    body = {"algorithm": "dp-sgd", "params": FAMILY_BASE, "delta": 1e-5, "orders": [0.5] * 200}  # 200 bad orders
    with TestClient(create_app(Settings(jobs_db=str(tmp_path / "j.sqlite3"), embedded_workers=False))) as http:
        errors = http.post("/v1/privacy", json=body).json()["errors"]
    assert len(errors) == 51 and errors[0]["loc"] == ["orders", 0]
    assert errors[-1]["message"] == "150 more issues not listed (the first 50 are)"


def test_a_noise_multiplier_whose_inverse_square_underflows_is_refused():
    """Above 1e150, 1/z² underflows to 0: a Poisson-sampled Gaussian at z = 1e200 divided by zero before."""
    with pytest.raises(ValueError, match=r"noise_multiplier.*1e\+150"):
        PoissonSampledEvent(0.5, GaussianEvent(1e151))
    assert GaussianEvent(1e150).noise_multiplier == 1e150
