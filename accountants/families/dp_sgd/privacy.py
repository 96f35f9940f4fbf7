"""DP-SGD's mechanism and accountants: the event tree, the Rényi accountant, the tight PLD (Poisson, add/remove) or
analytic Gaussian (full batch), and their calibrations."""

from __future__ import annotations

import math
from collections.abc import Callable

from ...calibration import calibrate
from ...conversions import Conversion
from ...errors import CalibrationError, ParameterError
from ...events import DpEvent, GaussianEvent, PoissonSampledEvent, SampledWithoutReplacementEvent, SelfComposedEvent
from ...mechanisms.gaussian import gaussian_epsilon
from ...mechanisms.poisson_gaussian_pld import DEFAULT_VALUE_DISCRETIZATION, PoissonGaussianPld
from ...rdp import RdpAccountant
from ...reports import AccountantResult, not_asked
from .params import DpSgdParams

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
    return AccountantResult.certified(
        "rdp", conversion.value, _rdp_method(p), optimal_order=conversion.optimal_order, noise_multiplier=z
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
        return AccountantResult.not_applicable("tight", reason)
    if p.batch_size == p.dataset_size:
        return AccountantResult("tight", True, gaussian_epsilon(z, d, steps), "exact", _TIGHT_METHOD)
    try:
        pld = _pld(p, z, steps)
        return AccountantResult.certified("tight", pld.epsilon(d), _pld_method(pld))
    except ParameterError as exc:
        return AccountantResult.not_applicable("tight", f"the PLD accountant certifies no ε here: {exc}")


def _tight_calibration(
    p: DpSgdParams, target: float, d: float, steps: int, z_gaussian: float | None, z_rdp: float
) -> AccountantResult:
    """The smallest noise multiplier the tight accountant certifies for the target (to relative 1e-5), or why not.

    PLD: a search on a coarse loss grid locates it, then one on the reporting grid (1e-4) finishes; the answer is a
    point whose reported ε was evaluated ≤ target (one-sided, as :func:`accountants.calibration.calibrate`)."""
    reason = _tight_not_applicable(p)
    if reason is not None:
        return AccountantResult.not_applicable("tight", reason)
    if z_gaussian is not None:
        eps = gaussian_epsilon(z_gaussian, d, steps)
        return AccountantResult("tight", True, eps, "exact", _TIGHT_METHOD, noise_multiplier=z_gaussian)

    built: dict[float, PoissonGaussianPld] = {}  # fine-grid PLDs by noise: the answer's grid is reported from one

    def epsilon_of(grid: float) -> Callable[[float], float]:
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
        return AccountantResult.not_applicable("tight", f"the PLD accountant cannot calibrate here: {exc}")
    return AccountantResult.certified(
        "tight", fine.epsilon, _pld_method(built[fine.noise]), noise_multiplier=fine.noise
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
