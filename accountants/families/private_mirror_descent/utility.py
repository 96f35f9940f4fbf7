"""Utility of private mirror descent: the explicit gap bound [D], the theorems' rates [A/R], tuned parameters and
recommendations (González, Guzmán & Paquette 2024, Theorems 3.1, 3.14, 4.2)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ...reports import Assumption, Recommendation, UtilityBound, UtilityReport
from .params import ALGORITHM_ID, MAX_SAMPLES, SADDLE_VARIANTS, SOURCE, PrivateMirrorDescentParams
from .plan import Schedule
from .privacy import shrink, zcdp_budget

# -- utility ----------------------------------------------------------------------------------------------------------


def ell12(p: PrivateMirrorDescentParams) -> float:
    """ℓ₁₂ = ln d₁ + ln d₂ of the explicit bounds (ln d₁ for sco)."""
    return math.log(p.dimension_x) + (math.log(p.dimension_y) if p.dimension_y is not None else 0.0)


def regime(p: PrivateMirrorDescentParams) -> str:
    """first (first-order smooth), second (L₂ > 0) or quadratic (L₂ = 0) for Algorithm 1's analysis."""
    if p.variant == "first-order":
        return "first"
    return "quadratic" if not p.second_order_smoothness else "second"


def explicit_gap_bound(
    steps: int, samples: int, stepsize: float, ell: float, L0: float, L1: float, L2: float, regime_: str
) -> float:
    """E Gap(x̂, ŷ) ≤ 2ℓ₁₂/(ηT) + 5ηL₀² + bias + 4L₁√(ℓ₁₂/(TK)) + 4L₁/(TK) for Algorithm 1 [D].

    bias = 32L₁/√K (first-order, Cor. 2.6 jointly), 32L₂/K (second-order, Cor. 2.4), 0 (quadratic). Constants derived
    along the paper's proof (Lemma 3.8, eq. (8), Lemma 3.11), not the paper's; measured 6–10× loose on bilinear
    games."""
    bias = {"first": 32.0 * L1 / math.sqrt(samples), "second": 32.0 * L2 / samples, "quadratic": 0.0}[regime_]
    tk = float(steps) * samples
    return (
        2.0 * ell / (stepsize * steps)
        + 5.0 * stepsize * L0 * L0
        + bias
        + 4.0 * L1 * math.sqrt(ell / tk)
        + 4.0 * L1 / tk
    )


def nonprivate_stepsize(steps: int, ell: float, L0: float) -> float:
    """η_np = √(2ℓ₁₂/(5T))/L₀: the minimiser of the explicit bound without the privacy constraint [D]."""
    return math.sqrt(2.0 * ell / (5.0 * steps)) / L0


def rate_algorithm1(n: int, d: float, eps: float, delta: float, L0: float, L1: float, L2: float, regime_: str) -> float:
    """Theorem 3.1, eqs. (5)–(7), unit constants [A/R]: C·[√(ℓ/n) + private term], ℓ = log d."""
    ell, lg = math.log(d), (-math.log(delta))
    if regime_ == "quadratic":
        private, c = ell**0.75 * lg**0.25 / math.sqrt(n * eps), L0 + L1
    elif regime_ == "first":
        private, c = (ell**1.5 * math.sqrt(lg) / (n * eps)) ** (1.0 / 3.0), L0 + L1
    else:
        private, c = (ell**1.5 * math.sqrt(lg) / (n * eps)) ** 0.4, L0 + L1 + L2
    return float(c * (math.sqrt(ell / n) + private))


def rate_algorithm3(n: int, d: float, eps: float, delta: float, L0: float, L1: float, L2: float) -> float:
    """Theorem 3.14, unit constants, polylog(n) = log₂ n [A/R]: (L₀+L₁+L₂)·log₂n·[√(ℓ/n) + ℓ·log^{1/4}(1/δ)/√(nε)]."""
    ell = math.log(d)
    return float(
        (L0 + L1 + L2)
        * max(math.log2(n), 1.0)
        * (math.sqrt(ell / n) + ell * (-math.log(delta)) ** 0.25 / math.sqrt(n * eps))
    )


def rate_algorithm5(n: int, d: float, eps: float, L0: float, L1: float, L2: float | None) -> float:
    """Theorem 4.2, unit constants [A]: first-order √(ℓ/n) + ℓ^{0.7}/(nε)^{0.4}; second-order √(ℓ/n) + ℓ/√(nε)."""
    ell = math.log(d)
    if L2 is None:
        return float((L0 + L1) * (math.sqrt(ell / n) + ell**0.7 / (n * eps) ** 0.4))
    return (L0 + L1 + L2) * (math.sqrt(ell / n) + ell / math.sqrt(n * eps))


def lower_bound_ssp(n: int, d: float, eps: float) -> float:
    """The lower bound √(ℓ/n) + ℓ^{3/4}/√(nε) for DP-SSP on simplices (bilinear instances) [A], unit constants."""
    ell = math.log(d)
    return float(math.sqrt(ell / n) + ell**0.75 / math.sqrt(n * eps))


def paper_parameters(
    n: int, d: float, eps: float, delta: float, L0: float, L1: float, L2: float, regime_: str
) -> dict[str, float]:
    """Algorithm 1's parameters from balancing Theorem 3.1's bound [R]."""
    ell, lg = math.log(d), (-math.log(delta))
    log_k = -math.inf  # in log space: the constants may be extreme
    log_n_eps = math.log(n) + math.log(eps)
    if regime_ == "first" and L1 > 0:
        log_k = (4.0 / 3.0) * (math.log(L1) - math.log(L0)) + (2.0 / 3.0) * log_n_eps
        log_k -= math.log(ell) + math.log(lg) / 3.0
    elif regime_ == "second" and L2 > 0:
        log_k = 0.8 * (math.log(L2) - math.log(L0)) + 0.4 * log_n_eps - 0.6 * math.log(ell) - 0.2 * math.log(lg)
    k = int(min(MAX_SAMPLES, max(1, round(math.exp(min(log_k, 30.0))))))
    raw = 16.0 * math.sqrt(ell * k * lg) / eps
    b = n if not raw < n else max(1, math.ceil(raw))
    t = n // b
    eta = min(math.sqrt(ell / t) / L0, b * eps / (16.0 * L0 * math.sqrt(t * k * lg)))
    return {"batch_size": b, "steps": t, "samples_per_step": k, "stepsize": eta}


@dataclass(frozen=True)
class Tuned:
    """Algorithm 1's hyperparameters minimising the explicit bound under a certified privacy constraint."""

    batch_size: int
    steps: int
    samples_per_step: int
    stepsize: float
    epsilon0: float
    bound: float


def tune_algorithm1(p: PrivateMirrorDescentParams, eps: float, delta: float) -> Tuned:
    """Minimise the explicit bound [D] over B ∈ {round(1.25^i)} (B ≤ max(1, n/4)) and K ∈ {1, 2, 4, …, 1024}, with
    η = min(η_np, Bε₀/(4L₀)) and ε₀ the largest the bounded-range zCDP bound allows for k = 2(T − 1)K samples
    (certified: the rdp accountant at that η gives at most ε)."""
    n, L0, L1 = p.dataset_size, p.lipschitz, p.smoothness
    L2 = p.second_order_smoothness or 0.0
    ell, reg = ell12(p), regime(p)
    rho = zcdp_budget(eps, delta)
    limit = max(1, n // 4)
    batches = sorted({b for b in (round(1.25**i) for i in range(200)) if 1 <= b <= limit})
    samples = (1,) if reg == "quadratic" else tuple(2**j for j in range(11))
    best: Tuned | None = None
    for k in samples:
        for b in batches:
            t = n // b
            count = 2 * (t - 1) * k
            e0 = math.inf if count == 0 else math.sqrt(8.0 * rho / count)
            eta = min(nonprivate_stepsize(t, ell, L0), b * e0 / (4.0 * L0))
            if count and count * (4.0 * eta * L0 / b) ** 2 / 8.0 > rho:  # rounding: step below the root
                eta = shrink(eta, functools.partial(_within_budget, count=count, batch=b, lipschitz=L0, rho=rho))
            value = explicit_gap_bound(t, k, eta, ell, L0, L1, L2, reg)
            if best is None or value < best.bound:
                best = Tuned(b, t, k, eta, 4.0 * eta * L0 / b, value)
    assert best is not None
    return best


def tune_algorithm3(p: PrivateMirrorDescentParams) -> tuple[int, int, float]:
    """(M, N_max, η-cap) of Algorithm 3 [D] (Theorem 3.14's parameters): M = ⌊n/B⌋, N_max = max(1, ⌊log₂ M⌋ − 1), and
    the non-private stepsize √(ℓ/T₀)/σ with T₀ = M/(4·E2^N), E2^N = N_max/(1 − 2^{−N_max}), and the second-moment bound
    σ² = 2L₀² + 2560L₂² + 768·N_max·L₁²(1 + ln 2d) [D]."""
    m = p.dataset_size // p.batch_size
    level = max(1, int(math.log2(max(m, 2))) - 1)
    mean_batch = level / (1.0 - 2.0**-level)
    t0 = max(m / (4.0 * mean_batch), 1.0)
    d = max(p.dimension_x, p.dimension_y or 2)
    L0, L1, L2 = p.lipschitz, p.smoothness, p.second_order_smoothness or 0.0
    sigma = math.sqrt(2.0 * L0**2 + 2560.0 * L2**2 + 768.0 * level * L1**2 * (1.0 + math.log(2.0 * d)))
    return m, level, math.sqrt(math.log(d) / t0) / sigma


# -- utility reports and recommendations ------------------------------------------------------------------------------

EXPLICIT_SOURCE = (
    f"{SOURCE}, Theorem 3.1 via Lemma 3.8 (eq. (8)), Lemma 3.11 and Cor. 2.4/2.6: constants derived [D], "
    "measured 6–10× loose on bilinear games"
)


def _declared(p: PrivateMirrorDescentParams) -> tuple[Assumption, ...]:
    convex = "convex" if p.variant == "sco" else "convex–concave"
    out = [
        Assumption(f"f(·; ξ) is {convex} for every record", None, "a property of the loss; dpcal cannot check it"),
        Assumption(
            f"L₀ = {p.lipschitz:g}-Lipschitz and L₁ = {p.smoothness:g}-smooth w.r.t. ℓ1 for every record",
            None,
            "declared",
        ),
    ]
    if p.second_order_smoothness is not None:
        out.append(Assumption(f"every ∂_i f is L₂ = {p.second_order_smoothness:g}-smooth w.r.t. ℓ1", None, "declared"))
    return tuple(out)


def utility_report(
    p: PrivateMirrorDescentParams,
    sched: Schedule,
    eta: float | None,
    target: float | None,
    delta: float | None,
    recommended: list[Recommendation],
) -> UtilityReport:
    """The explicit bound (Algorithm 1) at the stepsize, and, with a target (ε, δ), the rates with unit constants."""
    recs = list(recommended)
    declared = _declared(p)
    bounds: list[UtilityBound] = []
    if p.variant in ("first-order", "second-order"):
        bounds += _explicit_bounds(p, sched, eta, target, declared, recs)
    if target is not None and delta is not None:
        bounds += _rate_bounds(p, target, delta, declared)
    bounds = [b for b in bounds if math.isfinite(b.value)]  # extreme inputs: a vacuous (infinite) bound is omitted
    reason = None
    if not bounds and p.variant in ("first-order", "second-order"):
        reason = "the explicit bound is infinite (vacuous) at these parameters: the stepsize is too small"
    elif not bounds:
        reason = (
            f"variant {p.variant}: Theorem {'3.14' if p.variant == 'bias-reduced' else '4.2'} states a rate in "
            "(n, ε, δ) only (its constants are lost): /v1/calibrate reports it at the target ε; verification jobs "
            "measure the gap"
        )
    return UtilityReport(ALGORITHM_ID, tuple(bounds), reason, tuple(recs))


def _explicit_bounds(
    p: PrivateMirrorDescentParams,
    sched: Schedule,
    eta: float | None,
    target: float | None,
    declared: tuple[Assumption, ...],
    recs: list[Recommendation],
) -> list[UtilityBound]:
    """Algorithm 1's explicit gap bound [D] at the stepsize (at η_np, recommended, when none is given), and at η_np
    too when a calibrated stepsize is larger; appends the η_np recommendation to ``recs``."""
    L0, L1, L2 = p.lipschitz, p.smoothness, p.second_order_smoothness
    ell, reg, t, k = ell12(p), regime(p), sched.steps, sched.samples_per_step
    eta_np = nonprivate_stepsize(t, ell, L0)
    used = eta
    if used is None:
        used = eta_np
        recs.append(
            Recommendation(
                "stepsize",
                eta_np,
                "η_np = √(2ℓ₁₂/(5T))/L₀ [D], the explicit bound's minimiser without the privacy constraint "
                "(no stepsize given, so privacy is not accounted at it)",
                True,
            )
        )
    label = {"first": "first-order smooth", "second": "second-order smooth", "quadratic": "quadratic (L₂ = 0)"}
    bounds = [
        UtilityBound.explicit(
            f"expected strong duality gap E Gap(x̂, ŷ) at η = {used:.6g} (T = {t}, K = {k}; {label[reg]} bias term)",
            explicit_gap_bound(t, k, used, ell, L0, L1, L2 or 0.0, reg),
            EXPLICIT_SOURCE,
            declared,
        )
    ]
    if eta is not None and target is not None and eta > eta_np:
        bounds.append(
            UtilityBound.explicit(
                f"expected strong duality gap at the smaller stepsize η_np = {eta_np:.6g} (also private: ε "
                "decreases with η)",
                explicit_gap_bound(t, k, eta_np, ell, L0, L1, L2 or 0.0, reg),
                EXPLICIT_SOURCE,
                declared,
            )
        )
    return bounds


def _rate_bounds(
    p: PrivateMirrorDescentParams, target: float, delta: float, declared: tuple[Assumption, ...]
) -> list[UtilityBound]:
    """The theorems' rates with unit constants at the target (ε, δ) [A/R], and the lower bound for the saddle
    variants."""
    n, L0, L1, L2 = p.dataset_size, p.lipschitz, p.smoothness, p.second_order_smoothness
    regime_ok = Assumption("ε ≤ 1 (the regime of the paper's theorems)", target <= 1.0, f"ε = {target:g}")
    conditions = (*declared, regime_ok)
    if p.variant not in SADDLE_VARIANTS:
        return [
            UtilityBound.rate(
                "expected excess risk E F(x̂) − min F"
                + (" (second-order smooth)" if L2 is not None else " (first-order smooth)"),
                rate_algorithm5(n, float(p.dimension_x), target, L0, L1, L2),
                f"{SOURCE}, Theorem 4.2 [A] (its δ-dependence is not recoverable)",
                conditions,
                target <= 1.0,
            )
        ]
    d = float(p.dimension_x) + float(p.dimension_y or 0)
    if p.variant == "bias-reduced":
        rate = UtilityBound.rate(
            "strong duality gap with probability ≥ 1/2 [R] (polylog(n) taken as log₂ n)",
            rate_algorithm3(n, d, target, delta, L0, L1, L2 or 0.0),
            f"{SOURCE}, Theorem 3.14 [A/R]: (L₀+L₁+L₂)·polylog(n)·[√(log d/n) + log d/√(nε)]",
            conditions,
            target <= 1.0,
        )
    else:
        reg = regime(p)
        equation = {"first": "(5)", "second": "(6)", "quadratic": "(7)"}[reg]
        rate = UtilityBound.rate(
            "expected strong duality gap E Gap(x̂, ŷ)",
            rate_algorithm1(n, d, target, delta, L0, L1, L2 or 0.0, reg),
            f"{SOURCE}, Theorem 3.1, eq. {equation} [A/R], ℓ = log(d₁ + d₂)",
            conditions,
            target <= 1.0,
        )
    lower = UtilityBound.rate(
        "lower bound on E Gap of any (ε, δ)-DP algorithm (bilinear instances): no algorithm does better",
        lower_bound_ssp(n, d, target),
        f"{SOURCE}, abstract and Remark 3.2 [A]: √(log d/n) + log^{{3/4}} d/√(nε) (Bun–Ullman–Vadhan)",
        (regime_ok,),
        target <= 1.0,
    )
    return [rate, lower]


def recommendations_for(
    p: PrivateMirrorDescentParams, sched: Schedule, eta: float, target: float, delta: float
) -> list[Recommendation]:
    """The paper's parameters for the target [R], dpcal's tuned ones [D], and the stepsize cap."""
    if p.variant in ("first-order", "second-order"):
        return [
            *_paper_recommendations(p, target, delta),
            *_tuned_recommendations(p, target, delta),
            *_stepsize_cap(p, sched, eta),
        ]
    if p.variant == "bias-reduced":
        return _bias_reduced_recommendations(p, eta)
    rule = "T = ⌊n/B⌋ (one pass); the schedule constants t₀, p, K' of Algorithm 5 are not recovered [R]"
    return [Recommendation("steps", p.dataset_size // p.batch_size, rule, False)]


def _paper_recommendations(p: PrivateMirrorDescentParams, target: float, delta: float) -> list[Recommendation]:
    """Algorithm 1's parameters from balancing Theorem 3.1's bound [R]."""
    reg = regime(p)
    d = float(p.dimension_x) + float(p.dimension_y or 0)
    L2 = p.second_order_smoothness or 0.0
    paper = paper_parameters(p.dataset_size, d, target, delta, p.lipschitz, p.smoothness, L2, reg)
    k_rule = {
        "quadratic": "K = 1 (quadratic: no sparsification bias)",
        "first": "K = max(1, round((L₁/L₀)^{4/3}(nε)^{2/3}/(ℓ log^{1/3}(1/δ))))",
        "second": "K = max(1, round((L₂/L₀)^{4/5}(nε)^{2/5}/(ℓ^{3/5} log^{1/5}(1/δ))))",
    }[reg]
    source = "González, Guzmán & Paquette 2024, Theorem 3.1, parameters from balancing its bound [R], ℓ = log(d₁ + d₂)"
    return [
        Recommendation("samples_per_step", paper["samples_per_step"], f"{k_rule}; {source}", False),
        Recommendation("batch_size", paper["batch_size"], f"B = min(n, ⌈16√(ℓK log(1/δ))/ε⌉); {source}", False),
        Recommendation("steps", paper["steps"], f"T = ⌊n/B⌋; {source}", False),
        Recommendation(
            "stepsize",
            paper["stepsize"],
            f"η = min(√(ℓ/T)/L₀, Bε/(16L₀√(TK log(1/δ)))) (Prop. 3.3's privacy rule); {source}",
            False,
        ),
    ]


def _tuned_recommendations(p: PrivateMirrorDescentParams, target: float, delta: float) -> list[Recommendation]:
    """dpcal's parameters minimising the explicit bound [D]."""
    tuned = tune_algorithm1(p, target, delta)
    rule = (
        f"dpcal [D]: minimises the explicit bound (value {tuned.bound:.6g}) over B ∈ {{round(1.25^i)}} ≤ n/4 and "
        "K ∈ {1, 2, …, 1024} (K = 1 if quadratic), with η = min(√(2ℓ₁₂/(5T))/L₀, Bε₀/(4L₀)) and ε₀ the "
        "largest the bounded-range zCDP bound certifies for k = 2(T − 1)K samples"
    )
    return [
        Recommendation("batch_size", tuned.batch_size, rule, False),
        Recommendation("steps", tuned.steps, rule, False),
        Recommendation("samples_per_step", tuned.samples_per_step, rule, False),
        Recommendation("stepsize", tuned.stepsize, rule, False),
    ]


def _stepsize_cap(p: PrivateMirrorDescentParams, sched: Schedule, eta: float) -> list[Recommendation]:
    """η_np where the calibrated stepsize exceeds it (beyond it the explicit bound grows)."""
    eta_np = nonprivate_stepsize(sched.steps, ell12(p), p.lipschitz)
    if eta <= eta_np:
        return []
    text = (
        f"the calibrated η = {eta:.6g} exceeds η_np = √(2ℓ₁₂/(5T))/L₀ = {eta_np:.6g} [D], beyond which "
        "the explicit bound grows; any smaller η is also private"
    )
    return [Recommendation("stepsize", eta_np, text, False)]


def _bias_reduced_recommendations(p: PrivateMirrorDescentParams, eta: float) -> list[Recommendation]:
    """Algorithm 3's parameters from Theorem 3.14, reconstructed [D]."""
    m, level, cap = tune_algorithm3(p)
    source = "González, Guzmán & Paquette 2024, Theorem 3.14's parameters, reconstructed [D]"
    return [
        Recommendation("stopping_parameter", m, f"M = ⌊n/B⌋; {source}", False),
        Recommendation("max_level", level, f"N_max = max(1, ⌊log₂ M⌋ − 1) so that 2^{{N_max}} ≤ M; {source}", False),
        Recommendation(
            "stepsize",
            min(eta, cap),
            "η = min(η_priv, √(ℓ/T₀)/σ), T₀ = M/(4·E2^N), σ² = 2L₀² + 2560L₂² + 768·N_max·L₁²(1 + ln 2d); " + source,
            False,
        ),
    ]


def _within_budget(stepsize: float, count: int, batch: int, lipschitz: float, rho: float) -> bool:
    """Whether ``count`` samples of ε₀ = 4ηL₀/B stay within the zCDP budget ρ (ε₀²/8 each)."""
    return count * (4.0 * stepsize * lipschitz / batch) ** 2 / 8.0 <= rho
