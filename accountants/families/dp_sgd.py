"""``dp-sgd``: Poisson-subsampled DP-SGD (Abadi et al. 2016), every iterate released.

Each step clips per-example gradients to L2 norm C, sums a random batch and adds N(0, (z·Δ)² I), where Δ is the
sensitivity of the clipped sum under the neighbouring relation: Δ = C (add/remove-one), Δ = 2C (replace-one).
``noise_multiplier`` z is therefore noise std / Δ, and ``noise_std`` = z·Δ. (opacus and TF-Privacy define the
multiplier as std/C; under replace-one their multiplier is 2z.)

Batches, and the accountant for each:

* ``sampling="poisson"``, add/remove-one: each record joins each batch independently with q = b/n.
  RDP: Mironov, Talwar & Zhang 2019 (exact, integer and fractional orders). Tight: for q = 1 (full batch) the
  composition of T Gaussians is one Gaussian with μ = √T/z, exact by the analytic Gaussian (Balle & Wang 2018);
  for q < 1 the privacy-loss distribution of both add/remove directions, pessimistically discretised and composed
  by FFT with bounded error (:mod:`accountants.mechanisms.poisson_gaussian_pld`): an upper bound within ~1e-3
  relative of the exact ε.
* ``sampling="poisson"``, replace-one: RDP through the dataset without the record (Mironov 2017, Prop. 11, p = 2),
  conservative.
* ``sampling="fixed-size"`` (uniformly random batches of exactly b), replace-one only: RDP by Wang, Balle &
  Kasiviswanathan 2019, Thm. 27. Shuffled or cyclic passes are *not* this: see ``dp-sgd-last-iterate``.

Steps: ``steps`` as given, or from ``epochs`` as ceil(E·n/b) (TF-Privacy's rule, the conservative one; opacus uses
floor: set ``epoch_rounding="floor"``), computed in exact decimal arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any, ClassVar, Literal

import numpy as np

from .. import validation as check
from ..calibration import calibrate, calibrate_rdp
from ..conversions import Conversion, order_grid
from ..errors import CalibrationError, FieldIssue, ParameterError
from ..events import DpEvent, GaussianEvent, PoissonSampledEvent, SampledWithoutReplacementEvent, SelfComposedEvent
from ..mechanisms.gaussian import gaussian_epsilon, gaussian_noise_multiplier
from ..mechanisms.poisson_gaussian_pld import DEFAULT_VALUE_DISCRETIZATION, PoissonGaussianPld
from ..params import NOISE_MULTIPLIER_RANGE, Count, ParamsModel, bounded_count, param, resolve_noise_multiplier
from ..plans import MechanismPlan
from ..rdp import RdpAccountant
from ..registry import AlgorithmFamily, BoundInfo, Cost, Operation, register
from ..registry import get as registry_get
from ..reports import (
    AccountantResult,
    CalibrationReport,
    Conventions,
    Noise,
    PrivacyReport,
    RdpCurve,
    UtilityReport,
    choose_accountant,
    not_asked,
)
from ..verification import BlockResult, Plan, Simulator, canary_llr_scores

MAX_COUNT = 10**12


class DpSgdParams(ParamsModel):
    """Hyperparameters of Poisson-subsampled (or fixed-size-batch) DP-SGD."""

    dataset_size: Count = param(
        "Number of records in the training set.", symbol="n", unit="records", example=60000, ge=1, le=MAX_COUNT
    )
    batch_size: Count = param(
        "Batch size: the expected batch size under Poisson sampling (sampling rate q = batch_size/dataset_size), "
        "the exact batch size under fixed-size sampling. At most dataset_size.",
        symbol="b (q = b/n)",
        unit="records",
        example=256,
        ge=1,
        le=MAX_COUNT,
    )
    steps: bounded_count(1, MAX_COUNT) | None = param(
        "Number of noisy gradient steps (compositions). Give steps or epochs, not both.",
        symbol="T",
        unit="steps",
        example=14063,
        default=None,
    )
    epochs: float | None = param(
        "Passes over the data, converted to steps = epoch_rounding(epochs·dataset_size/batch_size). "
        "Give steps or epochs, not both.",
        symbol="E",
        unit="epochs",
        example=60,
        gt=0,
        le=1e6,
        default=None,
    )
    epoch_rounding: Literal["ceil", "floor"] = param(
        "How epochs become steps: ceil (TF-Privacy; counts a final partial epoch) or floor (opacus).",
        example="ceil",
        default="ceil",
    )
    noise_multiplier: float | None = param(
        "Noise std divided by the L2 sensitivity of the clipped sum (clip_norm under add-remove, 2·clip_norm under "
        "replace-one). Required for privacy accounting (or give noise_std); computed by calibration.",
        symbol="z (σ in Abadi et al.)",
        unit="multiples of the sensitivity",
        example=1.1,
        ge=NOISE_MULTIPLIER_RANGE[0],
        le=NOISE_MULTIPLIER_RANGE[1],
        default=None,
    )
    noise_std: float | None = param(
        "Absolute std of the Gaussian noise added to the summed clipped gradients; an alternative to "
        "noise_multiplier (noise_multiplier = noise_std / sensitivity).",
        symbol="zΔ",
        unit="gradient L2-norm units",
        example=1.1,
        gt=0,
        le=1e18,
        default=None,
    )
    clip_norm: float = param(
        "Per-example L2 clipping norm; only converts between noise_multiplier and noise_std.",
        symbol="C",
        unit="gradient L2-norm units",
        example=1.0,
        gt=0,
        le=1e12,
        default=1.0,
    )
    sampling: Literal["poisson", "fixed-size"] = param(
        "How batches are drawn: poisson (each record independently with q = b/n) or fixed-size (uniformly random "
        "subsets of exactly b records, accounted under replace-one only).",
        example="poisson",
        default="poisson",
    )
    neighbouring: Literal["add-remove", "replace-one"] = param(
        "Neighbouring datasets: add-remove (one record added or removed) or replace-one (one record replaced; the "
        "sensitivity of the clipped sum is then 2·clip_norm). Also accepted under the US spelling `neighboring`.",
        example="add-remove",
        default="add-remove",
    )

    def check(self) -> list[FieldIssue]:
        issues = []
        if (self.steps is None) == (self.epochs is None):
            issues.append(
                FieldIssue(("steps",), "give exactly one of steps and epochs", "exactly one of steps, epochs")
            )
        if self.batch_size > self.dataset_size:
            issues.append(
                FieldIssue(
                    ("batch_size",),
                    "must not exceed dataset_size",
                    f"an integer in [1, {self.dataset_size}]",
                    self.batch_size,
                )
            )
        if self.noise_multiplier is not None and self.noise_std is not None:
            issues.append(
                FieldIssue(
                    ("noise_std",),
                    "give noise_multiplier or noise_std, not both",
                    "at most one of noise_multiplier, noise_std",
                )
            )
        if self.sampling == "fixed-size" and self.neighbouring != "replace-one":
            issues.append(
                FieldIssue(
                    ("neighbouring",),
                    "fixed-size batches are accounted under replace-one neighbours only (the dataset size must be "
                    "public; Wang, Balle & Kasiviswanathan 2019)",
                    "replace-one (with sampling='fixed-size')",
                    self.neighbouring,
                )
            )
        if self.epochs is not None and self.steps is None and _steps_from_epochs(self)[0] < 1:
            issues.append(
                FieldIssue(
                    ("epochs",),
                    "gives zero steps with floor rounding",
                    "epochs >= batch_size/dataset_size",
                    self.epochs,
                )
            )
        return issues

    @property
    def sampling_rate(self) -> float:
        return self.batch_size / self.dataset_size

    @property
    def sensitivity(self) -> float:
        return self.clip_norm * (2.0 if self.neighbouring == "replace-one" else 1.0)


def _steps_from_epochs(p: DpSgdParams) -> tuple[int, str]:
    exact = Fraction(repr(p.epochs)) * p.dataset_size / p.batch_size
    steps = math.ceil(exact) if p.epoch_rounding == "ceil" else math.floor(exact)
    return steps, (
        f"steps = {p.epoch_rounding}(epochs·dataset_size/batch_size) = {p.epoch_rounding}({p.epochs:g}·"
        f"{p.dataset_size}/{p.batch_size}) = {steps}"
    )


def steps_and_rule(p: DpSgdParams) -> tuple[int, str]:
    if p.steps is not None:
        return p.steps, f"steps as given: {p.steps}"
    return _steps_from_epochs(p)


_SAMPLING_TEXT = {
    "poisson": "Poisson: each record joins each batch independently with probability q = batch_size/dataset_size",
    "fixed-size": "fixed-size: each batch is a uniformly random subset of exactly batch_size records",
}
_SENSITIVITY_RULE = {
    "add-remove": "sensitivity = clip_norm (one clipped gradient added or removed)",
    "replace-one": "sensitivity = 2·clip_norm (one clipped gradient replaced by another)",
}


@register
class DpSgd(AlgorithmFamily):
    id = "dp-sgd"
    example: ClassVar[Mapping[str, Any]] = {
        "dataset_size": 60000,
        "batch_size": 256,
        "epochs": 60,
        "noise_multiplier": 1.1,
    }
    job_example: ClassVar[Mapping[str, Any] | None] = {
        "params": {"dataset_size": 1000, "batch_size": 1000, "steps": 10},
        "delta": 1e-05,
        "target_epsilon": 3.0,
        "checks": ["privacy-audit"],
        "trials": 20000,
        "seed": 1,
    }
    title = "Poisson-subsampled DP-SGD"
    summary = (
        "Noisy clipped SGD on random batches (Abadi et al. 2016) with every iterate released: the baseline that "
        "dp_accounting and opacus account for, with Poisson or fixed-size batches and either neighbouring relation."
    )
    source = (
        "Abadi et al. 2016 (DP-SGD); Mironov, Talwar & Zhang 2019 (RDP of the sampled Gaussian); Wang, Balle & "
        "Kasiviswanathan 2019, Thm. 27 (fixed-size batches); Balle & Wang 2018, Thm. 8 (analytic Gaussian)"
    )
    params_model = DpSgdParams
    accountants = ("rdp", "tight")
    noise_fields = ("noise_multiplier", "noise_std")
    assumptions = (
        "Per-example gradients are clipped to L2 norm clip_norm before summation.",
        "Batches are drawn as declared in `sampling` (Poisson or uniformly random fixed-size); shuffled or cyclic "
        "passes are not covered by this accounting.",
        "Every iterate may be released (no hidden-state amplification is assumed).",
    )
    bounds = (
        BoundInfo(
            "RDP of the Poisson-subsampled Gaussian",
            "privacy",
            "Mironov, Talwar & Zhang 2019, §3.3",
            ("sampling = poisson", "neighbouring = add-remove"),
            "rdp",
        ),
        BoundInfo(
            "Weak triangle inequality through the dataset without the record",
            "privacy",
            "Mironov 2017, Prop. 11 (p = 2)",
            ("sampling = poisson", "neighbouring = replace-one"),
            "rdp",
        ),
        BoundInfo(
            "RDP of the Gaussian on a batch sampled without replacement",
            "privacy",
            "Wang, Balle & Kasiviswanathan 2019, Thm. 27",
            ("sampling = fixed-size", "neighbouring = replace-one"),
            "rdp",
        ),
        BoundInfo(
            "Privacy-loss distribution of the Poisson-subsampled Gaussian",
            "privacy",
            "Doroshenko et al. 2022 (connect-the-dots); Koskela, Jälkö & Honkela 2020 (FFT composition)",
            ("sampling = poisson", "neighbouring = add-remove", "δ above the distribution's atom at +∞"),
            "tight",
        ),
        BoundInfo(
            "Analytic Gaussian (exact) for full-batch training",
            "privacy",
            "Balle & Wang 2018, Thm. 8",
            ("batch_size = dataset_size",),
            "tight",
        ),
    )

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """T subsampled Gaussian releases (Poisson or fixed-size batches) under the chosen neighbouring relation."""
        p: DpSgdParams = self.parse(params)
        steps, _ = steps_and_rule(p)
        return MechanismPlan(_event(p, _noise_multiplier(p), steps), p.neighbouring, description=_rdp_method(p))

    def cost(self, operation: Operation, params: Mapping[str, Any] | ParamsModel, accountant: str = "best") -> Cost:
        """Heavy exactly where a privacy-loss distribution is built: Poisson batches under add/remove-one below full
        batch, when the tight accountant is asked for (``tight``, or ``best``, which needs its value)."""
        p: DpSgdParams = self.parse(params)
        builds_pld = p.batch_size < p.dataset_size and _tight_not_applicable(p) is None
        asks_tight = operation is not Operation.UTILITY and accountant in ("best", "tight")
        return Cost.HEAVY if builds_pld and asks_tight else Cost.CHEAP

    # -- privacy ---------------------------------------------------------------------------------------------------

    def _privacy(
        self,
        params: Mapping[str, Any] | DpSgdParams,
        delta: float,
        accountant: str = "best",
        orders: Sequence[float] | np.ndarray | None = None,
        refine: bool = True,
    ) -> PrivacyReport:
        p: DpSgdParams = self.parse(params)
        self.check_accountant(accountant)
        d = check.delta("delta", delta)
        grid = order_grid(orders, default=None)
        z = _noise_multiplier(p)
        steps, rule = steps_and_rule(p)
        warnings: list[str] = []

        conversion = _rdp_accountant(p).epsilon(_event(p, z, steps), d, grid, refine)
        _require_finite(conversion.value, "noise_multiplier")
        warnings += conversion.warnings
        tight = _NOT_ASKED if accountant == "rdp" else _tight_result(p, z, d, steps)
        results = [_rdp_result(p, conversion), tight]
        results.append(AccountantResult("paper", False, reason=_PAPER_REASON))

        chosen = choose_accountant(results, accountant, supported=self.supported_accountants())
        return PrivacyReport(
            algorithm=self.id,
            epsilon=chosen.epsilon,
            delta=d,
            accountant=chosen.name,
            optimal_order=conversion.optimal_order,
            rdp=_curve(conversion),
            accountants=tuple(results),
            noise=_noise(p, z),
            conventions=_conventions(p, steps, rule),
            warnings=tuple(warnings + _notes(p)),
        )

    # -- calibration -----------------------------------------------------------------------------------------------

    def _calibrate(
        self,
        params: Mapping[str, Any] | DpSgdParams,
        target_epsilon: float,
        delta: float,
        accountant: str = "best",
        orders: Sequence[float] | np.ndarray | None = None,
    ) -> CalibrationReport:
        p: DpSgdParams = self.parse(params)
        self.check_accountant(accountant)
        target = check.positive("target_epsilon", target_epsilon)
        d = check.delta("delta", delta)
        grid = order_grid(orders, default=None)
        return _calibrate_cached(self, p, target, d, accountant, None if grid is None else tuple(grid), ())

    def utility(self, params: Mapping[str, Any] | DpSgdParams) -> UtilityReport:
        self.parse(params)
        return UtilityReport(self.id, (), _UTILITY_REASON)


@lru_cache(maxsize=512)
def _calibrate_cached(
    family: DpSgd,
    p: DpSgdParams,
    target: float,
    d: float,
    accountant: str,
    grid: tuple[float, ...] | None,
    warnings: tuple[str, ...],
) -> CalibrationReport:
    steps, rule = steps_and_rule(p)
    orders = None if grid is None else np.array(grid)
    rdp = _rdp_accountant(p)
    results: list[AccountantResult] = []

    full_batch = p.batch_size == p.dataset_size
    z_gaussian = gaussian_noise_multiplier(target, d, steps) if full_batch else None

    def curve_of(z: float):
        return rdp.curve(_event(p, z, steps))

    calibration = calibrate_rdp(curve_of, d, target, orders=orders, initial=z_gaussian or 1.0)
    results.append(_rdp_result(p, calibration.conversion, calibration.noise))
    if accountant == "rdp" and not full_batch:
        results.append(_NOT_ASKED)  # the PLD calibration costs ~10 PLD builds: only where its answer is asked for
    else:
        results.append(_tight_calibration(p, target, d, steps, z_gaussian, calibration.noise))
    results.append(AccountantResult("paper", False, reason=_PAPER_REASON))

    chosen = choose_accountant(results, accountant, key="noise_multiplier", supported=family.supported_accountants())
    z = chosen.noise_multiplier
    conversion = calibration.conversion if chosen.name == "rdp" else rdp.epsilon(_event(p, z, steps), d, orders)
    return CalibrationReport(
        algorithm=family.id,
        target_epsilon=target,
        delta=d,
        noise_multiplier=z,
        noise_std=z * p.sensitivity,
        epsilon=chosen.epsilon,
        accountant=chosen.name,
        optimal_order=conversion.optimal_order,
        rdp=_curve(conversion),
        accountants=tuple(results),
        noise=_noise(p, z),
        conventions=_conventions(p, steps, rule),
        utility=None,
        utility_reason=_UTILITY_REASON,
        paper=None,
        paper_reason=_PAPER_REASON,
        calibrated_parameter="noise_multiplier",
        calibrated_value=z,
        warnings=warnings + conversion.warnings + tuple(_notes(p)),
    )


# -- the mechanism ---------------------------------------------------------------------------------------------------


def _event(p: DpSgdParams, z: float, steps: int) -> DpEvent:
    if p.sampling == "fixed-size":
        return SelfComposedEvent(SampledWithoutReplacementEvent(p.dataset_size, p.batch_size, GaussianEvent(z)), steps)
    # the Poisson event's multiplier is relative to the add/remove sensitivity C; under replace-one z is std/(2C)
    z_add_remove = 2.0 * z if p.neighbouring == "replace-one" else z
    return SelfComposedEvent(PoissonSampledEvent(p.sampling_rate, GaussianEvent(z_add_remove)), steps)


def _rdp_accountant(p: DpSgdParams) -> RdpAccountant:
    return RdpAccountant(p.neighbouring)


def _rdp_method(p: DpSgdParams) -> str:
    if p.batch_size == p.dataset_size:
        mechanism = "Gaussian mechanism, α/(2z²) per step"
    elif p.sampling == "fixed-size":
        mechanism = "sampling without replacement, Wang–Balle–Kasiviswanathan 2019 Thm. 27"
    elif p.neighbouring == "replace-one":
        mechanism = "Poisson-subsampled Gaussian via the weak triangle inequality (Mironov 2017, Prop. 11)"
    else:
        mechanism = "Poisson-subsampled Gaussian, Mironov–Talwar–Zhang 2019 (exact, signed fractional series)"
    return f"RDP of the {mechanism}, composed over the steps; improved conversion (Balle et al. 2020, Thm. 21)"


def _rdp_result(p: DpSgdParams, conversion: Conversion, z: float | None = None) -> AccountantResult:
    return AccountantResult(
        "rdp",
        True,
        conversion.value,
        "certified upper bound",
        _rdp_method(p),
        optimal_order=conversion.optimal_order,
        noise_multiplier=z,
    )


_TIGHT_METHOD = "analytic Gaussian (Balle & Wang 2018, Thm. 8): T full-batch steps = one Gaussian with μ = √T/z"
_PLD_METHOD = (
    "privacy-loss distribution of the Poisson-subsampled Gaussian, worst of the add and remove directions; "
    "pessimistic connect-the-dots discretisation (Doroshenko et al. 2022) on a loss grid of {grid:.2g}, FFT "
    "composition by repeated squaring with its rounding error bounded and added to δ (Koskela et al. 2020; "
    "Higham 2002); an upper bound, within ~1e-3 relative of the exact ε"
)
_PLD_COARSE_GRID = 1e-3
"""Loss grid of the first calibration pass (≈10× faster per evaluation); the answer comes from the fine grid."""
_PLD_RTOL = 1e-5
"""Relative tolerance on the tight noise multiplier: the PLD's own ε is accurate to ~1e-4 relative."""
_INFEASIBLE = math.inf
"""ε reported to the root finder where the PLD certifies no finite ε (δ below its atom at +∞)."""


def _pld(p: DpSgdParams, z: float, steps: int, grid: float = DEFAULT_VALUE_DISCRETIZATION) -> PoissonGaussianPld:
    return PoissonGaussianPld.build(p.sampling_rate, z, steps, value_discretization=grid)


def _pld_method(pld: PoissonGaussianPld) -> str:
    return _PLD_METHOD.format(grid=pld.value_discretization)


def _tight_result(p: DpSgdParams, z: float, d: float, steps: int) -> AccountantResult:
    """ε of the tight accountant at noise z: analytic Gaussian (full batch), PLD (Poisson, add/remove), or why not."""
    reason = _tight_not_applicable(p)
    if reason is not None:
        return AccountantResult("tight", False, reason=reason)
    if p.batch_size == p.dataset_size:
        return AccountantResult("tight", True, gaussian_epsilon(z, d, steps), "exact", _TIGHT_METHOD)
    try:
        pld = _pld(p, z, steps)
        return AccountantResult("tight", True, pld.epsilon(d), "certified upper bound", _pld_method(pld))
    except ParameterError as exc:
        return AccountantResult("tight", False, reason=f"the PLD accountant certifies no ε here: {exc}")


def _tight_calibration(
    p: DpSgdParams, target: float, d: float, steps: int, z_gaussian: float | None, z_rdp: float
) -> AccountantResult:
    """The smallest noise multiplier the tight accountant certifies for the target (to relative 1e-5), or why not.

    PLD: a search on a coarse loss grid locates it, then one on the reporting grid (1e-4) finishes; the answer is a
    point whose reported ε was evaluated ≤ target (one-sided, as :func:`accountants.calibration.calibrate`)."""
    reason = _tight_not_applicable(p)
    if reason is not None:
        return AccountantResult("tight", False, reason=reason)
    if z_gaussian is not None:
        eps = gaussian_epsilon(z_gaussian, d, steps)
        return AccountantResult("tight", True, eps, "exact", _TIGHT_METHOD, noise_multiplier=z_gaussian)

    built: dict[float, PoissonGaussianPld] = {}  # fine-grid PLDs by noise: the answer's grid is reported from one

    def epsilon_of(grid: float):
        def epsilon(z: float) -> float:
            try:
                pld = _pld(p, z, steps, grid)
            except ParameterError:
                return _INFEASIBLE
            if grid == DEFAULT_VALUE_DISCRETIZATION:
                built[z] = pld
            try:
                return pld.epsilon(d)
            except ParameterError:
                return _INFEASIBLE

        return epsilon

    try:
        coarse = calibrate(epsilon_of(_PLD_COARSE_GRID), target, initial=z_rdp, rtol=1e-4, initial_step=1.05)
        fine = calibrate(
            epsilon_of(DEFAULT_VALUE_DISCRETIZATION), target, initial=coarse.noise, rtol=_PLD_RTOL, initial_step=1.003
        )
    except CalibrationError as exc:
        return AccountantResult("tight", False, reason=f"the PLD accountant cannot calibrate here: {exc}")
    return AccountantResult(
        "tight",
        True,
        fine.epsilon,
        "certified upper bound",
        _pld_method(built[fine.noise]),
        noise_multiplier=fine.noise,
    )


_NOT_ASKED = not_asked("tight")
"""The tight accountant's place in an answer that asked for rdp: a PLD is built only where its value is used."""

_PAPER_REASON = (
    "dp-sgd has no paper calibration of its own: Abadi et al.'s moments accountant is the rdp accountant here"
)
_UTILITY_REASON = (
    "DP-SGD has no utility guarantee without assumptions on the loss (convexity, Lipschitz constant, domain); "
    "verification jobs measure utility on synthetic problems"
)


def _tight_not_applicable(p: DpSgdParams) -> str | None:
    if p.batch_size == p.dataset_size:
        return None
    if p.sampling == "fixed-size":
        return (
            "no numerically tight accountant is known for sampling without replacement; the WBK19 RDP bound is "
            "the rigorous one"
        )
    if p.neighbouring == "replace-one":
        return (
            "the PLD accountant covers Poisson sampling under add/remove-one neighbours; under replace-one the rdp "
            "bound (through the dataset without the record) is the certified one"
        )
    return None


# -- presentation ----------------------------------------------------------------------------------------------------


def _noise_multiplier(p: DpSgdParams) -> float:
    return resolve_noise_multiplier(p.noise_multiplier, p.noise_std, p.sensitivity)


def _require_finite(value: float, field: str) -> None:
    if not math.isfinite(value):
        raise ParameterError.single(field, "is too small for a finite ε bound at this δ", "a larger value")


def _curve(conversion: Conversion) -> RdpCurve:
    eps = [float(e) if math.isfinite(e) else None for e in conversion.rdp]
    return RdpCurve(tuple(float(a) for a in conversion.orders), tuple(eps))  # type: ignore[arg-type]


def _noise(p: DpSgdParams, z: float) -> Noise:
    return Noise(
        noise_multiplier=z,
        noise_std=z * p.sensitivity,
        sensitivity=p.sensitivity,
        sensitivity_rule=_SENSITIVITY_RULE[p.neighbouring],
        units="noise_std is in the units of the summed clipped gradients (the same units as clip_norm)",
    )


def _conventions(p: DpSgdParams, steps: int, rule: str) -> Conventions:
    return Conventions(
        neighbouring=p.neighbouring,
        steps=steps,
        step_rule=rule,
        sampling=_SAMPLING_TEXT[p.sampling],
        noise_multiplier_definition=(
            "noise_multiplier = noise std / sensitivity; "
            + _SENSITIVITY_RULE[p.neighbouring]
            + (
                "; opacus/TF-Privacy's noise_multiplier (std/clip_norm) is twice this value"
                if p.neighbouring == "replace-one"
                else ""
            )
        ),
        released="every iterate",
    )


def _notes(p: DpSgdParams) -> list[str]:
    notes = []
    if p.sampling == "poisson" and p.neighbouring == "replace-one" and p.batch_size < p.dataset_size:
        notes.append(
            "replace-one under Poisson sampling is accounted through the dataset without the record (weak triangle "
            "inequality), which is conservative; add-remove accounting is tighter where it applies"
        )
    return notes


__all__ = ["DpSgd", "DpSgdParams", "steps_and_rule"]


# -- simulation (verification jobs) --------------------------------------------------------------------------------


class DpSgdProblem(ParamsModel):
    """The synthetic problem of a dp-sgd verification job."""

    dimension: bounded_count(1, 50) = param(
        "Features of the synthetic logistic regression.", symbol="d", unit="features", example=5, default=5
    )
    records: bounded_count(2, 5000) | None = param(
        "Records of the synthetic data set for the utility check (default: dataset_size, at most 2000); the sampling "
        "rate q = batch_size/dataset_size is kept.",
        unit="records",
        example=1000,
        default=None,
    )
    learning_rate: float = param(
        "SGD learning rate: θ ← θ − learning_rate·(Σ clipped gradients + noise)/expected batch size.",
        symbol="η",
        example=1.0,
        gt=0,
        le=100,
        default=1.0,
    )


class DpSgdSimulator(Simulator):
    """DP-SGD on synthetic logistic regression, audited with a gradient canary.

    Audit: the distinguishing record is a *gradient canary*, a record whose per-example gradient is always C·u for a
    unit vector u orthogonal to every other record's gradients (a linear loss on a coordinate no other feature uses).
    Every step then releases, along u, B_t·C + N(0, (zΔ)²) with B_t the canary's inclusion (Bernoulli(q), or b/n for
    fixed-size batches); under replace-one the neighbour holds the opposite canary. The score is the log-likelihood
    ratio of the whole transcript along u, the most powerful test (Neyman–Pearson). For full batches it is Gaussian
    and the exact ε is the analytic Gaussian's.
    Utility: excess empirical logistic loss of the last iterate over the non-private optimum of the same data.
    """

    problem_model = DpSgdProblem

    def plan(
        self, params: ParamsModel, delta: float, checks: tuple[str, ...], trials: int, seed: int, problem: ParamsModel
    ) -> Plan:
        p: DpSgdParams = params  # type: ignore[assignment]
        pr: DpSgdProblem = problem  # type: ignore[assignment]
        family = registry_get(DpSgd.id)
        report = family.privacy(p, delta)
        z = report.noise.noise_multiplier
        steps = report.conventions.steps
        q = p.sampling_rate
        records = pr.records or min(p.dataset_size, 2000)
        resolved = {
            "kind": "logistic",
            "dimension": pr.dimension,
            "records": records,
            "learning_rate": pr.learning_rate,
            "steps": steps,
            "sampling_rate": q,
            "canary": "gradient canary along a dedicated coordinate",
        }
        optimum = None
        if "utility" in checks:
            features, labels = _logistic_data(seed, records, pr.dimension)
            optimum = _logistic_optimum(features, labels)
            resolved["optimal_loss"] = optimum
        exact = gaussian_epsilon(z, delta, steps) if p.batch_size == p.dataset_size else None
        work = trials * steps * (2.0 + (("utility" in checks) * (q * records + 1) * pr.dimension))
        return Plan(
            algorithm=DpSgd.id,
            params=p.model_dump() | {"noise_multiplier": z, "noise_std": None},
            problem=resolved,
            checks=checks,
            trials=trials,
            seed=seed,
            delta=delta,
            epsilon_accounted=report.epsilon,
            accountant=report.accountant,
            epsilon_exact=exact,
            exact_note=None
            if exact is not None
            else "no closed form for a subsampled Gaussian (needs a privacy-loss-distribution accountant)",
            utility_measure="excess empirical logistic loss of the last iterate" if "utility" in checks else None,
            predicted_bound=None,
            predicted_source=None,
            prediction_note="dp-sgd has no utility bound without assumptions on the loss"
            if "utility" in checks
            else None,
            audit_method="gradient canary along a dedicated coordinate; score: log-likelihood ratio of the whole "
            "transcript along it (most powerful test)"
            if "privacy-audit" in checks
            else None,
            work=work,
        )

    def run_block(self, plan: Plan, rng: np.random.Generator, trials: int) -> BlockResult:
        p = plan.params
        steps, q = plan.problem["steps"], plan.problem["sampling_rate"]
        result: dict[str, np.ndarray] = {}
        if "privacy-audit" in plan.checks:
            replace = p["neighbouring"] == "replace-one"
            sigma = p["noise_multiplier"] * (2.0 if replace else 1.0)  # noise std in units of C
            result["score_in"] = canary_llr_scores(rng, trials, steps, q, sigma, replace, inside=True)
            result["score_out"] = canary_llr_scores(rng, trials, steps, q, sigma, replace, inside=False)
        if "utility" in plan.checks:
            features, labels = _logistic_data(plan.seed, plan.problem["records"], plan.problem["dimension"])
            losses = [_train(rng, features, labels, p, plan.problem) for _ in range(trials)]
            result["utility"] = np.array(losses) - plan.problem["optimal_loss"]
        return BlockResult(**result)


def _logistic_data(seed: int, records: int, dimension: int) -> tuple[np.ndarray, np.ndarray]:
    """The synthetic data set, a function of the job's seed (its own stream, apart from the trials')."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32,)))
    features = rng.standard_normal((records, dimension))
    truth = rng.standard_normal(dimension) * 2.0 / math.sqrt(dimension)
    labels = np.where(rng.random(records) < 1.0 / (1.0 + np.exp(-features @ truth)), 1.0, -1.0)
    return features, labels


def _logistic_loss(theta: np.ndarray, features: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(np.logaddexp(0.0, -labels * (features @ theta))))


def _logistic_optimum(features: np.ndarray, labels: np.ndarray) -> float:
    from scipy import optimize

    def loss_and_gradient(theta: np.ndarray) -> tuple[float, np.ndarray]:
        margins = labels * (features @ theta)
        weights = -labels * np.exp(-np.logaddexp(0.0, margins))
        return float(np.mean(np.logaddexp(0.0, -margins))), features.T @ weights / labels.size

    found = optimize.minimize(
        loss_and_gradient,
        np.zeros(features.shape[1]),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-10, "maxiter": 1000},
    )
    return float(found.fun)


def _train(
    rng: np.random.Generator, features: np.ndarray, labels: np.ndarray, p: Mapping[str, Any], problem: Mapping[str, Any]
) -> float:
    """One DP-SGD run (Poisson or fixed-size batches, per-example clipping, Gaussian noise) from θ = 0."""
    n, d = features.shape
    q, steps, lr = problem["sampling_rate"], problem["steps"], problem["learning_rate"]
    clip, z = p["clip_norm"], p["noise_multiplier"]
    std = z * clip * (2.0 if p["neighbouring"] == "replace-one" else 1.0)
    expected = max(q * n, 1.0)
    batch = max(1, round(q * n))
    theta = np.zeros(d)
    for _ in range(steps):
        if p["sampling"] == "poisson":
            chosen = rng.choice(n, size=rng.binomial(n, q), replace=False)
        else:
            chosen = rng.choice(n, size=batch, replace=False)
        x, y = features[chosen], labels[chosen]
        grads = (-y * np.exp(-np.logaddexp(0.0, y * (x @ theta))))[:, None] * x
        norms = np.linalg.norm(grads, axis=1)
        grads *= np.minimum(1.0, clip / np.maximum(norms, 1e-300))[:, None]
        theta -= lr * (grads.sum(axis=0) + std * rng.standard_normal(d)) / expected
    return _logistic_loss(theta, features, labels)


DpSgd.simulator = DpSgdSimulator()
