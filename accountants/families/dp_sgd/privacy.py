"""DP-SGD's mechanism: the event tree of T steps under each loader, the words for its Rényi bound, and the Poisson
answer shown beside a shuffling or balls-in-bins loader's (not valid for it). The spine's accountants read the tree
(:class:`~accountants.planned.PlannedFamily`): rdp, and tight (exact Gaussian DP for full batches and loaders without
amplification, the certified PLD accountant otherwise)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy import stats

from ...events import (
    DpEvent,
    GaussianEvent,
    MixtureOfGaussiansEvent,
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
    if p.examples_per_user > 1:
        return user_mechanism(p, z, steps)
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
        sample = SampledWithoutReplacementEvent(p.dataset_size, p.effective_batch_size, GaussianEvent(z))
        return SelfComposedEvent(sample, steps)
    # the Poisson event's multiplier is relative to the add/remove sensitivity C; under replace-one z is std/(2C)
    z_add_remove = 2.0 * z if p.neighbouring == "replace-one" else z
    return SelfComposedEvent(PoissonSampledEvent(p.sampling_rate, GaussianEvent(z_add_remove)), steps)


def user_mechanism(p: DpSgdParams, z: float, steps: int) -> DpEvent:
    """The releases about a user with at most K examples (each clipped on its own, so k of them in a batch move the
    sum by at most k times the sensitivity):

    * Poisson: each step holds Binomial(K, q) of the user's examples: a mixture of Gaussians with sensitivities
      0…K (Ganesh 2024, arXiv 2401.10294; fewer examples are dominated: Binomial(k′, q) is stochastically smaller and
      the mixture grows with its shifts); all examples in every batch (q = 1): a Gaussian at K times the sensitivity;
    * shuffle (and balls-in-bins under replace-one), no amplification claimed: an epoch's batches hold kⱼ of the
      user's examples with Σkⱼ ≤ K, so their joint release has L2 sensitivity (Σkⱼ²)^½ ≤ K: a Gaussian at z/K per
      epoch begun, whatever the permutation;
    * balls-in-bins under add-remove: each step's noise N(0, σ²) is the sum of K independent N(0, σ²/K), one per
      example of the user; example k with its share is a random allocation at multiplier z/√K, independent of the
      others given the data, and the released sums are a post-processing of the K of them — K compositions (their
      steps interleave adaptively: concurrent composition, which for f-DP equals sequential composition; Vadhan &
      Zhang 2023, "Concurrent composition theorems for differential privacy", STOC);
    * fixed-size (replace-one), no amplification claimed: at most min(K, b) of the user's examples in a batch, a
      Gaussian at z/min(K, b) per step."""
    k = p.examples_per_user
    if allocated(p):
        epochs = participations(p, steps)
        shared = z / k**0.5
        if p.bins == "persistent":
            one = RandomAllocationEvent(batches_per_epoch(p), p.num_selected, GaussianEvent(shared / epochs**0.5))
            return SelfComposedEvent(one, k)
        return SelfComposedEvent(
            RandomAllocationEvent(batches_per_epoch(p), p.num_selected, GaussianEvent(shared)), k * epochs
        )
    if without_amplification(p):
        return SelfComposedEvent(GaussianEvent(z / k), participations(p, steps))
    if p.sampling == "fixed-size":
        return SelfComposedEvent(GaussianEvent(z / min(k, p.effective_batch_size)), steps)
    if p.full_batch:
        return SelfComposedEvent(GaussianEvent(z / k), steps)
    counts = np.arange(k + 1)
    mixture = MixtureOfGaussiansEvent(
        z, tuple(map(float, counts)), tuple(map(float, stats.binom.pmf(counts, k, p.sampling_rate)))
    )
    return SelfComposedEvent(mixture, steps)


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
    if p.examples_per_user > 1:
        return _user_method(p)
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


def _user_method(p: DpSgdParams) -> str:
    k = p.examples_per_user
    if allocated(p):
        mechanism = f"{k} random allocations per epoch at z/√{k} (the noise split among the user's examples)"
    elif without_amplification(p):
        mechanism = f"Gaussian mechanism at K = {k} times the sensitivity per epoch begun (no amplification claimed)"
    elif p.sampling == "fixed-size":
        mechanism = f"Gaussian mechanism at min(K, b) = {min(k, p.effective_batch_size)} times the sensitivity per step"
    elif p.full_batch:
        mechanism = f"Gaussian mechanism at K = {k} times the sensitivity per step"
    else:
        mechanism = (
            f"mixture of Gaussians per step (Binomial({k}, q) of the user's examples sampled), both directions, "
            "certified from above by closed-form pieces"
        )
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
