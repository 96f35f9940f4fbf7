"""phased-output-perturbation (Zhang, Thekumparampil, Oh & He 2022, arXiv:2206.00363): test vectors from an independent
prototype of the paper's formulas, the rigorous accounting against independent recomputations, the parameter rules, and
the simulators (synthetic problems E1–E5)."""

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from accountants import registry
from accountants.errors import ParameterError, UnsupportedAccountantError
from accountants.families.phased_output_perturbation import (
    PhasedOutputPerturbationParams,
    default_phases,
    mechanism,
    paper_noise_multiplier,
    utility_values,
)
from accountants.planning import plan_job
from accountants.verification import block_sizes, run_block, summarize

from ..support.params import POP_SIMULATED, POP_TEST_VECTORS

FAMILY = registry.get("phased-output-perturbation")
SIMULATOR = FAMILY.simulator
DELTA = 1e-5

# test vectors of an independent prototype of the paper's formulas (ε = 1, δ = 1e-5)
CLASSES = POP_TEST_VECTORS
TV1, TV2, TV3, TV4, TV5 = CLASSES.values()
RTOL = 1e-9


def paper_run(params):
    """The paper's calibration at (ε, δ) = (1, 1e-5): the configuration the test vectors describe."""
    return FAMILY.calibrate(params, 1.0, DELTA, accountant="paper")


def bound(report, prefix):
    found = [b for b in report.utility.bounds if b.source.startswith(prefix)]
    assert len(found) == 1, (prefix, [b.source for b in report.utility.bounds])
    return found[0]


def rho_of(report):
    """ε(α) = ρα: read ρ off the reported Rényi curve."""
    return report.rdp.epsilons[0] / report.rdp.orders[0]


# -- the test vectors -------------------------------------------------------------------------------------------------


def test_tv1_algorithm_1():
    c = paper_run(TV1)
    (r,) = c.releases
    assert r.noise_std == pytest.approx(0.01994329256414347, rel=RTOL)
    assert r.sensitivity == pytest.approx(0.004, rel=RTOL)
    assert r.details["solver_accuracy_required"] == pytest.approx(0.001, rel=RTOL)
    assert r.details["utility_expected_gap"] == pytest.approx(3.125e-19, rel=RTOL)
    assert bound(c, "Theorem 3.4 (empirical)").value == pytest.approx(0.004101641344958646, rel=RTOL)
    assert bound(c, "Theorem 3.4 (population)").value == pytest.approx(0.0759660237744853, rel=RTOL)
    assert bound(c, "proof of Theorem 3.4, exact form (empirical)").value == pytest.approx(
        0.003977349182990209, rel=RTOL
    )
    assert bound(c, "proof of Theorem 3.4, exact form (population)").value == pytest.approx(
        0.06596602377448531, rel=RTOL
    )
    assert rho_of(c) == pytest.approx(0.02011389906175031, rel=RTOL)


def test_tv1_privacy_facts_recomputed_independently():
    """Independent prototype: μ_GDP = 0.2005686868, exact δ(1) = 1.898e−8, Mironov's conversion at δ/2 gives 1.0110967."""
    z = paper_noise_multiplier("strongly-convex", 1.0, DELTA)
    mu = 1.0 / z
    assert mu == pytest.approx(0.2005686868, rel=1e-9)
    exact_delta = stats.norm.cdf(-1.0 / mu + mu / 2) - math.e * stats.norm.cdf(-1.0 / mu - mu / 2)
    assert exact_delta == pytest.approx(1.898e-8, rel=1e-3)
    rho = mu * mu / 2
    mironov = rho + 2 * math.sqrt(rho * math.log(1 / (DELTA / 2)))
    assert mironov == pytest.approx(1.0110967, rel=1e-7)
    report = FAMILY.privacy(TV1 | {"noise_multiplier": z}, DELTA)
    rdp = next(a for a in report.accountants if a.name == "rdp")
    assert rdp.epsilon <= mironov  # the improved conversion never loses to Mironov's
    tight = next(a for a in report.accountants if a.name == "tight")
    assert tight.epsilon < 1.0 and report.accountant == "tight"


def test_tv2_algorithm_2():
    c = paper_run(TV2)
    assert len(c.releases) == 12 == c.conventions.steps
    first, last = c.releases[0], c.releases[-1]
    assert first.details["block_size"] == 341 and first.details["records"] == "1..341"
    assert first.details["regularization"] == pytest.approx(0.45726841564473075, rel=RTOL)
    assert first.details["mu_k"] == pytest.approx(0.9145368312894615, rel=RTOL)
    assert first.noise_std == pytest.approx(0.06395010777712008, rel=RTOL)
    assert last.details["mu_k"] == pytest.approx(1872.9714304808172, rel=RTOL)
    assert last.noise_std == pytest.approx(3.1225638563046915e-05, rel=RTOL)
    assert bound(c, "Theorem 3.7").value == pytest.approx(1.6645368312894615, rel=RTOL)
    assert bound(c, "proof of Theorem 3.7, exact sum").value == pytest.approx(0.6197624584482824, rel=RTOL)
    assert rho_of(c) == pytest.approx(0.020113899061750314, rel=RTOL)


def test_tv3_algorithm_3():
    c = paper_run(TV3)
    x, y = c.releases
    assert x.noise_std == pytest.approx(0.040983685928766264, rel=RTOL)
    assert y.noise_std == pytest.approx(0.028979842238250314, rel=RTOL)
    assert x.sensitivity == pytest.approx(0.004, rel=RTOL)
    assert y.sensitivity == pytest.approx(0.0028284271247461896, rel=RTOL)
    assert x.details["solver_accuracy_required"] == pytest.approx(1e-7, rel=RTOL)
    assert x.details["utility_expected_gap"] == pytest.approx(6.25e-14, rel=RTOL)
    assert bound(c, "Theorem 4.4 (empirical)").value == pytest.approx(0.10117342163978738, rel=RTOL)
    assert bound(c, "Theorem 4.4 (population)").value == pytest.approx(0.6911696261076978, rel=RTOL)
    assert bound(c, "proof of Theorem 4.4, exact form (empirical)").value == pytest.approx(
        0.10077975074596524, rel=RTOL
    )
    assert bound(c, "proof of Theorem 4.4, exact form (population)").value == pytest.approx(
        0.6602865085732622, rel=RTOL
    )
    assert rho_of(c) == pytest.approx(0.009525723103754321, rel=RTOL)


def test_tv4_algorithms_4_and_5():
    c = paper_run(TV4)
    assert len(c.releases) == 24 and c.conventions.steps == 24
    assert c.releases[0].details["regularization"] == pytest.approx(0.3085003651923764, rel=RTOL)
    alg4 = [r for r in c.releases if r.details["algorithm"] == "Algorithm 4"]
    alg5 = [r for r in c.releases if r.details["algorithm"] == "Algorithm 5"]
    assert len(alg4) == len(alg5) == 12
    assert alg4[0].noise_std == pytest.approx(0.2754773873475942, rel=RTOL)
    assert alg4[-1].noise_std == pytest.approx(0.006087247770532408, rel=RTOL)
    assert [r.noise_std for r in alg5] == pytest.approx([r.noise_std for r in alg4], rel=RTOL)
    assert alg4[0].details["solver_accuracy_required"] == pytest.approx(2.7876327592050104e-05, rel=RTOL)
    assert bound(c, "Theorem 4.8").value == pytest.approx(58.78156542959087, rel=RTOL)
    assert bound(c, "proof of Theorem 4.8, exact sum").value == pytest.approx(13.090140088672133, rel=RTOL)
    assert rho_of(c) == pytest.approx(0.009525723103754321, rel=RTOL)


def test_tv5_c_sc_variant():
    c = paper_run(TV5)
    assert c.releases[0].details["regularization"] == pytest.approx(0.2771465121641296, rel=RTOL)
    assert c.releases[0].details["m_k"] == pytest.approx(0.5, rel=RTOL)
    assert c.releases[0].noise_std == pytest.approx(0.11109327570448674, rel=RTOL)
    assert c.releases[-1].noise_std == pytest.approx(0.0024548377685896655, rel=RTOL)
    assert bound(c, "Corollary 4.9 (as stated)").value == pytest.approx(2.357540330033185, rel=RTOL)
    assert bound(c, "Corollary 4.9 (corrected").value == pytest.approx(3.004560875458684, rel=RTOL)
    assert bound(c, "proof of Corollary 4.9, exact sum").value == pytest.approx(1.6004612190113559, rel=RTOL)
    assert rho_of(c) == pytest.approx(0.02011389906175031, rel=RTOL)


@pytest.mark.parametrize("name", CLASSES)
def test_utility_endpoint_reproduces_the_calibration_report(name):
    c = paper_run(CLASSES[name])
    u = FAMILY.utility(CLASSES[name] | {"noise_multiplier": c.noise_multiplier, "target_delta": DELTA})
    assert [(b.source, b.value) for b in u.bounds] == [(b.source, b.value) for b in c.utility.bounds]


def test_printed_sigmas_recomputed_from_the_paper():
    """σ of Alg. 1–5 and C-SC (§3.3) from the printed formulas, against the plan at the paper's noise."""
    ln25, ln5 = math.log(2.5 / DELTA), math.log(5 / DELTA)
    c = paper_run(TV1)
    assert c.releases[0].noise_std == pytest.approx(4 * math.sqrt(2 * ln25) / (0.1 * 10000), rel=1e-12)
    c = paper_run(TV3)
    assert c.releases[1].noise_std == pytest.approx((8 / 10000) * math.sqrt(2 * ln5 / (0.2 * 0.1)), rel=1e-12)
    c = paper_run(TV4)
    mu = (1 / 1) * max(2 / 64, 13 * 12 * math.sqrt(5 * ln5) / 4096)
    for k, r in enumerate(c.releases[::2], start=1):
        assert r.noise_std == pytest.approx((8 / 341) * math.sqrt(2 * ln5 / (mu * 2**k * mu)), rel=1e-12)


# -- Corollary 4.9 erratum -------------------------------------------------------------------------------------------


def test_corollary_4_9_as_stated_is_not_implied_by_its_proof_for_e5():
    """E5's parameters: the printed closed form (9.976) is below the proof's exact sum (11.64), the corrected one
    (15.61) above it (values of an independent prototype of the paper's formulas)."""
    n = 4096
    delta = 0.5 / n**1.5
    lipschitz = math.sqrt((1 + 0.1 + 0.5) ** 2 + (1 + 0.5 + 0.25 + 0.5) ** 2)
    params = TV5 | {"lipschitz": lipschitz}
    z = paper_noise_multiplier("c-sc", 1.0, delta)
    report = FAMILY.utility(params | {"noise_multiplier": z, "target_delta": delta})
    stated = next(b for b in report.bounds if "as stated" in b.source)
    corrected = next(b for b in report.bounds if "corrected" in b.source)
    exact = next(b for b in report.bounds if "exact sum" in b.source)
    assert stated.value == pytest.approx(9.976, abs=1e-3)
    assert corrected.value == pytest.approx(15.612, abs=1e-3)
    assert exact.value == pytest.approx(11.644, abs=1e-3)
    assert not stated.applicable and corrected.applicable and exact.applicable
    assert stated.assumptions[-1].holds is False


# -- accounting: tight ≤ paper, the analytic Gaussian recomputed independently ---------------------------------------


def oracle_delta(mu, eps):
    """δ(ε) of μ-GDP (Balle & Wang 2018, Thm. 8) in 60-digit arithmetic."""
    with mp.workdps(60):
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        return float(mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2))


BUDGETS = [(eps, delta) for eps in (0.05, 0.3, 0.7, 1.0) for delta in (1e-3, 1e-5, 1e-9, 1e-14)]


@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize(("epsilon", "delta"), BUDGETS)
def test_tight_is_at_most_paper_and_is_the_analytic_gaussian(name, epsilon, delta):
    params = CLASSES[name]
    z = paper_noise_multiplier(name, epsilon, delta)
    report = FAMILY.privacy(params | {"noise_multiplier": z}, delta)
    by = {a.name: a for a in report.accountants}
    assert by["paper"].applicable and by["paper"].epsilon == pytest.approx(epsilon, rel=1e-12)
    assert by["tight"].epsilon <= by["paper"].epsilon
    assert by["tight"].epsilon <= by["rdp"].epsilon
    assert report.epsilon == by["tight"].epsilon and report.accountant == "tight"
    # the stated GDP μ: √c/z with c = 2 where a record is released twice (x/y, Alg. 4/5)
    c = 2 if name in ("sc-sc", "c-c") else 1
    mu = math.sqrt(c) / z
    delta_fail = (4 if name == "c-c" else 2) * delta / (8 if c == 2 else 4)
    achieved = oracle_delta(mu, by["tight"].epsilon)
    assert achieved <= (delta - delta_fail) * (1 + 1e-9)
    assert achieved == pytest.approx(delta - delta_fail, rel=1e-6)
    # calibration: the tight noise never exceeds the paper's
    cal = FAMILY.calibrate(params, epsilon, delta)
    assert cal.accountant == "tight" and cal.noise_multiplier <= z
    assert oracle_delta(math.sqrt(c) / cal.noise_multiplier, epsilon) <= (delta - delta_fail) * (1 + 1e-9)
    assert cal.paper.noise_multiplier == pytest.approx(z, rel=1e-12) and cal.paper.valid


def test_tight_delta_matches_a_monte_carlo_privacy_loss():
    """The privacy loss of N(0, σ²) vs N(Δ, σ²) is N(μ²/2, μ²); E[(1 − e^{ε−Z})₊] = δ(ε)."""
    rng = np.random.default_rng(6)
    z = paper_noise_multiplier("convex", 1.0, DELTA)
    mu = 1.0 / z
    loss = rng.normal(mu * mu / 2, mu, 2_000_000)
    for eps, expected in ((0.0, 0.07988), (0.25, 0.011543), (0.5, 5.254e-4)):
        mc = float(np.mean(np.maximum(0.0, 1.0 - np.exp(eps - loss))))
        assert oracle_delta(mu, eps) == pytest.approx(expected, rel=2e-3)
        se = float(np.std(np.maximum(0.0, 1.0 - np.exp(eps - loss)))) / math.sqrt(loss.size)
        assert abs(mc - oracle_delta(mu, eps)) < 5 * se


@pytest.mark.parametrize("name", CLASSES)
def test_solver_failure_is_added_to_delta(name):
    params = CLASSES[name]
    z = 3.0
    c = 2 if name in ("sc-sc", "c-c") else 1
    runs = 4 if name == "c-c" else 2
    for p in (0.0, 1e-7, 2e-6):
        report = FAMILY.privacy(params | {"noise_multiplier": z, "solver_failure_probability": p}, DELTA)
        tight = next(a for a in report.accountants if a.name == "tight").epsilon
        assert oracle_delta(math.sqrt(c) / z, tight) == pytest.approx(DELTA - runs * p, rel=1e-6)
    certified = FAMILY.privacy(params | {"noise_multiplier": z, "solver_failure_probability": 0.0}, DELTA)
    default = FAMILY.privacy(params | {"noise_multiplier": z}, DELTA)
    assert certified.epsilon < default.epsilon
    with pytest.raises(ParameterError) as info:
        FAMILY.privacy(params | {"noise_multiplier": z, "solver_failure_probability": DELTA / runs}, DELTA)
    assert info.value.issues[0].field == "solver_failure_probability" and "δ budget" in str(info.value)
    with pytest.raises(ParameterError):
        FAMILY.calibrate(params | {"solver_failure_probability": 0.05}, 1.0, DELTA)


def test_paper_accountant_flags_its_epsilon_condition():
    z = paper_noise_multiplier("strongly-convex", 3.0, DELTA)  # the paper's noise for ε = 3 > 1
    report = FAMILY.privacy(TV1 | {"noise_multiplier": z}, DELTA)
    paper = next(a for a in report.accountants if a.name == "paper")
    assert not paper.applicable and "ε' ≤ 1" in paper.reason
    assert any("paper accountant not applicable" in w for w in report.warnings)
    with pytest.raises(UnsupportedAccountantError):
        FAMILY.privacy(TV1 | {"noise_multiplier": z}, DELTA, accountant="paper")
    cal = FAMILY.calibrate(TV1, 3.0, DELTA)
    assert cal.paper.noise_multiplier == pytest.approx(z) and "outside the paper's regime" in cal.paper.note
    # the split classes allow ε/2 ≤ 1 per release
    z = paper_noise_multiplier("sc-sc", 1.5, DELTA)
    assert next(
        a for a in FAMILY.privacy(TV3 | {"noise_multiplier": z}, DELTA).accountants if a.name == "paper"
    ).applicable


def test_c_sc_condition_is_warned():
    weak = FAMILY.privacy(TV5 | {"strong_convexity_y": 0.001, "noise_multiplier": 3.0}, DELTA)
    assert any("Corollary 4.9's condition fails" in w for w in weak.warnings)
    fine = FAMILY.privacy(TV5 | {"noise_multiplier": 3.0}, DELTA)
    assert not any("Corollary 4.9" in w for w in fine.warnings)


def test_paper_accountant_needs_the_papers_failure_probability():
    z = paper_noise_multiplier("convex", 0.5, DELTA)
    report = FAMILY.privacy(TV2 | {"noise_multiplier": z, "solver_failure_probability": DELTA / 3}, DELTA)
    paper = next(a for a in report.accountants if a.name == "paper")
    assert not paper.applicable and "δ/4" in paper.reason


@pytest.mark.parametrize("name", CLASSES)
def test_calibration_inverts_privacy(name):
    params = CLASSES[name]
    for target in (0.2, 1.0, 4.0):
        for accountant in ("tight", "rdp"):
            cal = FAMILY.calibrate(params, target, DELTA, accountant=accountant)
            again = FAMILY.privacy(params | {"noise_multiplier": cal.noise_multiplier}, DELTA, accountant=accountant)
            assert again.epsilon <= target
            assert again.epsilon == pytest.approx(target, rel=1e-6)


def test_privacy_does_not_depend_on_the_regularisation_or_phases():
    """z is relative to each Δ_k: μ, K and the constants move σ_k, never ε."""
    base = FAMILY.privacy(TV2 | {"noise_multiplier": 2.0}, DELTA).epsilon
    for extra in ({"regularization": 7.0}, {"phases": 3}, {"lipschitz": 50.0, "diameter": 0.01}):
        assert FAMILY.privacy(TV2 | extra | {"noise_multiplier": 2.0}, DELTA).epsilon == base


# -- the plan --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["convex", "c-c", "c-sc"])
def test_phase_plan_uses_disjoint_blocks_and_doubling_regulariser(name):
    params = CLASSES[name] | {"dataset_size": 1000, "noise_multiplier": 2.0}
    report = FAMILY.privacy(params, DELTA)
    assert default_phases(1000) == 10
    first_run = [r for r in report.releases if r.details["algorithm"] != "Algorithm 5"]
    assert len(first_run) == 10
    blocks = [tuple(int(v) for v in r.details["records"].split("..")) for r in first_run]
    assert blocks == [(100 * k + 1, 100 * (k + 1)) for k in range(10)]
    mu = first_run[0].details["regularization"]
    for k, r in enumerate(first_run, start=1):
        assert r.details["mu_k"] == pytest.approx(mu * 2**k, rel=1e-12)
        assert r.noise_std == pytest.approx(2.0 * r.sensitivity, rel=1e-12) and r.noise_multiplier == 2.0
    assert "does not depend on the base solver" in report.conventions.noise_multiplier_definition
    assert any("does not depend on the base solver" in w for w in report.warnings)


def test_default_phases_is_ceil_log2():
    assert [default_phases(n) for n in (1, 2, 3, 4, 5, 4096, 4097)] == [1, 1, 2, 2, 3, 12, 13]


def test_solver_accuracy_gap_follows_markov():
    """γ(p) = p²L²/(2μ_k n̄²) gives P(‖x_k − x̂*_k‖ ≥ L/(μ_k n̄)) ≤ p (Markov's inequality, Alg. 2)."""
    p = 1e-3
    report = FAMILY.privacy(TV2 | {"noise_multiplier": 2.0, "solver_failure_probability": p}, 0.01)
    for r in report.releases:
        mu_k, nbar = r.details["mu_k"], r.details["block_size"]
        gamma = r.details["solver_expected_gap"]
        assert gamma == pytest.approx(p**2 / (2 * mu_k * nbar**2), rel=1e-12)
        # E‖x − x̂‖ ≤ √(2γ/μ_k); Markov at the requirement L/(μ_k n̄)
        assert math.sqrt(2 * gamma / mu_k) / r.details["solver_accuracy_required"] == pytest.approx(p, rel=1e-9)


def test_regularisation_default_matches_the_theorem_at_the_papers_epsilon():
    delta = 1e-7
    for eps in (0.1, 0.9):
        z = paper_noise_multiplier("c-c", eps, delta)
        report = FAMILY.privacy(TV4 | {"noise_multiplier": z}, delta)
        expected = max(2 / 64, 13 * 12 * math.sqrt(5 * math.log(5 / delta)) / (4096 * eps))
        assert report.releases[0].details["regularization"] == pytest.approx(expected, rel=1e-12)


# -- parameter rules -------------------------------------------------------------------------------------------------


def fields_of(params):
    with pytest.raises(ParameterError) as info:
        FAMILY.parse(params)
    return {issue.field for issue in info.value.issues}


def test_rules_between_fields():
    assert fields_of({k: v for k, v in TV1.items() if k != "strong_convexity"}) == {"strong_convexity"}
    assert fields_of(TV1 | {"diameter": 1.0}) == {"diameter"}
    assert fields_of(TV1 | {"phases": 3}) == {"phases"}
    assert fields_of(TV1 | {"smoothness": 0.01}) == {"smoothness"}
    assert fields_of(TV2 | {"strong_convexity": 0.1}) == {"strong_convexity"}
    assert fields_of({k: v for k, v in TV2.items() if k != "diameter"}) == {"diameter"}
    assert fields_of(TV2 | {"phases": 5000}) == {"phases"}
    assert fields_of(TV3 | {"dimension_x": 3}) == {"dimension"}
    assert fields_of(TV3 | {"strong_convexity": 0.1}) == {"strong_convexity"}
    assert fields_of({k: v for k, v in TV3.items() if k != "strong_convexity_y"}) == {"strong_convexity_y"}
    assert fields_of(TV3 | {"smoothness": 0.15}) == {"smoothness"}
    assert fields_of({k: v for k, v in TV5.items() if k != "strong_convexity_y"}) == {"strong_convexity_y"}
    assert fields_of(TV5 | {"strong_convexity_x": 0.2}) == {"strong_convexity_x"}
    assert fields_of(TV4 | {"strong_convexity_y": 0.2}) == {"strong_convexity_y"}
    minimax = {k: v for k, v in TV4.items() if k != "dimension"} | {"dimension_x": 3}
    assert fields_of(minimax) == {"dimension_y"}
    assert fields_of(TV1 | {"problem_class": "convex", "diameter": 1.0}) == {"strong_convexity"}


def test_c_sc_takes_dimension_y_for_the_simulator_only():
    p = FAMILY.parse(TV5 | {"dimension_y": 3})
    assert (p.d_x, p.d_y) == (5, 3)
    p = FAMILY.parse({k: v for k, v in TV5.items() if k != "dimension"} | {"dimension_x": 4})
    assert (p.d_x, p.d_y) == (4, 4)


def test_target_delta_must_match_the_request():
    with pytest.raises(ParameterError) as info:
        FAMILY.privacy(TV1 | {"noise_multiplier": 2.0, "target_delta": 1e-6}, DELTA)
    assert info.value.issues[0].field == "target_delta"
    assert FAMILY.privacy(TV1 | {"noise_multiplier": 2.0, "target_delta": DELTA}, DELTA).epsilon > 0
    with pytest.raises(ParameterError) as info:
        FAMILY.utility(TV1 | {"noise_multiplier": 2.0})
    assert {i.field for i in info.value.issues} == {"target_delta"}
    with pytest.raises(ParameterError) as info:
        FAMILY.utility(TV1 | {"target_delta": DELTA})
    assert {i.field for i in info.value.issues} == {"noise_multiplier"}


def test_model_documents_every_field_with_its_symbol():
    props = PhasedOutputPerturbationParams.model_json_schema()["properties"]
    symbols = {k: v.get("x-symbol") for k, v in props.items()}
    assert symbols["lipschitz"] == "L" and symbols["smoothness"] == "ℓ" and symbols["diameter"] == "D"
    assert symbols["phases"] == "K" and symbols["strong_convexity"] == "μ" and symbols["dataset_size"] == "n"
    assert props["problem_class"]["enum"] == ["strongly-convex", "convex", "sc-sc", "c-c", "c-sc"]


def test_utility_values_scale_with_the_noise():
    """The exact sums grow with z (σ_k = zΔ_k at fixed regularisation)."""

    def exact_sum(z):
        p = FAMILY.parse(TV2 | {"noise_multiplier": z, "regularization": 0.5})
        return next(v.value for v in utility_values(p, mechanism(p, z), DELTA) if v.role == "exact")

    values = [exact_sum(z) for z in (0.5, 2.0, 8.0)]
    assert values == sorted(values) and values[0] < values[-1]


# -- simulators (problems E1–E5) -------------------------------------------------------------------------------------

SIM = POP_SIMULATED
SIM_DELTA = 1e-6


def simulate(name, checks, trials, seed, problem=None, epsilon=1.0):
    z = FAMILY.calibrate(SIM[name], epsilon, SIM_DELTA).noise_multiplier
    params = FAMILY.parse(SIM[name] | {"noise_multiplier": z})
    plan = plan_job(FAMILY, params, SIM_DELTA, checks, trials, seed, problem or {})
    blocks = [run_block(SIMULATOR, plan, b) for b in range(len(block_sizes(trials)))]
    return plan, summarize(plan, blocks)


@pytest.mark.parametrize("name", SIM)
def test_measured_utility_is_below_the_predicted_bound_on_average_over_seeds(name):
    ratios = []
    for seed in range(3):
        plan, result = simulate(name, ("utility",), 64, seed)
        assert plan.predicted_bound is not None and plan.predicted_source.startswith("proof of")
        ratios.append(result.utility.measured["mean"] / plan.predicted_bound)
    mean_ratio = float(np.mean(ratios))
    print(f"\n{name}: measured/predicted explicit bound over 3 seeds = {mean_ratio:.4f} ({ratios})")
    assert 0.0 < mean_ratio < 1.0


@pytest.mark.parametrize("name", ["strongly-convex", "sc-sc"])
def test_simulated_utility_matches_its_closed_form_expectation(name):
    """E1/E3: the Monte-Carlo mean is within 4 standard errors of the exact expectation (tests σ and the problem)."""
    plan, result = simulate(name, ("utility",), 1024, 11)
    expected = float(plan.prediction_note.rsplit("= ", 1)[1])
    measured = result.utility.measured
    assert abs(measured["mean"] - expected) < 4 * measured["standard_error"], (measured, expected)


def test_e1_expectation_recomputed_independently():
    plan, _ = simulate("strongly-convex", ("utility",), 64, 0)
    mu, radius = 0.5, 1.0 / (2 * 0.5)
    sigma = plan.params["noise_multiplier"] * 4 * 1.0 / (mu * 500)
    expected = mu / 2 * (radius**2 / 500 + 6 * sigma**2)
    assert float(plan.prediction_note.rsplit("= ", 1)[1]) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("name", SIM)
def test_simulation_is_deterministic_given_the_seed(name):
    _, first = simulate(name, ("utility", "privacy-audit"), 70, 5)
    _, again = simulate(name, ("utility", "privacy-audit"), 70, 5)
    assert first.utility.measured == again.utility.measured
    assert first.privacy_audit.threshold == again.privacy_audit.threshold


@pytest.mark.parametrize("name", SIM)
def test_audit_is_consistent_and_below_the_accountant(name):
    plan, result = simulate(name, ("privacy-audit",), 4000, 2)
    audit = result.privacy_audit
    assert audit.consistent and audit.epsilon_lower_bound <= audit.epsilon_accounted
    assert 0 < audit.epsilon_exact <= audit.epsilon_accounted
    # the simulated pair's μ never exceeds the accountant's √c/z
    from accountants.synthetic.output_perturbation import audit_gdp

    c = 2 if name in ("sc-sc", "c-c") else 1
    assert audit_gdp(plan.problem["audit"]) <= math.sqrt(c) / plan.params["noise_multiplier"] * (1 + 1e-9)


def test_worst_case_solver_makes_the_audit_stronger():
    _, worst = simulate("strongly-convex", ("privacy-audit",), 64, 1, {"audit_solver": "worst-case"})
    _, exact = simulate("strongly-convex", ("privacy-audit",), 64, 1, {"audit_solver": "exact"})
    # E1: ERM shift 2R/n, solver slack L/(μn) = 2R/n on each side, Δ = 8R/n: μ = 0.75/z vs 0.25/z
    assert worst.privacy_audit.epsilon_exact > 2 * exact.privacy_audit.epsilon_exact


def test_audit_detects_the_mechanism_with_many_trials():
    _, result = simulate("strongly-convex", ("privacy-audit",), 40000, 3, epsilon=4.0)
    audit = result.privacy_audit
    assert audit.consistent and audit.epsilon_lower_bound > 0.5


def test_plan_work_is_honest_and_simulation_limits_are_422():
    z = 2.0
    params = FAMILY.parse(SIM["c-c"] | {"noise_multiplier": z})
    small = plan_job(FAMILY, params, SIM_DELTA, ("utility",), 64, 0, {})
    large = plan_job(FAMILY, params, SIM_DELTA, ("utility",), 6400, 0, {})
    assert large.work == pytest.approx(100 * small.work, rel=0.05)
    with pytest.raises(ParameterError) as info:
        plan_job(
            FAMILY,
            FAMILY.parse(TV1 | {"dataset_size": 10**6, "noise_multiplier": z}),
            SIM_DELTA,
            ("utility",),
            64,
            0,
            {},
        )
    assert info.value.issues[0].field == "dataset_size"
    with pytest.raises(ParameterError) as info:
        params = FAMILY.parse(SIM["c-sc"] | {"lipschitz": 0.4, "noise_multiplier": z})
        plan_job(FAMILY, params, SIM_DELTA, ("utility",), 64, 0, {})
    assert info.value.issues[0].field == "lipschitz"


@pytest.mark.parametrize("name", SIM)
def test_synthetic_problems_respect_the_declared_constants(name):
    """Worst-case gradient norm over the domain (joint, with the spread of the records) ≤ L and Hessian norm ≤ ℓ,
    recomputed from the built data; saddle points inside the balls (E3); x* minimises Φ (E5)."""
    from accountants.synthetic import output_perturbation as bp

    declared = SIM[name] | {"smoothness": 3.0} if name in ("convex", "c-c", "c-sc") else SIM[name]
    p = FAMILY.parse(declared)
    consts = {"lipschitz": p.lipschitz, "smoothness": p.smoothness, "diameter": p.diameter, "d_x": p.d_x}
    consts |= {"d_y": p.d_y, "mu_x": p.mu_x if name in ("strongly-convex", "sc-sc") else None}
    consts |= {"mu_y": p.mu_y if name in ("sc-sc", "c-sc") else None}
    built = bp.build(name, consts, 0)
    L, ell, tiny = p.lipschitz, p.smoothness, 1e-9
    if name == "strongly-convex":
        assert 2 * built["curvature"] * built["radius"] <= L * (1 + tiny)  # ‖μ(x − ξ)‖ ≤ 2μR
        return
    if name == "convex":
        s2, D = built["feature_norm"] ** 2, p.diameter
        assert np.linalg.norm(built["theta"]) == pytest.approx(D / 2)
        # |aᵀx − b|·‖a‖ ≤ (sD + sD/2 + 0.1sD)s
        assert (1.5 * s2 * D + built["label_noise"] * math.sqrt(s2)) <= L * (1 + tiny) and s2 <= ell
        return
    a, b0, c0 = np.array(built["a"]), np.array(built["b0"]), np.array(built["c0"])
    norm_a, nb, nc, beta, R = (
        np.linalg.norm(a, 2),
        np.linalg.norm(b0),
        np.linalg.norm(c0),
        built["spread"],
        built["radius"],
    )
    dx, dy = a.shape
    if name == "sc-sc":
        mux, muy = p.mu_x, p.mu_y
        grad = math.hypot(mux * R + norm_a * R + nb + beta, norm_a * R + muy * R + nc + beta)
        hess = np.block([[mux * np.eye(dx), a], [a.T, -muy * np.eye(dy)]])
        saddle = np.linalg.norm(np.linalg.inv(hess), 2) * math.hypot(nb + beta, nc + beta)
        assert saddle <= R * (1 + tiny)
    elif name == "c-c":
        grad = math.hypot(norm_a * R + nb + beta, norm_a * R + nc + beta)
        hess = np.block([[np.zeros((dx, dx)), a], [a.T, np.zeros((dy, dy))]])
    else:
        muy = p.mu_y
        grad = math.hypot(norm_a * R + nb + beta, norm_a * R + muy * R + nc + beta)
        hess = np.block([[np.zeros((dx, dx)), a], [a.T, -muy * np.eye(dy)]])
        xs = np.array(built["x_star"])
        rng = np.random.default_rng(0)
        around = bp.project_ball(xs + 0.05 * rng.standard_normal((5000, dx)), R)
        assert np.all(bp.phi_csc(around, a, b0, c0, muy, R) >= built["phi_star"] - 1e-12)
    assert grad <= L * (1 + tiny)
    assert np.linalg.norm(hess, 2) <= ell * (1 + tiny)
