"""dp-sgd-last-iterate (Kong & Ribero 2024, arXiv:2407.05237): an independent prototype's numbers, properties, the linear-Gaussian check, and the API."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountants import registry
from accountants.conversions import epsilon_from_rdp, linear_rdp_for_epsilon
from accountants.errors import ParameterError, UnsupportedAccountantError
from accountants.families.dp_sgd_last_iterate import (
    LastIterateParams,
    bounds_for,
    corollary_c2_ell_bar,
    corollary_c2_sigma,
    l_lambda_squared_minus_one,
    linear_gaussian_exact_rdp,
    theta,
)

from ..support.params import LAST_ITERATE_FIG1

FAMILY = registry.get("dp-sgd-last-iterate")
FIG1 = LAST_ITERATE_FIG1
# (λC/(bσ))² = 1 at σ = 1e-5: noise multiplier z = bσ/(λC) = 1


def oracle_theta(l_squared, s):
    """θ_L(s) = L^{2(s−1)} / Σ_{j<s} L^{2j}, straight from eq. (15), in 50-digit arithmetic."""
    with mp.workdps(50):
        l2 = mp.mpf(l_squared)
        return float(l2 ** (s - 1) / mp.fsum(l2**j for j in range(s)))


def oracle_l_squared(step, m, M):
    return 1 + 2 * step * m * (1 + m / (2 * (M + m))) if m else 1.0


# an independent prototype of the paper's formulas: T, E, m, L_λ, θ_{L_λ}(ℓ), θ_{√2 L_λ}(ℓ), (19)/α, (17)/α
TABLE = [
    (10**3, 1, 0, 1.0, 0.001000, 0.500000, 4.0040, 6.0000),
    (10**3, 1, 1e3, 1.0148842, 0.029117, 0.514558, 4.1165, 6.0582),
    (10**4, 10, 0, 1.0, 0.001000, 0.500000, 4.0400, 24.0000),
    (10**4, 10, 100, 1.0014939, 0.003140, 0.501491, 4.1256, 24.0596),
    (10**4, 10, 1e4, 1.1401710, 0.230763, 0.615382, 13.2305, 28.6153),
    (10**5, 100, 0, 1.0, 0.001000, 0.500000, 4.4000, 204.0000),
    (10**5, 100, 10, 1.0001454, 0.001152, 0.500145, 4.4609, 204.0582),
    (10**5, 100, 100, 1.0014939, 0.003140, 0.501491, 5.2559, 204.5962),
    (10**5, 100, 1e3, 1.0148842, 0.029117, 0.514558, 15.6467, 209.8234),
    (10**5, 100, 1e4, 1.1401710, 0.230763, 0.615382, 96.3053, 250.1527),
]


def bound(report, text):
    return next(b for b in report.bounds if text in b.name)


@pytest.mark.parametrize("row", TABLE, ids=lambda r: f"T={r[0]}-m={r[2]:g}")
def test_figure1_table(row):
    T, E, m, L, theta_l, theta_sqrt2, eq19, eq17 = row
    unclipped = FAMILY.privacy(
        FIG1 | {"steps": T, "weak_convexity": m, "clipping": "inactive", "noise_multiplier": 1.0},
        1e-5,
        orders=[1.5, 2.0, 7.0],
    )
    clipped = FAMILY.privacy(
        FIG1 | {"steps": T, "weak_convexity": m, "noise_multiplier": 1.0}, 1e-5, orders=[1.5, 2.0, 7.0]
    )
    ours19 = np.array(bound(unclipped, "eq. (19)").rdp) / np.array([1.5, 2.0, 7.0])
    ours17 = np.array(bound(clipped, "eq. (17)").rdp) / np.array([1.5, 2.0, 7.0])
    # independent evaluation of (17) and (19): L_λ from eq. (13), θ from its definition (15) in 50 digits
    l2 = oracle_l_squared(1e-5, m, 1.0)
    expected19 = 4 * (1 + E * oracle_theta(l2, 1000))
    expected17 = 4 * (1 + E * oracle_theta(2 * l2, 1000))
    np.testing.assert_allclose(ours19, expected19, rtol=1e-10)
    np.testing.assert_allclose(ours17, expected17, rtol=1e-10)
    # the prototype's printed table, to its printed precision
    assert ours19[0] == pytest.approx(eq19, abs=5e-5)
    assert ours17[0] == pytest.approx(eq17, abs=5e-5)
    assert math.sqrt(1 + l_lambda_squared_minus_one(1e-5, m, 1.0)) == pytest.approx(L, abs=5e-8)
    assert theta(l_lambda_squared_minus_one(1e-5, m, 1.0), 1000) == pytest.approx(theta_l, abs=5e-7)
    assert theta(1 + 2 * l_lambda_squared_minus_one(1e-5, m, 1.0), 1000) == pytest.approx(theta_sqrt2, abs=5e-7)
    # and composition 2E (E = ⌈T/ℓ⌉ here)
    assert bound(clipped, "Composition").rdp[0] / 1.5 == pytest.approx(2 * E)


def test_spec_regression_values():
    # values of an independent prototype of the paper's formulas
    p = LastIterateParams(**FIG1, steps=10**5, weak_convexity=0.0, clipping="inactive", noise_multiplier=1.0)

    def coefficient(params, text):
        return next(b.coefficient for b in bounds_for(params, 10**5) if text in b.name)

    assert coefficient(p, "eq. (19)") == pytest.approx(4.4, rel=1e-12)
    assert coefficient(p, "eq. (17)") == pytest.approx(204.0, rel=1e-12)
    assert coefficient(p.model_copy(update={"constant": "proof"}), "eq. (19)") == pytest.approx(2.198, rel=1e-12)
    clipped22 = LastIterateParams(**FIG1, steps=10, weak_convexity=0.0, diameter=1e-4, noise_multiplier=1.0)
    k22 = next(b.coefficient for b in bounds_for(clipped22, 10) if "2.2" in b.name)
    assert k22 == pytest.approx(130.284271247, rel=1e-9)  # √2·L_λ variant (erratum)
    assert corollary_c2_ell_bar(0.01, 1.0) == pytest.approx(140.362, rel=1e-5)


def test_composition_wins_for_one_pass_and_says_so():
    report = FAMILY.privacy(
        FIG1 | {"steps": 1000, "weak_convexity": 0.0, "clipping": "inactive", "noise_multiplier": 1.0}, 1e-5
    )
    assert bound(report, "Composition").selected
    assert any("lose to composition" in w for w in report.warnings)
    assert set(report.rdp.bounds) == {bound(report, "Composition").name}


def test_clipped_printed_constant_never_beats_composition_and_warns():
    report = FAMILY.privacy(FIG1 | {"steps": 10**5, "weak_convexity": 0.0, "noise_multiplier": 1.0}, 1e-5)
    assert bound(report, "Composition").selected
    assert any("never beats composition" in w for w in report.warnings)
    proof = FAMILY.privacy(
        FIG1 | {"steps": 10**5, "weak_convexity": 0.0, "noise_multiplier": 1.0, "constant": "proof"}, 1e-5
    )
    assert bound(proof, "eq. (17)").selected  # 2(1 + 99·θ_{√2}) = 101 < 200


def test_unclipped_beats_composition_when_many_passes():
    report = FAMILY.privacy(
        FIG1 | {"steps": 10**5, "weak_convexity": 0.0, "clipping": "inactive", "noise_multiplier": 1.0}, 1e-5
    )
    assert bound(report, "eq. (19)").selected
    assert bound(report, "eq. (19)").epsilon < bound(report, "Composition").epsilon / 4
    assert report.rdp.epsilons[0] / report.rdp.orders[0] == pytest.approx(4.4)


def test_bounded_domain_theorem_22():
    base = FIG1 | {"steps": 10**5, "weak_convexity": 0.0, "noise_multiplier": 1.0}
    tiny = FAMILY.privacy(base | {"diameter": 1e-9}, 1e-5)
    assert bound(tiny, "2.2").selected  # d_h → 0: a single Gaussian with sensitivity 2λC/b, 2α/z²
    assert bound(tiny, "2.2").rdp[0] / tiny.rdp.orders[0] == pytest.approx(2.0, rel=1e-3)
    assert any("erratum" in w for w in tiny.warnings)
    unclipped = FAMILY.privacy(base | {"diameter": 1e-4, "clipping": "inactive"}, 1e-5)
    assert bound(unclipped, "2.2").rdp[0] / unclipped.rdp.orders[0] == pytest.approx(0.5 * (1e-4 * 10 / 1e-4 + 2) ** 2)
    assert not bound(FAMILY.privacy(base, 1e-5), "2.2").applicable


def test_stepsize_above_the_condition_falls_back_to_composition():
    report = FAMILY.privacy(
        FIG1
        | {"steps": 10**5, "weak_convexity": 1.0, "stepsize": 0.3, "clipping": "inactive", "noise_multiplier": 1.0},
        1e-5,
    )
    # 1/(M+m) = 0.5 ≥ 0.3 (19 applies) but 1/(2(M+m)) = 0.25 < 0.3 (17 does not)
    assert not bound(report, "eq. (17)").applicable and "0.25" in bound(report, "eq. (17)").reason
    too_big = FAMILY.privacy(
        FIG1
        | {"steps": 10**5, "weak_convexity": 1.0, "stepsize": 0.6, "clipping": "inactive", "noise_multiplier": 1.0},
        1e-5,
    )
    assert [b.applicable for b in too_big.bounds] == [False, False, False, False, True]
    assert bound(too_big, "Composition").selected
    assert any("no last-iterate bound applies" in w for w in too_big.warnings)


def test_corollary_c3_is_reported_and_never_wins_over_19():
    report = FAMILY.privacy(
        FIG1 | {"steps": 10**5, "weak_convexity": 10.0, "clipping": "inactive", "noise_multiplier": 1.0}, 1e-5
    )
    c3, eq19 = bound(report, "C.3"), bound(report, "eq. (19)")
    assert c3.applicable and c3.rdp[0] > eq19.rdp[0]


def test_corollary_c3_needs_stepsize_at_most_one_when_no_pass_completes():
    # T < ℓ (E = 0): the printed condition min{1/√E, 1/(2(M+m))} is vacuous in E, but C.3's proof needs λ ≤ 1;
    # at λ = 3.29 it would report 3× less than the exact RDP of the linear-Gaussian instance
    a, lam, C, z = 0.0757253, 3.2861428, 0.7441535, 0.3363346
    params = {
        "dataset_size": 15,
        "batch_size": 1,
        "steps": 2,
        "stepsize": lam,
        "clip_norm": C,
        "smoothness": a,
        "weak_convexity": 0.0,
        "clipping": "inactive",
        "noise_multiplier": z,
    }
    report = FAMILY.privacy(params, 1e-5, orders=[2.0])
    assert not bound(report, "C.3").applicable and "≤ 1" in bound(report, "C.3").reason
    assert linear_gaussian_exact_rdp(a, lam, C, 1, 15, 2, z) * 2.0 <= report.rdp.epsilons[0]


def test_corollary_c2_corrected_sigma_gives_exactly_epsilon_printed_gives_16_alpha_squared():
    p = LastIterateParams(**FIG1, steps=10**5, weak_convexity=0.5, clipping="inactive")
    E = 100
    for alpha, eps in [(2.0, 1.0), (8.0, 0.3), (30.0, 5.0)]:
        corrected, printed = corollary_c2_sigma(alpha, eps, p, E)
        lam = 1 / (2 * (1.0 + 0.5))
        # Cor. C.2's chain: 4α(λ̄C/(bσ))²(1 + 4mE/(M+m)), with C = 10, b = 10, m = 0.5, M = 1
        at_corrected = 4 * alpha * (lam * 10 / (10 * corrected)) ** 2 * (1 + 4 * 0.5 * E / 1.5)
        at_printed = 4 * alpha * (lam * 10 / (10 * printed)) ** 2 * (1 + 4 * 0.5 * E / 1.5)
        assert at_corrected == pytest.approx(eps, rel=1e-12)
        assert at_printed == pytest.approx(16 * alpha**2 * eps, rel=1e-12)


def test_calibration_is_exact_and_one_sided():
    params = FIG1 | {"steps": 10**5, "weak_convexity": 100.0, "clipping": "inactive"}
    for target in (0.5, 1.0, 4.0):
        report = FAMILY.calibrate(params, target, 1e-5)
        z = report.noise_multiplier
        assert report.epsilon <= target
        assert FAMILY.privacy(params | {"noise_multiplier": z}, 1e-5).epsilon <= target
        assert FAMILY.privacy(params | {"noise_multiplier": z * (1 - 1e-9)}, 1e-5).epsilon > target
        assert report.noise_std == pytest.approx(1e-5 * z * 10 / 10)
        assert report.paper is not None and report.paper.epsilon_claimed == pytest.approx(target, rel=1e-9)
    # an independent prototype of the paper's formulas: Thm 2.3 unclipped convex, (1, 1e-5): noise multiplier 14.5 (Mironov's conversion; ours is
    # the improved conversion, which needs less)
    convex = FAMILY.calibrate(FIG1 | {"steps": 10**5, "weak_convexity": 0.0, "clipping": "inactive"}, 1.0, 1e-5)
    assert 11.5 < convex.noise_multiplier < 14.54


def test_tight_is_not_applicable_and_says_why():
    params = FIG1 | {"steps": 1000, "weak_convexity": 0.0, "noise_multiplier": 1.0}
    report = FAMILY.privacy(params, 1e-5)
    tight = next(a for a in report.accountants if a.name == "tight")
    assert not tight.applicable and "Rényi" in tight.reason
    with pytest.raises(UnsupportedAccountantError, match="Rényi"):
        FAMILY.privacy(params, 1e-5, accountant="tight")


@pytest.mark.parametrize(
    ("update", "field"),
    [
        ({"batch_size": 3}, "batch_size"),
        ({"stepsize": 0.0}, "stepsize"),
        ({"clip_norm": -1.0}, "clip_norm"),
        ({"smoothness": -1.0}, "smoothness"),
        ({"weak_convexity": float("nan")}, "weak_convexity"),
        ({"diameter": 0.0}, "diameter"),
        ({"clipping": "sometimes"}, "clipping"),
    ],
)
def test_bad_input_states_the_rule(update, field):
    with pytest.raises(ParameterError) as info:
        FAMILY.privacy(FIG1 | {"steps": 100, "weak_convexity": 0.0, "noise_multiplier": 1.0} | update, 1e-5)
    assert info.value.issues[0].field == field and info.value.issues[0].allowed


def test_missing_required_field():
    params = {k: v for k, v in FIG1.items() if k != "smoothness"} | {"steps": 10, "noise_multiplier": 1.0}
    with pytest.raises(ParameterError, match="smoothness: field required"):
        FAMILY.privacy(params, 1e-5)


# -- properties ----------------------------------------------------------------------------------------------------

configs = st.fixed_dictionaries(
    {
        "ell": st.integers(1, 200),
        "b": st.integers(1, 20),
        "steps": st.integers(1, 5000),
        "stepsize": st.floats(1e-6, 1.0),
        "C": st.floats(0.1, 10.0),
        "M": st.floats(0.0, 5.0),
        "m": st.floats(0.0, 5.0),
        "z": st.floats(0.2, 50.0),
        "clipping": st.sampled_from(["active", "inactive"]),
        "constant": st.sampled_from(["printed", "proof"]),
    }
)


def to_params(c, **update):
    params = {
        "dataset_size": c["ell"] * c["b"],
        "batch_size": c["b"],
        "steps": c["steps"],
        "stepsize": c["stepsize"],
        "clip_norm": c["C"],
        "smoothness": c["M"],
        "weak_convexity": c["m"],
        "noise_multiplier": c["z"],
        "clipping": c["clipping"],
        "constant": c["constant"],
    }
    return params | update


def rho(params):
    report = FAMILY.privacy(params, 1e-5, orders=[2.0, 5.5, 40.0])
    return np.array(report.rdp.epsilons) / np.array(report.rdp.orders), report


@settings(max_examples=60, deadline=None)
@given(c=configs, factor=st.floats(1.01, 3.0), extra=st.integers(1, 3000))
def test_linear_in_alpha_and_monotone(c, factor, extra):
    base, report = rho(to_params(c))
    assert np.allclose(base, base[0], rtol=1e-12)  # linear in α
    assert all(
        b.rdp is None or np.allclose(np.array(b.rdp) / np.array(report.rdp.orders), b.rdp[0] / 2.0)
        for b in report.bounds
    )
    tol = 1 + 1e-12
    assert rho(to_params(c, steps=c["steps"] + extra))[0][0] * tol >= base[0]  # more steps
    assert rho(to_params(c, noise_multiplier=c["z"] * factor))[0][0] <= base[0] * tol  # more noise
    assert rho(to_params(c, weak_convexity=c["m"] * factor + 0.01))[0][0] * tol >= base[0]  # larger m
    # larger stepsize at fixed z (larger steps and a larger L_λ; conditions can only fail, falling back)
    assert rho(to_params(c, stepsize=c["stepsize"] * factor))[0][0] * tol >= base[0]
    eq19, eq17 = bound(report, "eq. (19)"), bound(report, "eq. (17)")
    if eq19.applicable and eq17.applicable:
        assert eq19.rdp[0] <= eq17.rdp[0] * tol


@settings(max_examples=100, deadline=None)
@given(x=st.floats(0.0, 1e3), s=st.integers(1, 10**6))
def test_theta_stays_finite_and_in_range(x, s):
    value = theta(x, s)
    assert math.isfinite(value) and 1.0 / s * (1 - 1e-12) <= value <= 1.0 + 1e-12
    if s > 1:
        assert theta(x, s - 1) >= value * (1 - 1e-12)  # nonincreasing in s


def test_theta_sqrt2_at_a_million():
    assert theta(1.0, 10**6) == pytest.approx(0.5, rel=1e-12)  # L = √2: 1 − L^{−2}
    assert theta(1.0, 1000) == pytest.approx(oracle_theta(2.0, 1000), rel=1e-12)
    assert theta(0.0, 7) == pytest.approx(1 / 7)


# -- the exact linear-Gaussian instance ---------------------------------------------------------------------------


def exact_by_recursion(a, lam, C, b, k, T, z):
    """Independent of the library: propagate the mean difference and the variance of X_t step by step."""
    ell, sigma, contraction = k // b, lam * z * C / b, 1.0 - lam * a
    worst = 0.0
    for slot in range(ell):
        mean_gap, variance = 0.0, 0.0
        for t in range(1, T + 1):
            mean_gap = contraction * mean_gap + (2 * lam * C / b if (t - 1) % ell == slot else 0.0)
            variance = contraction**2 * variance + sigma**2
        worst = max(worst, mean_gap**2 / (2 * variance))
    return worst


def test_linear_gaussian_exact_rdp_is_dominated_on_random_configurations():
    rng = np.random.default_rng(2024)
    ratios_printed, ratios_proof = [], []
    for _ in range(220):
        a = float(rng.uniform(-2, 2))
        m, M = max(0.0, -a), max(0.0, a)
        b = int(rng.integers(1, 6))
        k = b * int(rng.integers(1, 25))
        T = int(rng.integers(1, 120))
        lam = float(rng.uniform(0.01, 1.0)) / (M + m) if M + m else float(rng.uniform(0.01, 1.0))
        C, z = float(rng.uniform(0.5, 5)), float(rng.uniform(0.3, 5))
        exact = linear_gaussian_exact_rdp(a, lam, C, b, k, T, z)
        assert exact == pytest.approx(exact_by_recursion(a, lam, C, b, k, T, z), rel=1e-9)
        alphas = [1.5, 2.0, 8.0, 64.0]
        for constant, ratios in (("printed", ratios_printed), ("proof", ratios_proof)):
            params = {
                "dataset_size": k,
                "batch_size": b,
                "steps": T,
                "stepsize": lam,
                "clip_norm": C,
                "smoothness": M,
                "weak_convexity": m,
                "clipping": "inactive",
                "noise_multiplier": z,
                "constant": constant,
            }
            report = FAMILY.privacy(params, 1e-5, orders=alphas)
            reported = np.array(report.rdp.epsilons)
            assert np.all(exact * np.array(alphas) <= reported * (1 + 1e-12)), params
            eq19 = bound(report, "eq. (19)")
            ratios.append(exact * 2.0 / (eq19.rdp[1]))
    assert max(ratios_printed) <= 0.5 + 1e-9  # the printed 4α is twice what the proof gives
    assert max(ratios_proof) == pytest.approx(1.0, abs=1e-9)  # … and the proof's constant is attained


def test_calibration_through_the_exact_conversion_matches_the_grid_conversion():
    params = FIG1 | {"steps": 10**5, "weak_convexity": 0.0, "clipping": "inactive"}
    report = FAMILY.calibrate(params, 1.0, 1e-5)
    rho_value = 4.4 / report.noise_multiplier**2
    grid = epsilon_from_rdp(lambda a: rho_value * np.asarray(a), 1e-5)
    assert grid.value == pytest.approx(report.epsilon, rel=1e-12)
    assert linear_rdp_for_epsilon(1.0, 1e-5) == pytest.approx(rho_value, rel=1e-9)


def test_logistic_problem_plans_and_runs():
    """The logistic verification problem (its data and optimum shared with dp-sgd's simulator) plans and runs both
    checks: the optimum is below the loss at θ = 0 (log 2), no run beats it, and the canary's last-iterate
    coordinate is larger on D than on D′ (a regression: its imports were broken when the families became packages)."""
    from accountants.planning import plan_job
    from accountants.verification import run_block

    family = registry.get("dp-sgd-last-iterate")
    plan = plan_job(
        family, dict(family.job_example["params"]), 1e-5, ("utility", "privacy-audit"), 256, 3, {"kind": "logistic"}
    )
    assert 0.0 < plan.problem["optimal_loss"] < math.log(2.0)
    block = run_block(family.simulator, plan, 0)
    assert np.all(block.utility >= -1e-9)
    assert block.score_in.mean() > block.score_out.mean()
