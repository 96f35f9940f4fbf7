"""Privacy accounting shared by the noisy stochastic methods of seed 000 (NSEG and NISPP).

Both methods add N(0, σ²I) to a quantity computed on a batch (NSEG: a batch-mean operator value; NISPP: the inexact
prox point) whose replace-one sensitivity is Δ (NSEG 2M/B; NISPP 4M/(λB) or the general-ν form). The noise
multiplier is z = σ/Δ. Neighbouring datasets differ in one record (replace-one, n public; seed 000 §1).

Single pass (disjoint batches): every record enters exactly one release, every other release has zero sensitivity to
it, so by parallel composition (seed 000, Prop. 4) the record's privacy loss over the whole transcript is that of
**one** Gaussian mechanism with μ = Δ/σ = 1/z — never summed over the steps (spec §3.4).

* ``tight``: the analytic Gaussian (Balle & Wang 2018, Thm. 8), exact.
* ``rdp``: α/(2z²), converted exactly over real α.

Multi pass: ``count`` releases K, each on a random batch (NSEG: K = 2T evaluations; NISPP: one per iteration).

* ``sampling="poisson"``: each record joins each batch independently with probability q = B/n (the batch mean is
  normalised by B). ``rdp``: the weak triangle inequality through the dataset without the record (Mironov 2017,
  Prop. 11): both legs are add/remove pairs with shift Δ/2, each bounded by the exact Poisson-subsampled Gaussian
  curve (Mironov, Talwar & Zhang 2019); capped per release by the unsampled Gaussian α/(2z²). Rigorous. For
  comparison the answer also lists spec §3.4's "option 2", the same MTZ19 curve at the replace-one sensitivity Δ
  (the usual DP-SGD practice and what the paper's appeal to Abadi et al. amounts to); no theorem covers it for
  replace-one neighbours, so it is shown, not used (at the spec's configurations it is the larger one anyway).
* ``sampling="uniform"``: each batch is a uniformly random set of B distinct records (the paper's scheme; for B = 1
  a uniform index). ``rdp``: Wang, Balle & Kasiviswanathan 2019, Thm. 27 (replace-one), rigorous and looser.
* ``tight``: not available (no privacy-loss-distribution accountant for subsampled Gaussians yet).

``paper``: the printed statements, ε = c(η)/z — Prop. 3 (the Gaussian mechanism in the Dwork–Roth form without the
1.25, valid only where the exact profile confirms it, ε ≲ 7–9; spec §3.1) and Theorem 1 (the moments accountant with
Abadi et al.'s unspecified constant replaced by √2; not rigorous, spec §3.1/§6.9). A paper statement joins ``best``
only where a rigorous accountant confirms it, so ``best`` ≤ ``paper`` whenever the paper is valid.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from scipy import optimize

from . import validation as check
from .calibration import calibrate_rdp
from .conversions import epsilon_for_linear_rdp, epsilon_from_rdp, linear_rdp_for_epsilon, order_grid
from .errors import CalibrationError, FieldIssue, ParameterError
from .events import DpEvent, GaussianEvent, PoissonSampledEvent, SampledWithoutReplacementEvent, SelfComposedEvent
from .mechanisms.gaussian import gaussian_epsilon, gaussian_noise_multiplier, gdp_epsilon
from .params import ParamsModel, param, resolve_noise_multiplier
from .plans import MechanismPlan
from .rdp import RdpAccountant
from .reports import (
    AccountantResult,
    Assumption,
    BoundResult,
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
from .synthetic.bilinear import BilinearProblem
from .verification import BlockResult, Plan, Simulator, canary_llr_scores

Passes = Literal["single", "multi"]
Sampling = Literal["poisson", "uniform"]

TIGHT_METHOD = (
    "analytic Gaussian (Balle & Wang 2018, Thm. 8) with μ = 1/z: one Gaussian release per record (parallel "
    "composition over disjoint batches, seed 000 Prop. 4), not summed over the steps"
)
SINGLE_RDP_METHOD = "Gaussian RDP α/(2z²) of the one release per record, converted exactly over real α"
_MULTI_TIGHT_REASON = (
    "dpcal's privacy-loss-distribution accountant covers Poisson sampling under add/remove-one neighbours (dp-sgd); "
    "multi-pass releases are accounted under replace-one, where no tight accountant is implemented: the rdp bound "
    "is certified"
)


@dataclass(frozen=True)
class NoisyReleases:
    """What a record is exposed to: ``count`` Gaussian releases of batch statistics with replace-one sensitivity Δ."""

    passes: Passes
    sampling: Sampling
    count: int
    dataset_size: int
    batch_size: int

    @property
    def sampling_rate(self) -> float:
        return self.batch_size / self.dataset_size

    def plan(self, z: float) -> MechanismPlan:
        """The releases as events under replace-one (z is relative to the replace-one sensitivity Δ): one Gaussian
        release per record (single pass: disjoint batches, parallel composition), or ``count`` subsampled ones
        (Poisson: the event's multiplier is relative to the add/remove shift Δ/2, i.e. 2z)."""
        if self.passes == "single":
            return MechanismPlan(GaussianEvent(z), "replace-one", description="one release per record")
        if self.sampling == "uniform":
            inner: DpEvent = SampledWithoutReplacementEvent(self.dataset_size, self.batch_size, GaussianEvent(z))
        else:
            inner = PoissonSampledEvent(self.sampling_rate, GaussianEvent(2.0 * z))
        return MechanismPlan(SelfComposedEvent(inner, self.count), "replace-one")

    def rdp_bounds(self, z: float) -> list[RdpBound]:
        """Every Rényi bound for this structure at multiplier z (the used ones first)."""
        if self.passes == "single":
            return [RdpBound("Gaussian mechanism, one release per record", _SINGLE_SOURCE, _linear(z), True)]
        q, k = self.sampling_rate, self.count
        if self.sampling == "uniform":
            event = SampledWithoutReplacementEvent(self.dataset_size, self.batch_size, GaussianEvent(z))
            return [
                RdpBound(
                    f"Gaussian on uniformly sampled batches of {self.batch_size}, {k} releases",
                    "Wang, Balle & Kasiviswanathan 2019, Thm. 27 (replace-one), composed",
                    RdpAccountant("replace-one").curve(SelfComposedEvent(event, k)),
                    True,
                )
            ]
        # Poisson: the event's multiplier is relative to the add/remove shift Δ/2, i.e. 2z
        triangle = SelfComposedEvent(PoissonSampledEvent(q, GaussianEvent(2.0 * z)), k)
        option2 = SelfComposedEvent(PoissonSampledEvent(q, GaussianEvent(z)), k)
        return [
            RdpBound(
                f"Poisson-subsampled Gaussian (q = {q:.6g}), {k} releases, weak triangle inequality",
                "Mironov 2017, Prop. 11, through the dataset without the record; each leg Mironov, Talwar & Zhang "
                "2019 (exact) with shift Δ/2; capped by α/(2z²) per release",
                RdpAccountant("replace-one").curve(triangle),
                True,
            ),
            RdpBound(
                f"Poisson-subsampled Gaussian at the replace-one sensitivity Δ (spec §3.4 option 2), {k} releases",
                "Mironov, Talwar & Zhang 2019 (add/remove curve) evaluated at the replace-one sensitivity Δ: the usual "
                "DP-SGD practice",
                RdpAccountant("add-remove").curve(option2),
                False,
                "shown for comparison, not used: no theorem covers the replace-one pair of Poisson mixtures with the "
                "add/remove curve at the doubled sensitivity; the weak-triangle bound is rigorous",
            ),
        ]

    def rdp_curve(self, z: float) -> Callable[[np.ndarray], np.ndarray]:
        """The per-order minimum of the used bounds."""
        used = [b.curve for b in self.rdp_bounds(z) if b.used]

        def curve(orders: np.ndarray) -> np.ndarray:
            return np.min([c(orders) for c in used], axis=0)

        return curve

    def rdp_method(self) -> str:
        if self.passes == "single":
            return SINGLE_RDP_METHOD
        if self.sampling == "uniform":
            return (
                f"RDP of the Gaussian on uniformly sampled batches (Wang, Balle & Kasiviswanathan 2019, Thm. 27), "
                f"{self.count} releases; improved conversion (Balle et al. 2020)"
            )
        return (
            f"RDP of the Poisson-subsampled Gaussian under replace-one neighbours (weak triangle inequality, "
            f"Mironov 2017 Prop. 11, with the exact MTZ19 curve), {self.count} releases; improved conversion "
            "(Balle et al. 2020)"
        )

    def sampling_text(self) -> str:
        if self.passes == "single":
            return (
                f"single pass: disjoint batches of {self.batch_size}, each record used in exactly one release "
                "(parallel composition); no sampling"
            )
        if self.sampling == "uniform":
            return (
                f"uniform: each of the {self.count} releases uses a uniformly random set of {self.batch_size} "
                f"distinct records out of {self.dataset_size}, independently across releases (the paper's scheme)"
            )
        return (
            f"Poisson: each record joins each of the {self.count} batches independently with probability "
            f"q = batch_size/dataset_size = {self.sampling_rate:.6g}, the batch sum divided by batch_size. The paper "
            "samples uniformly; implement Poisson sampling for this accounting to hold, or set sampling='uniform'"
        )


@dataclass(frozen=True)
class RdpBound:
    """One Rényi bound: the curve (a function of an array of orders) and whether the answer uses it."""

    name: str
    source: str
    curve: Callable[[np.ndarray], np.ndarray]
    used: bool
    reason: str | None = None


_SINGLE_SOURCE = "Mironov 2017, Prop. 7; parallel composition (seed 000, Prop. 4)"


def _linear(z: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: np.asarray(a, dtype=float) / (2.0 * z * z)


@dataclass(frozen=True)
class PaperStatement:
    """A paper's privacy statement of the form "the paper's noise multiplier z_p = c(η)/ε gives (ε, η)-DP".

    ``scale`` converts dpcal's multiplier to the paper's where the two are relative to different sensitivities
    (z_p = z·scale(z); NISPP: the paper's 4M/(λB) against Prop. 9's sharper bound); default 1."""

    source: str
    formula: str
    coefficient: Callable[[float], float]
    """c(η): the claimed ε at the paper's multiplier z_p is c(η)/z_p."""
    kind: Literal["gaussian", "moments"]
    """gaussian: Prop. 3, checked exactly; moments: Theorem 1's constant, not rigorous."""
    scale: Callable[[float], float] | None = None

    def claimed_epsilon(self, z: float, delta: float) -> float:
        return self.coefficient(delta) / (z * (1.0 if self.scale is None else self.scale(z)))

    def multiplier(self, epsilon: float, delta: float) -> float:
        """dpcal's multiplier z at which the paper prescribes its noise for (ε, δ) (z·scale(z) increases with z)."""
        paper = self.coefficient(delta) / epsilon
        if not paper <= 1e300:
            raise CalibrationError(
                f"target_epsilon {epsilon:.3g} is too small: the paper's noise multiplier overflows floating point"
            )
        if self.scale is None:
            return paper

        def excess(log_z: float) -> float:
            z = math.exp(log_z)
            return math.log(z * self.scale(z)) - math.log(paper)  # type: ignore[misc]

        lo, hi = math.log(paper) - 1.0, math.log(paper) + 1.0
        while excess(lo) > 0.0:
            lo -= 2.0
        while excess(hi) < 0.0:
            hi += 2.0
        return math.exp(optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=1e-15))


def gaussian_mechanism_statement(source: str, scale: Callable[[float], float] | None = None) -> PaperStatement:
    """Seed 000 Prop. 3 in multiplier units: σ = Δ√(2 ln(1/η))/ε, i.e. z = √(2 ln(1/η))/ε."""
    return PaperStatement(
        source, "z = √(2 ln(1/η))/ε (Prop. 3)", lambda d: math.sqrt(2.0 * math.log(1.0 / d)), "gaussian", scale
    )


def moments_statement(
    source: str, formula: str, coefficient: Callable[[float], float], scale: Callable[[float], float] | None = None
) -> PaperStatement:
    return PaperStatement(source, formula, coefficient, "moments", scale)


# -- parameters shared by the seed-000 families ----------------------------------------------------------------------

MAX_COUNT = 10**12
MAX_STEPS = 10**15


def dataset_size_field() -> Any:
    return param("Number of records.", symbol="n", unit="records", example=10000, ge=1, le=MAX_COUNT)


def sampling_field() -> Any:
    return param(
        "Multi pass only: how each batch is drawn. poisson (default): each record independently with probability "
        "B/n, the sum divided by B. uniform: B distinct records uniformly at random (the paper's scheme), accounted "
        "with the looser Wang–Balle–Kasiviswanathan bound.",
        example="poisson",
        default="poisson",
    )


def lipschitz_field() -> Any:
    return param(
        "Bound on the operator: sup over W of ‖F_β(w)‖ for every record (for a saddle point: f_β is M-Lipschitz in x "
        "and in y).",
        symbol="M",
        unit="operator units",
        example=2.414,
        gt=0,
        le=1e12,
    )


def smoothness_field() -> Any:
    return param(
        "Lipschitz constant of the operator F_β (for a saddle point L = √(L_x² + L_y²)).",
        symbol="L",
        unit="operator units per parameter unit",
        example=1.0,
        ge=0,
        le=1e12,
    )


def diameter_field() -> Any:
    return param("Diameter of the feasible set W.", symbol="D", unit="parameter units", example=2.828, gt=0, le=1e12)


def dimension_field() -> Any:
    return param("Dimension of W.", symbol="d", unit="coordinates", example=10, ge=1, le=MAX_COUNT)


def common_issues(p: Any) -> list[FieldIssue]:
    """Rules every seed-000 parameter set obeys: B ≤ n and at most one of noise_multiplier, noise_std."""
    issues = []
    if p.batch_size > p.dataset_size:
        issues.append(
            FieldIssue(
                ("batch_size",), "must not exceed dataset_size", f"an integer in [1, {p.dataset_size}]", p.batch_size
            )
        )
    if p.noise_multiplier is not None and p.noise_std is not None:
        issues.append(
            FieldIssue(
                ("noise_std",),
                "give noise_multiplier or noise_std, not both",
                "at most one of noise_multiplier, noise_std",
            )
        )
    return issues


def sampling_notes(releases: NoisyReleases, sampled: str) -> list[str]:
    """What the answer assumes about the batches, in words (``sampled``: what the paper draws)."""
    if releases.passes == "single":
        return (
            ["sampling applies to the multi-pass variant only; ignored for passes='single'"]
            if releases.sampling != "poisson"
            else []
        )
    if releases.sampling == "poisson":
        return [
            f"multi pass is accounted for Poisson sampling (rate B/n); the paper draws {sampled}: implement Poisson "
            "batches, or set sampling='uniform' for the (looser) bound that covers the paper's scheme"
        ]
    return []


class BilinearProblemSettings(ParamsModel):
    """The synthetic problem of an nseg or nispp verification job."""

    kind: Literal["bilinear"] = param(
        "bilinear: the saddle point xᵀAy + b_xᵀx − b_yᵀy on a product of balls (spec §7.5) with ‖A‖ = smoothness, "
        "radius diameter/(2√2) and records bounded so that the operator bound is exactly lipschitz; closed-form gap.",
        example="bilinear",
        default="bilinear",
    )


# -- answers -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Accounting:
    """Every accountant's answer at one noise multiplier, and the chosen one."""

    noise_multiplier: float
    epsilon: float
    accountant: str
    optimal_order: float | None
    curve: RdpCurve
    results: tuple[AccountantResult, ...]
    bounds: tuple[BoundResult, ...]
    warnings: tuple[str, ...]
    certified: float
    """The best rigorous ε (what the paper's claims are checked against)."""


def account(
    releases: NoisyReleases,
    z: float,
    delta: float,
    paper: PaperStatement,
    accountant: str = "best",
    orders: Sequence[float] | np.ndarray | None = None,
    refine: bool = True,
    calibrated: bool = False,
) -> Accounting:
    """ε at ``delta`` from every accountant for multiplier ``z``; ``accountant`` picks the answer."""
    d = check.delta("delta", delta)
    grid = order_grid(orders)
    bounds = releases.rdp_bounds(z)
    results: list[AccountantResult] = []
    tag = z if calibrated else None
    if releases.passes == "single":
        rho = 1.0 / (2.0 * z * z)
        rdp_eps, alpha = epsilon_for_linear_rdp(rho, d)
        rdp_order = alpha if math.isfinite(alpha) else None
        results.append(
            AccountantResult(
                "rdp",
                True,
                rdp_eps,
                "certified upper bound",
                SINGLE_RDP_METHOD,
                optimal_order=rdp_order,
                noise_multiplier=tag,
            )
        )
        tight = gaussian_epsilon(z, d)
        results.append(AccountantResult("tight", True, tight, "exact", TIGHT_METHOD, noise_multiplier=tag))
        curve_values = rho * grid
        bound_curves = [curve_values]
        bound_eps = [rdp_eps]
    else:
        conversion = epsilon_from_rdp(releases.rdp_curve(z), d, grid, refine)
        if not math.isfinite(conversion.value):
            raise ParameterError.single(
                "noise_multiplier", "is too small for a finite ε bound at this δ", "a larger value"
            )
        rdp_eps, rdp_order = conversion.value, conversion.optimal_order
        results.append(
            AccountantResult(
                "rdp",
                True,
                rdp_eps,
                "certified upper bound",
                releases.rdp_method(),
                optimal_order=rdp_order,
                noise_multiplier=tag,
            )
        )
        results.append(AccountantResult("tight", False, reason=_MULTI_TIGHT_REASON))
        curve_values = conversion.rdp
        bound_curves = [b.curve(grid) for b in bounds]
        bound_eps = [epsilon_from_rdp(b.curve, d, grid, refine).value for b in bounds]
    certified = min(r.epsilon for r in results if r.applicable)  # type: ignore[type-var]
    claimed = paper.claimed_epsilon(z, d)
    valid = certified <= claimed * (1.0 + 1e-12)
    results.append(
        AccountantResult(
            "paper",
            True,
            claimed,
            _paper_guarantee(paper, valid, certified),
            f"{paper.source}: {paper.formula}",
            noise_multiplier=tag,
            kind=Guarantee.PAPER_VALID if valid else Guarantee.PAPER_AS_PRINTED,
        )
    )
    chosen = choose_accountant(results, accountant)
    bound_results = tuple(
        BoundResult(
            name=b.name,
            source=b.source,
            applicable=b.used,
            reason=b.reason,
            conditions=(Assumption("used by the rdp accountant" if b.used else "not used", b.used, b.reason),),
            rdp=tuple(float(v) for v in values),
            epsilon=float(e),
            selected=b.used,
            releases="every release (the whole transcript)",
        )
        for b, values, e in zip(bounds, bound_curves, bound_eps, strict=True)
    )
    warnings = list(_paper_warnings(paper, claimed, certified, valid, d))
    return Accounting(
        noise_multiplier=z,
        epsilon=chosen.epsilon,  # type: ignore[arg-type]
        accountant=chosen.name,
        optimal_order=rdp_order if chosen.name == "rdp" else None,
        curve=RdpCurve(tuple(grid.tolist()), tuple(float(v) for v in curve_values)),
        results=tuple(results),
        bounds=bound_results,
        warnings=tuple(warnings),
        certified=certified,
    )


def calibrate(
    releases: NoisyReleases,
    target_epsilon: float,
    delta: float,
    paper: PaperStatement,
    accountant: str = "best",
    orders: Sequence[float] | np.ndarray | None = None,
) -> tuple[Accounting, PaperCalibration]:
    """The smallest multiplier meeting the target with the chosen accountant (best: the smallest over the rigorous
    ones), every accountant's own multiplier, and the paper's calibration with what it really certifies."""
    target = check.positive("target_epsilon", target_epsilon)
    d = check.delta("delta", delta)
    grid = order_grid(orders, default=None)
    z_paper = paper.multiplier(target, d)
    per_accountant: dict[str, float] = {}
    if releases.passes == "single":
        per_accountant["tight"] = gaussian_noise_multiplier(target, d)
        rho = linear_rdp_for_epsilon(target, d)
        z_rdp = math.sqrt(1.0 / (2.0 * rho))
        while epsilon_for_linear_rdp(1.0 / (2.0 * z_rdp * z_rdp), d)[0] > target:
            z_rdp = math.nextafter(z_rdp, math.inf)
        per_accountant["rdp"] = z_rdp
    else:
        result = calibrate_rdp(releases.rdp_curve, d, target, orders=grid, initial=z_paper)
        per_accountant["rdp"] = result.noise
    if accountant == "paper":
        z = z_paper
    elif accountant == "best":
        z = min(per_accountant.values())
    elif accountant in per_accountant:
        z = per_accountant[accountant]
    else:
        account(releases, z_paper, d, paper, accountant, grid)  # raises: not applicable, with the reason
        raise AssertionError(accountant)
    answer = account(releases, z, d, paper, accountant, grid, calibrated=True)
    results = tuple(
        _with_multiplier(r, per_accountant.get(r.name, z_paper if r.name == "paper" else None), releases, d, paper)
        for r in answer.results
    )
    at_paper = account(releases, z_paper, d, paper, "best", grid)
    valid = at_paper.certified <= target * (1.0 + 1e-12)
    note = (
        f"the paper prescribes z = {z_paper:.6g} ({paper.formula}); the rigorous accountants certify ε = "
        f"{at_paper.certified:.6g} for it"
        + ("" if valid else f", above the target {target:g}: the paper under-noises here")
        + (f"; the smallest multiplier meeting the target is {min(per_accountant.values()):.6g}" if valid else "")
    )
    paper_calibration = PaperCalibration(
        source=paper.source,
        noise_multiplier=z_paper,
        epsilon_claimed=target,
        epsilon_certified=at_paper.certified,
        certified_by=at_paper.accountant if at_paper.accountant != "paper" else "best",
        valid=valid,
        note=note,
    )
    warnings = list(answer.warnings)
    if not valid:
        warnings.append(
            f"the paper's calibration under-noises: at its z = {z_paper:.6g} the rigorous accountants certify only "
            f"ε = {at_paper.certified:.6g} > {target:g}"
        )
    return (
        Accounting(
            noise_multiplier=z,
            epsilon=answer.epsilon,
            accountant=answer.accountant,
            optimal_order=answer.optimal_order,
            curve=answer.curve,
            results=results,
            bounds=answer.bounds,
            warnings=tuple(dict.fromkeys(warnings)),
            certified=answer.certified,
        ),
        paper_calibration,
    )


def _with_multiplier(
    result: AccountantResult, z: float | None, releases: NoisyReleases, delta: float, paper: PaperStatement
) -> AccountantResult:
    """An accountant's result at its own calibrated multiplier (its ε there, ≤ the target)."""
    if not result.applicable or z is None:
        return result
    if result.name == "paper":
        epsilon = paper.claimed_epsilon(z, delta)
    elif result.name == "tight":
        epsilon = gaussian_epsilon(z, delta)
    elif releases.passes == "single":
        epsilon = epsilon_for_linear_rdp(1.0 / (2.0 * z * z), delta)[0]
    else:
        epsilon = epsilon_from_rdp(releases.rdp_curve(z), delta).value
    return AccountantResult(
        result.name,
        True,
        epsilon,
        result.guarantee,
        result.method,
        optimal_order=result.optimal_order,
        noise_multiplier=z,
    )


def _paper_guarantee(paper: PaperStatement, valid: bool, certified: float) -> str:
    if paper.kind == "gaussian":
        state = "holds (the exact Gaussian profile confirms it)" if valid else "fails (the exact profile exceeds η)"
        return f"the paper's statement, as printed; {state}"
    state = (
        f"confirmed by the rigorous accountants (ε = {certified:.6g})"
        if valid
        else f"NOT confirmed: the rigorous accountants certify only ε = {certified:.6g}"
    )
    return f"the paper's statement, as printed (Theorem 1's constant is not rigorous); {state}"


def _paper_warnings(paper: PaperStatement, claimed: float, certified: float, valid: bool, delta: float) -> list[str]:
    if valid:
        return []
    if paper.kind == "gaussian":
        return [
            f"the paper's Gaussian-mechanism form (Prop. 3, the Dwork–Roth form without the 1.25) claims ε = "
            f"{claimed:.6g}, but the exact profile needs ε = {certified:.6g} at δ = {delta:g}: the form fails for "
            "large ε (spec §3.1)"
        ]
    return [
        f"the paper's moments-accountant statement (Theorem 1, constant not rigorous) claims ε = {claimed:.6g}; the "
        f"rigorous accountants certify only ε = {certified:.6g} for this noise"
    ]


# -- reports ---------------------------------------------------------------------------------------------------------


def resolve_multiplier(noise_multiplier: float | None, noise_std: float | None, sensitivity: float) -> float:
    """z given directly or as σ/Δ (raises a 4xx-style error naming noise_multiplier when neither is given)."""
    return resolve_noise_multiplier(noise_multiplier, noise_std, sensitivity)


def privacy_report(
    algorithm: str,
    answer: Accounting,
    delta: float,
    noise: Noise,
    conventions: Conventions,
    releases: tuple[Release, ...],
    notes: Sequence[str],
) -> PrivacyReport:
    return PrivacyReport(
        algorithm=algorithm,
        epsilon=answer.epsilon,
        delta=delta,
        accountant=answer.accountant,
        optimal_order=answer.optimal_order,
        rdp=answer.curve,
        accountants=answer.results,
        noise=noise,
        conventions=conventions,
        warnings=tuple(dict.fromkeys([*notes, *answer.warnings])),
        bounds=answer.bounds,
        releases=releases,
    )


def calibration_report(
    algorithm: str,
    answer: Accounting,
    target_epsilon: float,
    delta: float,
    noise: Noise,
    conventions: Conventions,
    releases: tuple[Release, ...],
    utility: UtilityReport | None,
    paper: PaperCalibration,
    recommended: tuple[Recommendation, ...],
    notes: Sequence[str],
    utility_reason: str | None = None,
) -> CalibrationReport:
    return CalibrationReport(
        algorithm=algorithm,
        target_epsilon=target_epsilon,
        delta=delta,
        noise_multiplier=answer.noise_multiplier,
        noise_std=noise.noise_std,
        epsilon=answer.epsilon,
        accountant=answer.accountant,
        optimal_order=answer.optimal_order,
        rdp=answer.curve,
        accountants=answer.results,
        noise=noise,
        conventions=conventions,
        utility=utility,
        utility_reason=None if utility is not None else utility_reason,
        paper=paper,
        paper_reason=None,
        calibrated_parameter="noise_multiplier",
        calibrated_value=answer.noise_multiplier,
        warnings=tuple(dict.fromkeys([*notes, *answer.warnings])),
        bounds=answer.bounds,
        releases=releases,
        recommended=recommended,
    )


def finite_bounds(compute: Callable[[], list[UtilityBound]], scale_fields: str) -> list[UtilityBound]:
    """The utility bounds ``compute`` gives, or an error naming the fields to rescale when a bound is not a finite
    number (it overflows, or divides by an underflowed constant: vacuous at these scales)."""
    try:
        bounds = compute()
    except (ZeroDivisionError, OverflowError):
        bounds = []
    if not bounds or not all(math.isfinite(b.value) for b in bounds):
        raise ParameterError.single(
            "params",
            "the predicted utility bounds are not representable in floating point at these scales (check "
            f"{scale_fields})",
            f"values of {scale_fields} whose products stay within [1e-300, 1e300]",
        )
    return bounds


# -- simulation on bilinear saddle points ------------------------------------------------------------------------------

MAX_SIMULATED_DIMENSION = 64
MAX_SIMULATED_RECORDS = 10**6
"""Multi-pass runs keep each trial's dataset in memory: dataset_size·dimension is bounded by this."""


class BatchSource:
    """Batch means for successive evaluations of a run, for ``runs`` independent runs.

    Single pass: every batch is fresh (disjoint batches of i.i.d. records). Multi pass: each run owns one dataset of
    n records, and every batch is drawn from it (Poisson: each record with probability B/n, the sum divided by B;
    uniform: B distinct records).
    """

    def __init__(self, problem: BilinearProblem, params: Mapping[str, Any], rng: np.random.Generator, runs: int):
        self.problem, self.rng, self.runs = problem, rng, runs
        self.batch = int(params["batch_size"])
        self.multi = params["passes"] == "multi"
        self.sampling = params.get("sampling", "poisson")
        if self.multi:
            n, d = int(params["dataset_size"]), problem.dimension
            signs = rng.choice(np.array([-1.0, 1.0]), size=(runs, n, d))
            self.records = problem.mean + (problem.spread / math.sqrt(d)) * signs

    def next(self) -> np.ndarray:
        if not self.multi:
            return self.problem.batch_means(self.rng, self.runs, self.batch)
        runs, n = self.records.shape[0], self.records.shape[1]
        if self.sampling == "poisson":
            mask = self.rng.random((runs, n)) < self.batch / n
            return np.einsum("rn,rnd->rd", mask.astype(float), self.records) / self.batch
        if self.batch == 1:
            index = self.rng.integers(n, size=runs)
            return self.records[np.arange(runs), index]
        chosen = np.argpartition(self.rng.random((runs, n)), self.batch - 1, axis=1)[:, : self.batch]
        return np.take_along_axis(self.records, chosen[:, :, None], axis=1).mean(axis=1)


class BilinearSimulator(Simulator):
    """A seed-000 method run on the bilinear saddle point of :mod:`accountants.synthetic.bilinear`, built with the
    family's own constants (M, L, D, d), plus a canary audit of the releases.

    Audit: the distinguishing record is a *canary* with the constant operator F ≡ M·v (monotone, 0-Lipschitz,
    M-bounded: in the class), its replacement F ≡ −M·v, and every other record of the audited dataset has the zero
    operator. The transcript along v then shows the canary's contribution (±1 in its own units) plus Gaussian noise
    in every release that includes it: one deterministic release in a single pass, each release with probability
    q in a multi pass. Scores are the transcript's log-likelihood ratio (:func:`canary_llr_scores`).
    """

    algorithm: ClassVar[str]

    def __init__(self, family: Any) -> None:
        self.family = family

    @abstractmethod
    def resolve(self, p: Any, sigma: float) -> dict[str, Any]:
        """The method's remaining settings (step size, regularisation, …) as simulated."""

    @abstractmethod
    def prediction(self, p: Any, sigma: float, resolved: Mapping[str, Any]) -> tuple[float, str]:
        """(predicted explicit bound on the measured gap, its source)."""

    @abstractmethod
    def canary_units(self, p: Any, sigma: float) -> float:
        """The noise std in units of the canary's contribution to a release."""

    @abstractmethod
    def run(self, plan: Plan, problem: BilinearProblem, rng: np.random.Generator, trials: int) -> np.ndarray:
        """The measured gaps of ``trials`` independent runs."""

    @abstractmethod
    def work(self, p: Any, steps: int, trials: int, checks: tuple[str, ...]) -> float:
        """Estimated elementary operations."""

    def audit_support(self, p: Any) -> str | None:
        """Why the audit is not offered for these parameters (None: it is)."""
        return None

    def plan(
        self, params: ParamsModel, delta: float, checks: tuple[str, ...], trials: int, seed: int, problem: ParamsModel
    ) -> Plan:
        p: Any = params
        if "privacy-audit" in checks and (reason := self.audit_support(p)) is not None:
            raise ParameterError.single("checks", reason, "utility")
        if p.dimension > MAX_SIMULATED_DIMENSION or p.dimension < 2:
            raise ParameterError.single(
                "params.dimension",
                "the bilinear simulator needs a dimension in [2, 64]",
                f"an integer in [2, {MAX_SIMULATED_DIMENSION}]",
                p.dimension,
            )
        if p.passes == "multi" and "utility" in checks and p.dataset_size * p.dimension > MAX_SIMULATED_RECORDS:
            raise ParameterError.single(
                "params.dataset_size",
                f"multi-pass simulation keeps each trial's dataset in memory: dataset_size·dimension must be at most "
                f"{MAX_SIMULATED_RECORDS:g}",
                f"an integer ≤ {MAX_SIMULATED_RECORDS // p.dimension}",
                p.dataset_size,
            )
        bound = p.smoothness * p.diameter / 2.0
        if p.lipschitz <= bound:
            raise ParameterError.single(
                "params.lipschitz",
                "the bilinear instance needs lipschitz > smoothness·diameter/2 (the records' own bound is "
                "lipschitz − smoothness·diameter/2)",
                f"> {bound:.6g}",
                p.lipschitz,
            )
        report = self.family.privacy(p, delta)
        z, sigma = report.noise.noise_multiplier, report.noise.noise_std
        steps = report.conventions.steps
        resolved: dict[str, Any] = {"kind": "bilinear", "steps": steps, "noise_std": sigma}
        resolved |= self.resolve(p, sigma)
        releases = report.releases[0]
        single = p.passes == "single"
        units = self.canary_units(p, sigma)
        resolved |= {
            "canary_releases": 1 if single else releases.count,
            "canary_rate": 1.0 if single else p.batch_size / p.dataset_size,
            "canary_noise": units,
        }
        predicted = source = None
        if "utility" in checks:
            predicted, source = self.prediction(p, sigma, resolved)
        exact = gdp_epsilon(2.0 / units, delta) if single else None
        return Plan(
            algorithm=self.algorithm,
            params=p.model_dump() | {"noise_multiplier": z, "noise_std": None},
            problem=resolved,
            checks=checks,
            trials=trials,
            seed=seed,
            delta=delta,
            epsilon_accounted=report.epsilon,
            accountant=report.accountant,
            epsilon_exact=exact,
            exact_note="analytic Gaussian of the canary's one release (Balle & Wang 2018)"
            if single
            else "no closed form for a subsampled Gaussian transcript",
            utility_measure="strong VI gap (= SP gap) of the output at the population mean" if predicted else None,
            predicted_bound=predicted,
            predicted_source=source,
            prediction_note="the strong gap dominates the weak gap the multi-pass theorems bound: a conservative check"
            if predicted is not None and not single
            else None,
            audit_method="constant-operator canary F ≡ ±M·v, the other records of the audited dataset zero; score: "
            "log-likelihood ratio of the transcript along v (most powerful test)"
            if "privacy-audit" in checks
            else None,
            work=self.work(p, steps, trials, checks),
        )

    def run_block(self, plan: Plan, rng: np.random.Generator, trials: int) -> BlockResult:
        p, resolved = plan.params, plan.problem
        result: dict[str, np.ndarray] = {}
        if "utility" in plan.checks:
            problem = BilinearProblem.for_constants(
                plan.seed, p["dimension"], p["lipschitz"], p["smoothness"], p["diameter"]
            )
            result["utility"] = self.run(plan, problem, rng, trials)
        if "privacy-audit" in plan.checks:
            count, rate, units = resolved["canary_releases"], resolved["canary_rate"], resolved["canary_noise"]
            result["score_in"] = canary_llr_scores(rng, trials, count, rate, units, True, inside=True)
            result["score_out"] = canary_llr_scores(rng, trials, count, rate, units, True, inside=False)
        return BlockResult(**result)
