"""The RDP path against dp_accounting, live, on the consensus configurations a1–a4, b1–b3
(:mod:`tests.support.params`).

Where the optimal order is an integer, ε on dp_accounting's grid must equal its RdpAccountant to 1e-6; and no RDP ε may
fall below the tight value (dp_accounting's pessimistic PLD at vdi 1e-4, minus its 2e-4 discretisation error).
"""

import math

import dp_accounting as dpa
import pytest

from accountants.events import GaussianEvent, PoissonSampledEvent, SelfComposedEvent
from accountants.mechanisms.gaussian import gaussian_epsilon
from accountants.rdp import RdpAccountant

from ..support.oracles import DPA_ORDERS, dpa_pld_epsilon, dpa_poisson_event, dpa_rdp_epsilon

Q = 256 / 60000
POISSON = {
    "a1": (Q, 1.1, math.floor(60 / Q)),
    "a1'": (Q, 1.1, math.ceil(60 * 60000 / 256)),
    "a2": (0.01, 1.0, 1000),
    "a3": (0.001, 0.8, 10000),
    "a4": (1.0, 10.0, 100),
}
GAUSSIAN = {"b1": (1.0, 1), "b2": (1.0, 10), "b3": (5.0, 100)}
PLD_ERROR = 2e-4  # measured: PLD(vdi 1e-4) − tight ∈ [4e-9, 1.36e-4]


def ours(q, z, steps, **kw):
    return RdpAccountant().epsilon(SelfComposedEvent(PoissonSampledEvent(q, GaussianEvent(z)), steps), 1e-5, **kw)


@pytest.mark.parametrize("name", list(POISSON))
def test_poisson_configs_against_dp_accounting(name):
    q, z, steps = POISSON[name]
    event = dpa_poisson_event(q, z, steps)
    theirs, order = dpa_rdp_epsilon(event, 1e-5)
    grid = ours(q, z, steps, orders=DPA_ORDERS, refine=False)
    assert grid.optimal_order == pytest.approx(order)
    if float(order).is_integer():
        assert grid.value == pytest.approx(theirs, rel=1e-6)
    else:
        # fractional optimum: dp_accounting 0.6.0 overstates fractional orders (it sums |terms|); we are exact
        assert grid.value <= theirs
        assert grid.value == pytest.approx(theirs, rel=1e-5)
    refined = ours(q, z, steps)
    assert refined.value <= grid.value
    tight = dpa_pld_epsilon(event, 1e-5)
    assert refined.value >= tight - PLD_ERROR
    assert grid.value >= tight - PLD_ERROR


def test_a2_matches_the_signed_series_value():
    # anchors: a2 RDP ε = 2.101365272 with exact fractional orders (opacus), 2.101366525 in dp_accounting
    assert ours(0.01, 1.0, 1000, orders=DPA_ORDERS, refine=False).value == pytest.approx(2.101365272, rel=1e-8)


@pytest.mark.parametrize("name", list(GAUSSIAN))
def test_gaussian_configs(name):
    z, steps = GAUSSIAN[name]
    event = dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(z), steps)
    theirs, _ = dpa_rdp_epsilon(event, 1e-5)
    mine = RdpAccountant().epsilon(SelfComposedEvent(GaussianEvent(z), steps), 1e-5, orders=DPA_ORDERS, refine=False)
    assert mine.value == pytest.approx(theirs, rel=1e-9)
    exact = gaussian_epsilon(z, 1e-5, steps)
    assert RdpAccountant().epsilon(SelfComposedEvent(GaussianEvent(z), steps), 1e-5).value > exact


# -- the dp-sgd family's tight accountant: its own PLD, against dp_accounting's PLD and the anchors ------------------

TIGHT = {"a1": 2.381598, "a2": 1.828237, "a3": 0.782389}  # PLD vdi 1e-5 ≈ PRV: the exact value


@pytest.mark.parametrize("name", list(TIGHT))
def test_dp_sgd_tight_is_the_pld_within_1e3_above_the_exact_value(name):
    from accountants import registry

    q, z, steps = POISSON[name]
    n = 60000 if name == "a1" else 100000
    params = {"dataset_size": n, "batch_size": round(q * n), "steps": steps, "noise_multiplier": z}
    report = registry.get("dp-sgd").privacy(params, 1e-5)
    tight = next(a for a in report.accountants if a.name == "tight")
    rdp = next(a for a in report.accountants if a.name == "rdp")
    assert report.accountant == "tight" and report.epsilon == tight.epsilon < rdp.epsilon
    assert TIGHT[name] - 1e-6 <= tight.epsilon <= TIGHT[name] * (1 + 1e-3)
    assert tight.epsilon == pytest.approx(dpa_pld_epsilon(dpa_poisson_event(q, z, steps), 1e-5), rel=1e-3)


def test_dp_sgd_tight_calibration_is_one_sided_and_smallest():
    """The calibrated σ meets the target by the PLD (and by dp_accounting's PLD up to its own error), and 1e-4 less
    noise breaks the target (the PLD calibration's tolerance is 1e-5 relative)."""
    from accountants import registry

    family = registry.get("dp-sgd")
    params = {"dataset_size": 100000, "batch_size": 1000, "steps": 1000}
    report = family.calibrate(params, 2.0, 1e-5)
    tight = next(a for a in report.accountants if a.name == "tight")
    rdp = next(a for a in report.accountants if a.name == "rdp")
    assert report.accountant == "tight" and report.noise_multiplier == tight.noise_multiplier < rdp.noise_multiplier
    z = report.noise_multiplier
    assert family.privacy(params | {"noise_multiplier": z}, 1e-5, accountant="tight").epsilon <= 2.0
    assert family.privacy(params | {"noise_multiplier": z * (1 - 1e-4)}, 1e-5, accountant="tight").epsilon > 2.0
    assert dpa_pld_epsilon(dpa_poisson_event(0.01, z, 1000), 1e-5) <= 2.0 * (1 + 1e-3)
    # asking for rdp skips the PLD search and says so
    only_rdp = family.calibrate(params, 2.0, 1e-5, accountant="rdp")
    assert only_rdp.noise_multiplier == rdp.noise_multiplier
    assert "not computed" in next(a.reason for a in only_rdp.accountants if a.name == "tight")


def test_dp_sgd_tight_covers_replace_one_and_fixed_size_and_says_why_where_it_steps_aside():
    """Poisson under replace-one against dp_accounting's replace-one PLD (z is std/(2C) there: its std is 2z at
    sensitivity 1); fixed-size batches between a lower bound (the Poisson remove pair at γ = b/n is one direction of
    the symmetrised pair) and the RDP bound; a composition too wide for the PLD's window steps aside with the reason."""
    from accountants import registry

    family = registry.get("dp-sgd")
    base = {"dataset_size": 1000, "batch_size": 10, "steps": 100, "noise_multiplier": 1.0}
    by_name = {a.name: a for a in family.privacy(base | {"neighbouring": "replace-one"}, 1e-5).accountants}
    event = dpa_poisson_event(0.01, 2.0, 100)
    replace_one = dpa_pld_epsilon(event, 1e-5, vdi=1e-5, neighbouring=dpa.NeighboringRelation.REPLACE_ONE)
    assert by_name["tight"].epsilon == pytest.approx(replace_one, rel=1e-3)
    assert by_name["tight"].epsilon < by_name["rdp"].epsilon
    fixed = {
        a.name: a
        for a in family.privacy(base | {"neighbouring": "replace-one", "sampling": "fixed-size"}, 1e-5).accountants
    }
    assert dpa_pld_epsilon(dpa_poisson_event(0.01, 1.0, 100), 1e-5) <= fixed["tight"].epsilon < fixed["rdp"].epsilon
    for steps, delta, words in ((10**10, 1e-5, "too wide for the PLD"), (10**9, 1e-300, "error allowance")):
        report = family.privacy(base | {"steps": steps}, delta)
        tight = next(a for a in report.accountants if a.name == "tight")
        assert report.accountant == "rdp" and not tight.applicable and words in tight.reason
