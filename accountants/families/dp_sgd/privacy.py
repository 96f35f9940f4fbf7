"""DP-SGD's mechanism: the event tree of T steps under each loader, the words for its Rényi bound, and the Poisson
answer shown beside a shuffling or balls-in-bins loader's (not valid for it). The spine's accountants read the tree
(:class:`~accountants.planned.PlannedFamily`): rdp, and tight (exact Gaussian DP for full batches and loaders without
amplification, the certified PLD accountant otherwise)."""

from __future__ import annotations

from dataclasses import replace

from ...events import (
    DpEvent,
    GaussianEvent,
    PoissonSampledEvent,
    RandomAllocationEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    TruncatedPoissonSampledEvent,
)
from ...rdp import RdpAccountant
from ...reports import AccountantResult, Guarantee
from .params import (
    DpSgdParams,
    allocated,
    as_poisson,
    batches_per_epoch,
    participations,
    without_amplification,
)

# -- the mechanism ---------------------------------------------------------------------------------------------------


def mechanism(p: DpSgdParams, z: float, steps: int) -> DpEvent:
    """The releases of ``steps`` steps at noise multiplier z (std over the relation's sensitivity)."""
    if allocated(p):
        return allocation(p, z, steps)
    if without_amplification(p):
        # one batch per epoch holds the record: a Gaussian release at the relation's sensitivity per epoch begun
        return SelfComposedEvent(GaussianEvent(z), participations(p, steps))
    if p.full_batch:
        # every record in every batch: each step is a Gaussian release at the relation's sensitivity
        return SelfComposedEvent(GaussianEvent(z), steps)
    if p.sampling == "truncated-poisson":
        assert p.max_batch_size is not None  # checked with the parameters
        truncated = TruncatedPoissonSampledEvent(p.dataset_size, p.sampling_rate, p.max_batch_size, GaussianEvent(z))
        return SelfComposedEvent(truncated, steps)
    if p.sampling == "fixed-size":
        return SelfComposedEvent(SampledWithoutReplacementEvent(p.dataset_size, p.batch_size, GaussianEvent(z)), steps)
    # the Poisson event's multiplier is relative to the add/remove sensitivity C; under replace-one z is std/(2C)
    z_add_remove = 2.0 * z if p.neighbouring == "replace-one" else z
    return SelfComposedEvent(PoissonSampledEvent(p.sampling_rate, GaussianEvent(z_add_remove)), steps)


def allocation(p: DpSgdParams, z: float, steps: int) -> DpEvent:
    """Balls-in-bins batches: each epoch begun is a random allocation of the record to num_selected of its ⌊n/b⌋
    batches (an epoch cut short releases less: a post-processing of the whole epoch). Fresh bins: a new allocation
    per epoch, composed. Persistent bins: the record's E releases fall in the same batch position of each epoch, so
    given the positions they are one Gaussian of multiplier z/√E in each chosen position and nothing elsewhere —
    exactly one allocation of that Gaussian (:mod:`accountants.pld.allocation`)."""
    epochs = participations(p, steps)
    bins = batches_per_epoch(p)
    if p.bins == "persistent":
        return RandomAllocationEvent(bins, p.num_selected, GaussianEvent(z / epochs**0.5))
    epoch = RandomAllocationEvent(bins, p.num_selected, GaussianEvent(z))
    return epoch if epochs == 1 else SelfComposedEvent(epoch, epochs)


def rdp_method(p: DpSgdParams) -> str:
    if allocated(p):
        mechanism = (
            "random allocation (balls in bins): both directions of each one-of-⌊n/b⌋ allocation, certified from above "
            "(exact series for remove, a gamma integral for add)"
        )
    elif without_amplification(p):
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


def poisson_assumed(p: DpSgdParams, z: float, d: float, steps: int) -> AccountantResult:
    """For a shuffling or balls-in-bins loader: the ε Poisson sampling at q = b/n would give (rdp), shown beside the
    certified answer and marked not valid for this loader (what is often reported for such loaders)."""
    poisson = as_poisson(p)
    value = RdpAccountant(p.neighbouring).epsilon(mechanism(poisson, z, steps), d).value
    return _not_valid(
        p, value, f"rdp accountant on Poisson sampling at q = {p.sampling_rate:.6g} over the same {steps} steps"
    )


def poisson_assumed_calibration(p: DpSgdParams, poisson: AccountantResult) -> AccountantResult:
    """For a shuffling or balls-in-bins loader's calibration: the rdp calibration of the same run under Poisson
    sampling at q = b/n (``poisson``), shown beside the certified noise and marked not valid for this loader."""
    if not poisson.applicable:
        return AccountantResult.not_applicable("poisson-assumed", poisson.reason or "no Poisson calibration")
    method = f"rdp calibration on Poisson sampling at q = {p.sampling_rate:.6g} over the same steps"
    row = _not_valid(p, poisson.epsilon, method)
    return replace(row, noise_multiplier=poisson.noise_multiplier, calibrated_value=poisson.calibrated_value)


def _not_valid(p: DpSgdParams, value: float | None, method: str) -> AccountantResult:
    return AccountantResult(
        "poisson-assumed",
        False,
        value,
        "not valid for this loader",
        method,
        reason=f"not valid for this loader: a {p.sampling} loader does not sample each record independently per step"
        + (
            "; its own amplification (random allocation, Feldman & Shenfeld 2025) is the tight answer; shown for "
            "comparison"
            if allocated(p)
            else ", and no amplification by its randomness is proven to match Poisson's (Chua et al. 2024); shown "
            "because it is what is often reported for such loaders"
        ),
        kind=Guarantee.NOT_VALID,
    )


PAPER_REASON = (
    "dp-sgd has no paper calibration of its own: Abadi et al.'s moments accountant is the rdp accountant here"
)
UTILITY_REASON = (
    "DP-SGD has no utility guarantee without assumptions on the loss (convexity, Lipschitz constant, domain); "
    "verification jobs measure utility on synthetic problems"
)
