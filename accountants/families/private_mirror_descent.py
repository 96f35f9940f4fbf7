"""``private-mirror-descent``: DP stochastic saddle points on simplices by mirror descent with vertex sampling.

Seed 001 (González, Guzmán & Paquette, "Mirror descent algorithms with nearly dimension-independent rates for
differentially-private stochastic saddle-point problems"); specification
``shared/spec/seed001-private-mirror-descent.md``. The seed text lost every formula: constants carry the spec's
provenance tags, **[R]** reconstructed from the surviving text (form constrained by the proofs, constants not) and
**[D]** derived by the spec's author along the paper's proofs (not the paper's constants).

No noise is added. The entropic mirror step keeps x_t ∝ exp(−η Σ_{s<t} g_{x,s}), so each vertex drawn from P(x_t) is
an exponential mechanism; only vertex samples (and post-processings of them) are released. The privacy knob is the
stepsize η. Variants:

* ``first-order`` / ``second-order``: Algorithm 1 [R] (first- or second-order-smooth analysis; quadratic when
  ``second_order_smoothness`` = 0). T ≤ ⌊n/B⌋ steps on disjoint batches, 2K vertex samples per step (K for x, K for
  y), each an ε₀-DP and ε₀-bounded-range exponential mechanism with ε₀ = 4ηL₀/B (Prop. 3.3 [R]): one replaced record
  moves a batch-mean gradient by ≤ 2L₀/B in ℓ∞, hence the score −η Σ g by ≤ 2ηL₀/B. The paper counts k = 2TK
  samples; the step-1 samples are data-independent and the last batch's gradient is never used, so the rigorous
  accountants count k = 2(T − 1)K.
* ``bias-reduced``: Algorithm 3 [R] with the multilevel oracle (Algorithm 2): ε₀ = 10ηL₀/B and k ≤ 3M samples [D].
* ``sco``: Algorithm 5 [R] (DP-SCO, anytime online-to-batch with α_t = t): the sampled distribution is a mixture of
  softmaxes whose log-probabilities move by ≤ Δ' = 4ηTL₀/B [D], so each sample is Δ'-DP and 2Δ'-bounded-range
  (paper-style ε₀ = 8ηTL₀/B [R]); k = K·t₀ + K·⌊(T − t₀)/p⌋ + K' samples.

Accountants (k adaptively composed mechanisms):

* ``paper``: Proposition 3.3 through Corollary 3.6 as printed [R]: ε = 2√(2k log(1/δ))·ε₀ with the paper's count,
  valid only when ε ≤ 8 log(1/δ).
* ``rdp``: per order the minimum of the bounded-range zCDP bound α·ε_BR²/8 (Cesar & Rogers 2021) and the exact RDP of
  ε₀-DP (randomized response), times k; improved conversion (Balle et al. 2020) on the order grid, or over real α
  for the bounded-range part alone where that is smaller (tiny ρ have optimal orders beyond any grid).
* ``tight``: the smaller of two optimal compositions, both valid adaptively. (a) For ε₀-bounded-range samples
  (Algorithms 1 and 3), the optimal *adaptive* composition of k ε₀-BR mechanisms, evaluated numerically and
  pessimistically (:mod:`accountants.mechanisms.bounded_range_composition`: exact Bellman recursion over the
  generalised randomised responses on blocks of 64 samples, blocks composed by FFT); it is below ``rdp`` (an
  upper bound for the same class) up to its discretisation, a few per cent of the gap (spec §5, k = 1000:
  0.374 vs rdp 0.400; the non-adaptive t = ½ strategy, KOV at ε₀/2, gives 0.369 from below). (b) The optimal
  composition of k ε₀-DP mechanisms (Kairouz, Oh & Viswanath 2015), which is optimal for the larger class of pure
  ε₀-DP mechanisms and answers where (a) does not apply: Algorithm 5's samples are ε₀-DP with bounded range 2ε₀,
  which adds nothing to pure DP, so there (b) is already optimal for the class.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from .. import validation as check
from ..calibration import calibrate_rdp
from ..conversions import (
    Conversion,
    epsilon_for_linear_rdp,
    epsilon_from_rdp,
    linear_rdp_for_epsilon,
    order_grid,
)
from ..errors import CalibrationError, FieldIssue, ParameterError
from ..events import BoundedRangeEvent, PureDpEvent, SelfComposedEvent
from ..mechanisms.bounded_range_composition import BoundedRangeComposition
from ..mechanisms.pure_composition import (
    MAX_COMPOSITIONS,
    advanced_composition_epsilon,
    bounded_range_rdp,
    drv_epsilon,
    kov_epsilon,
    kov_max_epsilon0,
    pure_dp_rdp,
)
from ..params import Count, ParamsModel, bounded_count, param
from ..plans import MechanismPlan
from ..registry import AlgorithmFamily, BoundInfo, Cost, Operation, register
from ..reports import (
    NOT_ASKED_REASON,
    AccountantResult,
    Assumption,
    BoundResult,
    CalibrationReport,
    Conventions,
    PaperCalibration,
    PrivacyReport,
    RdpCurve,
    Recommendation,
    Release,
    UtilityBound,
    UtilityReport,
    choose_accountant,
)
from ..verification import BlockResult, Plan, Simulator

MAX_COUNT = 10**12
MAX_SAMPLES = 10**6
SOURCE = "seed 001 (González, Guzmán & Paquette, private stochastic mirror descent with vertex sampling)"
Variant = Literal["first-order", "second-order", "bias-reduced", "sco"]
SADDLE_VARIANTS = ("first-order", "second-order", "bias-reduced")


class PrivateMirrorDescentParams(ParamsModel):
    """Hyperparameters of Algorithms 1, 3 and 5 of seed 001 (vertex sampling; the privacy knob is the stepsize)."""

    variant: Variant = param(
        "first-order (default) / second-order: Algorithm 1 [R] analysed under first- or second-order smoothness "
        "(second_order_smoothness = 0 is the quadratic/bilinear case); bias-reduced: Algorithm 3 [R] (multilevel "
        "gradient oracle, random number of steps; needs second_order_smoothness); sco: Algorithm 5 [R] (DP-SCO on "
        "the simplex: no y-player).",
        example="first-order",
        default="first-order",
    )
    dataset_size: Count = param(
        "Number of records n; Algorithm 1 uses them in one pass of disjoint batches.",
        symbol="n",
        unit="records",
        example=32000,
        ge=1,
        le=MAX_COUNT,
    )
    dimension_x: Count = param(
        "Vertices of the x-simplex Δ_{d₁} (for a polytope: its number of vertices, seed 001 footnote 1).",
        symbol="d₁",
        unit="vertices",
        example=32,
        ge=2,
        le=MAX_COUNT,
    )
    dimension_y: bounded_count(2, MAX_COUNT) | None = param(
        "Vertices of the y-simplex Δ_{d₂}. Required by the saddle-point variants; omit for sco.",
        symbol="d₂",
        unit="vertices",
        example=32,
        default=None,
    )
    lipschitz: float = param(
        "L₀: bound on ‖∇_x f(x, y; ξ)‖∞ and ‖∇_y f(x, y; ξ)‖∞ for every record ξ (Lipschitz constant w.r.t. ℓ1). "
        "The privacy guarantee rests on it: clip gradient coordinates to [−L₀, L₀] if it may fail.",
        symbol="L₀",
        unit="loss units per ℓ1 unit",
        example=1.0,
        ge=1e-12,
        le=1e12,
    )
    smoothness: float = param(
        "L₁: Lipschitz constant of the gradient, ‖∇f(z) − ∇f(z')‖∞ ≤ L₁‖z − z'‖₁ (utility bounds only).",
        symbol="L₁",
        unit="loss units per ℓ1 unit²",
        example=1.0,
        ge=0,
        le=1e12,
    )
    second_order_smoothness: float | None = param(
        "L₂: every partial derivative ∂_i f is L₂-smooth w.r.t. ℓ1 (0 for quadratic or bilinear objectives). Required "
        "by the second-order and bias-reduced variants (utility bounds only).",
        symbol="L₂",
        unit="loss units per ℓ1 unit³",
        example=0.0,
        ge=0,
        le=1e12,
        default=None,
    )
    batch_size: Count = param(
        "Batch size B: records per step (Algorithm 3: the base batch, a step uses 2^N·B). At most dataset_size.",
        symbol="B",
        unit="records",
        example=12,
        ge=1,
        le=MAX_COUNT,
    )
    steps: bounded_count(1, MAX_COUNT) | None = param(
        "Iterations T of Algorithms 1 and 5 (default ⌊n/B⌋, one pass); steps·batch_size ≤ dataset_size. Not used by "
        "bias-reduced (its number of steps is random; see stopping_parameter).",
        symbol="T",
        unit="steps",
        example=2666,
        default=None,
    )
    samples_per_step: bounded_count(1, MAX_SAMPLES) | None = param(
        "Vertex samples K per player and step of Algorithm 1 (x̃_t is the mean of K draws from P(x_t)), or per "
        "refresh of Algorithm 5. Default 1. Not used by bias-reduced (it draws 2^{N_t} per step).",
        symbol="K",
        unit="samples",
        example=1,
        default=None,
    )
    stepsize: float | None = param(
        "Mirror-descent stepsize η: the privacy knob (ε₀ = 4ηL₀/B per vertex sample for Algorithm 1). Required for "
        "privacy accounting; computed by calibration.",
        symbol="η",
        unit="1/loss units",
        example=0.0125,
        gt=0,
        le=1e12,
        default=None,
    )
    stopping_parameter: bounded_count(2, MAX_COUNT) | None = param(
        "bias-reduced only: the stopping parameter M of Algorithm 3 (it stops before Σ_t 2^{N_t} exceeds M; "
        "M·B ≤ n). Default ⌊n/B⌋.",
        symbol="M",
        unit="base batches",
        example=2666,
        default=None,
    )
    max_level: bounded_count(1, 60) | None = param(
        "bias-reduced only: N_max of the truncated geometric level N_t ∈ {1, …, N_max}; 2^{N_max} ≤ M. Default "
        "max(1, ⌊log₂ M⌋ − 1) [D].",
        symbol="N_max",
        unit="levels",
        example=10,
        default=None,
    )
    warmup_steps: bounded_count(1, MAX_COUNT) | None = param(
        "sco only: steps t₀ at whose every step the private estimate x̃ is refreshed (K samples); default 1. t₀ ≤ T.",
        symbol="t₀",
        unit="steps",
        example=1,
        default=None,
    )
    refresh_period: bounded_count(1, MAX_COUNT) | None = param(
        "sco only: after the warm-up, x̃ is refreshed every p steps; default 1 (every step).",
        symbol="p",
        unit="steps",
        example=1,
        default=None,
    )
    final_samples: bounded_count(1, MAX_SAMPLES) | None = param(
        "sco only: samples K' of the final sparsification of x_T; default K.",
        symbol="K'",
        unit="samples",
        example=1,
        default=None,
    )

    def check(self) -> list[FieldIssue]:
        issues: list[FieldIssue] = []
        n, b, v = self.dataset_size, self.batch_size, self.variant
        if b > n:
            issues.append(FieldIssue(("batch_size",), "must not exceed dataset_size", f"an integer in [1, {n}]", b))
            return issues
        if v in SADDLE_VARIANTS and self.dimension_y is None:
            issues.append(
                FieldIssue(("dimension_y",), f"is required by variant {v} (a saddle point)", "an integer ≥ 2")
            )
        if v == "sco" and self.dimension_y is not None:
            issues.append(
                FieldIssue(("dimension_y",), "is not used by variant sco (DP-SCO has no y-player): omit it", "omitted")
            )
        if v in ("second-order", "bias-reduced") and self.second_order_smoothness is None:
            issues.append(
                FieldIssue(
                    ("second_order_smoothness",),
                    f"is required by variant {v} (give 0 for quadratic or bilinear objectives)",
                    "a finite number ≥ 0",
                )
            )
        unused = {
            "first-order": ("stopping_parameter", "max_level", "warmup_steps", "refresh_period", "final_samples"),
            "second-order": ("stopping_parameter", "max_level", "warmup_steps", "refresh_period", "final_samples"),
            "bias-reduced": ("steps", "samples_per_step", "warmup_steps", "refresh_period", "final_samples"),
            "sco": ("stopping_parameter", "max_level"),
        }[v]
        for name in unused:
            if getattr(self, name) is not None:
                issues.append(FieldIssue((name,), f"is not a parameter of variant {v}: omit it", "omitted"))
        if self.steps is not None and v != "bias-reduced" and self.steps * b > n:
            issues.append(
                FieldIssue(
                    ("steps",),
                    "steps·batch_size must not exceed dataset_size (disjoint batches, one pass)",
                    f"an integer in [1, {n // b}]",
                    self.steps,
                )
            )
        if v == "bias-reduced":
            m = self.stopping_parameter if self.stopping_parameter is not None else n // b
            if m < 2:
                issues.append(
                    FieldIssue(
                        ("batch_size",),
                        "leaves fewer than 2 base batches (Algorithm 3 needs M = ⌊n/B⌋ ≥ 2 for 2^{N_max} ≤ M)",
                        f"an integer in [1, {n // 2}]",
                        b,
                    )
                )
            elif m * b > n:
                issues.append(
                    FieldIssue(
                        ("stopping_parameter",),
                        "stopping_parameter·batch_size must not exceed dataset_size (fresh samples only)",
                        f"an integer in [2, {n // b}]",
                        m,
                    )
                )
            elif self.max_level is not None and 2**self.max_level > m:
                issues.append(
                    FieldIssue(
                        ("max_level",),
                        "2^max_level must not exceed stopping_parameter (one step must fit the budget)",
                        f"an integer in [1, {int(math.log2(m))}]",
                        self.max_level,
                    )
                )
        if v == "sco":
            steps = self.steps if self.steps is not None else n // b
            if self.warmup_steps is not None and self.warmup_steps > steps:
                issues.append(
                    FieldIssue(
                        ("warmup_steps",), "must not exceed steps", f"an integer in [1, {steps}]", self.warmup_steps
                    )
                )
        return issues


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

    def stepsize_for(self, epsilon0: float) -> float:
        return epsilon0 / self.epsilon0_per_stepsize


def schedule(p: PrivateMirrorDescentParams) -> Schedule:
    """The sample counts and per-sample ε₀ of the variant (spec §3.2, §3.3, §3.5, §7.1)."""
    n, b, L0 = p.dataset_size, p.batch_size, p.lipschitz
    if p.variant in ("first-order", "second-order"):
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
    if p.variant == "bias-reduced":
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


# -- the accountants --------------------------------------------------------------------------------------------------


def rdp_curve(sched: Schedule, stepsize: float) -> Callable[[np.ndarray], np.ndarray]:
    """k·min(exact RDP of ε₀-DP, α·ε_BR²/8) at each order (every sample satisfies both)."""
    e0 = sched.epsilon0(stepsize)
    e_br = sched.range_ratio * e0
    k = float(sched.count)

    def curve(orders: np.ndarray) -> np.ndarray:
        a = np.asarray(orders, dtype=float)
        with np.errstate(over="ignore"):
            return k * np.minimum(pure_dp_rdp(e0, a), bounded_range_rdp(e_br, a))

    return curve


def rdp_labels(sched: Schedule, stepsize: float, orders: np.ndarray) -> tuple[str, ...]:
    e0 = sched.epsilon0(stepsize)
    pure = pure_dp_rdp(e0, orders)
    br = bounded_range_rdp(sched.range_ratio * e0, orders)
    return tuple(_BR_NAME if b <= q else _PURE_RDP_NAME for b, q in zip(br, pure, strict=True))


def paper_epsilon(sched: Schedule, stepsize: float, delta: float) -> float:
    """ε of Corollary 3.6 as printed: 2√(2k log(1/δ))·ε₀ with the paper's ε₀ and count."""
    return (
        2.0 * math.sqrt(2.0 * sched.paper_count * math.log(1.0 / delta)) * sched.paper_epsilon0_per_stepsize * stepsize
    )


def paper_stepsize(sched: Schedule, epsilon: float, delta: float) -> float:
    """The paper's stepsize rule: ε₀ = ε/(2√(2k log(1/δ))) (Cor. 3.6), η = ε₀ over ε₀ per unit stepsize."""
    return (
        epsilon
        / (2.0 * math.sqrt(2.0 * sched.paper_count * math.log(1.0 / delta)))
        / (sched.paper_epsilon0_per_stepsize)
    )


@dataclass(frozen=True)
class Accounting:
    """Every accountant's answer at one stepsize."""

    rdp: Conversion
    tight: float | None
    tight_reason: str | None
    kov: float | None
    bounded_range: float | None
    bounded_range_reason: str | None
    paper: float
    paper_valid: bool


def account(
    sched: Schedule, stepsize: float, delta: float, orders: np.ndarray, refine: bool, tight: bool = True
) -> Accounting:
    """Every accountant's answer at ``stepsize``; without ``tight`` the optimal compositions (the heavy part: a
    Bellman recursion composed by FFT) are not computed."""
    e0 = sched.epsilon0(stepsize)
    conversion = rdp_conversion(sched, stepsize, delta, orders, refine)
    kov, reason = None, None
    if not tight:
        reason = NOT_ASKED_REASON
    elif sched.count == 0:
        kov = 0.0
    elif sched.count > MAX_COMPOSITIONS:
        reason = _tight_too_many(sched.count)
    else:
        kov = kov_epsilon(sched.count, e0, delta)
    br, br_reason = bounded_range_optimum(sched, stepsize, delta) if tight else (None, NOT_ASKED_REASON)
    known = [v for v in (kov, br) if v is not None]
    tight = min(known) if known else None
    paper = paper_epsilon(sched, stepsize, delta)
    return Accounting(
        rdp=conversion,
        tight=tight,
        tight_reason=reason,
        kov=kov,
        bounded_range=br,
        bounded_range_reason=br_reason,
        paper=paper,
        paper_valid=paper <= 8.0 * math.log(1.0 / delta),
    )


@functools.lru_cache(maxsize=256)
def _bounded_range_epsilon(width: float, count: int, delta: float) -> float:
    """ε of the composition (cached: calibration revisits its last feasible stepsize, and only floats are kept,
    not the PLDs of up to 2^20 points); ParameterError on ``delta`` where it is not certified."""
    return BoundedRangeComposition.build(width, count).epsilon(delta)


def bounded_range_optimum(sched: Schedule, stepsize: float, delta: float) -> tuple[float | None, str | None]:
    """ε of the optimal adaptive composition of k ε₀-BR samples (numerical, pessimistic), or why it is not used."""
    if sched.range_ratio != 1.0:
        return None, (
            "not used: these samples are ε₀-DP with bounded range 2ε₀ (Algorithm 5's mixture), which adds nothing to "
            "pure ε₀-DP, so the optimal pure-DP composition is already optimal for them"
        )
    if sched.count == 0:
        return 0.0, None
    if sched.count > MAX_COMPOSITIONS:
        return None, _tight_too_many(sched.count)
    try:
        return _bounded_range_epsilon(sched.epsilon0(stepsize), sched.count, delta), None
    except ParameterError as exc:
        return None, f"not certified here: {exc.issues[0].field} {exc.issues[0].message}"


def rdp_conversion(sched: Schedule, stepsize: float, delta: float, orders: np.ndarray, refine: bool) -> Conversion:
    """ε of the rdp accountant: the curve converted on the order grid, or, where smaller, its bounded-range part
    k·α·ε_BR²/8 converted exactly over real α (no grid edge: tiny ρ have optimal orders beyond any grid)."""
    if sched.count == 0:
        return Conversion(0.0, float(orders[0]), orders, np.zeros_like(orders))
    conversion = epsilon_from_rdp(rdp_curve(sched, stepsize), delta, orders, refine)
    rho = sched.count * (sched.range_ratio * sched.epsilon0(stepsize)) ** 2 / 8.0
    exact, alpha = _linear_epsilon(rho, delta)
    if exact < conversion.value:
        return Conversion(exact, alpha, conversion.orders, conversion.rdp)
    return conversion


def _tight_too_many(count: int) -> str:
    return (
        f"k = {count} compositions exceed {MAX_COMPOSITIONS:.0e}, the largest for which the optimal composition is "
        "evaluated with a certified error (the rdp bound applies)"
    )


_BR_NAME = "bounded range: α·ε_BR²/8 per sample (Cesar & Rogers 2021)"
_PURE_RDP_NAME = "exact RDP of ε₀-DP (randomized response)"
_RDP_METHOD = (
    "per order, k × min(α·ε_BR²/8 [ε_BR-bounded-range ⇒ ε_BR²/8-zCDP, Cesar & Rogers 2021], exact RDP of ε₀-DP "
    "[randomized response dominates, Kairouz–Oh–Viswanath 2015]), composed adaptively; improved conversion "
    "(Balle et al. 2020, Thm. 21) on the order grid, or over real α for the bounded-range part where smaller"
)
_TIGHT_METHOD = (
    "the smaller of (a) the optimal adaptive composition of k ε₀-bounded-range mechanisms, numerical and "
    "pessimistic (exact Bellman recursion over generalised randomised responses, lattice ε₀/8 with chords, blocks "
    "of 64 samples composed by FFT with bounded rounding; Algorithms 1 and 3 only) and (b) the optimal composition "
    "of k ε₀-DP mechanisms (Kairouz, Oh & Viswanath 2015, Thm. 3.3, in log space with certified tail and rounding "
    "margins); both valid adaptively"
)
_BR_OPTIMUM_NAME = "Optimal adaptive composition of ε₀-bounded-range mechanisms (numerical, pessimistic)"
_PAPER_METHOD = "the paper's privacy statement as printed (advanced composition, Corollary 3.6)"


# -- utility (spec §4, §7.3) ------------------------------------------------------------------------------------------


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
    """E Gap(x̂, ŷ) ≤ 2ℓ₁₂/(ηT) + 5ηL₀² + bias + 4L₁√(ℓ₁₂/(TK)) + 4L₁/(TK) for Algorithm 1 [D] (spec §4.3).

    bias = 32L₁/√K (first-order, Cor. 2.6 jointly), 32L₂/K (second-order, Cor. 2.4), 0 (quadratic). Constants derived
    along the paper's proof (Lemma 3.8, eq. (8), Lemma 3.11), not the paper's; verified loose 6–10× (spec §5)."""
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
    ell, lg = math.log(d), math.log(1.0 / delta)
    if regime_ == "quadratic":
        private, c = ell**0.75 * lg**0.25 / math.sqrt(n * eps), L0 + L1
    elif regime_ == "first":
        private, c = (ell**1.5 * math.sqrt(lg) / (n * eps)) ** (1.0 / 3.0), L0 + L1
    else:
        private, c = (ell**1.5 * math.sqrt(lg) / (n * eps)) ** 0.4, L0 + L1 + L2
    return c * (math.sqrt(ell / n) + private)


def rate_algorithm3(n: int, d: float, eps: float, delta: float, L0: float, L1: float, L2: float) -> float:
    """Theorem 3.14, unit constants, polylog(n) = log₂ n [A/R]: (L₀+L₁+L₂)·log₂n·[√(ℓ/n) + ℓ·log^{1/4}(1/δ)/√(nε)]."""
    ell = math.log(d)
    return (
        (L0 + L1 + L2)
        * max(math.log2(n), 1.0)
        * (math.sqrt(ell / n) + ell * math.log(1.0 / delta) ** 0.25 / math.sqrt(n * eps))
    )


def rate_algorithm5(n: int, d: float, eps: float, L0: float, L1: float, L2: float | None) -> float:
    """Theorem 4.2, unit constants [A]: first-order √(ℓ/n) + ℓ^{0.7}/(nε)^{0.4}; second-order √(ℓ/n) + ℓ/√(nε)."""
    ell = math.log(d)
    if L2 is None:
        return (L0 + L1) * (math.sqrt(ell / n) + ell**0.7 / (n * eps) ** 0.4)
    return (L0 + L1 + L2) * (math.sqrt(ell / n) + ell / math.sqrt(n * eps))


def lower_bound_ssp(n: int, d: float, eps: float) -> float:
    """The lower bound √(ℓ/n) + ℓ^{3/4}/√(nε) for DP-SSP on simplices (bilinear instances) [A], unit constants."""
    ell = math.log(d)
    return math.sqrt(ell / n) + ell**0.75 / math.sqrt(n * eps)


def paper_parameters(
    n: int, d: float, eps: float, delta: float, L0: float, L1: float, L2: float, regime_: str
) -> dict[str, float]:
    """Algorithm 1's parameters from balancing Theorem 3.1's bound [R] (spec §4.3, §7.3 ``alg1_paper_params``)."""
    ell, lg = math.log(d), math.log(1.0 / delta)
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
    (spec §7.1 ``explicit_bound_opt``; certified: the rdp accountant at that η gives at most ε)."""
    n, L0, L1 = p.dataset_size, p.lipschitz, p.smoothness
    L2 = p.second_order_smoothness or 0.0
    ell, reg = ell12(p), regime(p)
    rho = _zcdp_budget(eps, delta)
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
                eta = _shrink(eta, lambda s, c=count, b=b: c * (4.0 * s * L0 / b) ** 2 / 8.0 <= rho)
            value = explicit_gap_bound(t, k, eta, ell, L0, L1, L2, reg)
            if best is None or value < best.bound:
                best = Tuned(b, t, k, eta, 4.0 * eta * L0 / b, value)
    assert best is not None
    return best


def tune_algorithm3(p: PrivateMirrorDescentParams) -> tuple[int, int, float]:
    """(M, N_max, η-cap) of Algorithm 3 [D] (spec §4.5): M = ⌊n/B⌋, N_max = max(1, ⌊log₂ M⌋ − 1), and the
    non-private stepsize √(ℓ/T₀)/σ with T₀ = M/(4·E2^N), E2^N = N_max/(1 − 2^{−N_max}), and the second-moment bound
    σ² = 2L₀² + 2560L₂² + 768·N_max·L₁²(1 + ln 2d) [D]."""
    m = p.dataset_size // p.batch_size
    level = max(1, int(math.log2(max(m, 2))) - 1)
    mean_batch = level / (1.0 - 2.0**-level)
    t0 = max(m / (4.0 * mean_batch), 1.0)
    d = max(p.dimension_x, p.dimension_y or 2)
    L0, L1, L2 = p.lipschitz, p.smoothness, p.second_order_smoothness or 0.0
    sigma = math.sqrt(2.0 * L0**2 + 2560.0 * L2**2 + 768.0 * level * L1**2 * (1.0 + math.log(2.0 * d)))
    return m, level, math.sqrt(math.log(d) / t0) / sigma


# -- the family -------------------------------------------------------------------------------------------------------


@register
class PrivateMirrorDescent(AlgorithmFamily):
    id = "private-mirror-descent"
    example: ClassVar[Mapping[str, Any]] = {
        "variant": "second-order",
        "dataset_size": 32000,
        "dimension_x": 32,
        "dimension_y": 32,
        "lipschitz": 1.0,
        "smoothness": 1.0,
        "second_order_smoothness": 0.0,
        "batch_size": 12,
        "stepsize": 0.0125,
    }
    job_example: ClassVar[Mapping[str, Any] | None] = {
        "params": {
            "variant": "second-order",
            "dataset_size": 400,
            "dimension_x": 4,
            "dimension_y": 4,
            "lipschitz": 1.0,
            "smoothness": 1.0,
            "second_order_smoothness": 0.0,
            "batch_size": 10,
        },
        "delta": 1e-05,
        "target_epsilon": 4.0,
        "trials": 2048,
        "seed": 3,
    }
    title = "Private stochastic mirror descent with vertex sampling (saddle points and SCO on simplices)"
    summary = (
        "Entropic mirror descent for stochastic saddle-point problems (and DP-SCO) on simplices or polytopes, "
        "privatised by releasing only vertices sampled from the iterates: each sample is an exponential mechanism "
        "(ε₀ = 4ηL₀/B per sample for Algorithm 1 [R]; 10ηL₀/B for Algorithm 3 and 4ηTL₀/B for Algorithm 5 [D]). "
        "No noise is added: calibration returns the largest stepsize η. Constants tagged [R] are reconstructed, "
        "[D] derived (the seed text lost every formula)."
    )
    source = (
        f"{SOURCE}: Algorithms 1, 3, 5 [R], Propositions 3.3, 3.17, 4.3 [R/D], Theorems 3.1, 3.14, 4.2 [A/R]; "
        "Kairouz, Oh & Viswanath 2015 (optimal composition); Cesar & Rogers 2021 (bounded range ⇒ ε²/8-zCDP); "
        "Balle et al. 2020 (RDP conversion)"
    )
    params_model = PrivateMirrorDescentParams
    accountants = ("rdp", "tight", "paper")
    calibrated_parameter = "stepsize"
    noise_fields = ("stepsize",)
    assumptions = (
        "Replace-one neighbouring datasets of fixed size n (seed 001 §1.3); disjoint batches, one pass: every record "
        "enters one gradient.",
        "‖∇_x f(·; ξ)‖∞ ≤ L₀ and ‖∇_y f(·; ξ)‖∞ ≤ L₀ for every record ξ (the sensitivity rests on it; clip gradient "
        "coordinates to [−L₀, L₀] otherwise).",
        "Only the sampled vertices (and post-processings of them, such as their average) are released; the "
        "iterates x_t, y_t stay hidden. Every sample is accounted (the whole transcript).",
        "Utility bounds: f(·, ·; ξ) convex–concave (convex for sco), L₀-Lipschitz and L₁-smooth w.r.t. ℓ1 "
        "(second-order: each ∂_i f is L₂-smooth).",
    )
    bounds = (
        BoundInfo(
            "Proposition 3.3 via Corollary 3.6 (advanced composition), as printed [R]",
            "privacy",
            f"{SOURCE}, Proposition 3.3, Corollary 3.6 (Prop. 3.17 [D] for bias-reduced, Prop. 4.3 [R] for sco)",
            ("ε ≤ 8 log(1/δ)",),
            "paper",
        ),
        BoundInfo(
            "RDP: bounded-range zCDP and exact pure-DP RDP per sample",
            "privacy",
            "Cesar & Rogers 2021 (ε-BR ⇒ ε²/8-zCDP); Kairouz, Oh & Viswanath 2015 (randomized response dominates "
            "ε-DP); Balle et al. 2020, Thm. 21 (conversion)",
            ("always (adaptive composition of the vertex samples)",),
            "rdp",
        ),
        BoundInfo(
            "Optimal composition of pure ε₀-DP mechanisms",
            "privacy",
            "Kairouz, Oh & Viswanath 2015, Thm. 3.3 (valid for adaptive composition)",
            (f"k ≤ {MAX_COMPOSITIONS:.0e} samples",),
            "tight",
        ),
        BoundInfo(
            "Explicit gap bound of Algorithm 1 [D]",
            "utility",
            f"{SOURCE}, Theorem 3.1 via Lemmas 3.8, 3.11 and Cor. 2.4/2.6; constants derived (spec §4.3)",
            ("variant first-order or second-order", "convex–concave, L₀-Lipschitz, L₁-smooth (L₂ for second-order)"),
        ),
        BoundInfo(
            "Rates of Theorems 3.1 (5)–(7), 3.14 and 4.2 with unit constants [A/R]",
            "utility",
            f"{SOURCE}, Theorems 3.1, 3.14, 4.2; abstract (arXiv 2403.02912)",
            ("ε ≤ 1 (the theorems' regime)",),
        ),
    )

    def cost(
        self,
        operation: Operation,
        params: Mapping[str, Any] | PrivateMirrorDescentParams,
        accountant: str = "best",
    ) -> Cost:
        """Heavy for privacy and calibration with the tight accountant (``tight``, or ``best``, which needs its
        value): it evaluates the optimal bounded-range composition (a Bellman recursion composed by FFT, ~0.1 s),
        and calibration searches over it. ``rdp`` and utility are cheap."""
        self.parse(params)
        asks_tight = operation is not Operation.UTILITY and accountant != "rdp"
        return Cost.HEAVY if asks_tight else Cost.CHEAP

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """k vertex samples, each ε₀-DP with bounded range (range ratio)·ε₀, adaptively composed (replace-one
        neighbours of fixed size n, seed 001 §1.3); with k = 0 nothing depends on the data."""
        p: PrivateMirrorDescentParams = self.parse(params)
        sched = schedule(p)
        e0 = sched.epsilon0(_stepsize(p))
        sample = BoundedRangeEvent(sched.range_ratio * e0, e0)
        event = SelfComposedEvent(sample, sched.count) if sched.count else PureDpEvent(0.0)
        return MechanismPlan(event, "replace-one")

    # -- privacy ------------------------------------------------------------------------------------------------------

    def _privacy(
        self,
        params: Mapping[str, Any] | PrivateMirrorDescentParams,
        delta: float,
        accountant: str = "best",
        orders: Sequence[float] | np.ndarray | None = None,
        refine: bool = True,
    ) -> PrivacyReport:
        p: PrivateMirrorDescentParams = self.parse(params)
        self.check_accountant(accountant)
        d = check.delta("delta", delta)
        grid = order_grid(orders)
        eta = _stepsize(p)
        sched = schedule(p)
        acc = account(sched, eta, d, grid, refine, tight=accountant != "rdp")
        results = _results(sched, acc, d)
        chosen = choose_accountant(results, accountant, supported=self.supported_accountants())
        return PrivacyReport(
            algorithm=self.id,
            epsilon=chosen.epsilon,  # type: ignore[arg-type]
            delta=d,
            accountant=chosen.name,
            optimal_order=_order(acc.rdp),
            rdp=_curve(sched, eta, acc.rdp),
            accountants=tuple(results),
            noise=None,
            conventions=_conventions(sched),
            warnings=tuple(_warnings(p, sched, acc, d)),
            bounds=tuple(_bound_results(sched, eta, d, acc, chosen.name)),
            releases=tuple(_releases(sched, eta)),
        )

    # -- calibration --------------------------------------------------------------------------------------------------

    def _calibrate(
        self,
        params: Mapping[str, Any] | PrivateMirrorDescentParams,
        target_epsilon: float,
        delta: float,
        accountant: str = "best",
        orders: Sequence[float] | np.ndarray | None = None,
    ) -> CalibrationReport:
        p: PrivateMirrorDescentParams = self.parse(params)
        self.check_accountant(accountant)
        target = check.positive("target_epsilon", target_epsilon)
        d = check.delta("delta", delta)
        grid = order_grid(orders)
        notes: list[str] = []
        sched = schedule(p)
        if sched.count == 0 and accountant != "paper":
            raise CalibrationError(
                "the target does not constrain the stepsize: with steps = 1 no released vertex depends on the data "
                "(the first samples come from the uniform start), so every stepsize gives ε = 0; use steps ≥ 2"
            )
        with_tight = accountant != "rdp"
        results = _calibrations(sched, target, d, grid, with_tight)
        chosen = choose_accountant(
            results, accountant, key="calibrated_value", largest=True, supported=self.supported_accountants()
        )
        eta = chosen.calibrated_value
        assert eta is not None
        acc = account(sched, eta, d, grid, True, with_tight)
        recommended = _recommendations(p, sched, eta, target, d)
        return CalibrationReport(
            algorithm=self.id,
            target_epsilon=target,
            delta=d,
            noise_multiplier=None,
            noise_std=None,
            epsilon=chosen.epsilon,  # type: ignore[arg-type]
            accountant=chosen.name,
            optimal_order=_order(acc.rdp),
            rdp=_curve(sched, eta, acc.rdp),
            accountants=tuple(results),
            noise=None,
            conventions=_conventions(sched),
            utility=_utility_report(p, sched, eta, target, d, recommended),
            utility_reason=None,
            paper=_paper_calibration(sched, target, d, grid, with_tight),
            paper_reason=None,
            calibrated_parameter="stepsize",
            calibrated_value=eta,
            warnings=tuple(notes + _warnings(p, sched, acc, d)),
            bounds=tuple(_bound_results(sched, eta, d, acc, chosen.name)),
            releases=tuple(_releases(sched, eta)),
            recommended=tuple(recommended),
        )

    # -- utility ------------------------------------------------------------------------------------------------------

    def utility(self, params: Mapping[str, Any] | PrivateMirrorDescentParams) -> UtilityReport:
        p: PrivateMirrorDescentParams = self.parse(params)
        return _utility_report(p, schedule(p), p.stepsize, None, None, [])


# -- calibration per accountant ---------------------------------------------------------------------------------------


def _calibrations(
    sched: Schedule, target: float, delta: float, grid: np.ndarray, with_tight: bool = True
) -> list[AccountantResult]:
    """Each accountant's largest stepsize meeting (target, δ), checked one-sided at the stepsize returned; the
    tight one only ``with_tight``."""
    out: list[AccountantResult] = []
    unconstrained = "no released vertex depends on the data (steps = 1): every stepsize gives ε = 0"
    # rdp: the curve is k·min(pure, α ε_BR²/8); the bounded-range part alone gives ε₀ in closed form, and the minimum
    # can only allow more. Calibrate in units of that closed form (σ = ε₀_BR/ε₀, so ε decreases in σ).
    if sched.count == 0:
        out.append(AccountantResult("rdp", False, reason=unconstrained))
        out.append(AccountantResult("tight", False, reason=unconstrained))
    else:
        rho = _zcdp_budget(target, delta)
        reference = math.sqrt(8.0 * rho / sched.count) / sched.range_ratio

        def curve_of(sigma: float) -> Callable[[np.ndarray], np.ndarray]:
            return rdp_curve(sched, sched.stepsize_for(reference / sigma))

        try:
            found = calibrate_rdp(curve_of, delta, target, orders=grid, refine=True, parameter="ε₀-scale")
            on_grid = sched.stepsize_for(reference / found.noise)
        except CalibrationError:  # the grid cannot reach the optimal order (tiny ρ): the exact part below can
            on_grid = 0.0
        # the bounded-range part alone, converted exactly over real α, allows ε₀ = reference: keep the larger
        candidate = max(on_grid, sched.stepsize_for(reference))
        eta = _shrink(candidate, lambda s: rdp_conversion(sched, s, delta, grid, True).value <= target)
        conversion = rdp_conversion(sched, eta, delta, grid, True)
        out.append(
            AccountantResult(
                "rdp",
                True,
                conversion.value,
                "certified upper bound",
                _RDP_METHOD,
                optimal_order=_order(conversion),
                calibrated_value=eta,
            )
        )
        if not with_tight:
            out.append(AccountantResult("tight", False, reason=NOT_ASKED_REASON))
        elif sched.count > MAX_COMPOSITIONS:
            out.append(AccountantResult("tight", False, reason=_tight_too_many(sched.count)))
        else:
            # (b) solve a hair below the target, then check what privacy() reports (the bisected ε, an upper bound)
            e0 = kov_max_epsilon0(sched.count, target * (1.0 - 1e-9), delta)
            eta = _shrink(
                sched.stepsize_for(e0), lambda s: kov_epsilon(sched.count, sched.epsilon0(s), delta) <= target
            )
            # (a) allows more wherever it applies; tight is the smaller of the two, so the larger stepsize counts
            start = max(e0, sched.epsilon0(out[0].calibrated_value or 0.0))  # rdp's answer is nearly feasible here
            eta = max(eta, _bounded_range_stepsize(sched, target, delta, start, e0))
            acc = account(sched, eta, delta, grid, True)
            out.append(
                AccountantResult(
                    "tight", True, acc.tight, "certified upper bound", _tight_method(acc), calibrated_value=eta
                )
            )
    limit = 8.0 * math.log(1.0 / delta)
    if target <= limit:
        eta = _shrink(paper_stepsize(sched, target, delta), lambda s: paper_epsilon(sched, s, delta) <= target)
        out.append(
            AccountantResult(
                "paper",
                True,
                paper_epsilon(sched, eta, delta),
                "the paper's statement (a valid advanced-composition bound)",
                _PAPER_METHOD + f"; {sched.paper_rule}",
                calibrated_value=eta,
            )
        )
    else:
        out.append(AccountantResult("paper", False, reason=_paper_condition(target, delta)))
    for r in out:
        if r.applicable and not (r.calibrated_value and math.isfinite(r.calibrated_value) and r.calibrated_value > 0):
            raise CalibrationError(
                f"target_epsilon={target:g} at δ={delta:g} needs a stepsize outside the floating-point range "
                f"({r.name} accountant): choose a less extreme target"
            )
    return out


def _bounded_range_stepsize(sched: Schedule, target: float, delta: float, start: float, kov_epsilon0: float) -> float:
    """Largest stepsize (relative 5e-7, or ε within 2e-7 of the target; rounded down) whose optimal bounded-range
    composition meets the target; 0 where it does not apply. Bracket: the bounded-range optimum at ε₀ is at most
    KOV's at ε₀ (a smaller class) and at least KOV's at ε₀/2 (randomised response with ε₀/2 is ε₀-bounded-range),
    so with ε₀* the largest ε₀ KOV allows, the answer lies in [ε₀*, 2ε₀*]; the search starts at ``start`` (rdp's
    ε₀, usually just below)."""

    def epsilon_at(e0: float) -> float:
        value, _ = bounded_range_optimum(sched, sched.stepsize_for(e0), delta)
        return math.inf if value is None else value

    if sched.range_ratio != 1.0 or not kov_epsilon0 > 0.0:
        return 0.0
    lo, hi = min(start, 2.0 * kov_epsilon0), 2.0 * kov_epsilon0 * (1.0 + 1e-9)
    value = epsilon_at(lo)
    tries = 0
    while value > target:  # the discretisation can cost a little more than KOV at tiny counts
        lo, tries = lo / 1.05, tries + 1
        if tries > 4:
            return 0.0
        value = epsilon_at(lo)
    # ε grows about linearly in ε₀: proportional steps from below, then false position (a hair below the
    # interpolated root) inside the bracket, and bisection only if that stalls
    hi_value = math.inf
    for _ in range(24):
        if hi / lo <= 1.0 + 5e-7 or (target - value) <= 2e-7 * target:
            break
        if math.isfinite(hi_value) and hi_value > value:
            guess = lo + (hi - lo) * (target - value) / (hi_value - value) * (1.0 - 1e-7)
        else:
            guess = lo * (target / value) * (1.0 - 1e-4) if value > 0.0 else math.sqrt(lo * hi)
        guess = min(max(guess, lo * (1.0 + 2e-7)), hi / (1.0 + 2e-7))
        guess_value = epsilon_at(guess)
        if guess_value <= target:
            lo, value = guess, guess_value
        else:
            hi, hi_value = guess, guess_value
    return sched.stepsize_for(lo)


def _shrink(stepsize: float, feasible: Callable[[float], bool]) -> float:
    """The largest value ≤ ``stepsize`` (stepping down by relative 1e-12, then geometrically) that is feasible."""
    step = 1e-12
    eta = stepsize
    while eta > 0.0 and not feasible(eta):
        eta = stepsize * (1.0 - step)
        step *= 4.0
        if step >= 1.0:
            return 0.0
    return eta


def _paper_condition(epsilon: float, delta: float) -> str:
    return (
        f"Corollary 3.6 needs ε ≤ 8 log(1/δ) = {8.0 * math.log(1.0 / delta):.6g}; here ε = {epsilon:.6g}, so the "
        "printed statement does not apply"
    )


def _paper_calibration(
    sched: Schedule, target: float, delta: float, grid: np.ndarray, with_tight: bool = True
) -> PaperCalibration:
    """The paper's rule as printed, and what the rigorous accountants certify at the stepsize it prescribes (the
    tight one only ``with_tight``)."""
    eta = paper_stepsize(sched, target, delta)
    acc = account(sched, eta, delta, grid, True, with_tight)
    certified = acc.rdp.value if acc.tight is None else min(acc.rdp.value, acc.tight)
    by = "rdp" if acc.tight is None or acc.rdp.value <= acc.tight else "tight"
    condition = target <= 8.0 * math.log(1.0 / delta)
    valid = condition and certified <= target
    e0 = sched.paper_epsilon0_per_stepsize * eta
    note = (
        f"prescribed stepsize η = {eta:.6g} (ε₀ = {e0:.6g} per sample as the paper counts it, "
        f"k = {sched.paper_count}); "
        f"{sched.paper_rule}. Condition ε ≤ 8 log(1/δ) = {8.0 * math.log(1.0 / delta):.6g}: "
        f"{'holds' if condition else 'fails'}. The paper's rule is conservative (it halves the exact "
        "advanced-composition ε₀ and ignores bounded range)"
    )
    if not valid:
        note += (
            f"; NOT VALID as stated: {'the condition fails' if not condition else ''}"
            f"{' and ' if not condition and certified > target else ''}"
            f"{f'the certified ε {certified:.6g} exceeds the claimed {target:.6g}' if certified > target else ''}"
        )
    return PaperCalibration(
        source=f"{SOURCE}, {sched.paper_rule.split(':')[0]}",
        noise_multiplier=None,
        epsilon_claimed=target,
        epsilon_certified=certified,
        certified_by=by,
        valid=valid,
        note=note,
    )


# -- presentation -----------------------------------------------------------------------------------------------------


def _stepsize(p: PrivateMirrorDescentParams) -> float:
    if p.stepsize is None:
        raise ParameterError.single(
            "stepsize",
            "is required for privacy accounting: it is the privacy knob (ε₀ = 4ηL₀/B per vertex sample for "
            "Algorithm 1); /v1/calibrate computes it",
            "a finite number in (0, 1e12]",
        )
    return p.stepsize


def _order(conversion: Conversion) -> float | None:
    return conversion.optimal_order if conversion.value > 0.0 and math.isfinite(conversion.optimal_order) else None


def _curve(sched: Schedule, eta: float, conversion: Conversion) -> RdpCurve:
    orders = np.asarray(conversion.orders, dtype=float)
    eps = [float(e) if math.isfinite(e) else None for e in conversion.rdp]
    return RdpCurve(tuple(orders.tolist()), tuple(eps), rdp_labels(sched, eta, orders))  # type: ignore[arg-type]


def _results(sched: Schedule, acc: Accounting, delta: float) -> list[AccountantResult]:
    results = [
        AccountantResult(
            "rdp", True, acc.rdp.value, "certified upper bound", _RDP_METHOD, optimal_order=_order(acc.rdp)
        )
    ]
    if acc.tight is None:
        results.append(AccountantResult("tight", False, reason=acc.tight_reason))
    else:
        results.append(AccountantResult("tight", True, acc.tight, "certified upper bound", _tight_method(acc)))
    if acc.paper_valid:
        results.append(
            AccountantResult(
                "paper",
                True,
                acc.paper,
                "the paper's statement (a valid advanced-composition bound)",
                _PAPER_METHOD + f"; {sched.paper_rule}",
            )
        )
    else:
        results.append(AccountantResult("paper", False, reason=_paper_condition(acc.paper, delta)))
    return results


def _tight_method(acc: Accounting) -> str:
    by = "(a), bounded range" if acc.bounded_range is not None and acc.tight == acc.bounded_range else "(b), pure DP"
    note = "" if acc.bounded_range_reason is None else f"; (a) {acc.bounded_range_reason}"
    return f"{_TIGHT_METHOD}; answered by {by}{note}"


def _conventions(sched: Schedule) -> Conventions:
    released = {
        "first-order": "the average (x̂, ŷ) of the private iterates x̃_t, ỹ_t; every vertex sample is accounted",
        "second-order": "the average (x̂, ŷ) of the private iterates x̃_t, ỹ_t; every vertex sample is accounted",
        "bias-reduced": "the average of the output samples x̂_t, ŷ_t; every vertex sample (gradient and output) is "
        "accounted",
        "sco": "the final sparsification x̂ (K' samples of x_T); every vertex sample is accounted",
    }[sched.variant]
    return Conventions(
        neighbouring="replace-one",
        steps=sched.steps,
        step_rule=f"{sched.step_rule}; {sched.count_rule}",
        sampling="disjoint batches in one pass (each record enters one gradient); vertex sampling from the iterates "
        "(no subsampling amplification is used)",
        noise_multiplier_definition=(
            "no noise is added: the privacy knob is the stepsize η. Each vertex sample is an exponential mechanism; "
            f"{sched.epsilon0_rule}; k = number of samples composed ({sched.count_rule})"
        ),
        released=released,
    )


def _releases(sched: Schedule, eta: float) -> list[Release]:
    e0 = sched.epsilon0(eta)
    details: dict[str, float | int | str] = {
        "epsilon0": e0,
        "bounded_range": sched.range_ratio * e0,
        "stepsize": eta,
    }
    composition = "sequential, adaptive: each sample is ε₀-DP conditionally on the previous ones"
    if sched.variant in ("first-order", "second-order"):
        per_player = (sched.steps - 1) * sched.samples_per_step
        return [
            Release(
                f"{player}-player vertex samples ~ P({player}_t), K = {sched.samples_per_step} per step",
                per_player,
                None,
                None,
                None,
                composition,
                details | {"score_sensitivity": e0 / 2.0, "data_independent_samples": sched.samples_per_step},
            )
            for player in ("x", "y")
        ]
    if sched.variant == "bias-reduced":
        return [
            Release(
                "vertex samples of Algorithm 3 (2^{N_t} per player for the multilevel gradient, 1 per player for "
                "the output), at most 3M in total",
                sched.count,
                None,
                None,
                None,
                composition,
                details | {"score_sensitivity": e0 / 2.0, "max_level": sched.max_level or 1},
            )
        ]
    return [
        Release(
            "vertex samples of Algorithm 5 (K per refresh of x̃, K' for the final sparsification)",
            sched.count,
            None,
            None,
            None,
            composition,
            details | {"log_probability_sensitivity": e0},
        )
    ]


def _warnings(p: PrivateMirrorDescentParams, sched: Schedule, acc: Accounting, delta: float) -> list[str]:
    notes = [
        "constants are reconstructed (seed 001 lost its formulas): " + sched.epsilon0_rule + "; " + sched.count_rule,
        "the sensitivity assumes ‖∇f(·; ξ)‖∞ ≤ lipschitz for every record (clip gradient coordinates if not)",
    ]
    if not acc.paper_valid:
        notes.append(_paper_condition(acc.paper, delta))
    if acc.tight is not None and acc.tight > acc.rdp.value:
        notes.append(
            "the tight accountant exceeds the rdp bound here: "
            + (
                "the optimal bounded-range composition is "
                + (acc.bounded_range_reason or "")
                + ", and the optimal pure-DP composition is for a larger class than these bounded-range samples"
                if acc.bounded_range is None
                else "its discretisation costs more than the rdp bound's slack at this budget"
            )
        )
    if sched.variant == "sco":
        notes.append(
            "Algorithm 5 samples from a mixture of softmaxes: pure ε₀ = Δ' and bounded range 2Δ' (both give the "
            "same zCDP, Δ'²/2)"
        )
    return notes


def _bound_results(sched: Schedule, eta: float, delta: float, acc: Accounting, chosen: str) -> list[BoundResult]:
    e0 = sched.epsilon0(eta)
    k = sched.count
    orders = np.asarray(acc.rdp.orders, dtype=float)
    always = (Assumption("none (adaptive composition of the vertex samples)", True),)
    br = k * bounded_range_rdp(sched.range_ratio * e0, orders)
    pure = k * pure_dp_rdp(e0, orders)
    out = [
        BoundResult(
            "RDP: per-order minimum of bounded-range zCDP and exact pure-DP RDP",
            _RDP_METHOD,
            True,
            None,
            always,
            tuple(float(v) for v in acc.rdp.rdp),
            acc.rdp.value,
            chosen == "rdp",
            "every vertex sample",
        ),
        BoundResult(
            _BR_NAME,
            "Cesar & Rogers 2021, Lemma 3.2; composition of zCDP",
            True,
            None,
            always,
            tuple(float(v) for v in br),
            _linear_epsilon(k * (sched.range_ratio * e0) ** 2 / 8.0, delta)[0],
            False,
            "every vertex sample",
        ),
        BoundResult(
            _PURE_RDP_NAME,
            "Kairouz, Oh & Viswanath 2015 (randomized response dominates ε₀-DP); Mironov 2017 (composition)",
            True,
            None,
            always,
            tuple(float(v) for v in pure),
            epsilon_from_rdp(lambda a: k * pure_dp_rdp(e0, a), delta, orders, True).value if k else 0.0,
            False,
            "every vertex sample",
        ),
        BoundResult(
            _BR_OPTIMUM_NAME,
            "Bellman recursion over generalised randomised responses (Dong, Durfee & Rogers 2020 reduce bounded range "
            "to them); accountants/mechanisms/bounded_range_composition.py",
            acc.bounded_range is not None,
            acc.bounded_range_reason,
            (
                Assumption(
                    "every sample is ε₀-bounded-range", sched.range_ratio == 1.0, f"range {sched.range_ratio:g}·ε₀"
                ),
            ),
            None,
            acc.bounded_range,
            chosen == "tight" and acc.bounded_range is not None and acc.tight == acc.bounded_range,
            "every vertex sample",
        ),
        BoundResult(
            "Optimal composition of pure ε₀-DP mechanisms",
            "Kairouz, Oh & Viswanath 2015, Thm. 3.3",
            acc.kov is not None,
            acc.tight_reason,
            (Assumption(f"k ≤ {MAX_COMPOSITIONS:.0e}", k <= MAX_COMPOSITIONS, f"k = {k}"),),
            None,
            acc.kov,
            chosen == "tight" and acc.kov is not None and acc.tight == acc.kov,
            "every vertex sample",
        ),
        BoundResult(
            "Fully adaptive advanced composition √(2k log(1/δ))·ε₀ + kε₀²/2 (Theorem 3.5)",
            "Whitehouse, Ramdas, Rogers & Wu 2023 (seed 001, Theorem 3.5) with the rigorous count",
            True,
            None,
            always,
            None,
            advanced_composition_epsilon(k, e0, delta),
            False,
            "every vertex sample",
        ),
        BoundResult(
            "Advanced composition min{kε₀, √(2k log(1/δ))·ε₀ + kε₀(e^{ε₀} − 1)}",
            "Dwork, Rothblum & Vadhan 2010, Thm. III.3, with the rigorous count",
            True,
            None,
            always,
            None,
            drv_epsilon(k, e0, delta),
            False,
            "every vertex sample",
        ),
        BoundResult(
            "Corollary 3.6 as printed (the paper accountant)",
            f"{SOURCE}: {sched.paper_rule}",
            acc.paper_valid,
            None if acc.paper_valid else _paper_condition(acc.paper, delta),
            (
                Assumption(
                    f"ε ≤ 8 log(1/δ) = {8.0 * math.log(1.0 / delta):.6g}",
                    acc.paper_valid,
                    f"ε = {acc.paper:.6g}",
                ),
            ),
            None,
            acc.paper if acc.paper_valid else None,
            chosen == "paper",
            "every vertex sample",
        ),
    ]
    return out


def _linear_epsilon(rho: float, delta: float) -> tuple[float, float]:
    """(ε, α*) of the curve ρα at δ: the exact conversion over real α (the grid one where the exact one cannot
    evaluate ρ, below ~1e-290)."""
    if not rho > 0.0:
        return 0.0, math.inf
    try:
        return epsilon_for_linear_rdp(rho, delta)
    except (ValueError, OverflowError):
        conversion = epsilon_from_rdp(lambda a: rho * np.asarray(a, dtype=float), delta)
        return conversion.value, conversion.optimal_order


def _zcdp_budget(epsilon: float, delta: float) -> float:
    """A ρ whose curve ρα converts to at most ε at δ: the exact largest one (improved conversion), or, where that
    cannot be evaluated (ρ below ~1e-290), the classic ρ = ε²/(√(log(1/δ) + ε) + √log(1/δ))², which is smaller."""
    try:
        return linear_rdp_for_epsilon(epsilon, delta)
    except (ValueError, OverflowError):
        lg = math.log(1.0 / delta)
        return epsilon * epsilon / (math.sqrt(lg + epsilon) + math.sqrt(lg)) ** 2


# -- utility reports and recommendations ------------------------------------------------------------------------------

_EXPLICIT_SOURCE = (
    f"{SOURCE}, Theorem 3.1 via Lemma 3.8 (eq. (8)), Lemma 3.11 and Cor. 2.4/2.6: constants derived [D] (spec §4.3), "
    "measured 6–10× loose on bilinear games (spec §5)"
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


def _utility_report(
    p: PrivateMirrorDescentParams,
    sched: Schedule,
    eta: float | None,
    target: float | None,
    delta: float | None,
    recommended: list[Recommendation],
) -> UtilityReport:
    """The explicit bound (Algorithm 1) at the stepsize, and, with a target (ε, δ), the rates with unit constants."""
    bounds: list[UtilityBound] = []
    recs = list(recommended)
    declared = _declared(p)
    n, L0, L1 = p.dataset_size, p.lipschitz, p.smoothness
    L2 = p.second_order_smoothness
    if p.variant in ("first-order", "second-order"):
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
        bounds.append(
            UtilityBound(
                f"expected strong duality gap E Gap(x̂, ŷ) at η = {used:.6g} (T = {t}, K = {k}; {label[reg]} bias term)",
                explicit_gap_bound(t, k, used, ell, L0, L1, L2 or 0.0, reg),
                "explicit bound",
                _EXPLICIT_SOURCE,
                declared,
            )
        )
        if eta is not None and target is not None and eta > eta_np:
            bounds.append(
                UtilityBound(
                    f"expected strong duality gap at the smaller stepsize η_np = {eta_np:.6g} (also private: ε "
                    "decreases with η)",
                    explicit_gap_bound(t, k, eta_np, ell, L0, L1, L2 or 0.0, reg),
                    "explicit bound",
                    _EXPLICIT_SOURCE,
                    declared,
                )
            )
    if target is not None and delta is not None:
        regime_ok = Assumption("ε ≤ 1 (the regime of the paper's theorems)", target <= 1.0, f"ε = {target:g}")
        conditions = (*declared, regime_ok)
        if p.variant in SADDLE_VARIANTS:
            d = float(p.dimension_x) + float(p.dimension_y or 0)
            if p.variant == "bias-reduced":
                bounds.append(
                    UtilityBound(
                        "strong duality gap with probability ≥ 1/2 [R] (polylog(n) taken as log₂ n)",
                        rate_algorithm3(n, d, target, delta, L0, L1, L2 or 0.0),
                        "rate with unit constants",
                        f"{SOURCE}, Theorem 3.14 [A/R]: (L₀+L₁+L₂)·polylog(n)·[√(log d/n) + log d/√(nε)]",
                        conditions,
                        target <= 1.0,
                    )
                )
            else:
                reg = regime(p)
                equation = {"first": "(5)", "second": "(6)", "quadratic": "(7)"}[reg]
                bounds.append(
                    UtilityBound(
                        "expected strong duality gap E Gap(x̂, ŷ)",
                        rate_algorithm1(n, d, target, delta, L0, L1, L2 or 0.0, reg),
                        "rate with unit constants",
                        f"{SOURCE}, Theorem 3.1, eq. {equation} [A/R], ℓ = log(d₁ + d₂)",
                        conditions,
                        target <= 1.0,
                    )
                )
            bounds.append(
                UtilityBound(
                    "lower bound on E Gap of any (ε, δ)-DP algorithm (bilinear instances): no algorithm does better",
                    lower_bound_ssp(n, d, target),
                    "rate with unit constants",
                    f"{SOURCE}, abstract and Remark 3.2 [A]: √(log d/n) + log^{{3/4}} d/√(nε) (Bun–Ullman–Vadhan)",
                    (regime_ok,),
                    target <= 1.0,
                )
            )
        else:
            bounds.append(
                UtilityBound(
                    "expected excess risk E F(x̂) − min F"
                    + (" (second-order smooth)" if L2 is not None else " (first-order smooth)"),
                    rate_algorithm5(n, float(p.dimension_x), target, L0, L1, L2),
                    "rate with unit constants",
                    f"{SOURCE}, Theorem 4.2 [A] (its δ-dependence is not recoverable)",
                    conditions,
                    target <= 1.0,
                )
            )
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
    return UtilityReport(PrivateMirrorDescent.id, tuple(bounds), reason, tuple(recs))


def _recommendations(
    p: PrivateMirrorDescentParams, sched: Schedule, eta: float, target: float, delta: float
) -> list[Recommendation]:
    """The paper's parameters for the target [R], dpcal's tuned ones [D], and the stepsize cap."""
    out: list[Recommendation] = []
    n, L0, L1 = p.dataset_size, p.lipschitz, p.smoothness
    L2 = p.second_order_smoothness or 0.0
    if p.variant in ("first-order", "second-order"):
        reg = regime(p)
        d = float(p.dimension_x) + float(p.dimension_y or 0)
        paper = paper_parameters(n, d, target, delta, L0, L1, L2, reg)
        k_rule = {
            "quadratic": "K = 1 (quadratic: no sparsification bias)",
            "first": "K = max(1, round((L₁/L₀)^{4/3}(nε)^{2/3}/(ℓ log^{1/3}(1/δ))))",
            "second": "K = max(1, round((L₂/L₀)^{4/5}(nε)^{2/5}/(ℓ^{3/5} log^{1/5}(1/δ))))",
        }[reg]
        source = "seed 001, Theorem 3.1, parameters from balancing its bound [R] (spec §4.3), ℓ = log(d₁ + d₂)"
        out += [
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
        tuned = tune_algorithm1(p, target, delta)
        rule = (
            f"dpcal [D]: minimises the explicit bound (value {tuned.bound:.6g}) over B ∈ {{round(1.25^i)}} ≤ n/4 and "
            "K ∈ {1, 2, …, 1024} (K = 1 if quadratic), with η = min(√(2ℓ₁₂/(5T))/L₀, Bε₀/(4L₀)) and ε₀ the "
            "largest the bounded-range zCDP bound certifies for k = 2(T − 1)K samples (spec §7.1, explicit_bound_opt)"
        )
        out += [
            Recommendation("batch_size", tuned.batch_size, rule, False),
            Recommendation("steps", tuned.steps, rule, False),
            Recommendation("samples_per_step", tuned.samples_per_step, rule, False),
            Recommendation("stepsize", tuned.stepsize, rule, False),
        ]
        eta_np = nonprivate_stepsize(sched.steps, ell12(p), L0)
        if eta > eta_np:
            out.append(
                Recommendation(
                    "stepsize",
                    eta_np,
                    f"the calibrated η = {eta:.6g} exceeds η_np = √(2ℓ₁₂/(5T))/L₀ = {eta_np:.6g} [D], beyond which "
                    "the explicit bound grows; any smaller η is also private",
                    False,
                )
            )
    elif p.variant == "bias-reduced":
        m, level, cap = tune_algorithm3(p)
        source = "seed 001, Theorem 3.14's parameters, reconstructed [D] (spec §4.5)"
        out += [
            Recommendation("stopping_parameter", m, f"M = ⌊n/B⌋; {source}", False),
            Recommendation(
                "max_level", level, f"N_max = max(1, ⌊log₂ M⌋ − 1) so that 2^{{N_max}} ≤ M; {source}", False
            ),
            Recommendation(
                "stepsize",
                min(eta, cap),
                "η = min(η_priv, √(ℓ/T₀)/σ), T₀ = M/(4·E2^N), σ² = 2L₀² + 2560L₂² + 768·N_max·L₁²(1 + ln 2d); "
                + source,
                False,
            ),
        ]
    else:
        out.append(
            Recommendation(
                "steps",
                n // p.batch_size,
                "T = ⌊n/B⌋ (one pass); the schedule constants t₀, p, K' of Algorithm 5 are lost [R] (spec §4.7)",
                False,
            )
        )
    return out


# -- simulation (verification jobs) -----------------------------------------------------------------------------------

MAX_SIMULATED_VERTICES = 64
"""Largest simplex the simulator builds (the game's value is solved by linear programming at plan time)."""
_TABLE_MAX_BATCH = 48


class MirrorDescentProblem(ParamsModel):
    """The synthetic problem of a private-mirror-descent verification job."""

    kind: Literal["matrix-game", "linear"] | None = param(
        "matrix-game (default for the saddle-point variants): f(x, y; ξ) = xᵀA_ξy with A_ξ ∈ {±c}^{d₁×d₂}, "
        "E A_ξ = A ~ U[−c, c] (spec §7.5); the gap max_j(Aᵀx̂)_j − min_i(Aŷ)_i is exact and the game's value is "
        "solved by linear programming. linear (sco, the default there): f(x; ξ) = ⟨a_ξ, x⟩ with a_ξ ∈ {±c}^d, "
        "E a_ξ = a ~ U[−c, c]; the excess risk ⟨a, x̂⟩ − min_i a_i is exact.",
        example="matrix-game",
        default=None,
    )
    scale: float | None = param(
        "c: every gradient coordinate is ±c, so the game has L₀ = L₁ = c (linear: L₀ = c, L₁ = 0); must not exceed "
        "lipschitz (nor smoothness for the matrix game). Default: the largest allowed.",
        symbol="c",
        example=1.0,
        gt=0,
        le=1e6,
        default=None,
    )


class MirrorDescentSimulator(Simulator):
    """The variants run for real on matrix games (saddle points) or linear losses on the simplex (sco).

    utility: every trial draws its own data set (records ±c entry by entry, in one pass) and measures the exact gap
    (excess risk for sco) of the released output. The prediction is the explicit bound [D] of Algorithm 1.
    privacy-audit: each trial runs the algorithm on D (record 1 = r) or on D′ (record 1 = −r), with r = c·s tᵀ for
    alternating sign vectors s, t (linear: r = c·s), the other records fresh per trial and public; the score is the
    exact log-likelihood ratio log P_D(τ)/P_D′(τ) of the whole transcript τ of vertex samples (both score recursions
    are run along the realised transcript), the most powerful test for it. The output is a post-processing of τ, and
    the accountants bound the transcript, so the audit tests exactly what is accounted.
    """

    problem_model = MirrorDescentProblem

    def plan(
        self, params: ParamsModel, delta: float, checks: tuple[str, ...], trials: int, seed: int, problem: ParamsModel
    ) -> Plan:
        p: PrivateMirrorDescentParams = params  # type: ignore[assignment]
        pr: MirrorDescentProblem = problem  # type: ignore[assignment]
        report = PrivateMirrorDescent().privacy(p, delta)
        sched = schedule(p)
        saddle = p.variant in SADDLE_VARIANTS
        kind = pr.kind or ("matrix-game" if saddle else "linear")
        if (kind == "matrix-game") != saddle:
            raise ParameterError.single(
                "problem.kind",
                f"{kind} does not fit variant {p.variant}",
                "matrix-game for the saddle-point variants, linear for sco",
                kind,
            )
        d1, d2 = p.dimension_x, (p.dimension_y or 1)
        for name, value in (("dimension_x", d1), ("dimension_y", d2)):
            if value > MAX_SIMULATED_VERTICES:
                raise ParameterError.single(
                    name,
                    f"exceeds {MAX_SIMULATED_VERTICES}, the largest simplex verification jobs simulate",
                    f"an integer in [2, {MAX_SIMULATED_VERTICES}] for verification jobs",
                    value,
                )
        limit = min(p.lipschitz, p.smoothness) if kind == "matrix-game" else p.lipschitz
        if limit <= 0.0:
            raise ParameterError.single(
                "smoothness",
                "must be > 0 for the matrix game (its gradients are Lipschitz with constant c > 0)",
                "> 0",
                p.smoothness,
            )
        scale = pr.scale if pr.scale is not None else limit
        if scale > limit * (1.0 + 1e-12):
            raise ParameterError.single(
                "problem.scale",
                "must respect the declared constants (c ≤ lipschitz" + (", c ≤ smoothness)" if saddle else ")"),
                f"a number in (0, {limit:g}]",
                scale,
            )
        eta = p.stepsize
        assert eta is not None
        resolved: dict[str, Any] = {
            "kind": kind,
            "scale": scale,
            "dimension_x": d1,
            "variant": p.variant,
            "steps": sched.steps,
            "samples_per_step": sched.samples_per_step,
            "epsilon0": sched.epsilon0(eta),
            "samples_composed": sched.count,
        }
        if kind == "matrix-game":
            matrix = _game_matrix(seed, d1, d2, scale)
            resolved |= {"dimension_y": d2, "value": game_value(matrix)}
        else:
            vector = _linear_vector(seed, d1, scale)
            resolved |= {"minimum": float(vector.min())}
        if sched.max_level is not None:
            resolved["max_level"] = sched.max_level
        if p.variant == "sco":
            resolved |= {
                "warmup_steps": p.warmup_steps or 1,
                "refresh_period": p.refresh_period or 1,
                "final_samples": p.final_samples or sched.samples_per_step,
            }
        prediction = source = note = None
        if "utility" in checks:
            if p.variant in ("first-order", "second-order"):
                prediction = explicit_gap_bound(
                    sched.steps,
                    sched.samples_per_step,
                    eta,
                    ell12(p),
                    p.lipschitz,
                    p.smoothness,
                    p.second_order_smoothness or 0.0,
                    regime(p),
                )
                source = _EXPLICIT_SOURCE
            else:
                note = (
                    f"variant {p.variant}: the paper's bound is a rate whose constants are lost (Theorem "
                    f"{'3.14' if p.variant == 'bias-reduced' else '4.2'}); measured only"
                )
        per_step = _work_per_step(p, d1, d2, sched)
        steps = sched.steps
        runs = (1 if "utility" in checks else 0) + (2 if "privacy-audit" in checks else 0)
        work = trials * runs * steps * per_step + 10.0 * d1 * d2 * steps
        record = (
            "record 1 = r = c·s tᵀ (s, t alternating ±1), in the first batch"
            if kind == "matrix-game"
            else "the record of the batch of step ⌈(T − 1)/2⌉ = r = c·s (s alternating ±1)"
        )
        return Plan(
            algorithm=PrivateMirrorDescent.id,
            params=p.model_dump(),
            problem=resolved,
            checks=checks,
            trials=trials,
            seed=seed,
            delta=delta,
            epsilon_accounted=report.epsilon,
            accountant=report.accountant,
            epsilon_exact=None,
            exact_note="the transcript's exact ε is not closed-form (a composition of data-dependent exponential "
            "mechanisms); the audit's lower bound is compared with the accounted ε",
            utility_measure=(
                "strong duality gap max_j(Aᵀx̂)_j − min_i(Aŷ)_i of the output"
                if kind == "matrix-game"
                else "excess risk ⟨a, x̂⟩ − min_i a_i of the output"
            )
            if "utility" in checks
            else None,
            predicted_bound=prediction,
            predicted_source=source,
            prediction_note=note,
            audit_method=f"transcript of every vertex sample of the run on D ({record}) or on D′ (that record = −r), "
            "the other records fresh per trial and public; score = exact log-likelihood ratio of the transcript"
            if "privacy-audit" in checks
            else None,
            work=work,
        )

    def run_block(self, plan: Plan, rng: np.random.Generator, trials: int) -> BlockResult:
        p, pb = plan.params, plan.problem
        result: dict[str, np.ndarray] = {}
        if pb["kind"] == "matrix-game":
            matrix = _game_matrix(plan.seed, pb["dimension_x"], pb["dimension_y"], pb["scale"])
            runner = _run_algorithm3 if p["variant"] == "bias-reduced" else _run_algorithm1
            if "utility" in plan.checks:
                x, y, _ = runner(matrix, pb, p, rng, trials, None)
                result["utility"] = gap(matrix, x, y)
            if "privacy-audit" in plan.checks:
                result["score_in"] = runner(matrix, pb, p, rng, trials, True)[2]
                result["score_out"] = runner(matrix, pb, p, rng, trials, False)[2]
        else:
            vector = _linear_vector(plan.seed, pb["dimension_x"], pb["scale"])
            if "utility" in plan.checks:
                x, _ = _run_algorithm5(vector, pb, p, rng, trials, None)
                result["utility"] = x @ vector - vector.min()
            if "privacy-audit" in plan.checks:
                result["score_in"] = _run_algorithm5(vector, pb, p, rng, trials, True)[1]
                result["score_out"] = _run_algorithm5(vector, pb, p, rng, trials, False)[1]
        return BlockResult(**result)


def _work_per_step(p: PrivateMirrorDescentParams, d1: int, d2: int, sched: Schedule) -> float:
    """Work units (≈ 60 ns) per trial and step, measured: data draws, products, softmaxes, sampling, overhead."""
    entries = d1 * d2
    draw = 0.05 * (p.batch_size + 8) if p.batch_size <= _TABLE_MAX_BATCH else 2.0
    if p.variant == "bias-reduced":
        level = sched.max_level or 1
        draw = max(draw, 2.0) * 2.0  # batches of 2^N·B records: binomial draws, twice the Algorithm 1 cost
        return entries * (draw + 0.2) + (d1 + d2) * (4.0 + level) + 40.0
    k = max(sched.samples_per_step, 1)
    return entries * (draw + 0.2) + (d1 + d2) * (4.0 + 0.05 * k) + 40.0


def _game_matrix(seed: int, d1: int, d2: int, scale: float) -> np.ndarray:
    """A ~ U[−c, c]^{d₁×d₂}, a function of the job's seed (its own stream)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32 + 1001,)))
    return rng.uniform(-scale, scale, size=(d1, d2))


def _linear_vector(seed: int, d: int, scale: float) -> np.ndarray:
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32 + 1002,)))
    return rng.uniform(-scale, scale, size=d)


def game_value(matrix: np.ndarray) -> float | None:
    """v* = min_{x∈Δ} max_j (Aᵀx)_j by linear programming (HiGHS), solved on A/max|A| and scaled back (None if the
    solver fails; the value is only a sanity reference, the gap itself is exact without it)."""
    from scipy.optimize import linprog

    scale = float(np.max(np.abs(matrix)))
    if not scale > 0.0:
        return 0.0
    matrix = matrix / scale
    d1, d2 = matrix.shape
    cost = np.zeros(d1 + 1)
    cost[-1] = 1.0
    result = linprog(
        cost,
        A_ub=np.hstack([matrix.T, -np.ones((d2, 1))]),
        b_ub=np.zeros(d2),
        A_eq=np.hstack([np.ones((1, d1)), np.zeros((1, 1))]),
        b_eq=[1.0],
        bounds=[(0, None)] * d1 + [(None, None)],
        method="highs",
    )
    return None if result.x is None else float(result.x[-1]) * scale


def gap(matrix: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Strong duality gap max_j (Aᵀx)_j − min_i (Ay)_i of each row of x, y (exact for bilinear games)."""
    return np.max(x @ matrix, axis=1) - np.min(y @ matrix.T, axis=1)


def _log_softmax(theta: np.ndarray) -> np.ndarray:
    top = theta.max(axis=1, keepdims=True)
    shifted = theta - top
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _sample_counts(rng: np.random.Generator, counts: int | np.ndarray, log_p: np.ndarray) -> np.ndarray:
    """Multinomial(counts, softmax) draws per row (``counts`` samples from P(x) per trial)."""
    probs = np.exp(log_p)
    probs /= probs.sum(axis=1, keepdims=True)
    return rng.multinomial(counts, probs).astype(float)


class _RecordSums:
    """Sums of m records with entries ±c, P(+c) = (1 + A/c)/2 entrywise: c·(2·Bin(m, P) − m).

    Small fixed m draws by inverse CDF tables (one uniform per entry); otherwise numpy's binomial sampler."""

    def __init__(self, mean: np.ndarray, scale: float, size: int) -> None:
        self.prob = np.clip((1.0 + mean / scale) / 2.0, 0.0, 1.0)
        self.scale, self.size = scale, size
        self.table: np.ndarray | None = None
        if size <= _TABLE_MAX_BATCH:
            from scipy.stats import binom

            ks = np.arange(size)  # P(Bin ≤ k) for k < m
            self.table = binom.cdf(ks, size, self.prob[..., None])

    def draw(self, rng: np.random.Generator, trials: int, size: int | np.ndarray | None = None) -> np.ndarray:
        m = self.size if size is None else size
        if self.table is not None and size is None:
            u = rng.random((trials, *self.prob.shape))
            ones = np.sum(u[..., None] >= self.table, axis=-1, dtype=float)
        else:
            shape = (trials, *self.prob.shape)
            mm = np.asarray(m).reshape((-1,) + (1,) * self.prob.ndim) if np.ndim(m) else m
            ones = rng.binomial(mm, self.prob, size=shape).astype(float)
            m = mm
        return self.scale * (2.0 * ones - m)


def _audit_record(shape: tuple[int, ...], scale: float) -> np.ndarray:
    signs = [np.where(np.arange(s) % 2 == 0, 1.0, -1.0) for s in shape]
    return scale * (np.outer(signs[0], signs[1]) if len(shape) == 2 else signs[0])


def _run_algorithm1(
    matrix: np.ndarray,
    pb: Mapping[str, Any],
    p: Mapping[str, Any],
    rng: np.random.Generator,
    trials: int,
    inside: bool | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 1 on the matrix game for ``trials`` independent runs: (x̂, ŷ, transcript log-likelihood ratio).

    ``inside``: None for a utility run (fresh records), True/False for an audit run on D / D′."""
    d1, d2 = matrix.shape
    c, b, eta = pb["scale"], p["batch_size"], p["stepsize"]
    steps, k = pb["steps"], pb["samples_per_step"]
    audit = inside is not None
    records = _RecordSums(matrix, c, b)
    others = _RecordSums(matrix, c, b - 1) if audit else None
    record = _audit_record((d1, d2), c)
    theta = [np.zeros((trials, d1)), np.zeros((trials, d2))]  # the run's own scores (D for inside, D′ otherwise)
    other = [np.zeros((trials, d1)), np.zeros((trials, d2))]  # the neighbour's scores along the same transcript
    sum_x, sum_y, llr = np.zeros((trials, d1)), np.zeros((trials, d2)), np.zeros(trials)
    sign = 1.0 if inside else -1.0
    for t in range(steps):
        lx, ly = _log_softmax(theta[0]), _log_softmax(theta[1])
        cx, cy = _sample_counts(rng, k, lx), _sample_counts(rng, k, ly)
        if audit and t > 0:
            ox, oy = _log_softmax(other[0]), _log_softmax(other[1])
            llr += sign * (np.sum(cx * (lx - ox), axis=1) + np.sum(cy * (ly - oy), axis=1))
        xs, ys = cx / k, cy / k
        sum_x += xs
        sum_y += ys
        if t == steps - 1:
            break  # the last batch's gradient never reaches a released sample
        if audit and t == 0:
            rest = others.draw(rng, trials)  # type: ignore[union-attr]
            mine, theirs = (rest + sign * record) / b, (rest - sign * record) / b
        else:
            mine = records.draw(rng, trials) / b
            theirs = mine
        theta[0] -= eta * np.einsum("tij,tj->ti", mine, ys)
        theta[1] += eta * np.einsum("tij,ti->tj", mine, xs)
        if audit:
            other[0] -= eta * np.einsum("tij,tj->ti", theirs, ys)
            other[1] += eta * np.einsum("tij,ti->tj", theirs, xs)
    return sum_x / steps, sum_y / steps, np.clip(llr, -1e6, 1e6)


def _run_algorithm3(
    matrix: np.ndarray,
    pb: Mapping[str, Any],
    p: Mapping[str, Any],
    rng: np.random.Generator,
    trials: int,
    inside: bool | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 3 (multilevel oracle, random stopping) on the matrix game, ``trials`` runs at once.

    For a bilinear f the multilevel correction G(z_full) − ½(G(z_a) + G(z_b)) vanishes identically (G is linear in
    the sparsified point), so g = G(z₀) exactly; the other 2^N − 1 draws per player only enter the transcript, and
    are drawn for the audit (a utility run skips them: they do not affect the output)."""
    d1, d2 = matrix.shape
    c, b, eta = pb["scale"], p["batch_size"], p["stepsize"]
    budget, level = pb["steps"], pb["max_level"]
    audit = inside is not None
    levels = np.arange(1, level + 1)
    weights = 0.5**levels
    weights /= weights.sum()
    records = _RecordSums(matrix, c, _TABLE_MAX_BATCH + 1)  # variable batch sizes: binomial draws
    record = _audit_record((d1, d2), c)
    theta = [np.zeros((trials, d1)), np.zeros((trials, d2))]
    other = [np.zeros((trials, d1)), np.zeros((trials, d2))]
    sum_x, sum_y, count, llr = np.zeros((trials, d1)), np.zeros((trials, d2)), np.zeros(trials), np.zeros(trials)
    used = np.zeros(trials, dtype=np.int64)
    active = np.ones(trials, dtype=bool)
    sign = 1.0 if inside else -1.0
    first = True
    while True:
        size = 2 ** rng.choice(levels, size=trials, p=weights)  # N_t drawn before the budget check
        active &= used + size <= budget
        if not active.any():
            break
        used += np.where(active, size, 0)
        on = active.astype(float)
        lx, ly = _log_softmax(theta[0]), _log_softmax(theta[1])
        x0, y0 = _sample_counts(rng, 1, lx), _sample_counts(rng, 1, ly)  # z₀ of the multilevel estimate
        out_x, out_y = _sample_counts(rng, 1, lx), _sample_counts(rng, 1, ly)  # "Line 8": the output samples
        sum_x += on[:, None] * out_x
        sum_y += on[:, None] * out_y
        count += on
        if audit:
            rest_x, rest_y = _sample_counts(rng, size - 1, lx), _sample_counts(rng, size - 1, ly)
            ox, oy = _log_softmax(other[0]), _log_softmax(other[1])
            llr += (
                on
                * sign
                * (
                    np.sum((x0 + rest_x + out_x) * (lx - ox), axis=1)
                    + np.sum((y0 + rest_y + out_y) * (ly - oy), axis=1)
                )
            )
        m = size * b
        if audit and first:
            rest = records.draw(rng, trials, m - 1)
            mine, theirs = rest + sign * record, rest - sign * record
        else:
            mine = records.draw(rng, trials, m)
            theirs = mine
        mine = mine / m[:, None, None]
        theta[0] -= eta * on[:, None] * np.einsum("tij,tj->ti", mine, y0)
        theta[1] += eta * on[:, None] * np.einsum("tij,ti->tj", mine, x0)
        if audit:
            theirs = theirs / m[:, None, None]
            other[0] -= eta * on[:, None] * np.einsum("tij,tj->ti", theirs, y0)
            other[1] += eta * on[:, None] * np.einsum("tij,ti->tj", theirs, x0)
        first = False
    return sum_x / count[:, None], sum_y / count[:, None], np.clip(llr, -1e6, 1e6)


def _run_algorithm5(
    vector: np.ndarray,
    pb: Mapping[str, Any],
    p: Mapping[str, Any],
    rng: np.random.Generator,
    trials: int,
    inside: bool | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 5 (exponentiated gradient + anytime online-to-batch, α_t = t) on f(x; ξ) = ⟨a_ξ, x⟩: (x̂, LLR).

    x_t = (A_{t−1}x_{t−1} + t·w_t)/A_t is kept in log space. The gradient of a linear loss does not depend on the
    private estimate x̃, so the refresh samples only enter the transcript: drawn for the audit, skipped otherwise.
    The audited record sits in the batch of step ⌈(T − 1)/2⌉: a record's weight α_s = s grows with s, while the
    samples it can influence are those after s."""
    d = vector.size
    c, b, eta = pb["scale"], p["batch_size"], p["stepsize"]
    steps, k = pb["steps"], pb["samples_per_step"]
    warmup, period, final = pb["warmup_steps"], pb["refresh_period"], pb["final_samples"]
    audit = inside is not None
    records = _RecordSums(vector, c, b)
    others = _RecordSums(vector, c, b - 1) if audit else None
    record = _audit_record((d,), c)
    theta, other = np.zeros((trials, d)), np.zeros((trials, d))
    log_x, log_xo = np.zeros((trials, d)), np.zeros((trials, d))
    llr = np.zeros(trials)
    sign = 1.0 if inside else -1.0
    slot = max(1, (steps - 1 + 1) // 2)  # the audited record's batch: weight α_s = s, felt by the samples after s
    total = 0.0
    for t in range(1, steps + 1):
        previous, total = total, total + t
        if previous == 0.0:
            log_x, log_xo = _log_softmax(theta), _log_softmax(other)
        else:
            keep, new = math.log(previous / total), math.log(t / total)
            log_x = np.logaddexp(keep + log_x, new + _log_softmax(theta))
            log_xo = np.logaddexp(keep + log_xo, new + _log_softmax(other))
        if audit and (t <= warmup or (t - warmup) % period == 0):
            llr += sign * np.sum(_sample_counts(rng, k, log_x) * (log_x - log_xo), axis=1)
        if t == steps:
            break  # g_T only moves θ_{T+1}, which x_T does not use
        if audit and t == slot:
            rest = others.draw(rng, trials)  # type: ignore[union-attr]
            mine, theirs = (rest + sign * record) / b, (rest - sign * record) / b
        else:
            mine = records.draw(rng, trials) / b
            theirs = mine
        theta -= eta * t * mine
        if audit:
            other -= eta * t * theirs
    counts = _sample_counts(rng, final, log_x)
    if audit:
        llr += sign * np.sum(counts * (log_x - log_xo), axis=1)
    return counts / final, np.clip(llr, -1e6, 1e6)


PrivateMirrorDescent.simulator = MirrorDescentSimulator()
