"""``dp-bilevel``: differentially private bilevel optimization, Algorithms 1–4 of seed 003 (Kornowski).

Specification ``shared/spec/seed003-dp-bilevel.md``. Each of the T outer steps makes **three Gaussian mechanisms**
(Algorithm 1, line 3–4; Algorithm 3 for mini-batches):

1. a private inner solve ỹ_t ≈ argmin_y g(x_t, y) by DP-Loc-GD (Algorithm 2; DP-Loc-SGD, Algorithm 4, on batches):
   K = M·T_GD noisy gradient steps, per-sample gradient bound L₀^g, sensitivity 2L₀^g/n (2L₀^g/b_in);
2. a private inner solve ỹ^λ_t ≈ argmin_y f(x_t, y) + λg(x_t, y): K steps, per-sample bound L₀^f + λL₀^g (spec §2.6
   item 3; the paper's 2λL₀^g when λ ≥ L₀^f/L₀^g), sensitivity 2(L₀^f + λL₀^g)/n;
3. the noisy penalty hypergradient g̃_t = ∇_x f(x_t, ỹ^λ_t) + λ(∇_x g(x_t, ỹ^λ_t) − ∇_x g(x_t, ỹ_t)) + N(0, σ²I), its
   per-sample terms φ_i clipped at G (default the proof constant of Lemma 4.5, 5L₁^gL₀^f/μ_g), sensitivity 2G/n.

Conventions. Replace-one neighbours (Section 2). ``noise_multiplier`` z is the multiplier of the outer release,
σ = z·2G/n (z·2G/b_out). ``inner_noise_multiplier`` z_in is that of every inner gradient step, σ_in = z_in·(its
sensitivity); by default z_in = z·√K, so that one K-step inner solve has the same Rényi budget as one outer release:
the paper's equal three-way split of each outer step (spec §3.4), in Rényi form.

Accountants.

* ``paper``: the paper's own chain (spec §3.5): Lemma 2.2 (classic Gaussian, needs ε < 1) for every release, Lemma 2.3
  amplification for batches, Lemma 2.1 (advanced composition) over the K inner steps, basic composition of the three
  mechanisms, Lemma 2.1 over the T outer steps, with δ split δ/(T+1), then /3, then /(K+1). Its calibration is the
  printed split ε/√(18T), δ/(3(T+1)) per mechanism, which by Lemma 2.1 really totals ε√(ln((T+1)/δ)) + ε² (erratum 1,
  spec §3.4), reported beside the corrected split that inverts Lemma 2.1 exactly.
* ``rdp``: the Gaussian mechanisms composed in RDP (not in the paper, spec §3.6): α/(2z²) per full-batch release; for
  batches drawn without replacement, the sampled Gaussian of Wang, Balle & Kasiviswanathan 2019 (Thm. 27).
* ``tight`` (full batch): the T(2K + 1) adaptive Gaussian releases compose exactly to μ-GDP with μ² = T(2K/z_in² +
  1/z²) (Dong, Roth & Su 2019), converted by the analytic Gaussian (Balle & Wang 2018).

Batches drawn **with replacement** (the paper's literal Algorithms 3/4) have only the paper's accounting: Lemma 2.3 as
printed keeps δ = δ₀ although a record can be drawn several times (spec §6 item 14), and the Rényi curve of such
batches has a heavy tail (all b draws hitting the record shifts the mean by its whole contribution), so dpcal
certifies nothing there; ``sampling="without-replacement"`` (the default; same utility up to constants, Remark 5.2)
is certified, its paper chain amplified by ln(1 + (b/n)(e^ε̃ − 1)), δ = (b/n)δ̃ (Balle, Barthe & Gaboardi 2018).
``best`` is the minimum over the certified accountants; in calibration, the least outer noise among rdp and tight
(which keep the inner rule), the paper's split (its own inner noise) only where neither applies. Mini-batch
calibrations whose batches are below what the paper's argument needs at the target (Lemma 2.2 on the unamplified
batch, ε̃ = ln(1 + (e^ε₁ − 1)/q) < 1, spec §3.4 caveat) are refused with the minimum named.

Utility (Section 4): the explicit bound ‖G_{L*_λ,η}(x_out)‖ ≤ 4D + √(12·L·Δ_λ/T) of Proposition 4.6's proof (spec
§4.3) with L = 1/(2η), Δ_λ ≤ Δ_F + (L₀^f)²/(2λμ_g) and D predicted from Lemma 4.4 and the explicit inner radius
(spec §4.1, reconstructed constants); the Õ rates of Theorems 4.1, 5.1, 6.1 with unit constants, corrected (K₂ with
ℓ^{5/6}, K₃/√b_out, K₁ with ℓ^{3/4}) beside the printed ones. The simulator runs Algorithm 1/3 on the spec §7.4
quadratic bilevel problem or the Section 7 ridge-tuning problem (closed forms for L*_λ, F, Δ_F).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Literal

import numpy as np
from scipy import optimize

from .. import validation as check
from ..calibration import calibrate_rdp
from ..conversions import DEFAULT_ORDERS, Conversion, epsilon_for_linear_rdp, linear_rdp_for_epsilon, order_grid
from ..errors import CalibrationError, FieldIssue, ParameterError
from ..events import ComposedEvent, DpEvent, GaussianEvent, SampledWithoutReplacementEvent, SelfComposedEvent
from ..mechanisms.gaussian import gaussian_log_delta, gdp_mu_for
from ..params import NOISE_MULTIPLIER_RANGE, Count, ParamsModel, bounded_count, param, resolve_noise_multiplier
from ..plans import MechanismPlan
from ..rdp import RdpAccountant
from ..registry import AlgorithmFamily, BoundInfo, register
from ..reports import (
    AccountantResult,
    Assumption,
    CalibrationReport,
    Conventions,
    Guarantee,
    Noise,
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

SOURCE = "seed 003 (Kornowski, Differentially Private Bilevel Optimization)"
MAX_COUNT = 10**12
MAX_STEPS = 10**9
MAX_CONSTANT = 1e12
MIN_CONSTANT = 1e-12
MAX_ROUNDS = 64
MAX_MULTIPLIER = 1e100
"""Calibrated multipliers beyond this are refused: the target is below what floating point resolves."""

Variant = Literal["full-batch", "mini-batch"]
Sampling = Literal["without-replacement", "with-replacement"]


class BilevelParams(ParamsModel):
    """Hyperparameters of Algorithms 1–4 of seed 003 (full-batch or mini-batch DP bilevel optimization)."""

    variant: Variant = param(
        "full-batch (Algorithm 1, inner solver DP-Loc-GD, Algorithm 2) or mini-batch (Algorithm 3, DP-Loc-SGD, "
        "Algorithm 4).",
        example="full-batch",
        default="full-batch",
    )
    dataset_size: Count = param(
        "Number of records (training and validation together, footnote 1).",
        symbol="n",
        unit="records",
        example=100000,
        ge=1,
        le=MAX_COUNT,
    )
    dimension_x: Count = param(
        "Dimension of the upper-level variable x (d_up).", symbol="d_x", unit="coordinates", example=10, ge=1, le=10**9
    )
    dimension_y: Count = param(
        "Dimension of the lower-level variable y (d_low).", symbol="d_y", unit="coordinates", example=10, ge=1, le=10**9
    )
    steps: Count = param(
        "Outer iterations (each: two private inner solves and one noisy penalty hypergradient).",
        symbol="T",
        unit="outer steps",
        example=30,
        ge=1,
        le=MAX_STEPS,
    )
    inner_steps: Count = param(
        "Noisy gradient steps per localisation round of each inner solve (the paper takes T_GD = n²).",
        symbol="T_GD",
        unit="steps per round",
        example=1000,
        ge=1,
        le=MAX_COUNT,
    )
    inner_rounds: bounded_count(1, MAX_ROUNDS) = param(
        "Localisation rounds of each inner solve; an inner solve makes K = M·T_GD noisy gradient steps.",
        symbol="M",
        unit="rounds",
        example=2,
        default=1,
    )
    batch_size_outer: bounded_count(1, MAX_COUNT) | None = param(
        "Outer batch size (mini-batch only): records per noisy penalty hypergradient. At most dataset_size.",
        symbol="b_out",
        unit="records",
        example=5000,
        default=None,
    )
    batch_size_inner: bounded_count(1, MAX_COUNT) | None = param(
        "Inner batch size (mini-batch only): records per noisy inner gradient step. At most dataset_size.",
        symbol="b_in",
        unit="records",
        example=1000,
        default=None,
    )
    sampling: Sampling | None = param(
        "How batches are drawn (mini-batch only): without-replacement (default: b distinct records uniformly at "
        "random, independently at every step; certified) or with-replacement (b i.i.d. uniform draws, Algorithms 3/4 "
        "as printed; only the paper's own accounting exists for it).",
        example="without-replacement",
        default=None,
    )
    regularization: float = param(
        "Penalty parameter λ of the value-function reformulation L_λ = f + λ(g − g*) (Section 4.1).",
        symbol="λ",
        unit="dimensionless",
        example=20.0,
        ge=MIN_CONSTANT,
        le=MAX_CONSTANT,
    )
    stepsize: float = param(
        "Outer stepsize η of the projected step x_{t+1} = Proj_𝒳(x_t − η g̃_t); Proposition 4.6 takes η = 1/(2L) with L "
        "the smoothness of L*_λ.",
        symbol="η",
        unit="x units per hypergradient unit",
        example=0.25,
        ge=MIN_CONSTANT,
        le=MAX_CONSTANT,
    )
    strong_convexity: float = param(
        "Strong convexity of g(x, ·) for every x (Assumption 2.5.5).",
        symbol="μ_g",
        unit="1/y units²",
        example=1.0,
        ge=MIN_CONSTANT,
        le=MAX_CONSTANT,
    )
    lipschitz_f: float = param(
        "Per-sample Lipschitz constant of f(·, ·; ξ), jointly in (x, y) (Assumption 2.5.4).",
        symbol="L₀^f",
        example=5.0,
        ge=MIN_CONSTANT,
        le=MAX_CONSTANT,
    )
    smoothness_f: float = param(
        "Smoothness of f (gradient Lipschitz constant, Assumption 2.5.3).",
        symbol="L₁^f",
        example=1.0,
        ge=MIN_CONSTANT,
        le=MAX_CONSTANT,
    )
    lipschitz_g: float = param(
        "Per-sample Lipschitz constant of g(x, ·; ξ) over the domain of interest 𝒴 (Assumption 2.6).",
        symbol="L₀^g",
        example=6.0,
        ge=MIN_CONSTANT,
        le=MAX_CONSTANT,
    )
    smoothness_g: float = param(
        "Per-sample smoothness of g(·, ·; ξ) (Assumption 2.5.6); at least strong_convexity.",
        symbol="L₁^g",
        example=2.0,
        ge=MIN_CONSTANT,
        le=MAX_CONSTANT,
    )
    hessian_lipschitz_g: float = param(
        "Hessian-Lipschitz constant of g (Assumption 2.5.5); enters only ℓ = max of the five constants.",
        symbol="L₂^g",
        example=0.0,
        ge=0,
        le=MAX_CONSTANT,
    )
    outer_clip_norm: float | None = param(
        "Clipping norm of the per-sample penalty hypergradients φ_i (the outer sensitivity is 2G/n). Default: the "
        "proof constant of Lemma 4.5, G = 5·L₁^g·L₀^f/μ_g, which bounds φ_i at the exact y*(x), y^λ(x) only (spec §6 "
        "item 3): the algorithm must clip at G.",
        symbol="G",
        unit="hypergradient units",
        example=50.0,
        ge=MIN_CONSTANT,
        le=MAX_CONSTANT,
        default=None,
    )
    noise_multiplier: float | None = param(
        "Noise multiplier z of the outer release: σ = z·2G/n (z·2G/b_out) per coordinate on the penalty "
        "hypergradient. Required for privacy accounting; computed by calibration.",
        symbol="z = σ/(2G/n)",
        unit="multiples of the outer sensitivity",
        example=2.0,
        ge=NOISE_MULTIPLIER_RANGE[0],
        le=NOISE_MULTIPLIER_RANGE[1],
        default=None,
    )
    inner_noise_multiplier: float | None = param(
        "Noise multiplier z_in of every inner gradient step: σ_GD = z_in·(2L/n) with L = L₀^g (ỹ problem) or "
        "L₀^f + λL₀^g (ỹ^λ problem). Default z·√(M·T_GD): each inner solve gets the Rényi budget of one outer release "
        "(the paper's equal split). Calibration keeps a given value fixed and calibrates noise_multiplier.",
        symbol="z_in",
        unit="multiples of the inner sensitivity",
        example=100.0,
        ge=NOISE_MULTIPLIER_RANGE[0],
        le=1e12,
        default=None,
    )
    initial_suboptimality: float | None = param(
        "Bound on F(x₀) − inf F (utility bounds only; Assumption 2.5.2).",
        symbol="Δ_F",
        unit="objective units",
        example=1.0,
        ge=MIN_CONSTANT,
        le=MAX_CONSTANT,
        default=None,
    )
    failure_probability: float = param(
        "Failure probability γ of the high-probability utility bounds (utility bounds only).",
        symbol="γ",
        example=0.05,
        ge=1e-300,
        lt=1,
        default=0.05,
    )
    epsilon: float | None = param(
        "ε of the run's (ε, δ) guarantee, used only by the Õ rate forms of Theorems 4.1, 5.1 and 6.1 in /v1/utility "
        "(/v1/calibrate uses its target).",
        symbol="ε",
        example=1.0,
        ge=1e-12,
        le=1e4,
        default=None,
    )

    def check(self) -> list[FieldIssue]:
        issues = []
        n = self.dataset_size
        if self.variant == "full-batch":
            for name in ("batch_size_outer", "batch_size_inner", "sampling"):
                if getattr(self, name) is not None:
                    issues.append(
                        FieldIssue(
                            (name,),
                            "applies to variant='mini-batch' only (full batch uses all n records)",
                            "omit it, or set variant='mini-batch'",
                            getattr(self, name),
                        )
                    )
        else:
            for name in ("batch_size_outer", "batch_size_inner"):
                value = getattr(self, name)
                if value is None:
                    issues.append(
                        FieldIssue((name,), "is required for variant='mini-batch'", f"an integer in [1, {n}]")
                    )
                elif value > n:
                    issues.append(FieldIssue((name,), "must not exceed dataset_size", f"an integer in [1, {n}]", value))
        if self.smoothness_g < self.strong_convexity:
            issues.append(
                FieldIssue(
                    ("smoothness_g",),
                    "must be at least strong_convexity: a μ_g-strongly convex g(x, ·) has smoothness ≥ μ_g",
                    f">= {self.strong_convexity:g}",
                    self.smoothness_g,
                )
            )
        return issues

    # -- derived quantities ----------------------------------------------------------------------------------------

    @property
    def inner_total(self) -> int:
        """K = M·T_GD: noisy gradient steps of one inner solve."""
        return self.inner_rounds * self.inner_steps

    @property
    def mini(self) -> bool:
        return self.variant == "mini-batch"

    @property
    def batch_sampling(self) -> str:
        return self.sampling or "without-replacement"

    @property
    def clip(self) -> float:
        """G: the outer per-sample bound (given, or 5L₁^gL₀^f/μ_g, Lemma 4.5's proof constant)."""
        if self.outer_clip_norm is not None:
            return self.outer_clip_norm
        return 5.0 * self.smoothness_g * self.lipschitz_f / self.strong_convexity

    @property
    def lipschitz_lambda(self) -> float:
        """Per-sample Lipschitz constant of f + λg in y (spec §2.6 item 3)."""
        return self.lipschitz_f + self.regularization * self.lipschitz_g

    @property
    def ell(self) -> float:
        """ℓ = max{L₀^f, L₁^f, L₀^g, L₁^g, L₂^g}."""
        return max(self.lipschitz_f, self.smoothness_f, self.lipschitz_g, self.smoothness_g, self.hessian_lipschitz_g)

    @property
    def kappa(self) -> float:
        return self.ell / self.strong_convexity

    @property
    def regularization_floor(self) -> float:
        """max{2L₁^f/μ_g, 2L₁^g/μ_g, L₀^f/L₀^g, L₁^f/L₁^g}: the λ the lemmas need (spec §6 item 6)."""
        mu = self.strong_convexity
        return max(
            2.0 * self.smoothness_f / mu,
            2.0 * self.smoothness_g / mu,
            self.lipschitz_f / self.lipschitz_g,
            self.smoothness_f / self.smoothness_g,
        )


# -- the mechanisms --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mechanism:
    """One of the three Gaussian mechanisms of an outer step."""

    name: str
    per_sample_bound: float
    """L (inner) or G (outer): the clipping norm of the per-sample gradients it averages."""
    records: int
    """n (full batch) or the batch size."""
    releases_per_step: int
    """K for an inner solve, 1 for the outer release."""
    dimension: int

    @property
    def sensitivity(self) -> float:
        """Replace-one L2 sensitivity of the (batch) mean: 2·bound/records."""
        return 2.0 * self.per_sample_bound / self.records


def mechanisms(p: BilevelParams) -> tuple[Mechanism, Mechanism, Mechanism]:
    """The inner solve for ỹ_t, the inner solve for ỹ^λ_t, and the outer release, in that order."""
    b_in = p.batch_size_inner if p.mini else p.dataset_size
    b_out = p.batch_size_outer if p.mini else p.dataset_size
    k = p.inner_total
    return (
        Mechanism("inner solve ỹ_t ≈ argmin_y g(x_t, y)", p.lipschitz_g, b_in, k, p.dimension_y),  # type: ignore[arg-type]
        Mechanism("inner solve ỹ^λ_t ≈ argmin_y f + λg", p.lipschitz_lambda, b_in, k, p.dimension_y),  # type: ignore[arg-type]
        Mechanism("outer penalty hypergradient g̃_t", p.clip, b_out, 1, p.dimension_x),  # type: ignore[arg-type]
    )


def inner_multiplier(p: BilevelParams, z: float) -> float:
    """z_in: given, or z·√K (each inner solve gets the Rényi budget of one outer release)."""
    return p.inner_noise_multiplier if p.inner_noise_multiplier is not None else z * math.sqrt(p.inner_total)


def sampling_rates(p: BilevelParams) -> tuple[float, float]:
    """(inner, outer) probability that a given record is in a batch: b/n without replacement, 1 − (1 − 1/n)^b with
    replacement (Lemma 2.3), 1 for full batches."""
    if not p.mini:
        return 1.0, 1.0
    n = p.dataset_size
    if p.batch_sampling == "without-replacement":
        return p.batch_size_inner / n, p.batch_size_outer / n  # type: ignore[operator]
    return _q_with_replacement(p.batch_size_inner, n), _q_with_replacement(p.batch_size_outer, n)  # type: ignore[arg-type]


def _q_with_replacement(b: int, n: int) -> float:
    """1 − (1 − 1/n)^b (Lemma 2.3)."""
    return 1.0 if n == 1 else -math.expm1(b * math.log1p(-1.0 / n))


# -- the paper's lemmas (spec §3.2), in log space ----------------------------------------------------------------------

_LOG_125 = math.log(1.25)
_LOG_DELTA_CAP = math.log(0.01)


def classic_gaussian_epsilon(noise_multiplier: float, log_delta: float) -> float:
    """Lemma 2.2: σ² ≥ 2 ln(1.25/δ)·S²/ε² ⇔ ε = √(2 ln(1.25/δ))/z (valid only where ε < 1)."""
    return math.sqrt(2.0 * (_LOG_125 - log_delta)) / noise_multiplier


def classic_gaussian_multiplier(epsilon: float, log_delta: float) -> float:
    """Lemma 2.2 solved for the multiplier: z = √(2 ln(1.25/δ))/ε."""
    return math.sqrt(2.0 * (_LOG_125 - log_delta)) / epsilon


def advanced_composition(epsilon0: float, log_delta0: float, count: int) -> float:
    """Lemma 2.1: k (ε₀, δ₀)-DP mechanisms (ε₀ < 1) compose to √(2k ln(1/δ₀))·ε₀ + 2kε₀², with δ = (k + 1)δ₀."""
    return math.sqrt(2.0 * count * -log_delta0) * epsilon0 + 2.0 * count * epsilon0 * epsilon0


def advanced_composition_inverse(epsilon: float, log_delta0: float, count: int) -> float:
    """The ε₀ with advanced_composition(ε₀) = ε: the positive root of 2kε₀² + aε₀ − ε, a = √(2k ln(1/δ₀)), written
    2ε/(a + √(a² + 8kε)) (no cancellation)."""
    a = math.sqrt(2.0 * count * -log_delta0)
    return 2.0 * epsilon / (a + math.sqrt(a * a + 8.0 * count * epsilon))


def amplify(epsilon: float, rate: float) -> float:
    """Lemma 2.3 (and sampling without replacement): ln(1 + q(e^ε − 1)), as logaddexp(ln(1 − q), ln q + ε)."""
    if rate >= 1.0:
        return epsilon
    return float(np.logaddexp(math.log1p(-rate), math.log(rate) + epsilon))


def amplify_inverse(epsilon: float, rate: float) -> float:
    """The unamplified ε̃ with amplify(ε̃) = ε: ln(1 + (e^ε − 1)/q)."""
    if rate >= 1.0:
        return epsilon
    if epsilon > 700.0:
        return epsilon - math.log(rate)
    return math.log(math.expm1(epsilon) + rate) - math.log(rate)


@dataclass(frozen=True)
class DeltaSplit:
    """The paper's δ split (log values): δ_it = δ/(T+1) per outer step, δ₁ = δ_it/3 per mechanism, δ₀ = δ₁/(K+1) per
    inner step; and the δ at which each (unamplified) Gaussian is evaluated."""

    iteration: float
    mechanism: float
    inner_step: float
    outer_gaussian: float
    inner_gaussian: float


def delta_split(p: BilevelParams, delta: float) -> DeltaSplit:
    log_it = math.log(delta) - math.log(p.steps + 1.0)
    log_1 = log_it - math.log(3.0)
    log_0 = log_1 - math.log(p.inner_total + 1.0)
    outer, inner = log_1, log_0
    if p.mini and p.batch_sampling == "without-replacement":
        # sampling without replacement amplifies (ε̃, δ̃) to (ln(1 + q(e^ε̃ − 1)), q·δ̃): the Gaussian may use δ̃ = δ/q
        # (capped at 0.01, well inside Lemma 2.2's δ ∈ (0, 1); a smaller δ̃ is always valid)
        q_in, q_out = sampling_rates(p)
        outer = min(log_1 - math.log(q_out), _LOG_DELTA_CAP)
        inner = min(log_0 - math.log(q_in), _LOG_DELTA_CAP)
    return DeltaSplit(log_it, log_1, log_0, outer, inner)


@dataclass(frozen=True)
class PaperChain:
    """ε of a run by the paper's chain of lemmas (spec §3.5), with every intermediate value and its validity."""

    epsilon: float
    per_iteration: float
    inner_solve: float
    inner_step: float
    inner_gaussian: float
    outer: float
    outer_gaussian: float
    problems: tuple[str, ...]

    @property
    def valid(self) -> bool:
        return not self.problems


def paper_chain(p: BilevelParams, z: float, z_in: float, delta: float) -> PaperChain:
    """ε(δ) for noise multipliers (z, z_in) by Lemmas 2.1–2.3 composed as in the proofs of Theorems 4.1/5.1."""
    split = delta_split(p, delta)
    q_in, q_out = sampling_rates(p)
    k, t = p.inner_total, p.steps
    inner_gaussian = classic_gaussian_epsilon(z_in, split.inner_gaussian)
    inner_step = amplify(inner_gaussian, q_in)
    inner_solve = advanced_composition(inner_step, split.inner_step, k)
    outer_gaussian = classic_gaussian_epsilon(z, split.outer_gaussian)
    outer = amplify(outer_gaussian, q_out)
    per_iteration = 2.0 * inner_solve + outer
    total = advanced_composition(per_iteration, split.iteration, t)
    return PaperChain(
        total,
        per_iteration,
        inner_solve,
        inner_step,
        inner_gaussian,
        outer,
        outer_gaussian,
        tuple(_chain_problems(inner_gaussian, outer_gaussian, per_iteration)),
    )


def _chain_problems(inner_gaussian: float, outer_gaussian: float, per_iteration: float) -> list[str]:
    problems = []
    if not inner_gaussian < 1.0:
        problems.append(
            f"Lemma 2.2 needs ε < 1, but an inner gradient step's Gaussian has ε̃ = {inner_gaussian:.6g} "
            "(inner_noise_multiplier too small)"
        )
    if not outer_gaussian < 1.0:
        problems.append(
            f"Lemma 2.2 needs ε < 1, but the outer release's Gaussian has ε̃ = {outer_gaussian:.6g} "
            "(noise_multiplier too small)"
        )
    if not per_iteration < 1.0:
        problems.append(
            f"Lemma 2.1 needs ε₀ < 1, but one outer step is ({per_iteration:.6g}, δ/(T+1))-DP by basic composition"
        )
    return problems


@dataclass(frozen=True)
class PaperSplit:
    """A budget split: per-step budget, the multipliers it prescribes, and whether the paper's lemmas support it."""

    mode: str
    """"printed" (ε/√(18T) per mechanism) or "corrected" (Lemma 2.1 inverted exactly)."""
    per_iteration: float
    outer_budget: float
    inner_budget: float | None
    """Per-solve budget (None when inner_noise_multiplier is given and kept)."""
    inner_step: float | None
    """Amplified budget of one inner gradient step, ε₀ (Lemma 2.1 inverted over K steps)."""
    noise_multiplier: float | None
    inner_noise_multiplier: float | None
    outer_gaussian: float | None
    inner_gaussian: float | None
    problems: tuple[str, ...]

    @property
    def valid(self) -> bool:
        return not self.problems and self.noise_multiplier is not None


def paper_split(p: BilevelParams, target: float, delta: float, mode: str) -> PaperSplit:
    """The multipliers of the printed split (ε/√(18T), δ/(3(T+1)) per mechanism) or the corrected one (ε_it with
    Lemma 2.1 giving exactly ε over T steps, then ε_it/3 per mechanism); a given inner_noise_multiplier is kept and the
    outer release gets what is left of ε_it."""
    split = delta_split(p, delta)
    q_in, q_out = sampling_rates(p)
    k, t = p.inner_total, p.steps
    if mode == "printed":
        per_iteration = target / math.sqrt(2.0 * t)
    else:
        per_iteration = advanced_composition_inverse(target, split.iteration, t)
    problems: list[str] = []
    if not per_iteration < 1.0:
        problems.append(f"Lemma 2.1 needs ε₀ < 1, but the per-step budget is ε_it = {per_iteration:.6g}")
    if p.inner_noise_multiplier is None:
        inner_budget: float | None = per_iteration / 3.0
        outer_budget = per_iteration / 3.0
        inner_step = advanced_composition_inverse(inner_budget, split.inner_step, k)  # type: ignore[arg-type]
        inner_gaussian = amplify_inverse(inner_step, q_in)
        z_in = classic_gaussian_multiplier(inner_gaussian, split.inner_gaussian)
    else:
        z_in = p.inner_noise_multiplier
        inner_budget = inner_step = None
        inner_gaussian = classic_gaussian_epsilon(z_in, split.inner_gaussian)
        solve = advanced_composition(amplify(inner_gaussian, q_in), split.inner_step, k)
        outer_budget = per_iteration - 2.0 * solve
    if not inner_gaussian < 1.0:
        if p.inner_noise_multiplier is not None:
            problems.append(
                f"Lemma 2.2 needs ε < 1, but the given inner_noise_multiplier gives ε̃ = {inner_gaussian:.6g}"
            )
        else:
            smallest = f" (inner batch below {minimum_batch(p, inner_step)})" if p.mini else ""
            problems.append(
                f"Lemma 2.2 needs ε < 1, but the inner gradient steps' Gaussian would need ε̃ = {inner_gaussian:.6g}"
                + smallest
            )
    if outer_budget <= 0.0:
        problems.append(
            f"the inner solves alone use {per_iteration - outer_budget:.6g} of the per-step budget ε_it = "
            f"{per_iteration:.6g}: no budget is left for the outer release"
        )
        return PaperSplit(
            mode,
            per_iteration,
            outer_budget,
            inner_budget,
            inner_step,
            None,
            z_in,
            None,
            inner_gaussian,
            tuple(problems),
        )
    outer_gaussian = amplify_inverse(outer_budget, q_out)
    if not outer_gaussian < 1.0:
        problems.append(
            f"Lemma 2.2 needs ε < 1, but the outer release's Gaussian would need ε̃ = {outer_gaussian:.6g}"
            + (f" (outer batch below {minimum_batch(p, outer_budget)})" if p.mini else "")
        )
    z = classic_gaussian_multiplier(outer_gaussian, split.outer_gaussian)
    return PaperSplit(
        mode,
        per_iteration,
        outer_budget,
        inner_budget,
        inner_step,
        z,
        z_in,
        outer_gaussian,
        inner_gaussian,
        tuple(problems),
    )


def _safe_split(p: BilevelParams, target: float, delta: float, mode: str) -> PaperSplit:
    """paper_split, or an invalid split where the target is too small for floating point."""
    try:
        found = paper_split(p, target, delta, mode)
    except (ArithmeticError, ValueError):
        found = None
    if found is not None and all(
        v is None or v < MAX_MULTIPLIER for v in (found.noise_multiplier, found.inner_noise_multiplier)
    ):
        return found
    problem = f"no finite noise meets ε = {target:.3g} at δ = {delta:.3g} (below what floating point resolves)"
    return PaperSplit(mode, target, 0.0, None, None, None, None, None, None, (problem,))


def minimum_batch(p: BilevelParams, budget: float) -> int:
    """Smallest batch b with amplify_inverse(budget, q(b)) < 1: the paper's mini-batch argument applies Lemma 2.2 to the
    unamplified batch (proofs of Theorems 5.1 and A.1), which needs q(b) > (e^budget − 1)/(e − 1) (spec §3.4 caveat).

    Without replacement the Gaussian's δ̃ = δ/q also moves with b, but only through Lemma 2.2's noise, not through ε̃."""
    n = p.dataset_size
    threshold = math.expm1(budget) / math.expm1(1.0)
    if threshold >= 1.0:
        return n + 1
    if p.batch_sampling == "without-replacement":
        b = math.floor(threshold * n) + 1
    else:
        b = 1 if n == 1 else math.floor(math.log1p(-threshold) / math.log1p(-1.0 / n)) + 1

    def works(size: int) -> bool:
        rate = size / n if p.batch_sampling == "without-replacement" else _q_with_replacement(size, n)
        return amplify_inverse(budget, rate) < 1.0

    b = max(1, min(b, n + 1))
    while b > 1 and works(b - 1):
        b -= 1
    while b <= n and not works(b):
        b += 1
    return b


# -- Rényi and Gaussian-DP accounting (not in the paper, spec §3.6) ---------------------------------------------------


def rdp_event(p: BilevelParams, z: float, z_in: float) -> DpEvent:
    """The run as events: per outer step 2K inner Gaussian steps and one outer release, T times (replace-one)."""
    k = p.inner_total
    if p.mini:
        n = p.dataset_size
        inner: DpEvent = SampledWithoutReplacementEvent(n, p.batch_size_inner, GaussianEvent(z_in))  # type: ignore[arg-type]
        outer: DpEvent = SampledWithoutReplacementEvent(n, p.batch_size_outer, GaussianEvent(z))  # type: ignore[arg-type]
    else:
        inner, outer = GaussianEvent(z_in), GaussianEvent(z)
    return SelfComposedEvent(ComposedEvent((SelfComposedEvent(inner, 2 * k), outer)), p.steps)


def full_batch_rho(p: BilevelParams, z: float, z_in: float) -> float:
    """ρ of the full-batch run, ε(α) = ρα: T·(2K/z_in² + 1/z²)/2 (Mironov 2017, Prop. 7, composed)."""
    return p.steps * (2.0 * p.inner_total / (z_in * z_in) + 1.0 / (z * z)) / 2.0


_RDP_FULL = (
    "Rényi DP of the T(2K + 1) Gaussian releases, α/(2z²) each, composed (Mironov 2017; not in seed 003, spec §3.6), "
    "converted exactly with the improved conversion (Balle et al. 2020, Thm. 21) over real α"
)
_RDP_MINI = (
    "Rényi DP of the Gaussian on batches drawn without replacement (Wang, Balle & Kasiviswanathan 2019, Thm. 27), "
    "2K inner and 1 outer release per step, composed over T steps; improved conversion (Balle et al. 2020, Thm. 21)"
)
_TIGHT_METHOD = (
    "the T(2K + 1) adaptive Gaussian releases compose exactly to μ-GDP with μ² = T(2K/z_in² + 1/z²) (Dong, Roth & "
    "Su 2019), converted by the analytic Gaussian (Balle & Wang 2018, Thm. 8): exact for this mechanism"
)
_TIGHT_MINI = (
    "dpcal's privacy-loss-distribution accountant covers Poisson sampling under add/remove-one (dp-sgd); "
    "dp-bilevel's batches are drawn without replacement under replace-one, where no tight accountant is "
    "implemented: the rdp bound is certified"
)
_WITH_REPLACEMENT = (
    "batches drawn with replacement have no certified accountant in dpcal: a record may be drawn up to b times, so "
    "the Rényi curve has a heavy tail (all b draws hitting the record shift the batch mean by its whole contribution), "
    "and Lemma 2.3's δ = δ₀ ignores repeated draws (spec §6 item 14); use sampling='without-replacement' (same "
    "utility guarantees up to constants, Remark 5.2) or accountant='paper' for the paper's own statement"
)
_PAPER_CERTIFIED = "certified upper bound (the paper's lemmas, conditions checked)"
_PAPER_LITERAL = "the paper's statement (Lemma 2.3 as printed; not certified, spec §6 item 14)"


def _paper_method(p: BilevelParams) -> str:
    amplification = ""
    if p.mini:
        amplification = (
            ", amplification by sampling without replacement ln(1 + (b/n)(e^ε̃ − 1)), δ = (b/n)δ̃ (Balle, Barthe & "
            "Gaboardi 2018)"
            if p.batch_sampling == "without-replacement"
            else ", Lemma 2.3 amplification ln(1 + (1 − (1 − 1/n)^b)(e^ε̃ − 1)) with δ = δ₀ (as printed)"
        )
    return (
        "the paper's chain (proofs of Theorems 4.1/5.1, spec §3.5): Lemma 2.2 (classic Gaussian) for every release"
        + amplification
        + ", Lemma 2.1 over the K inner steps of each solve, basic composition of the 3 mechanisms of an outer step, "
        "Lemma 2.1 over the T outer steps; δ split δ/(T+1), /3, /(K+1)"
    )


def _paper_guarantee(p: BilevelParams) -> str:
    return _PAPER_LITERAL if _paper_as_printed(p) else _PAPER_CERTIFIED


def _paper_kind(p: BilevelParams) -> Guarantee:
    return Guarantee.PAPER_AS_PRINTED if _paper_as_printed(p) else Guarantee.PAPER_VALID


def _paper_as_printed(p: BilevelParams) -> bool:
    """Lemma 2.3's chain for batches drawn with replacement is not certified (spec §6 item 14)."""
    return p.mini and p.batch_sampling == "with-replacement"


# -- the family ------------------------------------------------------------------------------------------------------


@register
class DpBilevel(AlgorithmFamily):
    id = "dp-bilevel"
    example: ClassVar[Mapping[str, Any]] = {
        "dataset_size": 100000,
        "dimension_x": 10,
        "dimension_y": 10,
        "steps": 100,
        "inner_steps": 1000,
        "inner_rounds": 2,
        "regularization": 20.0,
        "stepsize": 0.25,
        "strong_convexity": 1.0,
        "lipschitz_f": 5.0,
        "smoothness_f": 1.0,
        "lipschitz_g": 6.0,
        "smoothness_g": 2.0,
        "hessian_lipschitz_g": 0.0,
        "noise_multiplier": 60.0,
    }
    job_example: ClassVar[Mapping[str, Any] | None] = {
        "params": {
            "dataset_size": 100000,
            "dimension_x": 2,
            "dimension_y": 2,
            "steps": 10,
            "inner_steps": 100,
            "regularization": 20.0,
            "stepsize": 0.25,
            "strong_convexity": 1.0,
            "lipschitz_f": 5.0,
            "smoothness_f": 1.0,
            "lipschitz_g": 6.0,
            "smoothness_g": 2.0,
            "hessian_lipschitz_g": 0.0,
        },
        "delta": 1e-05,
        "target_epsilon": 2.0,
        "trials": 128,
        "seed": 11,
    }
    title = "Differentially private bilevel optimization (penalty method, full batch and mini-batch)"
    summary = (
        "First-order DP bilevel optimization (hyperparameter tuning, meta-learning): each outer step runs two private "
        "inner solvers (localized noisy GD/SGD) and releases a Gaussian-noised penalty hypergradient. Three Gaussian "
        "mechanisms per outer step, accounted by the paper's chain of lemmas (its printed budget split and the "
        "corrected one), in Rényi DP, and exactly by Gaussian DP for full batches; predicted hypergradient norms."
    )
    source = f"{SOURCE}: Algorithms 1–4, Lemmas 2.1–2.3, 4.3–4.5, Proposition 4.6, Theorems 4.1, 5.1, 6.1, 8.2, A.1"
    params_model = BilevelParams
    accountants = ("rdp", "tight", "paper")
    accountant_notes = MappingProxyType({})
    noise_fields = ("noise_multiplier",)
    assumptions = (
        "Assumptions 2.5 and 2.6: f, g smooth; g(x, ·) μ_g-strongly convex; per-sample Lipschitz constants L₀^f "
        "(jointly) and L₀^g (in y, over the domain of interest 𝒴).",
        "Per-sample inner gradients are clipped at their Lipschitz constants (L₀^g, L₀^f + λL₀^g), per-sample penalty "
        "hypergradients at G (outer_clip_norm): the sensitivities 2L/n, 2G/n then hold deterministically; where the "
        "assumptions hold, clipping never acts (spec §2.6 items 4–5).",
        "Neighbouring datasets differ in one record (replace-one, Section 2); n is public.",
        "Every iterate and inner iterate may be released; the output rule argmin_t ‖x_{t+1} − x_t‖ is post-processing.",
        "Mini-batch: batches drawn independently at every step, without replacement by default (the paper draws with "
        "replacement; only its own statement covers that).",
    )
    bounds = (
        BoundInfo(
            "Paper chain with the printed split ε/√(18T), δ/(3(T+1)) and the corrected split",
            "privacy",
            f"{SOURCE}, Lemmas 2.1–2.3, proofs of Theorems 4.1 and 5.1 (erratum: the printed split totals "
            "ε√(ln((T+1)/δ)) + ε², spec §3.4)",
            (
                "every Gaussian ε̃ < 1 (Lemma 2.2)",
                "per-step ε_it < 1 (Lemma 2.1)",
                "mini-batch: batches at least the minimum the Theorem 5.1 argument needs",
            ),
            "paper",
        ),
        BoundInfo(
            "Rényi composition of the Gaussian releases",
            "privacy",
            "Mironov 2017, Prop. 7 (not in seed 003, spec §3.6)",
            ("variant = full-batch",),
            "rdp",
        ),
        BoundInfo(
            "Rényi DP of the Gaussian on batches drawn without replacement",
            "privacy",
            "Wang, Balle & Kasiviswanathan 2019, Thm. 27",
            ("variant = mini-batch", "sampling = without-replacement"),
            "rdp",
        ),
        BoundInfo(
            "Gaussian-DP composition, analytic Gaussian (exact)",
            "privacy",
            "Dong, Roth & Su 2019; Balle & Wang 2018, Thm. 8",
            ("variant = full-batch",),
            "tight",
        ),
        BoundInfo(
            "Explicit hypergradient bound ‖G_{L*_λ,η}(x_out)‖ ≤ 4D + √(12·L·Δ_λ/T)",
            "utility",
            f"{SOURCE}, Proposition 4.6 (deterministic form, spec §4.3), Lemma 4.4 (first step), Lemma 4.3(i) explicit",
            ("noise given", "initial_suboptimality given", "stepsize ≤ 1/(2·smoothness of L*_λ)", "λ ≥ λ_min"),
        ),
        BoundInfo(
            "Inner solver accuracy (explicit localisation radius)",
            "utility",
            f"{SOURCE}, Theorems 8.2/A.1 (explicit radius of spec §4.1, reconstructed)",
            ("noise given",),
        ),
        BoundInfo(
            "Theorem 4.1 / 5.1 rates (corrected K₂ = Δ_F^{1/6}ℓ^{5/6}κ^{11/6}, K₃/√b_out) and as printed",
            "utility",
            f"{SOURCE}, Theorems 4.1, 5.1 (errata §6 items 8, 9)",
            ("epsilon and initial_suboptimality given", "α ≤ ℓκ³·min{1/(2κ), L₀^g/L₀^f, L₁^g/L₁^f, Δ_F/(ℓκ)}"),
        ),
        BoundInfo(
            "Theorem 6.1 rate (population hypergradient)",
            "utility",
            f"{SOURCE}, Theorem 6.1 (K₁ with ℓ^{{3/4}}, erratum §6 item 10)",
            ("epsilon and initial_suboptimality given",),
        ),
    )

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan | None:
        """Per outer step 2K inner Gaussian steps and one outer release, T times, under replace-one; None for
        batches drawn with replacement (no event describes them)."""
        p: BilevelParams = self.parse(params)
        if p.mini and p.batch_sampling == "with-replacement":
            return None
        z = resolve_noise_multiplier(p.noise_multiplier, None, 1.0)
        return MechanismPlan(rdp_event(p, z, inner_multiplier(p, z)), "replace-one")

    # -- privacy ---------------------------------------------------------------------------------------------------

    def _privacy(
        self,
        params: Mapping[str, Any] | BilevelParams,
        delta: float,
        accountant: str = "best",
        orders: Sequence[float] | np.ndarray | None = None,
        refine: bool = True,
    ) -> PrivacyReport:
        p: BilevelParams = self.parse(params)
        self.check_accountant(accountant)
        d = check.delta("delta", delta)
        grid = order_grid(orders)
        z = resolve_noise_multiplier(p.noise_multiplier, None, 1.0)
        z_in = inner_multiplier(p, z)
        results, curve, conversion = _privacy_results(p, z, z_in, d, grid, refine)
        chosen = choose_accountant(results, accountant)
        if not math.isfinite(chosen.epsilon):  # type: ignore[arg-type]
            raise ParameterError.single(
                "noise_multiplier", "is too small for a finite ε bound at this δ", "a larger value"
            )
        chain = paper_chain(p, z, z_in, d)
        warnings = list(conversion.warnings if conversion is not None else ()) + _notes(p)
        if not chain.valid:
            warnings.append("the paper's chain does not apply at this noise: " + "; ".join(chain.problems))
        return PrivacyReport(
            algorithm=self.id,
            epsilon=chosen.epsilon,  # type: ignore[arg-type]
            delta=d,
            accountant=chosen.name,
            optimal_order=next((r.optimal_order for r in results if r.name == "rdp"), None),
            rdp=curve,
            accountants=tuple(results),
            noise=_noise(p, z, z_in),
            conventions=_conventions(p, z_in),
            warnings=tuple(warnings),
            releases=_releases(p, z, z_in, chain),
        )

    # -- calibration -----------------------------------------------------------------------------------------------

    def _calibrate(
        self,
        params: Mapping[str, Any] | BilevelParams,
        target_epsilon: float,
        delta: float,
        accountant: str = "best",
        orders: Sequence[float] | np.ndarray | None = None,
    ) -> CalibrationReport:
        p: BilevelParams = self.parse(params)
        self.check_accountant(accountant)
        target = check.positive("target_epsilon", target_epsilon)
        d = check.delta("delta", delta)
        grid = order_grid(orders)
        notes: list[str] = []
        if p.inner_noise_multiplier is not None:
            notes.append(
                f"inner_noise_multiplier = {p.inner_noise_multiplier:.6g} was kept fixed: only noise_multiplier "
                "(the outer release) was calibrated, against what the inner solves leave of the budget"
            )
        printed = _safe_split(p, target, d, "printed")
        corrected = _safe_split(p, target, d, "corrected")
        _refuse_small_batches(p, corrected)

        results = _calibration_results(p, target, d, grid, corrected)
        if not any(r.applicable for r in results):
            raise CalibrationError(
                f"no accountant can meet ε = {target:.6g} at δ = {d:.3g}: "
                + "; ".join(dict.fromkeys(f"{r.name}: {r.reason}" for r in results))
            )
        chosen = _choose_calibration(results, accountant)
        z = chosen.noise_multiplier
        z_in = corrected.inner_noise_multiplier if chosen.name == "paper" else inner_multiplier(p, z)  # type: ignore[arg-type]
        update = {"noise_multiplier": z} | ({"inner_noise_multiplier": z_in} if chosen.name == "paper" else {})
        calibrated = p.model_copy(update=update)
        report = self.privacy(calibrated, d, "best" if chosen.name != "paper" else "paper", grid)
        if chosen.name == "paper" and p.inner_noise_multiplier is None:
            notes.append(
                f"the paper's split sets the inner noise too: pass inner_noise_multiplier = {z_in:.6g} with "
                f"noise_multiplier = {z:.6g} to reproduce this calibration"
            )
        paper = _paper_calibration(p, target, d, printed, corrected)
        notes.extend(_split_warnings(p, target, d, printed, corrected, paper))
        utility = self.utility(calibrated.model_copy(update={"epsilon": min(max(target, 1e-12), 1e4)}))
        return CalibrationReport(
            algorithm=self.id,
            target_epsilon=target,
            delta=d,
            noise_multiplier=z,
            noise_std=z * mechanisms(p)[2].sensitivity,  # type: ignore[operator]
            epsilon=chosen.epsilon,  # type: ignore[arg-type]
            accountant=chosen.name,
            optimal_order=chosen.optimal_order,
            rdp=report.rdp,
            accountants=tuple(results),
            noise=report.noise,
            conventions=report.conventions,
            utility=utility,
            utility_reason=None if utility.bounds else utility.reason,
            paper=paper,
            paper_reason=None,
            calibrated_parameter="noise_multiplier",
            calibrated_value=z,  # type: ignore[arg-type]
            warnings=tuple(notes + [w for w in report.warnings if w not in notes]),
            releases=report.releases,
            recommended=utility.recommended,
        )

    # -- utility ---------------------------------------------------------------------------------------------------

    def utility(self, params: Mapping[str, Any] | BilevelParams) -> UtilityReport:
        p: BilevelParams = self.parse(params)
        return utility_report(p)


def _privacy_results(
    p: BilevelParams, z: float, z_in: float, d: float, grid: np.ndarray, refine: bool
) -> tuple[list[AccountantResult], RdpCurve | None, Conversion | None]:
    results: list[AccountantResult] = []
    curve: RdpCurve | None = None
    conversion: Conversion | None = None
    with_replacement = p.mini and p.batch_sampling == "with-replacement"
    if p.mini:
        results.append(AccountantResult("tight", False, reason=_WITH_REPLACEMENT if with_replacement else _TIGHT_MINI))
    else:
        mu = math.sqrt(2.0 * full_batch_rho(p, z, z_in))
        results.append(AccountantResult("tight", True, _gdp(mu, d), "exact", _TIGHT_METHOD))
    if with_replacement:
        results.append(AccountantResult("rdp", False, reason=_WITH_REPLACEMENT))
    elif p.mini:
        conversion = RdpAccountant("replace-one").epsilon(rdp_event(p, z, z_in), d, grid, refine)
        results.append(
            AccountantResult(
                "rdp",
                True,
                conversion.value,
                "certified upper bound",
                _RDP_MINI,
                optimal_order=conversion.optimal_order,
            )
        )
        curve = RdpCurve(
            tuple(float(a) for a in conversion.orders),
            tuple(float(e) if math.isfinite(e) else None for e in conversion.rdp),
        )
    else:
        rho = full_batch_rho(p, z, z_in)
        epsilon, alpha = epsilon_for_linear_rdp(rho, d)
        results.append(
            AccountantResult(
                "rdp", True, epsilon, "certified upper bound", _RDP_FULL, optimal_order=_finite_order(alpha)
            )
        )
        curve = RdpCurve(tuple(grid.tolist()), tuple(_finite_list(rho * grid)))
    chain = paper_chain(p, z, z_in, d)
    if chain.valid and math.isfinite(chain.epsilon):
        results.append(
            AccountantResult("paper", True, chain.epsilon, _paper_guarantee(p), _paper_method(p), kind=_paper_kind(p))
        )
    else:
        results.append(AccountantResult("paper", False, reason="; ".join(chain.problems) or "ε is not finite"))
    return results, curve, conversion


def _choose_calibration(results: list[AccountantResult], accountant: str) -> AccountantResult:
    """``best``: the least outer noise among the accountants that keep the family's inner rule (rdp, tight); the paper's
    split, which sets its own inner noise, only when neither applies."""
    if accountant != "best":
        return choose_accountant(results, accountant, key="noise_multiplier")
    usable = [r for r in results if r.counts_for_best and r.name != "paper"]
    if not usable:
        return choose_accountant(results, "best", key="noise_multiplier")
    return min(usable, key=lambda r: r.noise_multiplier)  # type: ignore[arg-type, return-value]


def _calibration_results(
    p: BilevelParams, target: float, d: float, grid: np.ndarray, corrected: PaperSplit
) -> list[AccountantResult]:
    """Each accountant's smallest outer multiplier z (inner rule z_in = z√K, or the given z_in kept) meeting the target;
    the paper's is the corrected split's."""
    results: list[AccountantResult] = []
    fixed = p.inner_noise_multiplier
    k, t = p.inner_total, p.steps
    with_replacement = p.mini and p.batch_sampling == "with-replacement"

    def solve_full(scale: float, name: str, epsilon_of: Any) -> AccountantResult:
        # scale is the Gaussian-DP μ² (tight) or 2ρ (rdp) the target allows; μ² = T(2K/z_in² + 1/z²), which is
        # 3T/z² under the rule z_in = z√K
        inverse_square = scale / (3.0 * t) if fixed is None else scale / t - 2.0 * k / (fixed * fixed)
        if not inverse_square > 0.0:
            return AccountantResult(name, False, reason=_inner_exhausts(fixed))
        z = 1.0 / math.sqrt(inverse_square)
        step = 1e-16
        while epsilon_of(z) > target:  # rounding (or cancellation with a fixed inner noise): geometric search up
            z *= 1.0 + step
            step *= 2.0
            if z > MAX_MULTIPLIER:
                reason = _inner_exhausts(fixed) if fixed is not None else _TOO_SMALL.format(target=target, delta=d)
                return AccountantResult(name, False, reason=reason)
        return AccountantResult(
            name,
            True,
            epsilon_of(z),
            "exact" if name == "tight" else "certified upper bound",
            _TIGHT_METHOD if name == "tight" else _RDP_FULL,
            optimal_order=None if name == "tight" else _finite_order(epsilon_for_linear_rdp(_rho(z), d)[1]),
            noise_multiplier=z,
        )

    def _rho(z: float) -> float:
        return full_batch_rho(p, z, inner_multiplier(p, z))

    if with_replacement:
        results.append(AccountantResult("tight", False, reason=_WITH_REPLACEMENT))
        results.append(AccountantResult("rdp", False, reason=_WITH_REPLACEMENT))
    elif p.mini:
        results.append(AccountantResult("tight", False, reason=_TIGHT_MINI))
        accountant = RdpAccountant("replace-one")
        try:
            found = calibrate_rdp(
                lambda z: accountant.curve(rdp_event(p, z, inner_multiplier(p, z))),
                d,
                target,
                orders=grid,
                initial=min(max(corrected.noise_multiplier or 1.0, 1e-4), 1e8),
            )
            results.append(
                AccountantResult(
                    "rdp",
                    True,
                    found.conversion.value,
                    "certified upper bound",
                    _RDP_MINI,
                    optimal_order=found.conversion.optimal_order,
                    noise_multiplier=found.noise,
                )
            )
        except CalibrationError as error:
            results.append(AccountantResult("rdp", False, reason=str(error)))
        except ArithmeticError:
            results.append(AccountantResult("rdp", False, reason=_TOO_SMALL.format(target=target, delta=d)))
    else:
        for name in ("tight", "rdp"):
            try:
                if name == "tight":
                    mu = gdp_mu_for(target, d)
                    results.append(solve_full(mu * mu, name, lambda z: _gdp(math.sqrt(2.0 * _rho(z)), d)))
                else:
                    rho = linear_rdp_for_epsilon(target, d)
                    results.append(solve_full(2.0 * rho, name, lambda z: epsilon_for_linear_rdp(_rho(z), d)[0]))
            except (ArithmeticError, ValueError):
                results.append(AccountantResult(name, False, reason=_TOO_SMALL.format(target=target, delta=d)))

    if corrected.valid:
        z, z_in = corrected.noise_multiplier, corrected.inner_noise_multiplier
        chain = paper_chain(p, z, z_in, d)  # type: ignore[arg-type]
        step = 1e-15
        while chain.epsilon > target and step < 1.0:  # rounding: never above the target (geometric search)
            z, z_in = z * (1 + step), z_in if fixed is not None else z_in * (1 + step)  # type: ignore[operator]
            chain = paper_chain(p, z, z_in, d)  # type: ignore[arg-type]
            step *= 2.0
    if corrected.valid and chain.valid and chain.epsilon <= target:
        corrected_note = (
            f"corrected split: ε_it = {corrected.per_iteration:.6g} per outer step (Lemma 2.1 inverted exactly over "
            f"T = {t}), outer release {corrected.outer_budget:.6g}"
            + (f", each inner solve {corrected.inner_budget:.6g}" if corrected.inner_budget is not None else "")
            + f"; inner_noise_multiplier = {z_in:.6g}"
        )
        results.append(
            AccountantResult(
                "paper",
                True,
                chain.epsilon,
                _paper_guarantee(p),
                _paper_method(p) + "; " + corrected_note,
                noise_multiplier=z,
                kind=_paper_kind(p),
            )
        )
    else:
        reason = "; ".join(corrected.problems) or _TOO_SMALL.format(target=target, delta=d)
        results.append(AccountantResult("paper", False, reason="corrected split: " + reason))
    return results


_TOO_SMALL = (
    "no finite noise meets ε = {target:.3g} at δ = {delta:.3g} (the target is below what floating point resolves)"
)


def _inner_exhausts(fixed: float | None) -> str:
    return (
        f"the inner solves alone, with the given inner_noise_multiplier = {fixed:.6g}, already exceed the target: "
        "no outer noise can meet it (raise inner_noise_multiplier or omit it)"
    )


def _refuse_small_batches(p: BilevelParams, corrected: PaperSplit) -> None:
    """Refuse batches below what the paper's mini-batch argument needs at this target (spec §3.4 caveat): Lemma 2.2 is
    applied to the unamplified batch, so ε̃ = ln(1 + (e^{ε_b} − 1)/q) < 1 with ε_b the release's share of the budget."""
    if not p.mini or not corrected.per_iteration < 1.0:
        return
    issues = []
    n = p.dataset_size
    checks = [("batch_size_outer", p.batch_size_outer, corrected.outer_budget, "outer release")]
    if corrected.inner_step is not None:
        checks.append(("batch_size_inner", p.batch_size_inner, corrected.inner_step, "inner gradient step"))
    for name, size, budget, what in checks:
        if budget <= 0.0:
            continue
        smallest = minimum_batch(p, budget)
        if size < smallest:  # type: ignore[operator]
            allowed = f"an integer in [{smallest}, {n}]" if smallest <= n else "none at this target: use full-batch"
            issues.append(
                FieldIssue(
                    (name,),
                    f"is too small for the mini-batch privacy argument (proofs of Theorems 5.1/A.1): Lemma 2.2 must "
                    f"hold on the unamplified batch, ε̃ = ln(1 + (e^ε₁ − 1)/q) < 1, where ε₁ = {budget:.6g} is the "
                    f"{what}'s share of the target under the corrected split; the minimum is {smallest} "
                    "(spec §3.4 caveat)",
                    allowed,
                    size,
                )
            )
    if issues:
        raise ParameterError(issues)


def _paper_calibration(
    p: BilevelParams, target: float, d: float, printed: PaperSplit, corrected: PaperSplit
) -> PaperCalibration:
    """The printed split as printed, what it really totals by Lemma 2.1, and what our rigorous accountant certifies."""
    source = (
        f"{SOURCE}, proofs of Theorems 4.1/5.1: (ε/√(18T), δ/(3(T+1))) per mechanism, 3 mechanisms per outer step "
        "(printed split)"
    )
    if printed.noise_multiplier is None:
        return PaperCalibration(source, None, target, None, None, False, "; ".join(printed.problems))
    z, z_in = printed.noise_multiplier, printed.inner_noise_multiplier
    chain = paper_chain(p, z, z_in, d)  # type: ignore[arg-type]
    certified, by = None, None
    if not (p.mini and p.batch_sampling == "with-replacement"):
        results, _, _ = _privacy_results(p, z, z_in, d, DEFAULT_ORDERS, True)  # type: ignore[arg-type]
        rigorous = [r for r in results if r.applicable and r.name != "paper"]
        if rigorous:
            best = min(rigorous, key=lambda r: r.epsilon)  # type: ignore[arg-type, return-value]
            certified, by = best.epsilon, best.name
    note = (
        f"per mechanism ε₁ = ε/√(18T) = {printed.outer_budget:.6g}, δ₁ = δ/(3(T+1)); noise_multiplier = {z:.6g}, "
        f"inner_noise_multiplier = {z_in:.6g} (Lemma 2.2 exactly, Lemma 2.1 inverted over K = {p.inner_total} inner "
        f"steps). By the paper's own Lemma 2.1 these {p.steps} outer steps total ε√(ln((T+1)/δ)) + ε² = "
        f"{chain.epsilon:.6g}, not {target:g} (erratum, spec §3.4)"
    )
    if corrected.valid:
        note += (
            f"; the corrected split (ε_it = {corrected.per_iteration:.6g}, outer {corrected.outer_budget:.6g}) needs "
            f"noise_multiplier = {corrected.noise_multiplier:.6g}, inner_noise_multiplier = "
            f"{corrected.inner_noise_multiplier:.6g}"
        )
    if printed.problems:
        note += "; the printed split also breaks the lemmas' conditions: " + "; ".join(printed.problems)
    valid = certified is not None and certified <= target and not printed.problems
    return PaperCalibration(source, z, target, certified, by, valid, note)


def _split_warnings(
    p: BilevelParams, target: float, d: float, printed: PaperSplit, corrected: PaperSplit, paper: PaperCalibration
) -> list[str]:
    notes = []
    if printed.noise_multiplier is not None:
        total = paper_chain(p, printed.noise_multiplier, printed.inner_noise_multiplier, d).epsilon  # type: ignore[arg-type]
        notes.append(
            f"erratum (spec §3.4, §6 item 1): the printed split ε/√(18T) per mechanism really totals "
            f"ε√(ln((T+1)/δ)) + ε² = {total:.6g} by Lemma 2.1, not ε = {target:g}"
            + (
                f"; the corrected split ε_it = {corrected.per_iteration:.6g} per outer step (outer release "
                f"{corrected.outer_budget:.6g}) inverts Lemma 2.1 exactly"
                if corrected.valid
                else ""
            )
        )
    if paper.epsilon_certified is not None and paper.epsilon_certified > target:
        notes.append(
            f"the paper's printed calibration under-noises: {paper.certified_by} certifies ε = "
            f"{paper.epsilon_certified:.6g} > {target:g} for its noise"
        )
    return notes


def _notes(p: BilevelParams) -> list[str]:
    notes = [
        f"the outer sensitivity 2G/n assumes per-sample penalty hypergradients clipped at G = {p.clip:.6g}: Lemma 4.5 "
        "bounds them only at the exact y*(x), y^λ(x), not at the private ỹ's (spec §6 item 3)"
    ]
    if p.mini and p.batch_sampling == "with-replacement":
        notes.append(_WITH_REPLACEMENT)
    if p.regularization < p.lipschitz_f / p.lipschitz_g:
        notes.append(
            f"λ < L₀^f/L₀^g: the ỹ^λ problem's per-sample bound L₀^f + λL₀^g = {p.lipschitz_lambda:.6g} is used (the "
            "paper's 2λL₀^g needs λ ≥ L₀^f/L₀^g)"
        )
    return notes


# -- presentation ----------------------------------------------------------------------------------------------------


_GDP_SMALL_MU = 1e-8


def _gdp(mu: float, delta: float) -> float:
    """Smallest ε with δ_μ(ε) ≤ δ for μ-GDP (Balle & Wang 2018), never below the true value.

    The same computation as :func:`~accountants.mechanisms.gaussian.gdp_epsilon` on its profile
    :func:`~accountants.mechanisms.gaussian.gaussian_log_delta`, with two guards for the ends of the ranges, where
    gdp_epsilon's one-sided correction (steps of 1e-13 relative after an absolute xtol of 1e-15) can spin for ever: a
    relative tolerance only, and a geometric correction. Below μ = 1e-8 the profile cancels catastrophically; there
    ε = 0 where δ ≥ δ_μ(0) = erf(μ/(2√2)) and otherwise the upper bound μ²/2 + μ√(2 ln(1/δ)) (μ-GDP ⇒ μ²/2-zCDP)."""
    if mu <= 0.0:
        return 0.0
    target = math.log(delta)
    if mu < _GDP_SMALL_MU:
        return 0.0 if delta >= math.erf(mu / (2.0 * math.sqrt(2.0))) else mu * mu / 2.0 + mu * math.sqrt(-2.0 * target)
    if gaussian_log_delta(mu, 0.0) <= target:
        return 0.0
    hi = max(1e-3, mu * mu / 2.0 + mu * math.sqrt(-2.0 * target))
    while gaussian_log_delta(mu, hi) > target:
        hi *= 2.0
    root = optimize.brentq(lambda e: gaussian_log_delta(mu, e) - target, 0.0, hi, xtol=1e-300, rtol=1e-13)
    step = 1e-13
    while gaussian_log_delta(mu, root) > target:
        root = root * (1.0 + step) + 1e-300
        step *= 2.0
    return root


def _finite_order(alpha: float) -> float | None:
    return alpha if math.isfinite(alpha) else None


def _finite_list(values: np.ndarray) -> list[float | None]:
    return [float(v) if math.isfinite(v) else None for v in values]


_SAMPLING_TEXT = {
    "full-batch": "full batch: every step uses all n records (no sampling)",
    "without-replacement": "without replacement: every inner step draws b_in distinct records and every outer step "
    "b_out, uniformly at random and independently (the paper draws with replacement; Remark 5.2)",
    "with-replacement": "with replacement: b i.i.d. uniform draws per step (Algorithms 3/4 as printed, Lemma 2.3)",
}


def _sampling_key(p: BilevelParams) -> str:
    return p.batch_sampling if p.mini else "full-batch"


def _noise(p: BilevelParams, z: float, z_in: float) -> Noise:
    inner_g, inner_l, outer = mechanisms(p)
    return Noise(
        noise_multiplier=z,
        noise_std=z * outer.sensitivity,
        sensitivity=outer.sensitivity,
        sensitivity_rule=(
            f"noise_multiplier z is the outer release's std over its replace-one sensitivity 2G/{outer.records} = "
            f"{outer.sensitivity:.6g} (G = {p.clip:.6g}); every inner step has multiplier z_in = {z_in:.6g} over its "
            f"own sensitivity: 2L₀^g/{inner_g.records} = {inner_g.sensitivity:.6g} (ỹ problem), "
            f"2(L₀^f + λL₀^g)/{inner_l.records} = {inner_l.sensitivity:.6g} (ỹ^λ problem); see releases"
        ),
        units="noise_std is the per-coordinate std of N(0, σ²I_{d_x}) added to the penalty hypergradient "
        "(hypergradient units)",
    )


def _conventions(p: BilevelParams, z_in: float) -> Conventions:
    k = p.inner_total
    rule = (
        "given"
        if p.inner_noise_multiplier is not None
        else f"z·√K = z·√{k} (each inner solve's Rényi budget equals the outer release's: the paper's equal split)"
    )
    return Conventions(
        neighbouring="replace-one",
        steps=p.steps,
        step_rule=f"T = {p.steps} outer steps as given; each makes 2 inner solves of K = M·T_GD = {p.inner_rounds}·"
        f"{p.inner_steps} = {k} noisy gradient steps and 1 outer release: {p.steps}·(2·{k} + 1) Gaussian releases",
        sampling=_SAMPLING_TEXT[_sampling_key(p)],
        noise_multiplier_definition=(
            "noise_multiplier z = std/sensitivity of the outer release (σ = z·2G/n, z·2G/b_out); inner_noise_multiplier"
            " "
            f"z_in = std/sensitivity of every inner gradient step, here {rule}"
        ),
        released="every iterate (x_t, the inner iterates and the penalty hypergradients; the output "
        "argmin_t ‖x_{t+1} − x_t‖ is post-processing)",
    )


def _releases(p: BilevelParams, z: float, z_in: float, chain: PaperChain) -> tuple[Release, ...]:
    inner_g, inner_l, outer = mechanisms(p)
    q_in, q_out = sampling_rates(p)
    composition = "sequential and adaptive: per outer step 2 inner solves then 1 outer release, T times"
    out = []
    for mechanism, mu in ((inner_g, p.strong_convexity), (inner_l, p.regularization * p.strong_convexity / 2.0)):
        out.append(
            Release(
                name=mechanism.name,
                count=p.steps * mechanism.releases_per_step,
                sensitivity=mechanism.sensitivity,
                noise_std=z_in * mechanism.sensitivity,
                noise_multiplier=z_in,
                composition=composition,
                details={
                    "algorithm": "DP-Loc-SGD (Algorithm 4)" if p.mini else "DP-Loc-GD (Algorithm 2)",
                    "per_sample_bound": mechanism.per_sample_bound,
                    "strong_convexity": mu,
                    "dimension": mechanism.dimension,
                    "rounds": p.inner_rounds,
                    "steps_per_round": p.inner_steps,
                    "steps_per_solve": mechanism.releases_per_step,
                    "batch": mechanism.records,
                    "sampling_rate": q_in,
                    "paper_chain_gaussian_epsilon": chain.inner_gaussian,
                    "paper_chain_solve_epsilon": chain.inner_solve,
                },
            )
        )
    out.append(
        Release(
            name=outer.name,
            count=p.steps,
            sensitivity=outer.sensitivity,
            noise_std=z * outer.sensitivity,
            noise_multiplier=z,
            composition=composition,
            details={
                "per_sample_bound": outer.per_sample_bound,
                "dimension": outer.dimension,
                "batch": outer.records,
                "sampling_rate": q_out,
                "paper_chain_gaussian_epsilon": chain.outer_gaussian,
                "paper_chain_release_epsilon": chain.outer,
            },
        )
    )
    return tuple(out)


# -- utility (Section 4, spec §4) -------------------------------------------------------------------------------------


def inner_radius(
    lipschitz: float,
    strong_convexity: float,
    noise_std: float,
    rounds: int,
    steps: int,
    dimension: int,
    initial_radius: float,
    failure: float,
    batch: int | None = None,
) -> float:
    """R_M: the localisation radius after M rounds of DP-Loc-GD/SGD, ‖y_out − y*‖ ≤ R_M w.p. ≥ 1 − γ (per solve).

    Explicit instantiation of the proof of Theorem 8.2 / A.1 (spec §4.1; constants *reconstructed*, not printed):
    R_{m+1}² = (2/μ)[2R_m(σ + 2L/√b)√(2 ln(4M/γ)/T) + (1 + ln T)(L² + σ²(√d + √(2 ln(2MT/γ)))²)/(μT)],
    the 2L/√b term for batches only, T = T_GD steps per round, γ/M per round."""
    radius = initial_radius
    step = radius_step(lipschitz, strong_convexity, noise_std, rounds, steps, dimension, failure, batch)
    for _ in range(rounds):
        radius = step(radius)
    return radius


def radius_step(
    lipschitz: float,
    strong_convexity: float,
    noise_std: float,
    rounds: int,
    steps: int,
    dimension: int,
    failure: float,
    batch: int | None = None,
) -> Any:
    """R_m ↦ R_{m+1} of :func:`inner_radius` (the schedule DP-Loc-GD/SGD uses for its localisation balls)."""
    spread = noise_std + (2.0 * lipschitz / math.sqrt(batch) if batch is not None else 0.0)
    concentration = math.sqrt(2.0 * math.log(4.0 * rounds / failure) / steps)
    tail = (math.sqrt(dimension) + math.sqrt(2.0 * math.log(2.0 * rounds * steps / failure))) ** 2
    optimisation = (1.0 + math.log(steps)) * (lipschitz**2 + noise_std**2 * tail) / (strong_convexity * steps)

    def step(radius: float) -> float:
        return math.sqrt((2.0 / strong_convexity) * (2.0 * radius * spread * concentration + optimisation))

    return step


@dataclass(frozen=True)
class ErrorBudget:
    """The pieces of D = max_t ‖g̃_t − ∇L*_λ(x_t)‖ (spec §4.3), each w.p. as allotted from γ."""

    inner_g: float
    inner_lambda: float
    bias: float
    noise: float
    sampling: float

    @property
    def total(self) -> float:
        return self.bias + self.noise + self.sampling


def error_budget(p: BilevelParams, z: float, z_in: float) -> ErrorBudget:
    """D ≤ β + σ(√d_x + √(2 ln(4T/γ))) [+ 2G√(2 ln(8T/γ)/b_out)], with β = (L₁^f + λL₁^g)e_λ + λL₁^g e_0 (Lemma 4.4,
    deterministic first step) and e_0, e_λ the inner radii; γ/2 to the 2T inner solves, γ/4 to the outer noise
    (Gaussian norm concentration), γ/4 to the outer batch (Pinelis' inequality for bounded vectors)."""
    inner_g, inner_l, outer = mechanisms(p)
    t, gamma, lam, mu = p.steps, p.failure_probability, p.regularization, p.strong_convexity
    per_solve = gamma / (4.0 * t)
    batch = p.batch_size_inner if p.mini else None
    r0 = 2.0 * p.lipschitz_g / mu
    e0 = inner_radius(
        inner_g.per_sample_bound,
        mu,
        z_in * inner_g.sensitivity,
        p.inner_rounds,
        p.inner_steps,
        p.dimension_y,
        r0,
        per_solve,
        batch,
    )
    el = inner_radius(
        inner_l.per_sample_bound,
        lam * mu / 2.0,
        z_in * inner_l.sensitivity,
        p.inner_rounds,
        p.inner_steps,
        p.dimension_y,
        r0 + p.lipschitz_f / (lam * mu),
        per_solve,
        batch,
    )
    bias = (p.smoothness_f + lam * p.smoothness_g) * el + lam * p.smoothness_g * e0
    noise = z * outer.sensitivity * (math.sqrt(p.dimension_x) + math.sqrt(2.0 * math.log(4.0 * t / gamma)))
    sampling = 0.0
    if p.mini:
        sampling = 2.0 * p.clip * math.sqrt(2.0 * math.log(8.0 * t / gamma) / p.batch_size_outer)  # type: ignore[operator]
    return ErrorBudget(e0, el, bias, noise, sampling)


def penalty_gap(p: BilevelParams) -> float:
    """(L₀^f)²/(2λμ_g) ≥ F − L*_λ ≥ 0 (Lemma 4.3(i) made explicit, spec §1.4)."""
    return p.lipschitz_f**2 / (2.0 * p.regularization * p.strong_convexity)


def explicit_bound(p: BilevelParams, error: float) -> float:
    """‖G_{L*_λ,η}(x_out)‖ ≤ 4D + √(12·L·Δ_λ/T) with L = 1/(2η) and Δ_λ ≤ Δ_F + (L₀^f)²/(2λμ_g) (spec §4.3)."""
    smooth = 1.0 / (2.0 * p.stepsize)
    gap = p.initial_suboptimality + penalty_gap(p)  # type: ignore[operator]
    return 4.0 * error + math.sqrt(12.0 * smooth * gap / p.steps)


@dataclass(frozen=True)
class Rates:
    """The Õ rate forms with unit constants (spec §4.8)."""

    k1: float
    k2: float
    k2_printed: float
    k3: float
    privacy_term: float
    privacy_term_printed: float
    batch_term: float
    batch_term_printed: float
    population_term: float
    admissible_limit: float


def rates(p: BilevelParams, epsilon: float, suboptimality: float) -> Rates:
    """K₁(√d_x/(εn))^{1/2} + K₂(√d_y/(εn))^{1/3}, K₁ = Δ^{1/4}ℓ^{3/4}κ^{5/4}, K₂ = Δ^{1/6}ℓ^{5/6}κ^{11/6} (corrected;
    printed ℓ^{1/2}, erratum §6 item 8), batch term K₃/√b_out (printed K₃/b_out, item 9), population K₃√(d_x/n)."""
    ell, kappa, n = p.ell, p.kappa, p.dataset_size
    k1 = suboptimality**0.25 * ell**0.75 * kappa**1.25
    k2 = suboptimality ** (1 / 6) * ell ** (5 / 6) * kappa ** (11 / 6)
    k2_printed = suboptimality ** (1 / 6) * ell**0.5 * kappa ** (11 / 6)
    k3 = ell * kappa
    x_term = (math.sqrt(p.dimension_x) / (epsilon * n)) ** 0.5
    y_term = (math.sqrt(p.dimension_y) / (epsilon * n)) ** (1 / 3)
    b = p.batch_size_outer if p.mini else None
    limit = (
        ell
        * kappa**3
        * min(
            1.0 / (2.0 * kappa),
            p.lipschitz_g / p.lipschitz_f,
            p.smoothness_g / p.smoothness_f,
            suboptimality / (ell * kappa),
        )
    )
    return Rates(
        k1,
        k2,
        k2_printed,
        k3,
        k1 * x_term + k2 * y_term,
        k1 * x_term + k2_printed * y_term,
        k3 / math.sqrt(b) if b else 0.0,
        k3 / b if b else 0.0,
        k3 * math.sqrt(p.dimension_x / n),
        limit,
    )


def utility_report(p: BilevelParams) -> UtilityReport:
    """Every utility bound these hyperparameters allow, with the paper's recommended hyperparameters beside."""
    bounds: list[UtilityBound] = []
    missing: list[str] = []
    lam_ok = Assumption(
        f"λ ≥ max{{2L₁^f/μ_g, 2L₁^g/μ_g, L₀^f/L₀^g, L₁^f/L₁^g}} = {p.regularization_floor:.6g} (Lemmas 4.4, 8.1, "
        "8.8; spec §6 item 6)",
        p.regularization >= p.regularization_floor,
        f"λ = {p.regularization:.6g}",
    )
    unit_smooth = p.ell * p.kappa**3
    step_ok = Assumption(
        "stepsize ≤ 1/(2·smoothness of L*_λ) (Proposition 4.6 with L = 1/(2η)); Lemma 4.3(iii) gives the smoothness "
        "only as O(ℓκ³)",
        None,
        f"η = {p.stepsize:.6g}; with unit constant, 1/(2ℓκ³) = {1.0 / (2.0 * unit_smooth):.6g}",
    )
    clip_ok = Assumption(
        "clipping never acts: per-sample inner gradients stay within their Lipschitz constants and ‖φ_i‖ ≤ G at the "
        "private ỹ's (spec §6 items 3–4)",
        None,
    )
    gamma = p.failure_probability
    if p.noise_multiplier is None:
        missing.append("the explicit bounds need the noise: give noise_multiplier (or use /v1/calibrate)")
    else:
        z = p.noise_multiplier
        z_in = inner_multiplier(p, z)
        budget = error_budget(p, z, z_in)
        inner_source = (
            f"{SOURCE}, Theorem {'A.1' if p.mini else '8.2'} (explicit localisation radius, spec §4.1; constants "
            "reconstructed from the proof, not printed); union bound over the 2T solves"
        )
        bounds.append(
            UtilityBound(
                "‖ỹ_t − y*(x_t)‖ at every outer step (inner error of the g problem)",
                budget.inner_g,
                "explicit bound",
                inner_source,
                (Assumption(f"holds w.p. ≥ 1 − γ/4, γ = {gamma:g}", True),),
            )
        )
        bounds.append(
            UtilityBound(
                "‖ỹ^λ_t − y^λ(x_t)‖ at every outer step (inner error of the f + λg problem)",
                budget.inner_lambda,
                "explicit bound",
                inner_source,
                (
                    Assumption(
                        "f + λg is (λμ_g/2)-strongly convex: λ ≥ 2L₁^f/μ_g (Lemma 8.1)",
                        p.regularization >= 2.0 * p.smoothness_f / p.strong_convexity,
                        f"λ = {p.regularization:.6g}",
                    ),
                    Assumption(f"holds w.p. ≥ 1 − γ/4, γ = {gamma:g}", True),
                ),
                applicable=p.regularization >= 2.0 * p.smoothness_f / p.strong_convexity,
            )
        )
        pieces = f"bias β = {budget.bias:.6g}, noise {budget.noise:.6g}" + (
            f", batch {budget.sampling:.6g}" if p.mini else ""
        )
        bounds.append(
            UtilityBound(
                f"D = max_t ‖g̃_t − ∇L*_λ(x_t)‖, the hypergradient error ({pieces})",
                budget.total,
                "explicit bound",
                f"{SOURCE}, Lemma 4.4 (deterministic first step) with the inner radii, Gaussian norm concentration"
                + (
                    ", Pinelis' inequality for the outer batch (Lemma 8.8 with 1/√b_out, erratum §6 item 9)"
                    if p.mini
                    else ""
                ),
                (lam_ok, clip_ok, Assumption(f"holds w.p. ≥ 1 − γ, γ = {gamma:g}", True)),
                applicable=bool(lam_ok.holds),
            )
        )
        if p.initial_suboptimality is None:
            missing.append("the hypergradient bounds need initial_suboptimality (Δ_F)")
        else:
            value = explicit_bound(p, budget.total)
            gap = p.initial_suboptimality + penalty_gap(p)
            bounds.append(
                UtilityBound(
                    f"‖G_{{L*_λ,η}}(x_out)‖ ≤ 4D + √(12·L·Δ_λ/T), L = 1/(2η) = {1.0 / (2.0 * p.stepsize):.6g}, "
                    f"Δ_λ ≤ Δ_F + (L₀^f)²/(2λμ_g) = {gap:.6g}: projected penalty hypergradient at the output",
                    value,
                    "explicit bound",
                    f"{SOURCE}, Proposition 4.6 (deterministic form, spec §4.3), Lemma 2.4, Lemma 4.3(i) made explicit",
                    (step_ok, lam_ok, clip_ok, Assumption(f"holds w.p. ≥ 1 − γ, γ = {gamma:g}", True)),
                    applicable=bool(lam_ok.holds),
                )
            )
            bounds.append(
                UtilityBound(
                    "‖G_{F,η}(x_out)‖ ≤ the bound above + ℓκ³/λ: projected hypergradient of F at the output",
                    value + unit_smooth / p.regularization,
                    "rate with unit constants",
                    f"{SOURCE}, Lemma 2.4 and Lemma 4.3(ii) (‖∇F − ∇L*_λ‖ = O(ℓκ³/λ), constant not given)",
                    (step_ok, lam_ok, clip_ok),
                    applicable=bool(lam_ok.holds),
                )
            )
    if p.epsilon is None or p.initial_suboptimality is None:
        missing.append("the rate forms need epsilon and initial_suboptimality")
    else:
        try:
            bounds.extend(_rate_bounds(p, p.epsilon, p.initial_suboptimality))
        except (ArithmeticError, ValueError):
            missing.append("the rate forms overflow floating point at these constants")
    bounds = [b for b in bounds if math.isfinite(b.value)]
    try:
        advice = [r for r in recommendations(p) if not isinstance(r.value, float) or math.isfinite(r.value)]
    except (ArithmeticError, ValueError):  # constants at the ends of their ranges: no advice rather than a wrong one
        advice = []
    return UtilityReport(DpBilevel.id, tuple(bounds), "; ".join(missing) if missing else None, tuple(advice))


def _rate_bounds(p: BilevelParams, epsilon: float, suboptimality: float) -> list[UtilityBound]:
    r = rates(p, epsilon, suboptimality)
    theorem = "Theorem 5.1 (Algorithm 3)" if p.mini else "Theorem 4.1 (Algorithm 1)"
    corrected = r.privacy_term + r.batch_term
    admissible = Assumption(
        f"α ≤ ℓκ³·min{{1/(2κ), L₀^g/L₀^f, L₁^g/L₁^f, Δ_F/(ℓκ)}} = {r.admissible_limit:.6g} (precondition of "
        "Theorem 4.1; else n is too small)",
        corrected <= r.admissible_limit,
        f"α = {corrected:.6g}",
    )
    unit = Assumption("Õ: absolute constants and polylog factors set to 1", None)
    batch = " + K₃/√b_out" if p.mini else ""
    out = [
        UtilityBound(
            f"‖G_{{F_S,η}}(x_out)‖ ≤ K₁(√d_x/(εn))^{{1/2}} + K₂(√d_y/(εn))^{{1/3}}{batch} (corrected: K₁ = "
            f"{r.k1:.6g}, K₂ = Δ_F^{{1/6}}ℓ^{{5/6}}κ^{{11/6}} = {r.k2:.6g}"
            + (f", K₃ = ℓκ = {r.k3:.6g}" if p.mini else "")
            + ")",
            corrected,
            "rate with unit constants",
            f"{SOURCE}, {theorem}; K₂ exponent ℓ^{{5/6}} (erratum §6 item 8)"
            + ("; K₃/√b_out (erratum §6 item 9)" if p.mini else ""),
            (admissible, unit),
            applicable=bool(admissible.holds),
        ),
        UtilityBound(
            f"the same, as printed (K₂ = Δ_F^{{1/6}}ℓ^{{1/2}}κ^{{11/6}} = {r.k2_printed:.6g}"
            + (", K₃/b_out" if p.mini else "")
            + "): superseded by the corrected form",
            r.privacy_term_printed + r.batch_term_printed,
            "rate with unit constants",
            f"{SOURCE}, {theorem} as printed (errata §6 items 8" + (", 9" if p.mini else "") + ")",
            (admissible, unit),
            applicable=False,
        ),
        UtilityBound(
            "‖G_{F_𝒫,η}(x_out)‖ (population) ≤ the corrected rate + K₃√(d_x/n)",
            corrected + r.population_term,
            "rate with unit constants",
            f"{SOURCE}, Theorem 6.1 (K₁ with ℓ^{{3/4}}, erratum §6 item 10; the √(d_x/n) term as stated, item 19)",
            (admissible, unit),
            applicable=bool(admissible.holds),
        ),
    ]
    return out


def _count_value(value: float) -> int | float:
    return int(value) if value < 2**53 else float(value)


def recommendations(p: BilevelParams) -> list[Recommendation]:
    """Theorem 4.1's parameter assignment at its predicted α (unit constants), as advice."""
    out: list[Recommendation] = []
    ell, kappa, n = p.ell, p.kappa, p.dataset_size
    unit_smooth = ell * kappa**3
    out.append(
        Recommendation(
            "stepsize",
            1.0 / (2.0 * unit_smooth),
            "η = 1/(2L) with L = ℓκ³ the smoothness of L*_λ (Proposition 4.6, Lemma 4.3(iii), unit constant)",
            False,
        )
    )
    out.append(Recommendation("inner_steps", _count_value(float(n) * n), "T_GD = n² (Theorem 8.2)", False))
    if p.epsilon is not None:
        budget = p.epsilon / math.sqrt(18.0 * p.steps)
        ratio = p.lipschitz_g / (p.strong_convexity * budget * n)
        rounds = max(1, math.ceil(math.log2(math.log(1.0 / ratio)))) if ratio < 1.0 / math.e else 1
        out.append(
            Recommendation(
                "inner_rounds",
                min(rounds, MAX_ROUNDS),
                f"M = ⌈log₂ ln(μ_g ε′ n/L₀^g)⌉, ε′ = ε/√(18T) = {budget:.6g} (Theorem 8.2; 1 when μ_g ε′ n/L₀^g ≤ e)",
                False,
            )
        )
    if p.epsilon is not None and p.initial_suboptimality is not None:
        r = rates(p, p.epsilon, p.initial_suboptimality)
        alpha = r.privacy_term
        out.append(
            Recommendation(
                "regularization",
                unit_smooth / alpha,
                f"λ = ℓκ³/α at the predicted α = {alpha:.6g} (Theorem 4.1, unit constants)",
                False,
            )
        )
        out.append(
            Recommendation(
                "steps",
                _count_value(max(1.0, math.ceil(p.initial_suboptimality * unit_smooth / (alpha * alpha)))),
                f"T = ⌈Δ_F ℓκ³/α²⌉ at α = {alpha:.6g} (Theorem 4.1, unit constants)",
                False,
            )
        )
        if p.mini:
            out.append(
                Recommendation(
                    "batch_size_outer",
                    _count_value(min(float(n), max(1.0, math.ceil((ell * kappa / alpha) ** 2)))),
                    "b_out ≍ (ℓκ/α)²: the batch term K₃/√b_out then matches α (Remark 5.2 with the corrected "
                    "1/√b_out, erratum §6 item 9; the printed b_out is its square root)",
                    False,
                )
            )
    return out


# -- simulation (verification jobs) --------------------------------------------------------------------------------

MAX_SIMULATED_DIMENSION = 32
MAX_SIMULATED_RECORDS = 10**9


class BilevelProblem(ParamsModel):
    """The synthetic problem of a dp-bilevel verification job (spec §7.4)."""

    kind: Literal["quadratic", "ridge-tuning"] = param(
        "quadratic (default): the closed-form quadratic bilevel problem of spec §7.4, f_i = (a/2)‖y − w_i‖² + "
        "(ρ/2)‖x − v_i‖², g_i = (μ_g/2)‖y − B_i x − z_i‖², 𝒳 a ball, built to satisfy the declared constants. "
        "ridge-tuning: Section 7, the ridge penalty ω of a linear model tuned on validation loss (dimension_x = 1).",
        example="quadratic",
        default="quadratic",
    )
    prototypes: bounded_count(2, 32) = param(
        "Distinct records: the n records are copies of this many random prototypes (so any dataset_size is cheap).",
        unit="records",
        example=8,
        default=8,
    )
    omega_min: float = param(
        "ridge-tuning: lower end of 𝒳 = [ω_min, ω_max] (g is ω_min-strongly convex in θ; spec §6 item 16).",
        symbol="ω_min",
        example=0.1,
        ge=1e-3,
        le=1e3,
        default=0.1,
    )
    omega_max: float = param(
        "ridge-tuning: upper end of 𝒳 = [ω_min, ω_max].", symbol="ω_max", example=5.0, ge=1e-3, le=1e3, default=5.0
    )
    initial_omega: float | None = param(
        "ridge-tuning: the starting point ω₀ (default: 1 clipped to 𝒳, as spec §7.4 E5).",
        symbol="ω₀",
        example=1.0,
        ge=1e-3,
        le=1e3,
        default=None,
    )
    feature_norm: float = param(
        "ridge-tuning: bound r on ‖a_i‖ and |b_i| of every record.",
        symbol="r",
        example=1.0,
        ge=1e-3,
        le=10,
        default=1.0,
    )
    printed_sign: bool = param(
        "ridge-tuning: use the Section 7 update as printed, ω + ηλ(R(θ^λ) − R(θ)) (gradient ascent, erratum §6 item "
        "15), instead of Algorithm 1's step.",
        example=False,
        default=False,
    )


@dataclass(frozen=True)
class _Data:
    """Prototype records and their multiplicities; the canary (index 0) is the record that differs between D and D′."""

    counts: np.ndarray
    matrices: np.ndarray
    shifts: np.ndarray
    targets: np.ndarray
    anchors: np.ndarray
    train: np.ndarray


def _data_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32 + 3,)))


def _counts(n: int, prototypes: int) -> np.ndarray:
    """Multiplicities: the canary (1 record) then the n − 1 others spread over the prototypes."""
    rest = n - 1
    k = max(1, min(prototypes, rest))
    base = np.full(k, rest // k, dtype=np.int64)
    base[: rest % k] += 1
    return np.concatenate(([1], base[base > 0])).astype(np.int64) if rest > 0 else np.array([1], dtype=np.int64)


def _ball(points: np.ndarray, radius: float) -> np.ndarray:
    norms = np.linalg.norm(points, axis=-1, keepdims=True)
    with np.errstate(over="ignore"):
        return points * np.minimum(1.0, radius / np.maximum(norms, 1e-300))


def _quadratic_data(seed: int, n: int, dx: int, dy: int, prototypes: int, problem: Mapping[str, Any]) -> _Data:
    """Prototypes with non-zero means (centre + 0.3·noise, spec §7.4); coordinate 0 of x belongs to the canary: every
    B_i has a zero first column and every other record has v_i[0] = 0."""
    rng = _data_rng(seed)
    counts = _counts(n, prototypes)
    m = counts.size
    r, beta = problem["scale"], problem["coupling"]
    centre = rng.standard_normal((dy, dx))
    raw = centre[None] + 0.3 * rng.standard_normal((m, dy, dx))
    raw[:, :, 0] = 0.0
    norms = np.array([np.linalg.norm(b, 2) for b in raw])
    matrices = raw * (beta / max(float(norms.max()), 1e-300))
    matrices[0] = matrices[min(1, m - 1)]

    def vectors(d: int) -> np.ndarray:
        c = rng.standard_normal(d)
        c = 0.7 * r * c / max(float(np.linalg.norm(c)), 1e-300)
        return _ball(c[None] + 0.3 * r * rng.standard_normal((m, d)) / math.sqrt(d), r)

    shifts, targets, anchors = vectors(dy), vectors(dy), vectors(dx)
    anchors[:, 0] = 0.0
    shifts[0], targets[0] = shifts[min(1, m - 1)], targets[min(1, m - 1)]
    anchors[0] = 0.0
    anchors[0, 0] = r  # the canary on D; D′ holds −r
    return _Data(counts, matrices, shifts, targets, anchors, np.ones(m, dtype=bool))


def _ridge_data(seed: int, n: int, dy: int, prototypes: int, r: float) -> _Data:
    """Ridge records (a_i, b_i), ‖a_i‖ ≤ r, |b_i| ≤ r, labels b = aᵀθ_true (+ noise on training records, so that the
    validation loss prefers some shrinkage): even prototypes train, odd ones validate (n_val = ⌊n/2⌋). Index 0 is the
    canary, one training record (a copy of the first training prototype) whose label flips sign between D and D′."""
    rng = _data_rng(seed)
    m = max(2, prototypes)
    truth = rng.standard_normal(dy)
    truth /= np.linalg.norm(truth)
    features = _ball(r * rng.standard_normal((m, dy)), r)
    train = np.arange(m) % 2 == 0
    labels = np.clip(features @ truth + np.where(train, 0.5 * r * rng.standard_normal(m), 0.0), -r, r)
    n_val = n // 2
    n_tr = n - n_val
    counts = np.zeros(m, dtype=np.int64)
    tr_idx, val_idx = np.flatnonzero(train), np.flatnonzero(~train)
    counts[tr_idx] = (n_tr - 1) // tr_idx.size
    counts[tr_idx[: (n_tr - 1) % tr_idx.size]] += 1
    counts[val_idx] = n_val // val_idx.size
    counts[val_idx[: n_val % val_idx.size]] += 1
    keep = np.concatenate(([True], counts > 0))
    order = np.concatenate(([0], np.arange(m)))[keep]
    counts = np.concatenate(([1], counts))[keep]
    size = int(keep.sum())
    return _Data(
        counts,
        np.zeros((size, dy, 1)),
        np.zeros((size, dy)),
        labels[order].copy(),
        features[order].copy(),
        train[order].copy(),
    )


def _ball_qp(matrix: np.ndarray, vector: np.ndarray, radius: float) -> np.ndarray:
    """argmin_{‖x‖ ≤ R} ½xᵀAx − bᵀx for A ≻ 0 (Lagrange multiplier by bisection)."""
    values, vecs = np.linalg.eigh(matrix)
    coords = vecs.T @ vector

    def norm_at(nu: float) -> float:
        return float(np.linalg.norm(coords / (values + nu)))

    if norm_at(0.0) <= radius:
        return vecs @ (coords / values)
    lo, hi = 0.0, 1.0
    while norm_at(hi) > radius:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if norm_at(mid) > radius else (lo, mid)
    return vecs @ (coords / (values + hi))


class BilevelSimulator(Simulator):
    """Algorithm 1 (full batch) or 3 (mini-batch) run on a synthetic problem with closed forms.

    quadratic: the spec §7.4 problem, built from the declared constants (μ = μ_g, a = ρ = min(1, L₁^f),
    ‖B_i‖ ≤ β = min(1, √(L₁^g/μ_g − 1)), data radius r and 𝒳 = 𝔹(0, 2r) shrunk until L₀^g and L₀^f hold on
    𝒳 × 𝒴), so the declared constants are valid. L*_λ and F are convex quadratics; Δ_F, the smoothness of L*_λ and
    the projected penalty hypergradient ‖G_{L*_λ,η}(x_out)‖ (the measured utility) are exact.
    ridge-tuning: Section 7 with R(θ) = ½‖θ‖², 𝒳 = [ω_min, ω_max] (spec §6 item 16), the footnote-1 normalisation
    (g_i = (n/n_tr)·loss·[train] + ωR, f_i = (n/n_val)·loss·[validation]); θ*(ω), θ^λ(ω) are linear solves.
    Both: inner solves by DP-Loc-GD/SGD with per-sample clipping at the declared constants and the explicit radius
    schedule; per-sample penalty hypergradients clipped at G; the records are copies of a few prototypes, so a step
    costs O(prototypes·d) whatever n is. Audit: the canary record (a dedicated coordinate of x for quadratic; a
    training label for ridge-tuning) is flipped between D and D′; the score is the last iterate's coordinate.
    """

    problem_model = BilevelProblem

    def plan(
        self, params: ParamsModel, delta: float, checks: tuple[str, ...], trials: int, seed: int, problem: ParamsModel
    ) -> Plan:
        p: BilevelParams = params  # type: ignore[assignment]
        pr: BilevelProblem = problem  # type: ignore[assignment]
        if p.mini and p.dataset_size >= MAX_SIMULATED_RECORDS:
            raise ParameterError.single(
                "params.dataset_size",
                f"verification jobs simulate mini-batches of fewer than {MAX_SIMULATED_RECORDS:.0e} records (exact "
                "sampling without replacement)",
                f"an integer in [1, {MAX_SIMULATED_RECORDS - 1}] for variant='mini-batch'",
                p.dataset_size,
            )
        for name in ("dimension_x", "dimension_y"):
            if getattr(p, name) > MAX_SIMULATED_DIMENSION:
                raise ParameterError.single(
                    f"params.{name}",
                    f"verification jobs simulate at most {MAX_SIMULATED_DIMENSION} coordinates",
                    f"an integer in [1, {MAX_SIMULATED_DIMENSION}]",
                    getattr(p, name),
                )
        report = DpBilevel().privacy(p, delta)
        z = report.noise.noise_multiplier  # type: ignore[union-attr]
        z_in = inner_multiplier(p, z)
        resolved = _resolve_quadratic(p, pr, seed) if pr.kind == "quadratic" else _resolve_ridge(p, pr, seed)
        resolved |= {"kind": pr.kind, "prototypes": pr.prototypes, "inner_noise_multiplier": z_in}
        prediction, note = None, None
        if "utility" in checks:
            prediction, note = _prediction(p, resolved, z, z_in)
        runs = ("utility" in checks) + 2 * ("privacy-audit" in checks)
        work = runs * p.steps * (2.0 * p.inner_total + 1.0) * _step_work(p, int(resolved["records"]), trials)
        return Plan(
            algorithm=DpBilevel.id,
            params=p.model_dump() | {"noise_multiplier": z, "inner_noise_multiplier": z_in},
            problem=resolved,
            checks=checks,
            trials=trials,
            seed=seed,
            delta=delta,
            epsilon_accounted=report.epsilon,
            accountant=report.accountant,
            epsilon_exact=None,
            exact_note="no closed form: the inner solves release information too (the accounted ε covers all "
            "T(2K + 1) releases)",
            utility_measure="projected penalty hypergradient ‖G_{L*_λ,η}(x_out)‖ at the output x_{t_out}"
            if "utility" in checks
            else None,
            predicted_bound=prediction,
            predicted_source="explicit bound 4D + √(12·L·Δ_λ/T) (seed 003, Proposition 4.6, spec §4.3) with the "
            "problem's exact Δ_F"
            if prediction is not None
            else None,
            prediction_note=note,
            audit_method=(
                "canary record flipped between D and D′ along a coordinate of x no other record uses; score: that "
                "coordinate of the last iterate"
                if pr.kind == "quadratic"
                else "a training record's label flipped between D and D′; score: the last iterate ω_T"
            )
            if "privacy-audit" in checks
            else None,
            work=work,
        )

    def run_block(self, plan: Plan, rng: np.random.Generator, trials: int) -> BlockResult:
        p = BilevelParams.model_validate(
            {k: v for k, v in plan.params.items() if k not in ("noise_multiplier", "inner_noise_multiplier")}
        )
        z, z_in = plan.params["noise_multiplier"], plan.params["inner_noise_multiplier"]
        problem = plan.problem
        out: dict[str, np.ndarray] = {}
        if "utility" in plan.checks:
            x_out, _ = _simulate(p, problem, plan.seed, z, z_in, rng, trials, canary_sign=1.0)
            out["utility"] = _measured(p, problem, plan.seed, x_out)
        if "privacy-audit" in plan.checks:
            _, last_in = _simulate(p, problem, plan.seed, z, z_in, rng, trials, canary_sign=1.0)
            _, last_out = _simulate(p, problem, plan.seed, z, z_in, rng, trials, canary_sign=-1.0)
            out["score_in"], out["score_out"] = last_in[:, 0], last_out[:, 0]
        return BlockResult(**out)


def _step_work(p: BilevelParams, records: int, trials: int) -> float:
    """Cost of one (inner or outer) step of all trials, in the service's work units (≈ 1.6e7 per second, as the other
    simulators): a fixed cost per block of 64 trials (numpy calls dominate) plus the arithmetic per trial."""
    blocks = -(-trials // 64)
    per_trial = 0.3 * records * (p.dimension_x + p.dimension_y) + (8.0 * records if p.mini else 0.0)
    return blocks * 1000.0 + trials * per_trial


def _resolve_quadratic(p: BilevelParams, pr: BilevelProblem, seed: int) -> dict[str, Any]:
    mu = p.strong_convexity
    beta = min(1.0, math.sqrt(max(0.0, p.smoothness_g / mu - 1.0)))
    curvature = min(1.0, p.smoothness_f)  # a = ρ
    ratio = 2.0  # R_x = 2r
    scale = min(
        1.0,
        p.lipschitz_g / (2.0 * mu * (beta * ratio + 1.0)),
        p.lipschitz_f / math.hypot(curvature * (ratio + 1.0), curvature * (beta * ratio + 2.0)),
    )
    resolved: dict[str, Any] = {
        "strong_convexity": mu,
        "coupling": beta,
        "curvature": curvature,
        "scale": scale,
        "radius": ratio * scale,
    }
    data = _quadratic_data(seed, p.dataset_size, p.dimension_x, p.dimension_y, pr.prototypes, resolved)
    a_f, a_l, b_f, b_l = _quadratic_forms(p, resolved, data)
    x0 = np.zeros(p.dimension_x)
    x_f = _ball_qp(a_f, b_f, resolved["radius"])
    x_l = _ball_qp(a_l, b_l, resolved["radius"])

    def value(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> float:
        return float(0.5 * x @ a @ x - b @ x)

    resolved |= {
        "records": int(data.counts.size),
        "initial_suboptimality": value(a_f, b_f, x0) - value(a_f, b_f, x_f),
        "penalty_suboptimality": value(a_l, b_l, x0) - value(a_l, b_l, x_l),
        "penalty_smoothness": float(np.linalg.eigvalsh(a_l).max()),
    }
    return resolved


def _quadratic_forms(
    p: BilevelParams, resolved: Mapping[str, Any], data: _Data
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """F(x) = ½xᵀA_F x − b_Fᵀx + c and L*_λ(x) = ½xᵀA_λ x − b_λᵀx + c′ on D (spec §7.4 with f's y-curvature a):
    A_F = ρI + aB̄ᵀB̄, A_λ = ρI + kB̄ᵀB̄ with k = aλμ/(a + λμ), b = ρv̄ + (a or k)B̄ᵀ(w̄ − z̄)."""
    w = data.counts / data.counts.sum()
    b_bar = np.einsum("j,jkl->kl", w, data.matrices)
    z_bar, w_bar, v_bar = w @ data.shifts, w @ data.targets, w @ data.anchors
    a, rho, mu, lam = resolved["curvature"], resolved["curvature"], resolved["strong_convexity"], p.regularization
    k = a * lam * mu / (a + lam * mu)
    gram = b_bar.T @ b_bar
    eye = np.eye(p.dimension_x)
    return (
        rho * eye + a * gram,
        rho * eye + k * gram,
        rho * v_bar + a * b_bar.T @ (w_bar - z_bar),
        rho * v_bar + k * b_bar.T @ (w_bar - z_bar),
    )


def _ridge_constants(p: BilevelParams, pr: BilevelProblem) -> dict[str, float]:
    """The constants the ridge instance has (spec §6 item 20 normalisation), over 𝒳 × 𝒴 with 𝒴 = 𝔹(0, r²/ω_min)."""
    n = p.dataset_size
    n_val = n // 2
    n_tr = n - n_val
    r, lo, hi = pr.feature_norm, pr.omega_min, pr.omega_max
    s_tr, s_val = n / n_tr, n / max(n_val, 1)
    y = r * r / lo
    return {
        "strong_convexity": lo,
        "lipschitz_g": s_tr * r * (r * y + r) + hi * y,
        "smoothness_g": s_tr * r * r + hi + y,
        "hessian_lipschitz_g": math.sqrt(2.0),
        "lipschitz_f": s_val * r * (r * y + r),
        "smoothness_f": s_val * r * r,
    }


def _resolve_ridge(p: BilevelParams, pr: BilevelProblem, seed: int) -> dict[str, Any]:
    issues = []
    if p.dimension_x != 1:
        issues.append(
            FieldIssue(("params", "dimension_x"), "ridge-tuning tunes one hyperparameter ω", "1", p.dimension_x)
        )
    if p.dataset_size < 4:
        issues.append(
            FieldIssue(("params", "dataset_size"), "ridge-tuning needs training and validation records", ">= 4")
        )
    if pr.omega_max <= pr.omega_min:
        issues.append(
            FieldIssue(("problem", "omega_max"), "must exceed omega_min", f"> {pr.omega_min:g}", pr.omega_max)
        )
    start = pr.initial_omega if pr.initial_omega is not None else min(max(1.0, pr.omega_min), pr.omega_max)
    if not pr.omega_min <= start <= pr.omega_max:
        issues.append(
            FieldIssue(("problem", "initial_omega"), "must lie in [omega_min, omega_max]", None, pr.initial_omega)
        )
    if issues:
        raise ParameterError(issues)
    needed = _ridge_constants(p, pr)
    for name, value in needed.items():
        declared = getattr(p, name)
        wrong = declared > value * (1 + 1e-12) if name == "strong_convexity" else declared < value * (1 - 1e-12)
        if wrong:
            relation = "<=" if name == "strong_convexity" else ">="
            issues.append(
                FieldIssue(
                    ("params", name),
                    "does not hold for the ridge-tuning instance (spec §6 item 20 normalisation)",
                    f"{relation} {value:.6g}",
                    declared,
                )
            )
    if issues:
        raise ParameterError(issues)
    resolved: dict[str, Any] = {
        "omega_min": pr.omega_min,
        "omega_max": pr.omega_max,
        "initial_omega": start,
        "feature_norm": pr.feature_norm,
        "printed_sign": pr.printed_sign,
    }
    data = _ridge_data(seed, p.dataset_size, p.dimension_y, pr.prototypes, pr.feature_norm)
    grid = np.linspace(pr.omega_min, pr.omega_max, 201)
    hyper = np.array([_ridge_hyper(p, data, w)[0] for w in grid])
    penalty = np.array([_ridge_penalty(p, data, w) for w in grid])
    slopes = np.array([_ridge_penalty_gradient(p, data, w) for w in grid])
    curvature = float(np.max(np.abs(np.diff(slopes)) / (grid[1] - grid[0])))
    resolved |= {
        "records": int(data.counts.size),
        "initial_suboptimality": float(_ridge_hyper(p, data, start)[0] - hyper.min()),
        "penalty_suboptimality": float(_ridge_penalty(p, data, start) - penalty.min()),
        "penalty_smoothness": curvature,
    }
    return resolved


def _ridge_moments(data: _Data) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(H_tr, H_val, c_tr, c_val, [mean b² train, validation]): H = mean aaᵀ, c = mean b·a over each split."""
    a, b, c, train = data.anchors, data.targets, data.counts.astype(float), data.train
    wt, wv = c * train / (c * train).sum(), c * ~train / (c * ~train).sum()
    outer = np.einsum("j,jk,jl->kl", wt, a, a), np.einsum("j,jk,jl->kl", wv, a, a)
    linear = wt @ (b[:, None] * a), wv @ (b[:, None] * a)
    squares = np.array([wt @ (b * b), wv @ (b * b)])
    return outer[0], outer[1], linear[0], linear[1], squares


def _ridge_hyper(p: BilevelParams, data: _Data, omega: float) -> tuple[float, np.ndarray]:
    """F(ω) = f_S(θ*(ω)) with θ*(ω) = (H_tr + ωI)^{-1}c_tr."""
    h_tr, h_val, c_tr, c_val, sq = _ridge_moments(data)
    theta = np.linalg.solve(h_tr + omega * np.eye(h_tr.shape[0]), c_tr)
    return float(0.5 * theta @ h_val @ theta - c_val @ theta + 0.5 * sq[1]), theta


def _ridge_lambda_point(p: BilevelParams, data: _Data, omega: float) -> np.ndarray:
    h_tr, h_val, c_tr, c_val, _ = _ridge_moments(data)
    lam = p.regularization
    return np.linalg.solve(h_val + lam * (h_tr + omega * np.eye(h_tr.shape[0])), c_val + lam * c_tr)


def _ridge_penalty(p: BilevelParams, data: _Data, omega: float) -> float:
    """L*_λ(ω) = f_S(θ^λ) + λ(g_S(ω, θ^λ) − g_S(ω, θ*))."""
    h_tr, h_val, c_tr, c_val, sq = _ridge_moments(data)
    _, theta = _ridge_hyper(p, data, omega)
    theta_l = _ridge_lambda_point(p, data, omega)

    def g(t: np.ndarray) -> float:
        return float(0.5 * t @ h_tr @ t - c_tr @ t + 0.5 * sq[0] + 0.5 * omega * t @ t)

    f = float(0.5 * theta_l @ h_val @ theta_l - c_val @ theta_l + 0.5 * sq[1])
    return f + p.regularization * (g(theta_l) - g(theta))


def _ridge_penalty_gradient(p: BilevelParams, data: _Data, omega: float) -> float:
    """∇L*_λ(ω) = λ(R(θ^λ) − R(θ*)) with R = ½‖·‖² (eq. 3; Section 7)."""
    _, theta = _ridge_hyper(p, data, omega)
    theta_l = _ridge_lambda_point(p, data, omega)
    return 0.5 * p.regularization * float(theta_l @ theta_l - theta @ theta)


def _prediction(
    p: BilevelParams, resolved: Mapping[str, Any], z: float, z_in: float
) -> tuple[float | None, str | None]:
    """The family's explicit bound with the problem's exact Δ_F, if the stepsize satisfies η ≤ 1/(2L)."""
    actual = resolved["initial_suboptimality"]
    if p.initial_suboptimality is not None and p.initial_suboptimality < actual * (1 - 1e-9):
        raise ParameterError.single(
            "params.initial_suboptimality",
            f"is below the problem's F(x₀) − min F = {actual:.6g}",
            f">= {actual:.6g}, or omit it",
            p.initial_suboptimality,
        )
    smooth = resolved["penalty_smoothness"]
    if p.stepsize > 1.0 / (2.0 * smooth):
        return None, (
            f"no prediction: stepsize {p.stepsize:.6g} > 1/(2L) = {1.0 / (2.0 * smooth):.6g} with L = {smooth:.6g} the "
            "smoothness of L*_λ on this problem (Proposition 4.6)"
        )
    used = p.model_copy(update={"initial_suboptimality": max(actual, 1e-300)})
    bound = explicit_bound(used, error_budget(used, z, z_in).total)
    note = (
        f"w.p. ≥ 1 − γ = {1 - p.failure_probability:g} per run; Δ_F = {actual:.6g} exact; the inner radii use the "
        "reconstructed constants of spec §4.1"
    )
    return (bound if math.isfinite(bound) else None), note


def _problem_data(p: BilevelParams, problem: Mapping[str, Any], seed: int, canary_sign: float) -> _Data:
    if problem["kind"] == "quadratic":
        data = _quadratic_data(seed, p.dataset_size, p.dimension_x, p.dimension_y, problem["prototypes"], problem)
        data.anchors[0, 0] = canary_sign * problem["scale"]
    else:
        data = _ridge_data(seed, p.dataset_size, p.dimension_y, problem["prototypes"], problem["feature_norm"])
        data.targets[0] = canary_sign * data.targets[0]
    return data


def _simulate(
    p: BilevelParams,
    problem: Mapping[str, Any],
    seed: int,
    z: float,
    z_in: float,
    rng: np.random.Generator,
    trials: int,
    canary_sign: float,
    trace: dict[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``trials`` independent runs of Algorithm 1/3; returns (x_out, x_T), each (trials, d_x).

    With ``trace`` (quadratic only) it records per trial, as maxima over t: ``error`` ‖g̃_t − ∇L*_λ(x_t)‖ (the D of
    Proposition 4.6), ``bias`` ‖g_t − ∇L*_λ(x_t)‖ (before the noise), ``lemma44`` its deterministic bound
    (L₁^f + λL₁^g)‖ỹ^λ_t − y^λ(x_t)‖ + λL₁^g‖ỹ_t − y*(x_t)‖, ``inner_g``/``inner_lambda`` the inner errors and
    ``phi`` the largest per-sample ‖φ_i‖ before clipping."""
    data = _problem_data(p, problem, seed, canary_sign)
    quadratic = problem["kind"] == "quadratic"
    inner_g, inner_l, outer = mechanisms(p)
    counts = data.counts
    lam, mu_g = p.regularization, p.strong_convexity
    dx = p.dimension_x
    sampler = _sampler(p, counts, rng, trials)
    if quadratic:
        a = rho = problem["curvature"]
        mu = problem["strong_convexity"]
        x = np.zeros((trials, dx))
    else:
        n_val = p.dataset_size // 2
        s_tr, s_val = p.dataset_size / (p.dataset_size - n_val), p.dataset_size / n_val
        train = data.train.astype(float)
        x = np.full((trials, 1), problem["initial_omega"])
    per_solve = p.failure_probability / (4.0 * p.steps)
    r0 = 2.0 * p.lipschitz_g / mu_g
    best, best_move = x.copy(), np.full(trials, np.inf)
    for _ in range(p.steps):
        if quadratic:
            centres = np.einsum("jkl,tl->tjk", data.matrices, x) + data.shifts[None]  # B_j x + z_j

            def grad_g(y: np.ndarray, centres: np.ndarray = centres) -> np.ndarray:
                return mu * (y[:, None, :] - centres)

            def grad_l(y: np.ndarray, centres: np.ndarray = centres) -> np.ndarray:
                return a * (y[:, None, :] - data.targets[None]) + lam * mu * (y[:, None, :] - centres)

        else:
            omega = x[:, :1]

            def residual(y: np.ndarray) -> np.ndarray:
                return (y @ data.anchors.T - data.targets[None])[:, :, None] * data.anchors[None]  # (t, j, d)

            def grad_g(y: np.ndarray, omega: np.ndarray = omega) -> np.ndarray:
                return s_tr * train[None, :, None] * residual(y) + (omega * y)[:, None, :]

            def grad_l(y: np.ndarray, omega: np.ndarray = omega) -> np.ndarray:
                fit = residual(y)
                return s_val * (1.0 - train)[None, :, None] * fit + lam * (
                    s_tr * train[None, :, None] * fit + (omega * y)[:, None, :]
                )

        y_g = _inner_solve(
            p, grad_g, mu_g, inner_g.per_sample_bound, z_in * inner_g.sensitivity, r0, per_solve, sampler, rng, trials
        )
        y_l = _inner_solve(
            p,
            grad_l,
            lam * mu_g / 2.0,
            inner_l.per_sample_bound,
            z_in * inner_l.sensitivity,
            r0 + p.lipschitz_f / (lam * mu_g),
            per_solve,
            sampler,
            rng,
            trials,
        )
        if quadratic:
            phi = rho * (x[:, None, :] - data.anchors[None]) - lam * mu * np.einsum(
                "jkl,tk->tjl", data.matrices, y_l - y_g
            )
        else:
            gap = 0.5 * lam * (np.sum(y_l * y_l, axis=1) - np.sum(y_g * y_g, axis=1))
            phi = np.broadcast_to(gap[:, None, None], (trials, counts.size, 1))
        if trace is not None and quadratic:
            raw = np.linalg.norm(phi, axis=-1).max(axis=1)
        phi = _clip(phi, outer.per_sample_bound)
        weights = sampler("outer")
        noiseless = np.einsum("tj,tjk->tk", weights, phi)
        estimate = noiseless + z * outer.sensitivity * rng.standard_normal((trials, dx))
        if trace is not None and quadratic:
            _trace_step(p, problem, data, x, y_g, y_l, noiseless, estimate, raw, trace)
        if quadratic:
            moved = _ball(x - p.stepsize * estimate, problem["radius"])
        else:
            sign = -1.0 if problem["printed_sign"] else 1.0
            moved = np.clip(x - sign * p.stepsize * estimate, problem["omega_min"], problem["omega_max"])
        move = np.linalg.norm(moved - x, axis=1)
        better = move < best_move
        best[better], best_move[better] = x[better], move[better]
        x = moved
    return best, x


def _trace_step(
    p: BilevelParams,
    problem: Mapping[str, Any],
    data: _Data,
    x: np.ndarray,
    y_g: np.ndarray,
    y_l: np.ndarray,
    noiseless: np.ndarray,
    estimate: np.ndarray,
    phi: np.ndarray,
    trace: dict[str, np.ndarray],
) -> None:
    """One outer step's diagnostics against the closed forms y*(x) = B̄x + z̄, y^λ(x) = (a w̄ + λμ y*)/(a + λμ)."""
    w = data.counts / data.counts.sum()
    b_bar = np.einsum("j,jkl->kl", w, data.matrices)
    a, mu, lam = problem["curvature"], problem["strong_convexity"], p.regularization
    y_star = x @ b_bar.T + w @ data.shifts
    y_lam = (a * (w @ data.targets) + lam * mu * y_star) / (a + lam * mu)
    _, a_l, _, b_l = _quadratic_forms(p, problem, data)
    exact = x @ a_l.T - b_l[None]
    e0 = np.linalg.norm(y_g - y_star, axis=1)
    el = np.linalg.norm(y_l - y_lam, axis=1)
    values = {
        "error": np.linalg.norm(estimate - exact, axis=1),
        "bias": np.linalg.norm(noiseless - exact, axis=1),
        "lemma44": (p.smoothness_f + lam * p.smoothness_g) * el + lam * p.smoothness_g * e0,
        "inner_g": e0,
        "inner_lambda": el,
        "phi": phi,
    }
    for key, value in values.items():
        trace[key] = np.maximum(trace[key], value) if key in trace else value


def _clip(vectors: np.ndarray, bound: float) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    with np.errstate(over="ignore"):  # bound/norm may overflow to ∞ where the norm is tiny: no clipping there
        return vectors * np.minimum(1.0, bound / np.maximum(norms, 1e-300))


def _sampler(p: BilevelParams, counts: np.ndarray, rng: np.random.Generator, trials: int) -> Any:
    """weights(kind) → (trials, prototypes): the share of each prototype in the (batch) mean of one step."""
    full = np.broadcast_to(counts / counts.sum(), (trials, counts.size))
    if not p.mini:
        return lambda kind: full
    sizes = {"inner": p.batch_size_inner, "outer": p.batch_size_outer}
    shares = counts / counts.sum()

    def weights(kind: str) -> np.ndarray:
        b = sizes[kind]
        if p.batch_sampling == "without-replacement":
            drawn = rng.multivariate_hypergeometric(counts, b, size=trials, method="marginals")
        else:
            drawn = rng.multinomial(b, shares, size=trials)
        return drawn / b

    return weights


def _inner_solve(
    p: BilevelParams,
    gradient: Any,
    strong_convexity: float,
    lipschitz: float,
    noise_std: float,
    radius: float,
    failure: float,
    sampler: Any,
    rng: np.random.Generator,
    trials: int,
) -> np.ndarray:
    """DP-Loc-GD (Algorithm 2) / DP-Loc-SGD (Algorithm 4) from y₀ = 0: M rounds of T_GD projected noisy steps with
    η_t = 1/(μ(t+1)), per-sample gradients clipped at L, averaged iterates recentre the next ball, whose radius follows
    the explicit schedule (spec §4.1)."""
    rounds, steps, dy = p.inner_rounds, p.inner_steps, p.dimension_y
    batch = p.batch_size_inner if p.mini else None
    step = radius_step(lipschitz, strong_convexity, noise_std, rounds, steps, dy, failure, batch)
    centre = np.zeros((trials, dy))
    for _ in range(rounds):
        y = centre.copy()
        total = np.zeros_like(centre)
        for t in range(steps):
            total += y
            grads = _clip(gradient(y), lipschitz)
            mean = np.einsum("tj,tjk->tk", sampler("inner"), grads)
            y = y - (mean + noise_std * rng.standard_normal((trials, dy))) / (strong_convexity * (t + 1))
            y = centre + _ball(y - centre, radius)
        centre = total / steps
        radius = step(radius)
    return centre


def _measured(p: BilevelParams, problem: Mapping[str, Any], seed: int, x_out: np.ndarray) -> np.ndarray:
    """‖G_{L*_λ,η}(x_out)‖ = ‖x − Proj_𝒳(x − η∇L*_λ(x))‖/η on D, from the closed form of ∇L*_λ."""
    data = _problem_data(p, problem, seed, 1.0)
    eta = p.stepsize
    if problem["kind"] == "quadratic":
        _, a_l, _, b_l = _quadratic_forms(p, problem, data)
        gradient = x_out @ a_l.T - b_l[None]
        projected = _ball(x_out - eta * gradient, problem["radius"])
    else:
        gradient = np.array([[_ridge_penalty_gradient(p, data, float(w))] for w in x_out[:, 0]])
        projected = np.clip(x_out - eta * gradient, problem["omega_min"], problem["omega_max"])
    return np.linalg.norm(x_out - projected, axis=1) / eta


DpBilevel.simulator = BilevelSimulator()
