"""Each family's plan is its mechanism: the generic RDP accountant on the family's event tree gives the family's own
`rdp` answer (ε to 1e-9 relative, and the Rényi curve it reports), for every structure the families account."""

from __future__ import annotations

import dp_accounting as dpa
import numpy as np
import pytest

from accountants import registry
from accountants.events import ZCdpEvent
from accountants.rdp import RdpAccountant

DELTA = 1e-6


def example(algorithm: str, **changes: object) -> dict:
    return {**registry.get(algorithm).example, **changes}


CASES = [
    ("dp-sgd", example("dp-sgd")),
    ("dp-sgd", example("dp-sgd", neighbouring="replace-one")),
    ("dp-sgd", example("dp-sgd", sampling="fixed-size", neighbouring="replace-one")),
    ("dp-sgd", example("dp-sgd", batch_size=60000, epochs=3)),
    ("dp-bilevel", example("dp-bilevel")),
    (
        "dp-bilevel",
        example("dp-bilevel", variant="mini-batch", batch_size_outer=5000, batch_size_inner=1000, noise_multiplier=6.0),
    ),
    ("nseg", example("nseg")),
    ("nseg", example("nseg", passes="multi", steps=200)),
    ("nseg", example("nseg", passes="multi", steps=200, sampling="uniform")),
    ("nispp", example("nispp", passes="multi", steps=300)),
    ("phased-output-perturbation", example("phased-output-perturbation")),
    ("phased-output-perturbation", example("phased-output-perturbation", problem_class="c-c")),
    ("private-mirror-descent", example("private-mirror-descent")),
    ("private-mirror-descent", example("private-mirror-descent", stepsize=2.0)),
    (
        "private-mirror-descent",
        example("private-mirror-descent", variant="sco", samples_per_step=2, refresh_period=3, dimension_y=None),
    ),
]


@pytest.mark.parametrize(("algorithm", "params"), CASES, ids=[f"{a}-{i}" for i, (a, _) in enumerate(CASES)])
def test_the_generic_accountant_on_the_plan_is_the_family_rdp(algorithm, params):
    family = registry.get(algorithm)
    params = {k: v for k, v in params.items() if v is not None}
    report = family.privacy(params, DELTA, accountant="rdp")
    plan = family.plan(params, DELTA)
    accountant = RdpAccountant(plan.neighbouring)
    generic = accountant.epsilon(plan.event, plan.accounted_delta(DELTA))
    # the family may convert a curve linear in α exactly over real α (never above the grid-and-refine value)
    assert report.epsilon <= generic.value * (1 + 1e-9)
    assert report.epsilon == pytest.approx(generic.value, rel=1e-7)
    orders = np.array(report.rdp.orders)
    reported = np.array([np.inf if e is None else e for e in report.rdp.epsilons])
    np.testing.assert_allclose(reported, accountant.rdp(plan.event, orders), rtol=1e-9)


def test_the_last_iterate_plan_is_one_zcdp_release_whose_curve_is_the_familys():
    family = registry.get("dp-sgd-last-iterate")
    plan = family.plan(family.example, DELTA)
    assert isinstance(plan.event, ZCdpEvent) and plan.neighbouring == "replace-one"
    report = family.privacy(family.example, DELTA, accountant="rdp")
    orders = np.array(report.rdp.orders)
    np.testing.assert_allclose(RdpAccountant("replace-one").rdp(plan.event, orders), report.rdp.epsilons, rtol=1e-12)


@pytest.mark.slow
def test_account_plan_reads_any_event_tree_and_spends_the_reserved_delta():
    """The spine's answer for a plan (what /v1/compose will serve): rdp on any tree; tight exact for Gaussian trees,
    the PLD accountant for the trees it reads (within 1e-3 of dp_accounting's PLD), not applicable otherwise."""
    from accountants.errors import ParameterError
    from accountants.events import ComposedEvent, GaussianEvent, PoissonSampledEvent, SelfComposedEvent, ZCdpEvent
    from accountants.mechanisms.gaussian import gaussian_epsilon
    from accountants.plan_accounting import account_plan
    from accountants.plans import MechanismPlan
    from tests.support.oracles import dpa_pld_epsilon

    mixed = ComposedEvent((GaussianEvent(2.0), SelfComposedEvent(PoissonSampledEvent(0.01, GaussianEvent(1.0)), 100)))
    answer = account_plan(MechanismPlan(mixed, "add-remove", reserved_delta=DELTA / 2), DELTA)
    rdp, tight = answer.results
    assert rdp.epsilon == RdpAccountant("add-remove").epsilon(mixed, DELTA / 2).value
    assert tight.applicable and tight.epsilon < rdp.epsilon and "privacy-loss distribution" in tight.method
    dpa_mixed = dpa.ComposedDpEvent(
        [
            dpa.GaussianDpEvent(2.0),
            dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 100),
        ]
    )
    assert tight.epsilon == pytest.approx(dpa_pld_epsilon(dpa_mixed, DELTA / 2, vdi=1e-5), rel=1e-3)
    unread = ComposedEvent((GaussianEvent(2.0), ZCdpEvent(0.1)))
    _, none = account_plan(MechanismPlan(unread, "add-remove"), DELTA).results
    assert not none.applicable and "ZCdpEvent" in none.reason
    gaussians = ComposedEvent((GaussianEvent(2.0), SelfComposedEvent(GaussianEvent(4.0), 12)))  # μ² = 1/4 + 12/16 = 1
    _, exact = account_plan(MechanismPlan(gaussians, "replace-one"), DELTA).results
    assert exact.epsilon == pytest.approx(gaussian_epsilon(1.0, DELTA), rel=1e-12)
    with pytest.raises(ParameterError, match="delta"):
        account_plan(MechanismPlan(mixed, "add-remove", reserved_delta=DELTA), DELTA)


def test_delta_spent_outside_the_releases_makes_tight_an_upper_bound_without_a_lower_one():
    """With δ reserved outside the tree (a solver's failure probability), tight is the exact Gaussian ε at δ less it
    (the closed form, written out here), reported as a certified upper bound with no lower bound; without a reserve
    the same releases are exact with their bracket."""
    import math

    from scipy.optimize import brentq
    from scipy.stats import norm

    from accountants.events import GaussianEvent, SelfComposedEvent
    from accountants.plan_accounting import account_plan
    from accountants.plans import MechanismPlan
    from accountants.reports import Guarantee

    def gaussian_epsilon(mu: float, delta: float) -> float:  # Balle & Wang 2018, Thm. 8, solved for ε
        def gap(eps: float) -> float:
            return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2) - delta

        return float(brentq(gap, 0.0, 100.0, xtol=1e-14))

    event = SelfComposedEvent(GaussianEvent(2.0), 2)
    reserved = account_plan(MechanismPlan(event, "replace-one", reserved_delta=4e-6), 1e-5, "tight").results[1]
    plain = account_plan(MechanismPlan(event, "replace-one"), 1e-5, "tight").results[1]
    assert reserved.epsilon == pytest.approx(gaussian_epsilon(math.sqrt(2) / 2.0, 6e-6), rel=1e-9)
    assert reserved.kind is Guarantee.CERTIFIED and reserved.epsilon_lower is None
    assert "spent outside" in (reserved.guarantee or "")
    assert plain.kind is Guarantee.EXACT and plain.epsilon_lower is not None
    assert plain.epsilon == pytest.approx(gaussian_epsilon(math.sqrt(2) / 2.0, 1e-5), rel=1e-9)
