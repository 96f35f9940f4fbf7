"""private-mirror-descent (González, Guzmán & Paquette 2024, arXiv:2403.02912): composition of exponential mechanisms,
the paper's rules as printed, an independent prototype's numbers, the per-sample ε₀ on worst-case neighbours, calibration of the stepsize, utility, and the simulator."""

import math

import mpmath as mp
import numpy as np
import pytest
from scipy.stats import binom

from accountants import registry
from accountants.errors import CalibrationError, ParameterError, UnsupportedAccountantError
from accountants.families.private_mirror_descent import (
    explicit_gap_bound,
    game_value,
    gap,
    lower_bound_ssp,
    paper_parameters,
    rate_algorithm1,
    rate_algorithm3,
    rate_algorithm5,
    schedule,
    tune_algorithm1,
)
from accountants.family import Cost, Operation
from accountants.mechanisms.pure_composition import (
    advanced_composition_epsilon,
    bounded_range_rdp,
    drv_epsilon,
    pure_dp_rdp,
)
from accountants.planning import plan_job
from accountants.pld import PldAccountant
from accountants.reports import NOT_ASKED_REASON, AccountantResult, choose_accountant
from accountants.verification import block_sizes, run_block, summarize

from ..support.kov import binomial_logpmf, kov_epsilon, kov_log_delta, kov_max_epsilon0, pmf_log_error
from ..support.params import MIRROR_DELTA, MIRROR_GAME

FAMILY = registry.get("private-mirror-descent")
# an independent prototype of the paper's formulas, its largest configuration: d₁ = d₂ = 32, n = 32000, ε = 2, δ = 1/n², B = 12, T = 2666, η = 0.0125, L₀ = L₁ = 1, L₂ = 0
GAME, DELTA = MIRROR_GAME, MIRROR_DELTA


def accountant(report, name):
    return next(a for a in report.accountants if a.name == name)


# -- oracles (independent of the library) -----------------------------------------------------------------------------


def oracle_kov_delta(k, e0, eps, digits=40):
    """δ(ε) of k-fold randomized response with parameter ε₀, summed exactly (KOV 2015, Thm. 3.3)."""
    with mp.workdps(digits):
        q = 1 / (1 + mp.exp(e0))
        total = mp.mpf(0)
        for w in range(k + 1):
            loss = mp.mpf(e0) * (k - 2 * w)
            if loss > eps:
                total += mp.binomial(k, w) * q**w * (1 - q) ** (k - w) * (1 - mp.exp(eps - loss))
        return float(total)


def oracle_rr_rdp(alpha, e0, digits=40):
    """D_α between the two output distributions of randomized response, (p, 1 − p) vs (1 − p, p)."""
    with mp.workdps(digits):
        p = mp.exp(e0) / (1 + mp.exp(e0))
        a = mp.mpf(alpha)
        return float(mp.log(p**a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1))


def oracle_improved_epsilon(rho_of_alpha, delta):
    """Balle et al. 2020 conversion minimised on a fine order grid (upper bound of the continuous minimum)."""
    alphas = np.concatenate([np.linspace(1.011, 2, 400), np.geomspace(2, 1e5, 4000)])
    values = rho_of_alpha(alphas) + np.log1p(-1 / alphas) - (math.log(delta) + np.log(alphas)) / (alphas - 1)
    return max(0.0, float(values.min()))


def softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


# -- composition of pure / bounded-range mechanisms -------------------------------------------------------------------


@pytest.mark.parametrize("e0", [1e-6, 1e-3, 0.3, 2.0, 40.0])
def test_pure_dp_rdp_is_randomized_response(e0):
    alphas = np.array([1.02, 1.5, 2.0, 7.5, 64.0, 4096.0])
    got = pure_dp_rdp(e0, alphas)
    want = [oracle_rr_rdp(a, e0) for a in alphas]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-300)
    assert np.all(got <= np.minimum(e0, alphas * e0**2 / 2) * (1 + 1e-12))  # Bun–Steinke bounds dominate it


def test_bounded_range_softmax_pairs_meet_the_zcdp_bound():
    """ε₀-bounded-range pairs (softmaxes whose scores differ by at most ε₀/2 coordinate-wise) satisfy
    D_α ≤ αε₀²/8 at every order (max ratio 0.85 on 2000 random pairs)."""
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(2000):
        d = int(rng.integers(2, 12))
        e0 = float(rng.uniform(0.01, 3.0))
        scores = rng.normal(0, 2, d)
        shift = rng.uniform(-e0 / 2, e0 / 2, d)
        p, q = softmax(scores + shift), softmax(scores)
        log_ratio = np.log(p) - np.log(q)
        assert log_ratio.max() - log_ratio.min() <= e0 + 1e-12
        for alpha in (1.5, 2.0, 5.0, 20.0):
            d_alpha = math.log(np.sum(p**alpha * q ** (1 - alpha))) / (alpha - 1)
            worst = max(worst, d_alpha / bounded_range_rdp(e0, np.array([alpha]))[0])
    assert 0.5 < worst <= 1.0


@pytest.mark.parametrize(
    ("k", "e0", "eps"), [(1, 1.0, 0.5), (5, 0.3, 0.4), (100, 0.05, 0.5), (1000, 0.00591, 0.7), (3000, 0.02, 2.0)]
)
def test_kov_delta_matches_the_exact_sum_from_above(k, e0, eps):
    exact = oracle_kov_delta(k, e0, eps)
    got = math.exp(kov_log_delta(k, e0, eps))
    assert exact <= got <= exact * (1 + 1e-8)


def test_kov_blockwise_bound_for_many_compositions():
    """Windows wider than MAX_TERMS are summed in blocks: still an upper bound, within 1 % of the exact sum."""
    k, e0, eps = 200_000, 0.004, 1.5
    w = np.arange(k + 1)
    loss = e0 * (k - 2 * w)
    mask = loss > eps
    exact = float(np.sum(binom.pmf(w[mask], k, 1 / (1 + math.exp(e0))) * -np.expm1(eps - loss[mask])))
    got = math.exp(kov_log_delta(k, e0, eps))
    assert exact <= got <= exact * 1.01


def test_binomial_pmf_in_log_space_for_huge_counts():
    with mp.workdps(60):
        for k, e0 in [(10**6, 0.001), (10**9, 1e-4), (10**12, 1e-6)]:
            q = 1 / (1 + mp.exp(e0))
            log_q, log_p = -float(np.logaddexp(0, e0)), -float(np.logaddexp(0, -e0))
            sd = math.sqrt(k / 4)
            for w in (int(k * float(q) - 4 * sd), int(k * float(q))):
                exact = float(mp.log(mp.binomial(k, w)) + w * mp.log(q) + (k - w) * mp.log(1 - q))
                got = float(binomial_logpmf(np.array([w]), k, log_q, log_p)[0])
                assert abs(got - exact) <= pmf_log_error(k, log_q, log_p)


def test_spec_accounting_sanity_check():
    """An independent prototype of the paper's formulas: k = 1000, ε = 1, δ = 1e-6: advanced-composition ε₀ = 0.00591; there KOV gives 0.775, the
    bounded-range zCDP bound 0.400 (improved conversion), the tight pure-DP RDP 0.836, DRV 1.018."""
    k, delta = 1000, 1e-6
    b = math.sqrt(2 * k * math.log(1 / delta))
    e0 = (-b + math.sqrt(b * b + 2 * k * 1.0)) / k  # root of √(2k log(1/δ))·ε₀ + kε₀²/2 = 1
    assert e0 == pytest.approx(0.00591, abs=5e-6)
    assert advanced_composition_epsilon(k, e0, delta) == pytest.approx(1.0, rel=1e-12)
    assert drv_epsilon(k, e0, delta) == pytest.approx(1.018, abs=1e-3)
    assert kov_epsilon(k, e0, delta) == pytest.approx(0.775, abs=1e-3)
    br = oracle_improved_epsilon(lambda a: k * a * e0**2 / 8, delta)
    assert br == pytest.approx(0.400, abs=1e-3)
    pure = oracle_improved_epsilon(lambda a: k * pure_dp_rdp(e0, a), delta)
    assert pure == pytest.approx(0.836, abs=1e-3)


def test_kov_against_dp_accounting_pld():
    """dp_accounting's pessimistic PLD of k-fold binary randomized response upper-bounds the same curve."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    k, e0, delta = 400, 0.02, 1e-6
    noise = 2 / (1 + math.exp(e0))  # binary RR: keep w.p. 1 − p, uniform w.p. p, so e^{ε₀} = (1 − p/2)/(p/2)
    single = pld.from_randomized_response(noise, 2, value_discretization_interval=1e-5)
    pld_eps = single.self_compose(k).get_epsilon_for_delta(delta)
    ours = kov_epsilon(k, e0, delta)
    assert ours <= pld_eps <= ours + k * 1e-5  # its pessimistic rounding adds up to vdi per composition
    assert oracle_kov_delta(k, e0, ours) <= delta < oracle_kov_delta(k, e0, ours * (1 - 1e-6))


@pytest.mark.parametrize("seed", range(5))
def test_kov_is_the_smallest_pure_dp_bound_and_inverts(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 50_000))
    e0 = float(10 ** rng.uniform(-4, 0))
    delta = float(10 ** rng.uniform(-10, -3))
    eps = kov_epsilon(k, e0, delta)
    assert math.exp(kov_log_delta(k, e0, eps)) <= delta
    assert eps <= min(advanced_composition_epsilon(k, e0, delta), drv_epsilon(k, e0, delta), k * e0) * (1 + 1e-9)
    best = kov_max_epsilon0(k, max(eps, 1e-3), delta)
    assert kov_log_delta(k, best, max(eps, 1e-3)) <= math.log(delta)
    assert kov_log_delta(k, best * (1 + 1e-6), max(eps, 1e-3)) > math.log(delta)


# -- the per-sample ε₀ on worst-case neighbours -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_algorithm1_per_sample_epsilon0_on_worst_case_neighbours(seed):
    """Algorithm 1 on f = xᵀA_ξy with records A_ξ ∈ {±1}^{d₁×d₂} (L₀ = 1); D′ flips every entry of one record.
    Along the same history of vertex samples, every step's x- and y-distributions satisfy
    max_i |log p_t(i) − log p′_t(i)| ≤ ε₀ = 4ηL₀/B, and so does their range (bounded range ε₀)."""
    rng = np.random.default_rng(100 + seed)
    d1, d2, n, b, k, eta = 6, 5, 240, 12, 2, 0.3
    a = rng.uniform(-1, 1, (d1, d2))
    data = np.where(rng.random((n, d1, d2)) < (1 + a) / 2, 1.0, -1.0)
    neighbour = data.copy()
    j = int(rng.integers(n - b))  # not in the last batch, whose gradient is never used
    neighbour[j] = -data[j]
    e0 = schedule(FAMILY.parse(GAME | {"dataset_size": n, "batch_size": b, "samples_per_step": k})).epsilon0(eta)
    assert e0 == pytest.approx(4 * eta * 1.0 / b)
    theta, theta2 = [np.zeros(d1), np.zeros(d2)], [np.zeros(d1), np.zeros(d2)]
    worst_ratio = worst_range = 0.0
    for t in range(n // b):
        for player in (0, 1):
            log_ratio = np.log(softmax(theta[player])) - np.log(softmax(theta2[player]))
            worst_ratio = max(worst_ratio, float(np.max(np.abs(log_ratio))))
            worst_range = max(worst_range, float(log_ratio.max() - log_ratio.min()))
        xs = np.bincount(rng.choice(d1, k, p=softmax(theta[0])), minlength=d1) / k
        ys = np.bincount(rng.choice(d2, k, p=softmax(theta[1])), minlength=d2) / k
        g, g2 = data[t * b : (t + 1) * b].mean(0), neighbour[t * b : (t + 1) * b].mean(0)
        theta[0] -= eta * g @ ys
        theta[1] += eta * g.T @ xs
        theta2[0] -= eta * g2 @ ys
        theta2[1] += eta * g2.T @ xs
    assert 0.3 * e0 < worst_ratio <= e0 + 1e-12
    assert worst_range <= e0 + 1e-12


def test_algorithm5_log_probabilities_move_by_at_most_delta_prime():
    """Algorithm 5's sampled x_t is a mixture of softmaxes (α_t = t): along the same history, log x_t moves by at
    most Δ' = 4ηTL₀/B coordinate-wise between neighbours [D], the pure-DP ε₀ of each sample."""
    rng = np.random.default_rng(9)
    d, n, b, eta = 5, 120, 6, 0.05
    steps = n // b
    data = np.where(rng.random((n, d)) < 0.5, 1.0, -1.0)
    neighbour = data.copy()
    neighbour[(steps - 2) * b] = -data[(steps - 2) * b]  # heaviest weight α_s among the batches that matter
    params = {"variant": "sco", "dataset_size": n, "dimension_x": d, "lipschitz": 1.0, "smoothness": 0.0}
    sched = schedule(FAMILY.parse(params | {"batch_size": b}))
    bound = sched.epsilon0(eta)
    assert bound == pytest.approx(4 * eta * steps / b)
    theta, theta2, x, x2, total, worst = np.zeros(d), np.zeros(d), np.zeros(d), np.zeros(d), 0, 0.0
    for t in range(1, steps + 1):
        previous, total = total, total + t
        x = (previous * x + t * softmax(theta)) / total
        x2 = (previous * x2 + t * softmax(theta2)) / total
        worst = max(worst, float(np.max(np.abs(np.log(x) - np.log(x2)))))
        theta -= eta * t * data[(t - 1) * b : t * b].mean(0)
        theta2 -= eta * t * neighbour[(t - 1) * b : t * b].mean(0)
    assert 0 < worst <= bound


# -- the family: privacy ----------------------------------------------------------------------------------------------


def test_spec_last_row_privacy_report():
    """An independent prototype of the paper's formulas: ε₀ = 0.00415 per sample, and the accountants give DRV 2.05, KOV 1.71, bounded-range zCDP 0.87 (the
    paper counts k = 2TK = 5332; the rigorous count is 2(T − 1)K = 5330)."""
    report = FAMILY.privacy(GAME | {"stepsize": 0.0125}, DELTA)
    assert report.accountant == "tight" and report.noise is None
    rdp = accountant(report, "rdp").epsilon
    assert rdp == pytest.approx(0.8746, abs=2e-3)
    e0 = 0.0125 * 4 / 12
    assert kov_epsilon(5330, e0, DELTA) == pytest.approx(1.7165, abs=2e-3)  # the pure-DP class: far above
    # the optimal bounded-range composition answers: below rdp, above the non-adaptive t = ½ strategy (randomised
    # response with ε₀/2 is ε₀-bounded-range, so KOV at ε₀/2 is a lower bound on the optimum it over-approximates)
    assert kov_epsilon(5330, e0 / 2, DELTA) < report.epsilon == accountant(report, "tight").epsilon < rdp
    by_name = {b.name: b for b in report.bounds}
    drv = next(b for n, b in by_name.items() if "Rothblum" in b.source)
    assert drv.epsilon == pytest.approx(2.05, abs=5e-3)
    optimum = next(b for n, b in by_name.items() if n.startswith("Optimal adaptive composition"))
    assert optimum.selected and optimum.epsilon == report.epsilon
    assert report.releases[0].details["epsilon0"] == pytest.approx(0.0125 * 4 / 12)
    k = 2 * 2666
    paper = 2 * math.sqrt(2 * k * math.log(1 / DELTA)) * 4 * 0.0125 / 12  # Cor. 3.6 with the paper's count 2TK
    assert accountant(report, "paper").epsilon == pytest.approx(paper, rel=1e-12)
    assert report.conventions.neighbouring == "replace-one" and "ε₀" in report.conventions.noise_multiplier_definition
    assert "5330" in report.conventions.step_rule and "5332" in report.conventions.step_rule


@pytest.mark.parametrize("seed", range(8))
def test_paper_accountant_and_calibration_are_the_printed_formulas(seed):
    """Prop. 3.3 with Cor. 3.6 [R]: η ≤ Bε/(16L₀√(TK log(1/δ))), i.e. ε = 16ηL₀√(TK log(1/δ))/B; Prop. 3.17 [D]:
    η ≤ Bε/(20√6·L₀√(M log(1/δ))); Prop. 4.3 [R]: η ≤ Bε/(16√2·TL₀√(N_s log(1/δ)))."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(200, 10**6))
    b = int(rng.integers(1, n // 4))
    L0 = float(10 ** rng.uniform(-2, 2))
    delta = float(10 ** rng.uniform(-9, -3))
    eps = float(rng.uniform(0.05, 5.0))
    eta = float(10 ** rng.uniform(-4, 0))
    base = {"dataset_size": n, "batch_size": b, "lipschitz": L0, "smoothness": 1.0, "dimension_x": 8}
    lg = math.log(1 / delta)
    t = int(rng.integers(2, n // b + 1))
    k = int(rng.integers(1, 20))
    alg1 = base | {"dimension_y": 9, "steps": t, "samples_per_step": k}
    cases = [
        (alg1, 16 * eta * L0 * math.sqrt(t * k * lg) / b, b * eps / (16 * L0 * math.sqrt(t * k * lg))),
    ]
    m = n // b
    alg3 = base | {"variant": "bias-reduced", "dimension_y": 9, "second_order_smoothness": 1.0}
    if m >= 2:
        cases.append(
            (
                alg3,
                20 * math.sqrt(6) * eta * L0 * math.sqrt(m * lg) / b,
                b * eps / (20 * math.sqrt(6) * L0 * math.sqrt(m * lg)),
            )
        )
    t0, period, final = 1, int(rng.integers(1, 5)), int(rng.integers(1, 4))
    alg5 = base | {
        "variant": "sco",
        "steps": t,
        "samples_per_step": k,
        "refresh_period": period,
        "final_samples": final,
    }
    ns = k * t0 + k * math.ceil((t - t0) / period) + final
    cases.append(
        (
            alg5,
            16 * math.sqrt(2) * t * eta * L0 * math.sqrt(ns * lg) / b,
            b * eps / (16 * math.sqrt(2) * t * L0 * math.sqrt(ns * lg)),
        )
    )
    for params, printed_eps, printed_eta in cases:
        report = FAMILY.privacy(params | {"stepsize": eta}, delta, orders=[2, 8, 32])
        paper = accountant(report, "paper")
        if printed_eps <= 8 * lg:
            assert paper.applicable and paper.epsilon == pytest.approx(printed_eps, rel=1e-12)
            assert report.epsilon <= paper.epsilon * (1 + 1e-12)  # best ≤ paper whenever the paper is valid
            assert accountant(report, "rdp").epsilon <= paper.epsilon  # rdp ≤ paper (both with their own counts)
        else:
            assert not paper.applicable and "8 log(1/δ)" in paper.reason
            assert any("8 log(1/δ)" in w for w in report.warnings)
        calibration = FAMILY.calibrate(params, eps, delta)
        assert calibration.paper.note.startswith(f"prescribed stepsize η = {printed_eta:.6g}")
        assert calibration.paper.epsilon_claimed == eps
        paper_cal = accountant(calibration, "paper")
        if eps <= 8 * lg:
            assert paper_cal.calibrated_value == pytest.approx(printed_eta, rel=1e-9)
            assert paper_cal.epsilon <= eps  # one-sided
            assert calibration.paper.valid is (calibration.paper.epsilon_certified <= eps)
        else:
            assert not paper_cal.applicable and calibration.paper.valid is False
            assert "NOT VALID" in calibration.paper.note


@pytest.mark.slow
def test_tight_rdp_paper_order_at_every_budget():
    """rdp ≤ paper (whenever the paper applies) and best = min. tight is the spine's PLD accountant on the blocks of
    the optimal adaptive bounded-range composition: below every pure-DP composition bound (KOV, optimal for the
    larger class of ε₀-DP mechanisms, within its 1e-4 accuracy), above the non-adaptive t = ½ strategy (KOV at
    ε₀/2), and below rdp but where its lattice costs more than rdp's slack (then a warning says so)."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        n = int(10 ** rng.uniform(2.5, 6))
        b = int(rng.integers(1, max(2, n // 50)))
        params = GAME | {"dataset_size": n, "batch_size": b, "samples_per_step": int(rng.integers(1, 4))}
        delta = float(10 ** rng.uniform(-10, -4))
        eta = float(10 ** rng.uniform(-3, 1)) * b / 4
        report = FAMILY.privacy(params | {"stepsize": eta}, delta, orders=[1.5, 2, 4, 8, 16, 64, 256])
        rdp, tight, paper = (accountant(report, x) for x in ("rdp", "tight", "paper"))
        applicable = [a.epsilon for a in report.accountants if a.applicable]
        assert report.epsilon == min(applicable)
        if paper.applicable:
            assert rdp.epsilon <= paper.epsilon and tight.epsilon <= paper.epsilon
        pure_bounds = [b.epsilon for b in report.bounds if "Rothblum" in b.source or "Whitehouse" in b.source]
        assert tight.epsilon <= min(pure_bounds) * (1 + 1e-9)
        sched = schedule(FAMILY.parse(params))
        e0 = sched.epsilon0(eta)
        assert kov_epsilon(sched.count, e0 / 2, delta) <= tight.epsilon, (n, b, delta, eta)
        assert tight.epsilon <= kov_epsilon(sched.count, e0, delta) * (1 + 1e-4) + 1e-6, (n, b, delta, eta)
        if tight.epsilon > rdp.epsilon:
            assert any("exceeds the rdp bound" in w for w in report.warnings)


def test_epsilon_increases_with_the_stepsize():
    values = [FAMILY.privacy(GAME | {"stepsize": s}, DELTA).epsilon for s in (0.001, 0.003, 0.01, 0.03, 0.1)]
    assert values == sorted(values) and values[0] > 0


def test_one_step_leaks_nothing_and_cannot_be_calibrated():
    params = GAME | {"steps": 1, "stepsize": 5.0}
    report = FAMILY.privacy(params, DELTA)
    assert report.epsilon == 0.0 and accountant(report, "rdp").epsilon == 0.0
    assert accountant(report, "paper").epsilon > 0  # the paper counts the first step's samples
    with pytest.raises(CalibrationError, match="steps ≥ 2"):
        FAMILY.calibrate(GAME | {"steps": 1}, 1.0, DELTA)
    assert FAMILY.calibrate(GAME | {"steps": 1}, 1.0, DELTA, accountant="paper").accountant == "paper"


# -- calibration of the stepsize --------------------------------------------------------------------------------------


@pytest.mark.parametrize("operation", ["privacy", "calibrate"])
def test_rdp_requests_compute_no_optimal_composition_and_agree_with_best(operation, monkeypatch):
    """accountant 'rdp' answers alone (cheap; the Bellman recursion is not run) with the value best reports for rdp."""
    params = GAME | {"dataset_size": 8000, "batch_size": 20}
    if operation == "privacy":
        params |= {"stepsize": 0.05}
    run = (
        (lambda acc: FAMILY.privacy(params, DELTA, acc))
        if operation == "privacy"
        else (lambda acc: FAMILY.calibrate(params, 1.0, DELTA, acc))
    )
    best = {a.name: a for a in run("best").accountants}
    assert FAMILY.cost(Operation(operation), params, "best") is Cost.HEAVY
    assert FAMILY.cost(Operation(operation), params, "rdp") is Cost.CHEAP

    def no_pld(*args, **kwargs):
        raise AssertionError("the PLD accountant ran for an rdp request")

    monkeypatch.setattr(PldAccountant, "epsilon_and_plans", no_pld)
    alone = run("rdp")
    answers = {a.name: a for a in alone.accountants}
    assert alone.accountant == "rdp" and answers["rdp"] == best["rdp"]
    assert not answers["tight"].applicable and answers["tight"].reason == NOT_ASKED_REASON
    with pytest.raises(UnsupportedAccountantError, match="not computed"):
        choose_accountant(alone.accountants, "tight")


def test_best_with_no_applicable_accountant_names_the_reasons():
    results = [AccountantResult("rdp", False, reason="no curve"), AccountantResult("tight", False, reason="no PLD")]
    with pytest.raises(
        UnsupportedAccountantError, match=r"no certified accountant applies.*rdp: no curve; tight: no PLD"
    ):
        choose_accountant(results, "best")


@pytest.mark.parametrize(
    ("variant", "extra"),
    [
        ("first-order", {"dimension_y": 32}),
        ("second-order", {"dimension_y": 32, "second_order_smoothness": 0.0}),
        ("bias-reduced", {"dimension_y": 32, "second_order_smoothness": 0.5}),
        ("sco", {"samples_per_step": 2, "refresh_period": 3}),
    ],
)
@pytest.mark.parametrize("target", [0.3, 2.0])
def test_calibration_returns_the_largest_stepsize_one_sided(variant, extra, target):
    params = {"variant": variant, "dataset_size": 8000, "dimension_x": 16, "lipschitz": 1.5, "smoothness": 1.0}
    params |= {"batch_size": 20} | extra
    delta = 1e-6
    report = FAMILY.calibrate(params | {"stepsize": 123.0}, target, delta)
    assert any("stepsize given in params was ignored" in w for w in report.warnings)
    assert report.calibrated_parameter == "stepsize" and report.noise_multiplier is None and report.noise is None
    assert report.epsilon <= target
    best = max(a.calibrated_value for a in report.accountants if a.applicable)
    assert report.calibrated_value == best
    for a in report.accountants:
        if not a.applicable:
            continue
        assert a.epsilon <= target and a.noise_multiplier is None
        again = FAMILY.privacy(params | {"stepsize": a.calibrated_value}, delta, accountant=a.name)
        assert again.epsilon <= target
        # the largest: a little more breaks the target (1e-5 for closed forms; the PLD calibration's tolerance 1e-4)
        more = 1e-5 if a.name != "tight" else 2e-4
        above = FAMILY.privacy(params | {"stepsize": a.calibrated_value * (1 + more)}, delta, accountant=a.name)
        assert above.epsilon > target
    assert FAMILY.privacy(params | {"stepsize": report.calibrated_value}, delta).epsilon <= target


def test_calibration_recommends_the_paper_and_tuned_parameters():
    """An independent prototype of the paper's formulas: at n = 32000, d = 64, ε = 1, δ = n⁻², the paper's closed form gives B = 149, T = 214 (bilinear)
    and B = 1395, T = 22, K = 88 (first-order)."""
    bilinear = paper_parameters(32000, 64, 1.0, DELTA, 1.0, 1.0, 0.0, "quadratic")
    assert (bilinear["batch_size"], bilinear["steps"], bilinear["samples_per_step"]) == (149, 214, 1)
    first = paper_parameters(32000, 64, 1.0, DELTA, 1.0, 1.0, 0.0, "first")
    assert (first["batch_size"], first["steps"], first["samples_per_step"]) == (1395, 22, 88)
    ell, lg = math.log(64), math.log(1 / DELTA)
    assert first["stepsize"] == pytest.approx(min(math.sqrt(ell / 22), 1395 / (16 * math.sqrt(22 * 88 * lg))))
    report = FAMILY.calibrate(GAME | {"dimension_x": 32, "dimension_y": 32}, 1.0, DELTA)
    names = [r.name for r in report.recommended]
    assert names.count("batch_size") == 2 and names.count("stepsize") >= 2
    assert not any(r.applied for r in report.recommended)
    tuned = tune_algorithm1(FAMILY.parse(GAME), 1.0, DELTA)
    certified = FAMILY.privacy(
        GAME
        | {
            "batch_size": tuned.batch_size,
            "steps": tuned.steps,
            "samples_per_step": tuned.samples_per_step,
            "stepsize": tuned.stepsize,
        },
        DELTA,
        accountant="rdp",
    )
    assert certified.epsilon <= 1.0


# -- utility ----------------------------------------------------------------------------------------------------------


def spec_explicit_bound(T, K, eta, d1, d2, L0=1.0, L1=1.0, L2=0.0, regime="quadratic"):
    """The explicit bound of an independent prototype of the paper's formulas, retyped."""
    ell = math.log(d1) + math.log(d2)
    bias = {"quadratic": 0.0, "second": 32 * L2 / K, "first": 32 * L1 / math.sqrt(K)}[regime]
    return 2 * ell / (eta * T) + 5 * eta * L0**2 + bias + 4 * L1 * math.sqrt(ell / (T * K)) + 4 * L1 / (T * K)


@pytest.mark.parametrize(
    ("T", "eta", "value"),
    [(45, 0.104, 5.13), (166, 0.058, 2.57), (181, 0.048, 2.64), (666, 0.027, 1.33), (727, 0.022, 1.36)],
)
def test_explicit_bound_reproduces_the_spec_table(T, eta, value):
    got = explicit_gap_bound(T, 1, eta, math.log(32) * 2, 1.0, 1.0, 0.0, "quadratic")
    assert got == pytest.approx(spec_explicit_bound(T, 1, eta, 32, 32), rel=1e-12)
    assert got == pytest.approx(value, abs=0.03)  # the prototype rounds η to 2-3 digits


def test_explicit_bound_bias_terms_and_rates():
    for regime, L2 in (("first", 0.0), ("second", 3.0)):
        got = explicit_gap_bound(100, 16, 0.01, 5.0, 2.0, 1.5, L2, regime)
        want = spec_explicit_bound(100, 16, 0.01, math.exp(2.5), math.exp(2.5), 2.0, 1.5, L2, regime)
        assert got == pytest.approx(want, rel=1e-12)
    n, d, eps, delta = 8000, 64, 0.5, 1e-8
    ell, lg = math.log(d), math.log(1 / delta)
    assert rate_algorithm1(n, d, eps, delta, 1, 2, 0, "quadratic") == pytest.approx(
        3 * (math.sqrt(ell / n) + ell**0.75 * lg**0.25 / math.sqrt(n * eps))
    )
    assert rate_algorithm1(n, d, eps, delta, 1, 2, 0, "first") == pytest.approx(
        3 * (math.sqrt(ell / n) + (ell**1.5 * math.sqrt(lg) / (n * eps)) ** (1 / 3))
    )
    assert rate_algorithm1(n, d, eps, delta, 1, 2, 4, "second") == pytest.approx(
        7 * (math.sqrt(ell / n) + (ell**1.5 * math.sqrt(lg) / (n * eps)) ** 0.4)
    )
    assert rate_algorithm3(n, d, eps, delta, 1, 2, 4) == pytest.approx(
        7 * math.log2(n) * (math.sqrt(ell / n) + ell * lg**0.25 / math.sqrt(n * eps))
    )
    assert rate_algorithm5(n, d, eps, 1, 2, None) == pytest.approx(
        3 * (math.sqrt(ell / n) + ell**0.7 / (n * eps) ** 0.4)
    )
    assert rate_algorithm5(n, d, eps, 1, 2, 4) == pytest.approx(7 * (math.sqrt(ell / n) + ell / math.sqrt(n * eps)))
    assert lower_bound_ssp(n, d, eps) == pytest.approx(math.sqrt(ell / n) + ell**0.75 / math.sqrt(n * eps))


def test_utility_reports():
    given = FAMILY.utility(GAME | {"stepsize": 0.0125})
    assert [b.kind for b in given.bounds] == ["explicit bound"] and not given.recommended
    assert given.bounds[0].value == pytest.approx(spec_explicit_bound(2666, 1, 0.0125, 32, 32))
    default = FAMILY.utility(GAME)
    assert default.recommended[0].name == "stepsize" and default.recommended[0].applied
    assert default.bounds[0].value == pytest.approx(
        spec_explicit_bound(2666, 1, math.sqrt(2 * 2 * math.log(32) / (5 * 2666)), 32, 32)
    )
    none = FAMILY.utility(
        {"variant": "sco", "dataset_size": 100, "dimension_x": 4, "lipschitz": 1, "smoothness": 0, "batch_size": 5}
    )
    assert none.bounds == () and "calibrate" in none.reason
    calibrated = FAMILY.calibrate(GAME, 0.5, DELTA).utility
    kinds = [b.kind for b in calibrated.bounds]
    assert "explicit bound" in kinds and kinds.count("rate with unit constants") == 2
    assert all(b.applicable for b in calibrated.bounds)
    outside = FAMILY.calibrate(GAME, 3.0, DELTA).utility
    assert not all(b.applicable for b in outside.bounds if b.kind.startswith("rate"))  # ε > 1: outside the theorems


# -- input rules ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"samples_per_step": 0}, "samples_per_step"),
        ({"batch_size": 40000}, "batch_size"),
        ({"steps": 3000}, "steps"),
        ({"dimension_y": None}, "dimension_y"),
        ({"second_order_smoothness": None}, "second_order_smoothness"),
        ({"stopping_parameter": 10}, "stopping_parameter"),
        ({"lipschitz": 0.0}, "lipschitz"),
        ({"stepsize": -1.0}, "stepsize"),
        ({"variant": "sco"}, "dimension_y"),
        ({"variant": "bias-reduced", "steps": 10}, "steps"),
        ({"variant": "bias-reduced", "max_level": 20}, "max_level"),
    ],
)
def test_inconsistent_input_names_the_rule(change, field):
    params = {k: v for k, v in (GAME | {"stepsize": 0.01} | change).items() if v is not None}
    with pytest.raises(ParameterError) as info:
        FAMILY.privacy(params, DELTA)
    assert field in [issue.loc[0] for issue in info.value.issues]


def test_privacy_needs_the_stepsize():
    with pytest.raises(ParameterError, match="stepsize: is required"):
        FAMILY.privacy(GAME, DELTA)


# -- the simulator ----------------------------------------------------------------------------------------------------

SMALL = GAME | {"dataset_size": 2000, "dimension_x": 8, "dimension_y": 8}


def simulate(params, delta, checks=("utility", "privacy-audit"), trials=64, seed=0, problem=None):
    simulator = FAMILY.simulator
    plan = plan_job(FAMILY, FAMILY.parse(params), delta, checks, trials, seed, problem)
    blocks = [run_block(simulator, plan, i) for i in range(len(block_sizes(trials)))]
    return plan, blocks, summarize(plan, blocks)


def test_game_value_by_linear_programming():
    a = np.array([[3.0, -1.0], [-2.0, 1.0]])  # no saddle in pure strategies: v = (ad − bc)/(a + d − b − c)
    assert game_value(a) == pytest.approx((3 * 1 - (-1) * (-2)) / (3 + 1 + 1 + 2))
    rng = np.random.default_rng(0)
    m = rng.uniform(-1, 1, (8, 6))
    v = game_value(m)
    xs = rng.dirichlet(np.ones(8), 500)
    ys = rng.dirichlet(np.ones(6), 500)
    assert np.all(np.max(xs @ m, axis=1) >= v - 1e-9) and np.all(np.min(ys @ m.T, axis=1) <= v + 1e-9)
    assert np.all(gap(m, xs, ys) >= 0)


def test_simulator_is_deterministic_given_the_seed():
    params = SMALL | {"stepsize": 0.02, "steps": 40}
    _, first, _ = simulate(params, 1e-5, seed=4)
    _, again, _ = simulate(params, 1e-5, seed=4)
    _, other, _ = simulate(params, 1e-5, seed=5)
    np.testing.assert_array_equal(first[0].utility, again[0].utility)
    np.testing.assert_array_equal(first[0].score_in, again[0].score_in)
    assert not np.array_equal(first[0].utility, other[0].utility)


def test_measured_gap_below_the_explicit_bound_at_the_recommended_parameters():
    """Acceptance: Algorithm 1 at dpcal's recommended (B, T, K, η) for ε = 1 on a bilinear game, over several seeds:
    the mean gap is below the explicit bound [D] (measured 6–10× below on bilinear games)."""
    target, delta = 1.0, 1 / 2000**2
    tuned = tune_algorithm1(FAMILY.parse(SMALL), target, delta)
    params = SMALL | {
        "batch_size": tuned.batch_size,
        "steps": tuned.steps,
        "samples_per_step": tuned.samples_per_step,
        "stepsize": tuned.stepsize,
    }
    assert FAMILY.privacy(params, delta).epsilon <= target
    ratios = []
    for seed in range(3):
        plan, blocks, result = simulate(params, delta, checks=("utility",), seed=seed)
        assert plan.predicted_bound == pytest.approx(tuned.bound)
        matrix_value = plan.problem["value"]
        assert result.utility.within_bound
        ratios.append(result.utility.measured["mean"] / plan.predicted_bound)
        assert np.all(blocks[0].utility >= 0) and -1 < matrix_value < 1
    assert max(ratios) < 0.5  # measured/predicted ≈ 0.1–0.2 here


@pytest.mark.parametrize(
    ("variant", "extra"), [("second-order", {}), ("bias-reduced", {"second_order_smoothness": 1.0})]
)
def test_audit_lower_bound_stays_below_the_accounted_epsilon(variant, extra):
    params = {
        "variant": variant,
        "dataset_size": 200,
        "dimension_x": 4,
        "dimension_y": 4,
        "lipschitz": 1.0,
        "smoothness": 1.0,
        "second_order_smoothness": 0.0,
        "batch_size": 10,
    } | extra
    delta = 1e-5
    eta = FAMILY.calibrate(params, 8.0, delta).calibrated_value
    _, _, result = simulate(params | {"stepsize": eta}, delta, checks=("privacy-audit",), trials=4096, seed=1)
    audit = result.privacy_audit
    assert 8.0 * (1 - 5e-4) <= audit.epsilon_accounted <= 8.0  # the PLD calibration: σ within 1e-4
    assert audit.consistent and audit.epsilon_lower_bound <= audit.epsilon_accounted
    if variant == "second-order":
        assert audit.epsilon_lower_bound > 1.0  # the transcript's likelihood ratio has power


def test_sco_simulation_runs_and_audits():
    params = {"variant": "sco", "dataset_size": 400, "dimension_x": 6, "lipschitz": 1.0, "smoothness": 0.0}
    params |= {"batch_size": 10, "stepsize": 0.05, "samples_per_step": 2}
    plan, blocks, result = simulate(params, 1e-5, trials=128)
    assert plan.predicted_bound is None and "measured only" in plan.prediction_note
    assert np.all(blocks[0].utility >= -1e-12) and result.privacy_audit.consistent
    assert plan.problem["kind"] == "linear"


def test_plan_rejects_what_it_cannot_simulate():
    big = FAMILY.parse(GAME | {"dimension_x": 100, "stepsize": 0.01})
    with pytest.raises(ParameterError) as info:
        plan_job(FAMILY, big, 1e-5, ("utility",), 10, 0, None)
    assert info.value.issues[0].loc == ("dimension_x",)
    small = FAMILY.parse(SMALL | {"stepsize": 0.01})
    with pytest.raises(ParameterError, match="declared constants"):
        plan_job(FAMILY, small, 1e-5, ("utility",), 10, 0, {"scale": 2.0})
    with pytest.raises(ParameterError, match="does not fit"):
        plan_job(FAMILY, small, 1e-5, ("utility",), 10, 0, {"kind": "linear"})
    plan = plan_job(FAMILY, small, 1e-5, ("utility",), 1000, 0, None)
    twice = plan_job(FAMILY, small, 1e-5, ("utility",), 2000, 0, None)
    assert twice.work > 1.9 * plan.work > 0


def test_first_and_second_order_jobs_say_they_simulate_the_same_algorithm():
    from accountants.planning import plan_job

    family = registry.get("private-mirror-descent")
    example = dict(family.job_example or {})
    notes = {}
    for variant in ("first-order", "second-order"):
        params = example["params"] | {"variant": variant}
        plan = plan_job(family, params, example["delta"], ("utility",), 64, 3, None, example["target_epsilon"])
        notes[variant] = plan.prediction_note
    assert notes["first-order"] == notes["second-order"]
    assert "same algorithm" in notes["first-order"] and "only the predicted bound differs" in notes["first-order"]


# -- one engine: /v1/privacy and an algorithm node of /v1/compose agree ------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_privacy_and_an_algorithm_node_give_the_same_numbers(seed):
    """The family's rdp and tight are the spine's accountants on its plan, so the composition of its plan alone
    (replace-one, as the plan says) gives the same ε for rdp, tight and best."""
    from accountants.pipeline import Composition, privacy

    rng = np.random.default_rng(400 + seed)
    variant = ["first-order", "second-order", "bias-reduced", "sco"][seed % 4]
    n = int(10 ** rng.uniform(2.5, 4.5))
    b = int(rng.integers(1, max(2, n // 40)))
    params = {"variant": variant, "dataset_size": n, "batch_size": b, "dimension_x": 8, "lipschitz": 1.0}
    params |= {"smoothness": 1.0} | ({"dimension_y": 6} if variant != "sco" else {"smoothness": 0.0})
    if variant in ("second-order", "bias-reduced"):
        params["second_order_smoothness"] = 0.5
    params["stepsize"] = float(10 ** rng.uniform(-2, 0.5)) * b / 40
    delta = float(10 ** rng.uniform(-9, -4))
    node = {"type": "algorithm", "algorithm": "private-mirror-descent", "params": params}
    for name in ("rdp", "tight", "best"):
        family = FAMILY.privacy(params, delta, accountant=name)
        composed = privacy(Composition(node, delta, name, neighbouring="replace-one"))
        assert composed.epsilon == family.epsilon, (name, params, delta)
        assert composed.accountant == family.accountant
