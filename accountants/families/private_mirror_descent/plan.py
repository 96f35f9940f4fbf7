"""The mechanism plan of private mirror descent: how many vertex samples a record is exposed to, and the ε₀ of each
(González, Guzmán & Paquette 2024, Prop. 3.3 [R]; counts per variant as in the package docstring)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .params import PrivateMirrorDescentParams

# -- the mechanism plan -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    """What the accountants need: ε₀ per unit stepsize, the sample counts, and the conventions behind them."""

    variant: str
    steps: int
    """T (Algorithms 1, 5) or the stopping parameter M (Algorithm 3)."""
    step_rule: str
    samples_per_step: int
    epsilon0_per_stepsize: float
    """ε₀ = epsilon0_per_stepsize · η (pure DP of one vertex sample, rigorous accountants)."""
    range_ratio: float
    """Bounded range of one sample over its pure-DP ε₀ (1 for a softmax, 2 for Algorithm 5's mixture)."""
    count: int
    """Data-dependent vertex samples composed by the rigorous accountants."""
    paper_epsilon0_per_stepsize: float
    paper_count: int
    epsilon0_rule: str
    paper_rule: str
    count_rule: str
    max_level: int | None = None

    def epsilon0(self, stepsize: float) -> float:
        return self.epsilon0_per_stepsize * stepsize


def schedule(p: PrivateMirrorDescentParams) -> Schedule:
    """The sample counts and per-sample ε₀ of the variant (Prop. 3.3 [R]; Algorithms 1, 3, 5)."""
    if p.variant in ("first-order", "second-order"):
        return _algorithm1_schedule(p)
    if p.variant == "bias-reduced":
        return _algorithm3_schedule(p)
    return _algorithm5_schedule(p)


def _algorithm1_schedule(p: PrivateMirrorDescentParams) -> Schedule:
    """Algorithm 1 (first and second order): 2(T − 1)K vertex samples at ε₀ = 4ηL₀/B."""
    n, b, L0 = p.dataset_size, p.batch_size, p.lipschitz
    steps = p.steps if p.steps is not None else n // b
    rule = f"T = {steps} as given" if p.steps is not None else f"T = ⌊n/B⌋ = ⌊{n}/{b}⌋ = {steps} (one pass)"
    k = p.samples_per_step or 1
    return Schedule(
        variant=p.variant,
        steps=steps,
        step_rule=rule,
        samples_per_step=k,
        epsilon0_per_stepsize=4.0 * L0 / b,
        range_ratio=1.0,
        count=2 * (steps - 1) * k,
        paper_epsilon0_per_stepsize=4.0 * L0 / b,
        paper_count=2 * steps * k,
        epsilon0_rule="ε₀ = 4ηL₀/B per vertex sample (Prop. 3.3 [R]: score sensitivity 2ηL₀/B, exponential "
        "mechanism; also the bounded range)",
        paper_rule="Prop. 3.3 via Cor. 3.6 [R]: (ε, δ)-DP if η ≤ Bε/(16L₀√(TK log(1/δ))), i.e. "
        "ε = 2√(2k log(1/δ))·ε₀ with k = 2TK, provided ε ≤ 8 log(1/δ)",
        count_rule=f"k = 2(T − 1)K = {2 * (steps - 1) * k} data-dependent samples (the step-1 samples are drawn "
        f"from the uniform start and the last batch's gradient is never used; the paper counts 2TK = "
        f"{2 * steps * k})",
    )


def _algorithm3_schedule(p: PrivateMirrorDescentParams) -> Schedule:
    """Algorithm 3 (bias-reduced): at most 3M vertex samples at ε₀ = 10ηL₀/B [D]."""
    n, b, L0 = p.dataset_size, p.batch_size, p.lipschitz
    m = p.stopping_parameter if p.stopping_parameter is not None else n // b
    level = p.max_level if p.max_level is not None else max(1, int(math.log2(m)) - 1)
    rule = (
        f"M = {m} as given" if p.stopping_parameter is not None else f"M = ⌊n/B⌋ = ⌊{n}/{b}⌋ = {m}"
    ) + f"; N_max = {level}; the number of steps τ is random (Σ_t 2^{{N_t}} ≤ M)"
    return Schedule(
        variant=p.variant,
        steps=m,
        step_rule=rule,
        samples_per_step=0,
        epsilon0_per_stepsize=10.0 * L0 / b,
        range_ratio=1.0,
        count=3 * m,
        paper_epsilon0_per_stepsize=10.0 * L0 / b,
        paper_count=3 * m,
        epsilon0_rule="ε₀ = 10ηL₀/B per vertex sample [D]: the multilevel estimate moves by ≤ 5L₀/B in ℓ∞ for "
        "any level N (batch 2^N·B, weight 1/p_N ≤ 2^N)",
        paper_rule="Prop. 3.17 via Cor. 3.6 [D] (the paper's constant is lost): η ≤ Bε/(20√6·L₀√(M log(1/δ))), "
        "i.e. ε = 2√(2k log(1/δ))·ε₀ with k = 3M, provided ε ≤ 8 log(1/δ)",
        count_rule=f"k ≤ 3M = {3 * m} samples [D]: 2(2^{{N_t}} + 1) ≤ 3·2^{{N_t}} per step and Σ_t 2^{{N_t}} ≤ M "
        "(stopping early composes fewer mechanisms, so the fixed count is valid)",
        max_level=level,
    )


def _algorithm5_schedule(p: PrivateMirrorDescentParams) -> Schedule:
    """Algorithm 5 (DP-SCO): refreshed samples of a 2Δ'-bounded-range mixture, ε₀ = 4ηTL₀/B [D]."""
    n, b, L0 = p.dataset_size, p.batch_size, p.lipschitz
    steps = p.steps if p.steps is not None else n // b
    k = p.samples_per_step or 1
    t0 = p.warmup_steps if p.warmup_steps is not None else 1
    period = p.refresh_period or 1
    final = p.final_samples or k
    count = k * t0 + k * ((steps - t0) // period) + final
    paper_count = k * t0 + k * (-(-(steps - t0) // period)) + final
    rule = f"T = {steps} as given" if p.steps is not None else f"T = ⌊n/B⌋ = ⌊{n}/{b}⌋ = {steps} (one pass)"
    return Schedule(
        variant=p.variant,
        steps=steps,
        step_rule=rule + f"; α_t = t; refresh at t ≤ t₀ = {t0} and every p = {period} steps after",
        samples_per_step=k,
        epsilon0_per_stepsize=4.0 * steps * L0 / b,
        range_ratio=2.0,
        count=count,
        paper_epsilon0_per_stepsize=8.0 * steps * L0 / b,
        paper_count=paper_count,
        epsilon0_rule="ε₀ = Δ' = 4ηTL₀/B per vertex sample [D]: log x_t(i) is a log-sum-exp of terms that each move by "
        "≤ 4ηα_T L₀/B, and x_t is normalised (pure DP without the exponential mechanism's factor 2); the mixture is "
        "2Δ'-bounded-range",
        paper_rule="Prop. 4.3 via Cor. 3.6 [R]: paper-style ε₀ = 8ηTL₀/B (Theorem 3.4's factor 2), "
        "η ≤ Bε/(16√2·TL₀√(N_s log(1/δ))), i.e. ε = 2√(2N_s log(1/δ))·ε₀, provided ε ≤ 8 log(1/δ)",
        count_rule=f"k = K·t₀ + K·⌊(T − t₀)/p⌋ + K' = {count} samples (the paper's N_s uses ⌈(T − t₀)/p⌉: "
        f"{paper_count})",
    )
