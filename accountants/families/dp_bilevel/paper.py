"""The paper's own privacy chain (Kornowski 2024, Section 2): Lemmas 2.1–2.3 in log space, the δ split, the chain at
given noise and its inverse (the paper's calibration), and the smallest batch its amplification argument needs."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .params import MAX_MULTIPLIER, BilevelParams
from .plan import q_with_replacement, sampling_rates

# -- the paper's lemmas 2.1–2.3, in log space --------------------------------------------------------------------------

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
    """ε of a run by the paper's chain of lemmas (proofs of Theorems 4.1/5.1), with every intermediate value and its
    validity."""

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

    @property
    def multipliers(self) -> tuple[float, float] | None:
        """(z, z_in) where the split prescribes both, else None."""
        if self.noise_multiplier is None or self.inner_noise_multiplier is None:
            return None
        return self.noise_multiplier, self.inner_noise_multiplier


def paper_split(p: BilevelParams, target: float, delta: float, mode: str) -> PaperSplit:
    """The multipliers of the printed split (ε/√(18T), δ/(3(T+1)) per mechanism) or the corrected one (ε_it with
    Lemma 2.1 giving exactly ε over T steps, then ε_it/3 per mechanism); a given inner_noise_multiplier is kept and the
    outer release gets what is left of ε_it."""
    split = delta_split(p, delta)
    if mode == "printed":
        per_iteration = target / math.sqrt(2.0 * p.steps)
    else:
        per_iteration = advanced_composition_inverse(target, split.iteration, p.steps)
    problems: list[str] = []
    if not per_iteration < 1.0:
        problems.append(f"Lemma 2.1 needs ε₀ < 1, but the per-step budget is ε_it = {per_iteration:.6g}")
    inner = _inner_split(p, split, per_iteration, problems)
    z, outer_gaussian = _outer_multiplier(p, split, per_iteration, inner.outer_budget, problems)
    return PaperSplit(
        mode,
        per_iteration,
        inner.outer_budget,
        inner.budget,
        inner.step,
        z,
        inner.multiplier,
        outer_gaussian,
        inner.gaussian,
        tuple(problems),
    )


@dataclass(frozen=True)
class _InnerSplit:
    """The inner solves' share of a step's budget: each solve's ε and each gradient step's (None where the inner
    multiplier is given), the inner Gaussian's ε̃ and multiplier, and what is left for the outer release."""

    budget: float | None
    step: float | None
    gaussian: float
    multiplier: float
    outer_budget: float


def _inner_split(p: BilevelParams, split: DeltaSplit, per_iteration: float, problems: list[str]) -> _InnerSplit:
    """ε_it/3 per inner solve (Lemma 2.1 inverted over its K steps, then amplification and Lemma 2.2 inverted); a
    given inner_noise_multiplier is kept and the outer release gets ε_it less the two solves."""
    q_in, _ = sampling_rates(p)
    k = p.inner_total
    if p.inner_noise_multiplier is None:
        solve_budget = per_iteration / 3.0
        step = advanced_composition_inverse(solve_budget, split.inner_step, k)
        inner_gaussian = amplify_inverse(step, q_in)
        z_in = classic_gaussian_multiplier(inner_gaussian, split.inner_gaussian)
        inner = _InnerSplit(solve_budget, step, inner_gaussian, z_in, per_iteration / 3.0)
    else:
        z_in = p.inner_noise_multiplier
        inner_gaussian = classic_gaussian_epsilon(z_in, split.inner_gaussian)
        solve = advanced_composition(amplify(inner_gaussian, q_in), split.inner_step, k)
        inner = _InnerSplit(None, None, inner_gaussian, z_in, per_iteration - 2.0 * solve)
    if not inner_gaussian < 1.0:
        if p.inner_noise_multiplier is not None:
            problems.append(
                f"Lemma 2.2 needs ε < 1, but the given inner_noise_multiplier gives ε̃ = {inner_gaussian:.6g}"
            )
        else:
            smallest = f" (inner batch below {minimum_batch(p, inner.step)})" if p.mini and inner.step else ""
            problems.append(
                f"Lemma 2.2 needs ε < 1, but the inner gradient steps' Gaussian would need ε̃ = {inner_gaussian:.6g}"
                + smallest
            )
    return inner


def _outer_multiplier(
    p: BilevelParams, split: DeltaSplit, per_iteration: float, outer_budget: float, problems: list[str]
) -> tuple[float | None, float | None]:
    """The outer release's multiplier and Gaussian ε̃ for its budget (None where no budget is left)."""
    if outer_budget <= 0.0:
        problems.append(
            f"the inner solves alone use {per_iteration - outer_budget:.6g} of the per-step budget ε_it = "
            f"{per_iteration:.6g}: no budget is left for the outer release"
        )
        return None, None
    _, q_out = sampling_rates(p)
    outer_gaussian = amplify_inverse(outer_budget, q_out)
    if not outer_gaussian < 1.0:
        problems.append(
            f"Lemma 2.2 needs ε < 1, but the outer release's Gaussian would need ε̃ = {outer_gaussian:.6g}"
            + (f" (outer batch below {minimum_batch(p, outer_budget)})" if p.mini else "")
        )
    return classic_gaussian_multiplier(outer_gaussian, split.outer_gaussian), outer_gaussian


def safe_split(p: BilevelParams, target: float, delta: float, mode: str) -> PaperSplit:
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
    unamplified batch (proofs of Theorems 5.1 and A.1), which needs q(b) > (e^budget − 1)/(e − 1).

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
        rate = size / n if p.batch_sampling == "without-replacement" else q_with_replacement(size, n)
        return amplify_inverse(budget, rate) < 1.0

    b = max(1, min(b, n + 1))
    while b > 1 and works(b - 1):
        b -= 1
    while b <= n and not works(b):
        b += 1
    return b
