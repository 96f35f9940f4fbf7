"""dp-bilevel (Kornowski 2024, arXiv:2409.19800): the paper's chain and splits, Rényi and Gaussian-DP accounting, utility bounds, simulator.

Every expected value comes from an independent source: an independent prototype's reference implementation (re-typed here
with plain floating point), its prototype's printed numbers, closed forms (Lemma 2.1 totals, the analytic Gaussian's
δ(ε) via scipy's normal CDF, the improved RDP conversion on a dense order grid), dp_accounting 0.6.0, numerical
minimisation with scipy, and the deterministic inequalities of Lemma 4.4 and Proposition 4.6 on simulated runs.
"""

import math

import dp_accounting as dpa
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import optimize, stats

from accountants import registry
from accountants.errors import CalibrationError, ParameterError, UnsupportedAccountantError
from accountants.families.dp_bilevel.paper import minimum_batch, paper_chain, paper_split
from accountants.families.dp_bilevel.params import BilevelParams
from accountants.families.dp_bilevel.plan import inner_multiplier
from accountants.families.dp_bilevel.problems import (
    _quadratic_data,
    _ridge_constants,
    _ridge_data,
    _ridge_hyper,
    quadratic_forms,
)
from accountants.families.dp_bilevel.simulate import _measured, _simulate
from accountants.families.dp_bilevel.utility import error_budget
from accountants.planning import plan_job
from accountants.verification import block_rng, block_sizes, run_block, summarize

from ..support.params import BILEVEL_CONSTANTS, BILEVEL_MINI_BATCH, BILEVEL_REFERENCE

FAMILY = registry.get("dp-bilevel")

# the reference configuration of an independent prototype of the paper's formulas: n = 1e5, T = 30, K = 2000, (L0f, L1f, L0g, L1g, L2g) = (5, 1, 6, 2, 0), μ_g = 1,
# λ = 20, G = 50
REFERENCE = BILEVEL_REFERENCE
MINI = REFERENCE | BILEVEL_MINI_BATCH


# -- the prototype's reference code, re-typed in plain floating point -----------------------------------------------------


def gauss_sigma(sens, eps, delta):
    return sens * math.sqrt(2.0 * math.log(1.25 / delta)) / eps


def gauss_eps(sens, sigma, delta):
    return sens * math.sqrt(2.0 * math.log(1.25 / delta)) / sigma


def adv_comp(eps0, delta0, k):
    return math.sqrt(2 * k * math.log(1 / delta0)) * eps0 + 2 * k * eps0**2


def adv_comp_inv(eps, k, delta0):
    a = math.sqrt(2 * k * math.log(1 / delta0))
    return (-a + math.sqrt(a * a + 8 * k * eps)) / (4 * k)


def spec_calibrate(n, eps, delta, T, K, L0f, L0g, lam, G, mode):
    d_it = delta / (T + 1)
    e_it = eps / math.sqrt(2 * T) if mode == "paper" else adv_comp_inv(eps, T, d_it)
    e1, d1 = e_it / 3.0, d_it / 3.0
    d0 = d1 / (K + 1)
    e0 = adv_comp_inv(e1, K, d0)
    return {
        "eps1": e1,
        "sigma_g": gauss_sigma(2 * L0g / n, e0, d0),
        "sigma_lam": gauss_sigma(2 * (L0f + lam * L0g) / n, e0, d0),
        "sigma_out": gauss_sigma(2 * G / n, e1, d1),
    }


def spec_eps_of_delta(delta_tot, n, T, K, sig_g, sig_l, sig_o, Lg, Ll, G):
    d_it = delta_tot / (T + 1)
    d1 = d_it / 3
    d0 = d1 / (K + 1)
    eg, el = gauss_eps(2 * Lg / n, sig_g, d0), gauss_eps(2 * Ll / n, sig_l, d0)
    e_it = adv_comp(eg, d0, K) + adv_comp(el, d0, K) + gauss_eps(2 * G / n, sig_o, d1)
    return adv_comp(e_it, d_it, T)


def stds(params, z, z_in):
    """(σ_g, σ_λ, σ_out) from a privacy report's releases."""
    releases = FAMILY.privacy(params | {"noise_multiplier": z, "inner_noise_multiplier": z_in}, 1e-6).releases
    return tuple(r.noise_std for r in releases)


# -- the paper's chain and its two splits ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "eps1", "sigmas", "total"),
    [
        ("printed", 0.08607, (3.261, 67.93, 0.07081), 12.31),
        ("corrected", 0.01875, (14.93, 310.9, 0.3250), 2.0000),
    ],
)
def test_spec_reference_values(mode, eps1, sigmas, total):
    """ε = 2, δ = 1e-6; the σ's and ε_tot(1e-6) of an independent prototype of the paper's formulas, and its code re-typed here."""
    p = BilevelParams(**REFERENCE)
    split = paper_split(p, 2.0, 1e-6, mode)
    found = stds(REFERENCE, split.noise_multiplier, split.inner_noise_multiplier)
    assert split.outer_budget == pytest.approx(eps1, rel=1e-3)
    assert found == pytest.approx(sigmas, rel=1e-3)
    reference = spec_calibrate(1e5, 2.0, 1e-6, 30, 2000, 5.0, 6.0, 20.0, 50.0, "paper" if mode == "printed" else "x")
    assert found == pytest.approx((reference["sigma_g"], reference["sigma_lam"], reference["sigma_out"]), rel=1e-9)
    chain = paper_chain(p, split.noise_multiplier, split.inner_noise_multiplier, 1e-6)
    assert chain.epsilon == pytest.approx(total, abs=5e-3)
    assert chain.epsilon == pytest.approx(spec_eps_of_delta(1e-6, 1e5, 30, 2000, *found, 6.0, 125.0, 50.0), rel=1e-9)


@pytest.mark.parametrize(("eps", "delta", "steps", "expected"), [(1.0, 1e-5, 100, 5.016), (4.0, 1e-6, 1000, 34.21)])
def test_printed_split_really_totals_the_lemma_2_1_value(eps, delta, steps, expected):
    """Erratum in the paper's split: ε/√(2T) per step, δ/(T+1), composed by Lemma 2.1, is ε√(ln((T+1)/δ)) + ε², not ε."""
    params = REFERENCE | {"steps": steps}
    closed_form = eps * math.sqrt(math.log((steps + 1) / delta)) + eps**2
    assert closed_form == pytest.approx(expected, abs=5e-3)
    p = BilevelParams(**params)
    split = paper_split(p, eps, delta, "printed")
    chain = paper_chain(p, split.noise_multiplier, split.inner_noise_multiplier, delta)
    assert chain.epsilon == pytest.approx(closed_form, rel=1e-9)
    report = FAMILY.calibrate(params, eps, delta)
    shown = f"{closed_form:.6g}"
    assert shown in report.paper.note and any(shown in w for w in report.warnings)
    paper = next(a for a in report.accountants if a.name == "paper")
    assert "corrected split" in paper.method and paper.epsilon == pytest.approx(eps, rel=1e-9)


ROUND_TRIP = [
    REFERENCE,
    REFERENCE | {"steps": 100, "inner_rounds": 3, "inner_steps": 500},
    MINI,
    MINI | {"sampling": "with-replacement"},
    MINI | {"steps": 5, "batch_size_outer": 90000, "batch_size_inner": 20},
    REFERENCE | {"inner_noise_multiplier": 1e6},
]


@pytest.mark.parametrize("params", ROUND_TRIP)
@pytest.mark.parametrize(("eps", "delta"), [(0.5, 1e-7), (2.0, 1e-6), (4.0, 1e-5)])
def test_corrected_split_round_trips_to_the_target(params, eps, delta):
    p = BilevelParams(**params)
    split = paper_split(p, eps, delta, "corrected")
    assert split.valid, split.problems
    chain = paper_chain(p, split.noise_multiplier, split.inner_noise_multiplier, delta)
    assert chain.valid and chain.epsilon == pytest.approx(eps, abs=1e-9)
    calibrated = FAMILY.calibrate(params, eps, delta, accountant="paper")
    assert calibrated.epsilon <= eps and calibrated.epsilon == pytest.approx(eps, abs=1e-9)
    if p.inner_noise_multiplier is None and not p.mini:
        # full batch: the split reproduces the prototype's code exactly
        reference = spec_calibrate(p.dataset_size, eps, delta, p.steps, p.inner_total, 5.0, 6.0, 20.0, 50.0, "x")
        found = stds(params, split.noise_multiplier, split.inner_noise_multiplier)
        assert found == pytest.approx((reference["sigma_g"], reference["sigma_lam"], reference["sigma_out"]), rel=1e-9)


CERTIFIED = [c for c in ROUND_TRIP if c.get("sampling") != "with-replacement"]


@pytest.mark.parametrize("params", CERTIFIED)
@pytest.mark.parametrize(("eps", "delta"), [(0.5, 1e-7), (2.0, 1e-6), (4.0, 1e-5)])
def test_rdp_and_best_beat_the_corrected_split(params, eps, delta):
    """At the corrected split's noise, rdp and best certify ε or less; their own calibration meets the target."""
    p = BilevelParams(**params)
    split = paper_split(p, eps, delta, "corrected")
    noisy = params | {
        "noise_multiplier": split.noise_multiplier,
        "inner_noise_multiplier": split.inner_noise_multiplier,
    }
    found = {a: FAMILY.privacy(noisy, delta, a).epsilon for a in ("rdp", "best")}
    assert found["best"] <= found["rdp"] <= eps * (1 + 1e-9)
    report = FAMILY.calibrate(params, eps, delta)
    assert report.accountant in ("rdp", "tight") and report.epsilon <= eps
    if not p.mini and p.inner_noise_multiplier is None:
        # full batch: the inner rule z_in = z√K is the equal split itself, so rdp and best need less noise everywhere
        for accountant in ("rdp", "best"):
            z = FAMILY.calibrate(params, eps, delta, accountant=accountant).noise_multiplier
            assert z < split.noise_multiplier and inner_multiplier(p, z) < split.inner_noise_multiplier


def test_lemma_inverses_match_the_spec_formulas():
    from accountants.families.dp_bilevel.paper import (
        advanced_composition,
        advanced_composition_inverse,
        amplify,
        amplify_inverse,
    )

    for eps, k, d0 in [(0.3, 1, 1e-9), (2.0, 1000, 1e-12), (1e-6, 10**9, 1e-20)]:
        x = advanced_composition_inverse(eps, math.log(d0), k)
        assert x == pytest.approx(adv_comp_inv(eps, k, d0), rel=1e-6)
        assert advanced_composition(x, math.log(d0), k) == pytest.approx(eps, rel=1e-12)
    for eps, q in [(0.01, 0.001), (0.5, 0.3), (3.0, 1e-6)]:
        reference = math.log1p(q * math.expm1(eps))
        assert amplify(eps, q) == pytest.approx(reference, rel=1e-12)
        assert amplify_inverse(reference, q) == pytest.approx(eps, rel=1e-9)


# -- rigorous accountants ------------------------------------------------------------------------------------------


def test_tight_is_the_exact_gaussian_of_the_composition():
    """Full batch: T(2K + 1) Gaussians compose to μ-GDP, μ² = T(2K/z_in² + 1/z²); the reported ε satisfies the
    analytic Gaussian's δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) = δ (computed here with scipy)."""
    z, z_in, delta = 40.0, 3000.0, 1e-6
    report = FAMILY.privacy(REFERENCE | {"noise_multiplier": z, "inner_noise_multiplier": z_in}, delta)
    tight = next(a for a in report.accountants if a.name == "tight")
    mu = math.sqrt(30 * (2 * 2000 / z_in**2 + 1 / z**2))
    e = tight.epsilon
    achieved = stats.norm.cdf(mu / 2 - e / mu) - math.exp(e) * stats.norm.cdf(-mu / 2 - e / mu)
    assert achieved == pytest.approx(delta, rel=1e-6)
    assert report.accountant == "tight" and report.epsilon == e


def test_rdp_is_the_improved_conversion_of_the_linear_curve():
    z, z_in, delta = 40.0, 3000.0, 1e-6
    report = FAMILY.privacy(REFERENCE | {"noise_multiplier": z, "inner_noise_multiplier": z_in}, delta)
    rdp = next(a for a in report.accountants if a.name == "rdp")
    rho = 30 * (2 * 2000 / z_in**2 + 1 / z**2) / 2
    alphas = np.linspace(1.02, 400, 2_000_001)
    improved = rho * alphas + np.log1p(-1 / alphas) - (math.log(delta) + np.log(alphas)) / (alphas - 1)
    assert rdp.epsilon == pytest.approx(improved.min(), rel=1e-7) and rdp.epsilon <= improved.min()
    assert report.rdp.epsilons[5] == pytest.approx(rho * report.rdp.orders[5])
    tight = next(a for a in report.accountants if a.name == "tight")
    assert tight.epsilon <= rdp.epsilon


def test_spec_rdp_comparison_at_the_rigorous_calibration():
    """With the rigorous split's σ's (ε = 2, δ = 1e-6) the classic conversion gives 0.092; dpcal's
    improved conversion is below it, the paper chain is 2."""
    p = BilevelParams(**REFERENCE)
    split = paper_split(p, 2.0, 1e-6, "corrected")
    rho = 30 * (2 * 2000 / split.inner_noise_multiplier**2 + 1 / split.noise_multiplier**2) / 2
    orders = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 256))
    classic = min(rho * a + math.log(1 / 1e-6) / (a - 1) for a in orders)
    assert classic == pytest.approx(0.092, abs=1e-3)
    noisy = REFERENCE | {
        "noise_multiplier": split.noise_multiplier,
        "inner_noise_multiplier": split.inner_noise_multiplier,
    }
    report = FAMILY.privacy(noisy, 1e-6)
    values = {a.name: a.epsilon for a in report.accountants}
    assert values["rdp"] < classic and values["paper"] == pytest.approx(2.0, abs=1e-9)


def test_mini_batch_rdp_matches_dp_accounting():
    """Batches without replacement: the same events in dp_accounting's replace-one RDP accountant (WBK19)."""
    z, z_in, delta = 3.0, 150.0, 1e-6
    report = FAMILY.privacy(MINI | {"noise_multiplier": z, "inner_noise_multiplier": z_in}, delta, "rdp")
    inner = dpa.SelfComposedDpEvent(dpa.SampledWithoutReplacementDpEvent(100000, 1000, dpa.GaussianDpEvent(z_in)), 4000)
    outer = dpa.SampledWithoutReplacementDpEvent(100000, 5000, dpa.GaussianDpEvent(z))
    accountant = rdp_privacy_accountant.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    accountant.compose(dpa.SelfComposedDpEvent(dpa.ComposedDpEvent([inner, outer]), 30))
    reference = accountant.get_epsilon(delta)
    assert report.epsilon <= reference * (1 + 1e-9)
    assert report.epsilon == pytest.approx(reference, rel=0.02)


def test_with_replacement_has_only_the_papers_statement():
    params = MINI | {"sampling": "with-replacement", "noise_multiplier": 30.0, "inner_noise_multiplier": 3000.0}
    with pytest.raises(UnsupportedAccountantError) as info:
        FAMILY.privacy(params, 1e-6)
    assert info.value.supported == ("paper",) and "with replacement" in info.value.reason
    paper = FAMILY.privacy(params, 1e-6, "paper")
    assert paper.accountant == "paper" and "not certified" in paper.accountants[2].guarantee
    # Lemma 2.3 as printed: q = 1 − (1 − 1/n)^b, δ unchanged
    q = 1 - (1 - 1e-5) ** 5000
    d1 = 1e-6 / 31 / 3
    released = paper.releases[2].details
    assert released["paper_chain_release_epsilon"] == pytest.approx(
        math.log1p(q * math.expm1(math.sqrt(2 * math.log(1.25 / d1)) / 30.0)), rel=1e-12
    )


# -- batches too small for the paper's argument -------------------------------------------------------------------


@pytest.mark.parametrize("sampling", ["without-replacement", "with-replacement"])
def test_outer_batches_below_the_minimum_are_refused(sampling):
    params = MINI | {"sampling": sampling}
    p = BilevelParams(**params)
    split = paper_split(p, 2.0, 1e-6, "corrected")
    n, budget = 100000, split.outer_budget

    def rate(b):
        return b / n if sampling == "without-replacement" else 1 - (1 - 1 / n) ** b

    # independent: the first b with ln(1 + (e^ε₁ − 1)/q(b)) < 1, by bisection on the monotone condition
    lo, hi = 1, n
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if math.log1p(math.expm1(budget) / rate(mid)) < 1 else (mid + 1, hi)
    assert minimum_batch(p, budget) == lo
    with pytest.raises(ParameterError) as info:
        FAMILY.calibrate(params | {"batch_size_outer": lo - 1}, 2.0, 1e-6, accountant="paper")
    issue = info.value.issues[0]
    assert issue.loc == ("batch_size_outer",) and str(lo) in issue.allowed and str(lo) in issue.message
    if sampling == "without-replacement":  # refused whatever the accountant: Algorithm 3's argument needs it
        for accountant in ("rdp", "best"):
            with pytest.raises(ParameterError):
                FAMILY.calibrate(params | {"batch_size_outer": lo - 1}, 2.0, 1e-6, accountant=accountant)
    assert FAMILY.calibrate(params | {"batch_size_outer": lo}, 2.0, 1e-6, accountant="paper").epsilon <= 2.0


def test_inner_batches_below_the_minimum_are_refused():
    with pytest.raises(ParameterError) as info:
        FAMILY.calibrate(
            MINI | {"batch_size_inner": 1, "batch_size_outer": 100000, "steps": 2, "inner_steps": 10}, 4.0, 1e-3
        )
    assert [i.loc for i in info.value.issues] == [("batch_size_inner",)]


# -- calibration behaviour ------------------------------------------------------------------------------------------


def test_fixed_inner_noise_is_kept():
    report = FAMILY.calibrate(REFERENCE | {"inner_noise_multiplier": 1e6}, 2.0, 1e-6)
    assert report.epsilon <= 2.0 and any("kept fixed" in w for w in report.warnings)
    assert report.releases[0].noise_multiplier == 1e6
    # the outer noise alone cannot meet a target the inner solves already exceed
    with pytest.raises(CalibrationError):
        FAMILY.calibrate(REFERENCE | {"inner_noise_multiplier": 10.0}, 0.5, 1e-6)


def test_calibrated_noise_meets_the_target_through_privacy():
    for params in (REFERENCE, MINI):
        report = FAMILY.calibrate(params, 1.0, 1e-5)
        again = FAMILY.privacy(params | {"noise_multiplier": report.noise_multiplier}, 1e-5)
        assert report.epsilon <= 1.0 and report.accountant == again.accountant == "tight"
        assert again.epsilon == report.epsilon  # one number for one mechanism (exact GDP, or the same PLD query)
        assert report.conventions.neighbouring == "replace-one" and len(report.releases) == 3


def test_paper_calibration_reports_the_printed_split_and_what_is_certified():
    report = FAMILY.calibrate(REFERENCE | {"steps": 100}, 1.0, 1e-5)
    paper = report.paper
    p = BilevelParams(**(REFERENCE | {"steps": 100}))
    printed = paper_split(p, 1.0, 1e-5, "printed")
    assert paper.noise_multiplier == pytest.approx(printed.noise_multiplier) and paper.epsilon_claimed == 1.0
    certified = FAMILY.privacy(
        REFERENCE
        | {
            "steps": 100,
            "noise_multiplier": printed.noise_multiplier,
            "inner_noise_multiplier": printed.inner_noise_multiplier,
        },
        1e-5,
    ).epsilon
    assert paper.epsilon_certified == pytest.approx(certified) and paper.certified_by == "tight"
    assert "5.01597" in paper.note


# -- utility ----------------------------------------------------------------------------------------------------------


def spec_predicted_alpha(n, dx, dy, eps, delta_f, ell, kappa, corrected=True):
    k1 = delta_f**0.25 * ell**0.75 * kappa**1.25
    k2 = delta_f ** (1 / 6) * ell ** (5 / 6 if corrected else 0.5) * kappa ** (11 / 6)
    return k1 * (math.sqrt(dx) / (eps * n)) ** 0.5 + k2 * (math.sqrt(dy) / (eps * n)) ** (1 / 3)


def test_rates_match_the_spec_example():
    """An independent prototype of the paper's formulas: predicted_alpha(1e6, 10, 10, 1, 1, 6, 6) is 1.81 corrected and 1.02 with the paper's K₂."""
    params = REFERENCE | {
        "dataset_size": 10**6,
        "lipschitz_f": 6.0,
        "lipschitz_g": 6.0,
        "epsilon": 1.0,
        "initial_suboptimality": 1.0,
    }
    bounds = FAMILY.utility(params).bounds
    corrected = next(b for b in bounds if b.measure.startswith("‖G_{F_S,η}"))
    printed = next(b for b in bounds if "as printed" in b.measure)
    assert corrected.value == pytest.approx(spec_predicted_alpha(1e6, 10, 10, 1, 1, 6, 6), rel=1e-12)
    assert corrected.value == pytest.approx(1.81, abs=5e-3) and printed.value == pytest.approx(1.02, abs=5e-3)
    assert corrected.kind == printed.kind == "rate with unit constants" and not printed.applicable
    recommended = {r.name: r for r in FAMILY.utility(params).recommended}
    assert recommended["regularization"].value * corrected.value == pytest.approx(6 * 6**3)
    assert recommended["steps"].value == math.ceil(6 * 6**3 / corrected.value**2)
    assert recommended["stepsize"].value == pytest.approx(1 / (2 * 6 * 6**3))
    assert not any(r.applied for r in recommended.values())


def test_mini_batch_rate_uses_one_over_root_b():
    params = MINI | {"epsilon": 1.0, "initial_suboptimality": 1.0}
    bounds = FAMILY.utility(params).bounds
    corrected = next(b for b in bounds if b.measure.startswith("‖G_{F_S,η}"))
    printed = next(b for b in bounds if "as printed" in b.measure)
    base = spec_predicted_alpha(1e5, 10, 10, 1, 1, 6, 6)
    assert corrected.value == pytest.approx(base + 36 / math.sqrt(5000), rel=1e-12)
    assert printed.value == pytest.approx(spec_predicted_alpha(1e5, 10, 10, 1, 1, 6, 6, False) + 36 / 5000, rel=1e-12)


def spec_radius(L, mu, sigma, M, T, d, R0, gamma):
    R = R0
    for _ in range(M):
        R = math.sqrt(
            (2 / mu)
            * (
                2 * R * sigma * math.sqrt(2 * math.log(4 * M / gamma) / T)
                + (1 + math.log(T))
                * (L**2 + sigma**2 * (math.sqrt(d) + math.sqrt(2 * math.log(2 * M * T / gamma))) ** 2)
                / (mu * T)
            )
        )
    return R


def test_explicit_bound_recomputed():
    """4D + √(12LΔ_λ/T) with D = β + σ(√d_x + √(2 ln(4T/γ))), β = (L₁^f + λL₁^g)e_λ + λL₁^g e_0 (Theorem 8.2, Lemma 4.4, Proposition 4.6)."""
    params = REFERENCE | {"noise_multiplier": 20.0, "initial_suboptimality": 2.0, "inner_rounds": 2}
    bounds = {b.measure.split(" ")[0]: b for b in FAMILY.utility(params).bounds}
    z_in = 20.0 * math.sqrt(4000)
    gamma = 0.05 / (4 * 30)
    e0 = spec_radius(6.0, 1.0, z_in * 12 / 1e5, 2, 2000, 10, 12.0, gamma)
    el = spec_radius(125.0, 10.0, z_in * 250 / 1e5, 2, 2000, 10, 12.0 + 5 / 20, gamma)
    beta = (1 + 40) * el + 40 * e0
    noise = 20.0 * 100 / 1e5 * (math.sqrt(10) + math.sqrt(2 * math.log(4 * 30 / 0.05)))
    explicit = 4 * (beta + noise) + math.sqrt(12 * 2.0 * (2.0 + 25 / 40) / 30)
    found = next(b for b in FAMILY.utility(params).bounds if b.measure.startswith("‖G_{L*_λ,η}"))
    assert found.value == pytest.approx(explicit, rel=1e-12) and found.kind == "explicit bound"
    assert bounds["‖ỹ_t"].value == pytest.approx(e0, rel=1e-12)
    assert found.applicable  # λ = 20 ≥ max{2, 4, 5/6, 1/2}


def test_utility_without_noise_or_suboptimality_says_why():
    report = FAMILY.utility(REFERENCE)
    assert not report.bounds and "noise_multiplier" in report.reason and "initial_suboptimality" in report.reason


# -- simulator --------------------------------------------------------------------------------------------------------

SIM = {
    "dataset_size": 100000,
    "dimension_x": 3,
    "dimension_y": 3,
    "steps": 20,
    "inner_steps": 300,
    **BILEVEL_CONSTANTS,
    "noise_multiplier": 5.0,
}


def plan_for(params, checks=("utility",), trials=64, seed=0, problem=None):
    p = FAMILY.parse(params)
    return plan_job(FAMILY, p, 1e-5, checks, trials, seed, problem or {})


def test_quadratic_problem_closed_forms_and_constants():
    """L*_λ and F of the synthetic problem against brute-force minimisation over y; the declared constants hold."""
    p = BilevelParams(**SIM)
    plan = plan_for(SIM)
    data = _quadratic_data(0, p.dataset_size, 3, 3, 8, plan.problem)
    a_f, a_l, b_f, b_l = quadratic_forms(p, plan.problem, data)
    w = data.counts / data.counts.sum()
    a, mu, lam = plan.problem["curvature"], 1.0, 20.0

    def f(x, y):
        return 0.5 * a * w @ np.sum((y - data.targets) ** 2, axis=1) + 0.5 * a * w @ np.sum(
            (x - data.anchors) ** 2, axis=1
        )

    def g(x, y):
        return 0.5 * mu * w @ np.sum((y - np.einsum("jkl,l->jk", data.matrices, x) - data.shifts) ** 2, axis=1)

    def penalty(x):
        y_star = optimize.minimize(lambda y: g(x, y), np.zeros(3), tol=1e-12).x
        return optimize.minimize(lambda y: f(x, y) + lam * (g(x, y) - g(x, y_star)), np.zeros(3), tol=1e-12).fun

    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.uniform(-0.5, 0.5, 3)
        h = 1e-4
        numeric = np.array([(penalty(x + h * e) - penalty(x - h * e)) / (2 * h) for e in np.eye(3)])
        assert numeric == pytest.approx(a_l @ x - b_l, abs=1e-5)
    # Δ_F: F over the ball 𝔹(0, R_x) by SLSQP
    radius = plan.problem["radius"]

    def hyper(x):
        return 0.5 * x @ a_f @ x - b_f @ x

    best = optimize.minimize(
        hyper, np.zeros(3), constraints=[{"type": "ineq", "fun": lambda x: radius**2 - x @ x}], tol=1e-14
    )
    assert plan.problem["initial_suboptimality"] == pytest.approx(-best.fun, rel=1e-6)
    # per-sample Lipschitz constants on 𝒳 × 𝒴 (𝒴 = 𝔹(0, βR_x + r)) by sampling
    beta, r = plan.problem["coupling"], plan.problem["scale"]
    ys = rng.standard_normal((2000, 3))
    ys *= (beta * radius + r) * rng.uniform(0, 1, (2000, 1)) ** (1 / 3) / np.linalg.norm(ys, axis=1, keepdims=True)
    xs = rng.standard_normal((2000, 3))
    xs *= radius * rng.uniform(0, 1, (2000, 1)) ** (1 / 3) / np.linalg.norm(xs, axis=1, keepdims=True)
    for j in range(data.counts.size):
        gy = mu * (ys - xs @ data.matrices[j].T - data.shifts[j])
        assert np.linalg.norm(gy, axis=1).max() <= p.lipschitz_g
        fx, fy = a * (xs - data.anchors[j]), a * (ys - data.targets[j])
        assert np.sqrt(np.sum(fx**2, 1) + np.sum(fy**2, 1)).max() <= p.lipschitz_f
        assert mu * (1 + np.linalg.norm(data.matrices[j], 2) ** 2) <= p.smoothness_g + 1e-12


@pytest.mark.parametrize(
    "params", [SIM, SIM | {"variant": "mini-batch", "batch_size_inner": 2000, "batch_size_outer": 20000}]
)
def test_deterministic_inequalities_on_simulated_runs(params):
    """Lemma 4.4's first step at every outer step (full batch), Proposition 4.6's deterministic
    form ‖G_{L*_λ,η}(x_out)‖ ≤ 4D + √(12·L·Δ_λ/T) with the realised D in every run, and clipping never acting."""
    p = BilevelParams(**params)
    plan = plan_for(params)
    trace = {}
    x_out, _ = _simulate(
        p, plan.problem, 0, 5.0, plan.params["inner_noise_multiplier"], block_rng(0, 0), 64, 1.0, trace
    )
    measured = _measured(p, plan.problem, 0, x_out)
    bound = 4 * trace["error"] + np.sqrt(12 * (1 / (2 * p.stepsize)) * plan.problem["penalty_suboptimality"] / p.steps)
    assert np.all(measured <= bound)
    if not p.mini:
        assert np.all(trace["bias"] <= trace["lemma44"])
    assert np.all(trace["phi"] <= p.clip)
    predicted = error_budget(p, 5.0, plan.params["inner_noise_multiplier"])
    assert np.all(trace["inner_g"] <= predicted.inner_g) and np.all(trace["inner_lambda"] <= predicted.inner_lambda)
    assert np.all(trace["error"] <= predicted.total)


def test_measured_utility_is_below_the_predicted_bound_on_average_over_seeds():
    ratios = []
    for seed in range(4):
        plan = plan_for(SIM, trials=64, seed=seed)
        result = summarize(plan, [run_block(FAMILY.simulator, plan, 0)])
        assert result.utility.within_bound
        ratios.append(result.utility.ratio)
    mean = float(np.mean(ratios))
    print(f"dp-bilevel measured/predicted explicit bound: mean {mean:.3g} over seeds, per seed {ratios}")
    assert 0 < mean < 1


def test_simulation_is_deterministic_given_the_seed():
    plan = plan_for(SIM | {"steps": 4, "inner_steps": 50}, checks=("utility", "privacy-audit"), trials=70, seed=5)
    assert block_sizes(70) == [64, 6]
    first = run_block(FAMILY.simulator, plan, 1)
    again = run_block(FAMILY.simulator, plan, 1)
    for key, value in first.to_arrays().items():
        assert np.array_equal(value, again.to_arrays()[key]), key
    other = run_block(FAMILY.simulator, plan, 0)
    assert not np.array_equal(first.utility, other.utility[:6])


def test_ridge_tuning_corrected_sign_descends_and_printed_sign_ascends():
    """Erratum: the Section 7 update as printed is gradient ascent on the validation loss."""
    base = {
        "dataset_size": 10**6,
        "dimension_x": 1,
        "dimension_y": 5,
        "steps": 30,
        "inner_steps": 150,
        "regularization": 20.0,
        "stepsize": 5.0,
        "noise_multiplier": 2.0,
    }
    problem = {"kind": "ridge-tuning", "prototypes": 16}
    constants = _ridge_constants(BilevelParams(**(base | SIM_CONSTANTS)), FAMILY.simulator.parse_problem(problem))
    params = base | constants
    p = BilevelParams(**params)
    data = _ridge_data(1, p.dataset_size, 5, 16, 1.0)
    start = _ridge_hyper(p, data, 1.0)[0]
    finals = {}
    for printed in (False, True):
        plan = plan_for(params, seed=1, problem=problem | {"printed_sign": printed})
        _, last = _simulate(p, plan.problem, 1, 2.0, plan.params["inner_noise_multiplier"], block_rng(1, 0), 32, 1.0)
        finals[printed] = np.mean([_ridge_hyper(p, data, w)[0] for w in last[:, 0]])
    assert finals[False] < start < finals[True]


SIM_CONSTANTS = {
    "strong_convexity": 1.0,
    "lipschitz_f": 1.0,
    "smoothness_f": 1.0,
    "lipschitz_g": 1.0,
    "smoothness_g": 1.0,
    "hessian_lipschitz_g": 0.0,
}


def test_ridge_refuses_constants_that_do_not_hold():
    params = {
        "dataset_size": 1000,
        "dimension_x": 1,
        "dimension_y": 3,
        "steps": 2,
        "inner_steps": 5,
        "regularization": 20.0,
        "stepsize": 1.0,
        "noise_multiplier": 2.0,
    } | SIM_CONSTANTS
    with pytest.raises(ParameterError) as info:
        plan_for(params, problem={"kind": "ridge-tuning"})
    fields = {i.loc for i in info.value.issues}
    assert ("params", "lipschitz_g") in fields and ("params", "strong_convexity") in fields


def test_plan_refuses_large_dimensions_and_wrong_suboptimality():
    with pytest.raises(ParameterError) as info:
        plan_for(SIM | {"dimension_y": 33})
    assert info.value.issues[0].loc == ("params", "dimension_y")
    with pytest.raises(ParameterError) as info:
        plan_for(SIM | {"initial_suboptimality": 1e-6})
    assert info.value.issues[0].loc == ("params", "initial_suboptimality")


def test_work_estimate_scales_with_the_run():
    small = plan_for(SIM, trials=64)
    assert plan_for(SIM | {"steps": 40}, trials=64).work == pytest.approx(2 * small.work)
    assert plan_for(SIM, checks=("utility", "privacy-audit"), trials=64).work == pytest.approx(3 * small.work)
    assert plan_for(SIM | {"inner_steps": 3000}, trials=64).work > 9 * small.work


# -- input rules --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("update", "field"),
    [
        ({"batch_size_outer": 10}, "batch_size_outer"),
        ({"sampling": "with-replacement"}, "sampling"),
        ({"variant": "mini-batch", "batch_size_outer": 10}, "batch_size_inner"),
        ({"variant": "mini-batch", "batch_size_outer": 10, "batch_size_inner": 200000}, "batch_size_inner"),
        ({"smoothness_g": 0.5}, "smoothness_g"),
    ],
)
def test_inconsistent_input_names_the_rule(update, field):
    with pytest.raises(ParameterError) as info:
        FAMILY.privacy(REFERENCE | {"noise_multiplier": 1.0} | update, 1e-5)
    issue = next(i for i in info.value.issues if i.loc == (field,))
    assert issue.message and issue.allowed


def test_noise_is_required_for_privacy():
    with pytest.raises(ParameterError) as info:
        FAMILY.privacy(REFERENCE, 1e-5)
    assert info.value.issues[0].loc == ("noise_multiplier",)
