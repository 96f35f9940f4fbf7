"""DP-SGD's mechanism and accountants: the event tree, the Rényi accountant, the tight accountant (analytic Gaussian
for full batches, the spine's PLD accountant on the event tree otherwise), and their calibrations."""

from __future__ import annotations

from dataclasses import replace

from ...conversions import Conversion
from ...errors import CalibrationError
from ...events import (
    DpEvent,
    GaussianEvent,
    PoissonSampledEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    TruncatedPoissonSampledEvent,
)
from ...mechanisms.gaussian import gaussian_epsilon
from ...rdp import RdpAccountant
from ...reports import AccountantResult, Guarantee, not_asked
from ...tight import tight_calibration, tight_epsilon
from .params import WITHOUT_AMPLIFICATION, DpSgdParams, participations

# -- the mechanism ---------------------------------------------------------------------------------------------------


def _event(p: DpSgdParams, z: float, steps: int) -> DpEvent:
    """The releases of ``steps`` steps at noise multiplier z (std over the relation's sensitivity)."""
    if p.sampling in WITHOUT_AMPLIFICATION:
        # one batch per epoch holds the record: a Gaussian release at the relation's sensitivity per epoch begun
        return SelfComposedEvent(GaussianEvent(z), participations(p, steps))
    if p.sampling == "truncated-poisson":
        assert p.max_batch_size is not None  # checked with the parameters
        truncated = TruncatedPoissonSampledEvent(p.dataset_size, p.sampling_rate, p.max_batch_size, GaussianEvent(z))
        return SelfComposedEvent(truncated, steps)
    if p.sampling == "fixed-size":
        return SelfComposedEvent(SampledWithoutReplacementEvent(p.dataset_size, p.batch_size, GaussianEvent(z)), steps)
    # the Poisson event's multiplier is relative to the add/remove sensitivity C; under replace-one z is std/(2C)
    z_add_remove = 2.0 * z if p.neighbouring == "replace-one" else z
    return SelfComposedEvent(PoissonSampledEvent(p.sampling_rate, GaussianEvent(z_add_remove)), steps)


def _rdp_accountant(p: DpSgdParams) -> RdpAccountant:
    return RdpAccountant(p.neighbouring)


def _rdp_method(p: DpSgdParams) -> str:
    if p.sampling in WITHOUT_AMPLIFICATION:
        mechanism = "Gaussian mechanism, α/(2z²) per epoch begun (no amplification by the loader's randomness claimed)"
    elif p.sampling == "truncated-poisson":
        mechanism = (
            "truncated Poisson-subsampled Gaussian: the mixture of the Poisson curve (no cut) and a replace-one curve "
            "at the cut (arXiv 2508.15089, as dp_accounting 0.6.0)"
        )
    elif p.full_batch:
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


def _tight_result(p: DpSgdParams, z: float, d: float, steps: int) -> AccountantResult:
    """ε of the tight accountant at noise z: analytic Gaussian (full batch), else the spine's PLD accountant on the
    event tree (Poisson under either relation, fixed-size batches under replace-one)."""
    if p.full_batch:
        return AccountantResult("tight", True, gaussian_epsilon(z, d, steps), "exact", _TIGHT_METHOD)
    return tight_epsilon(_event(p, z, steps), p.neighbouring, d)


def _tight_calibration(
    p: DpSgdParams, target: float, d: float, steps: int, z_gaussian: float | None, z_rdp: float
) -> AccountantResult:
    """The smallest noise multiplier the tight accountant certifies for the target, or why not: exact for full
    batches; otherwise :func:`~accountants.tight.tight_calibration` from the RDP answer (the returned z certifies the
    target, z·(1 − 1e-4) does not)."""
    if z_gaussian is not None:
        eps = gaussian_epsilon(z_gaussian, d, steps)
        return AccountantResult("tight", True, eps, "exact", _TIGHT_METHOD, noise_multiplier=z_gaussian)
    try:
        z, result = tight_calibration(lambda noise: _event(p, noise, steps), p.neighbouring, d, target, z_rdp)
    except CalibrationError as exc:
        return AccountantResult.not_applicable("tight", f"the tight accountant cannot calibrate here: {exc}")
    return replace(result, noise_multiplier=z, calibrated_value=z)


def _poisson_beside(p: DpSgdParams, z: float, d: float, steps: int) -> AccountantResult:
    """For a shuffling or balls-in-bins loader: the ε Poisson sampling at q = b/n would give (rdp), shown beside the
    certified answer and marked not valid for this loader (what is often reported for such loaders)."""
    poisson = p.model_copy(update={"sampling": "poisson"})
    value = RdpAccountant(p.neighbouring).epsilon(_event(poisson, z, steps), d).value
    return AccountantResult(
        "poisson-assumed",
        False,
        value,
        "not valid for this loader",
        f"rdp accountant on Poisson sampling at q = {p.sampling_rate:.6g} over the same {steps} steps",
        reason=f"not valid for this loader: a {p.sampling} loader does not sample each record independently per step, "
        "and no amplification by its randomness is proven to match Poisson's (Chua et al. 2024); shown because it is "
        "what is often reported for such loaders",
        kind=Guarantee.NOT_VALID,
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
