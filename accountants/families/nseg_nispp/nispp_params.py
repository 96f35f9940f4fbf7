"""NISPP's parameters and the paper's quantities: the regularisation and inner tolerance rules, the sensitivity
(NISPP 4M/(λB) or the general-ν form) and the printed privacy statements (Boob & Guzmán 2023, Props. 9–10,
Theorem 7)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ...errors import FieldIssue, ParameterError
from ...params import MAX_COUNT, noise_multiplier_param, param
from ...reports import Recommendation
from .answers import resolve_multiplier
from .params import MAX_STEPS, SOURCE, NoisyViParams, common_issues
from .releases import NoisyReleases, PaperStatement, gaussian_mechanism_statement, moments_statement

MAX_INNER_ITERATIONS = 10_000


class NisppParams(NoisyViParams):
    """Hyperparameters of NISPP (Boob & Guzmán 2023, Algorithm 2)."""

    batch_size: int = param(symbol="B", unit="records", example=22, ge=1, le=MAX_COUNT)
    """Records per iteration (the expected number under Poisson sampling)."""
    passes: Literal["single", "multi"] = param(example="single", default="single")
    """single: disjoint batches, each record used once (KB ≤ n; Theorem 5, Prop. 10). multi: a random batch at every
    iteration (Theorem 7: K = n, B = √n)."""
    steps: int | None = param(symbol="K", unit="iterations", example=454, default=None, ge=1, le=MAX_STEPS)
    """Iterations K (each solves one proximal subproblem and makes one noisy release). Default: ⌊n/B⌋ (single pass), n
    (multi pass)."""
    regularization: float | None = param(
        symbol="λ", unit="operator units per parameter unit", example=10.7, gt=0, le=1e12, default=None
    )
    """Proximal weight λ of every subproblem (γ_k = 1). Default: the paper's λ₀ (Corollary 2 / Theorem 7) written
    through the noise multiplier; required when the noise is given as noise_std."""
    inner_tolerance: float | None = param(
        symbol="ν", unit="operator units × parameter units", example=0.03, ge=0, le=1e12, default=None
    )
    """Accuracy ν of each subproblem's strong solution (eq. 5.1). Default: 2M²/(λB²) (single pass) or M²/(λn²) (multi
    pass). Above 2M²/(λB²) the sensitivity grows (Prop. 9, general ν)."""
    sensitivity_form: Literal["simplified", "exact-root"] = param(example="simplified", default="simplified")
    """Which bound of Prop. 9 is the sensitivity Δ of a prox point. simplified (default; Prop. 9 as stated): 4M/(λB)
    when ν ≤ 2M²/(λB²), else 2M/(λB) + √(2ν/λ). exact-root: M/(λB) + √(M²/(λB)² + 2ν/λ), the root of the quadratic in
    the proof — smaller (2M/(λB) as ν → 0), so less noise for the same ε."""
    noise_multiplier: float | None = noise_multiplier_param(symbol="z = σ/Δ", unit="multiples of Δ", example=3.73)
    """Noise std over the sensitivity Δ of one prox point (see sensitivity_form): σ = z·Δ is added to every u_{k+1}.
    Required for privacy accounting and utility (or give noise_std); computed by calibration."""
    noise_std: float | None = param(symbol="σ", unit="parameter units", example=0.43, gt=0, le=1e18, default=None)
    """Per-coordinate std σ of the noise added to every prox point; an alternative to noise_multiplier (then
    regularization is required)."""

    def check(self) -> list[FieldIssue]:
        issues = common_issues(self)
        n, b = self.dataset_size, self.batch_size
        if self.passes == "single" and b <= n and self.steps is not None and self.steps * b > n:
            issues.append(
                FieldIssue(
                    ("steps",),
                    "single pass uses steps·batch_size distinct records: KB must not exceed dataset_size",
                    f"an integer in [1, {n // b}]",
                    self.steps,
                )
            )
        if self.noise_std is not None and self.regularization is None:
            issues.append(
                FieldIssue(
                    ("regularization",),
                    "is required when the noise is given as noise_std (the default regularization depends on the "
                    "noise multiplier)",
                    "a finite number > 0",
                )
            )
        return issues

    def steps_and_rule(self) -> tuple[int, str, bool]:
        if self.steps is not None:
            return self.steps, f"steps as given: K = {self.steps}", False
        if self.passes == "single":
            k = self.dataset_size // self.batch_size
            return k, f"default K = ⌊n/B⌋ = ⌊{self.dataset_size}/{self.batch_size}⌋ = {k}", True
        return self.dataset_size, f"default K = n = {self.dataset_size} (Theorem 7)", True

    def releases(self) -> NoisyReleases:
        return NoisyReleases(self.passes, self.sampling, self.steps_and_rule()[0], self.dataset_size, self.batch_size)


# -- the paper's quantities ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """λ, ν and the sensitivity they give, with the noise multiplier and the defaults that were applied."""

    regularization: float
    tolerance: float
    sensitivity: float
    general: bool
    """ν exceeds 2M²/(λB²): Prop. 9's Δ is then above the paper's 4M/(λB)."""
    noise_multiplier: float
    applied: tuple[Recommendation, ...]


def default_regularization(p: NisppParams, z: float) -> tuple[float, str]:
    """The paper's λ₀ through z: max{M/D, L}·max{n^{1/3}, z√(d/2)} (single) or max{M/D, L}·max{√n, z√d/2} (multi)."""
    scale = max(p.lipschitz / p.diameter, p.smoothness)
    n, d = p.dataset_size, p.dimension
    if p.passes == "single":
        return scale * max(n ** (1.0 / 3.0), z * math.sqrt(d / 2.0)), (
            "λ = max{M/D, L}·max{n^{1/3}, z√(d/2)} (Corollary 2's λ₀; z√(d/2) = √(d ln(1/η))/ε at the paper's z)"
        )
    return scale * max(math.sqrt(n), z * math.sqrt(d) / 2.0), (
        "λ = max{M/D, L}·max{√n, z√d/2} (Theorem 7's λ₀; z√d/2 = √(d ln(1/η))/ε at the paper's z)"
    )


def default_tolerance(p: NisppParams, regularization: float) -> tuple[float, str]:
    M = p.lipschitz
    if p.passes == "single":
        return 2.0 * M * M / (regularization * p.batch_size**2), "ν = 2M²/(λB²) (Corollary 2, Prop. 9's limit)"
    return M * M / (regularization * p.dataset_size**2), "ν = M²/(λn²) (Theorem 7)"


def sensitivity(M: float, regularization: float, batch: int, tolerance: float, form: str) -> tuple[float, bool]:
    """(Δ, above): Prop. 9's bound on ‖u − u′‖ and whether it exceeds the paper's 4M/(λB).

    ``simplified`` (Prop. 9 as stated): 4M/(λB) when ν ≤ 2M²/(λB²), else 2M/(λB) + √(2ν/λ) (continuous at the
    limit). ``exact-root``: M/(λB) + √(M²/(λB)² + 2ν/λ), the root of p² − (2M/(λB))p − 2ν/λ = 0 that the proof
    derives; never larger, and 2M/(λB) as ν → 0."""
    a = M / (regularization * batch)
    root = math.sqrt(2.0 * tolerance / regularization)
    if form == "exact-root":
        value = a + math.sqrt(a * a + root * root)
    else:
        value = 4.0 * a if root <= 2.0 * a else 2.0 * a + root
    return value, value > 4.0 * a * (1.0 + 1e-12)


def paper_scale(p: NisppParams, z: float) -> float:
    """The paper's multiplier per dpcal's: its noise is relative to 4M/(λB), dpcal's to Prop. 9's Δ."""
    s = setting(p, z)
    return s.sensitivity / (4.0 * p.lipschitz / (s.regularization * p.batch_size))


def setting(p: NisppParams, z: float | None = None) -> Setting:
    """λ, ν, Δ and z for these parameters (z given by calibration, or resolved from the noise in ``p``)."""
    applied = []
    steps, rule, default_steps = p.steps_and_rule()
    if default_steps:
        applied.append(Recommendation("steps", steps, rule, True))
    if z is None and p.noise_std is None:
        z = resolve_multiplier(p.noise_multiplier, None, 1.0)
    if p.regularization is not None:
        lam = p.regularization
    else:
        assert z is not None  # check(): regularization is given whenever the noise is given as noise_std
        lam, lam_rule = default_regularization(p, z)
        applied.append(Recommendation("regularization", lam, lam_rule, True))
    if p.inner_tolerance is not None:
        nu = p.inner_tolerance
    else:
        nu, nu_rule = default_tolerance(p, lam)
        applied.append(Recommendation("inner_tolerance", nu, nu_rule, True))
    delta_value, general = sensitivity(p.lipschitz, lam, p.batch_size, nu, p.sensitivity_form)
    a = p.lipschitz / (lam * p.batch_size)
    if not (1e-300 < a < 1e300 and delta_value < 1e300):
        raise ParameterError.single(
            "regularization" if p.regularization is not None else "lipschitz",
            f"gives a sensitivity M/(λB) = {a:.3g} (Δ = {delta_value:.3g}, λ = {lam:.3g}) outside the floating-point "
            "range",
            "values with 1e-300 < M/(λB) and Δ < 1e300",
            lam if p.regularization is not None else p.lipschitz,
        )
    if z is None:
        z = resolve_multiplier(None, p.noise_std, delta_value)
    return Setting(lam, nu, delta_value, general, z, tuple(applied))


def paper_statement(p: NisppParams) -> PaperStatement:
    """Prop. 10 (single pass), Theorem 7's σ = 8M√(ln(1/η))/(Bλε) at its own K = n, B = √n, otherwise Theorem 1 —
    each relative to the paper's sensitivity 4M/(λB)."""

    def scale(z: float) -> float:
        return paper_scale(p, z)

    if p.passes == "single":
        return gaussian_mechanism_statement(
            f"{SOURCE}, Proposition 10 (Prop. 3 + parallel composition, Δ = 4M/(λB))", scale
        )
    n, b = p.dataset_size, p.batch_size
    steps = p.steps_and_rule()[0]
    if steps == n and b == max(1, round(math.sqrt(n))):
        return moments_statement(
            f"{SOURCE}, Theorem 7 (σ = 8M√(ln(1/η))/(Bλε), via Theorem 1)",
            "σ/(4M/(λB)) = 2√(ln(1/η))/ε (Theorem 7)",
            lambda d: 2.0 * math.sqrt(-math.log(d)),
            scale,
        )
    q = b / n
    return moments_statement(
        f"{SOURCE}, Theorem 1 with K = {steps}, m = B (Theorem 7's own K = n, B = √n do not hold)",
        "σ/(4M/(λB)) = √2·q·√(K ln(1/η))/ε (Theorem 1)",
        lambda d: math.sqrt(2.0) * q * math.sqrt(steps * (-math.log(d))),
        scale,
    )
