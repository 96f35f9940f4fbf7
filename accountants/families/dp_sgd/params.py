"""Hyperparameters of DP-SGD and its step-count convention (steps as given, or ⌈epochs·n/B⌉)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

from ...errors import FieldIssue
from ...params import ParamsModel, noise_given_twice, noise_multiplier_param, param

ALGORITHM_ID = "dp-sgd"

MAX_COUNT = 10**12

Sampler = Literal["poisson", "fixed-size", "shuffle", "balls-in-bins", "truncated-poisson"]
WITHOUT_AMPLIFICATION = ("shuffle", "balls-in-bins")
"""Samplers accounted as one Gaussian release per example per epoch (no amplification claimed)."""


class DpSgdParams(ParamsModel):
    """Hyperparameters of Poisson-subsampled (or fixed-size-batch) DP-SGD."""

    dataset_size: int = param(symbol="n", unit="records", example=60000, ge=1, le=MAX_COUNT)
    """Number of records in the training set."""
    batch_size: int = param(symbol="b (q = b/n)", unit="records", example=256, ge=1, le=MAX_COUNT)
    """Batch size: the expected batch size under Poisson sampling (sampling rate q = batch_size/dataset_size), the exact
    batch size under fixed-size sampling. At most dataset_size."""
    steps: int | None = param(symbol="T", unit="steps", example=14063, default=None, ge=1, le=MAX_COUNT)
    """Number of noisy gradient steps (compositions). Give steps or epochs, not both."""
    epochs: float | None = param(symbol="E", unit="epochs", example=60, gt=0, le=1e6, default=None)
    """Passes over the data, converted to steps = epoch_rounding(epochs·dataset_size/batch_size). Give steps or epochs,
    not both."""
    epoch_rounding: Literal["ceil", "floor"] = param(example="ceil", default="ceil")
    """How epochs become steps: ceil (TF-Privacy; counts a final partial epoch) or floor (opacus)."""
    noise_multiplier: float | None = noise_multiplier_param(
        symbol="z (σ in Abadi et al.)", unit="multiples of the sensitivity", example=1.1
    )
    """Noise std divided by the L2 sensitivity of the clipped sum (clip_norm under add-remove, 2·clip_norm under
    replace-one). Required for privacy accounting (or give noise_std); computed by calibration."""
    noise_std: float | None = param(
        symbol="zΔ", unit="gradient L2-norm units", example=1.1, gt=0, le=1e18, default=None
    )
    """Absolute std of the Gaussian noise added to the summed clipped gradients; an alternative to noise_multiplier
    (noise_multiplier = noise_std / sensitivity)."""
    clip_norm: float = param(symbol="C", unit="gradient L2-norm units", example=1.0, gt=0, le=1e12, default=1.0)
    """Per-example L2 clipping norm; only converts between noise_multiplier and noise_std."""
    sampling: Sampler = param(example="poisson", default="poisson")
    """How batches are drawn: poisson (each record independently with q = b/n); fixed-size (uniformly random subsets
    of exactly b records, replace-one only); shuffle (a random permutation per epoch cut into consecutive batches);
    balls-in-bins (each record placed in one uniformly random batch of each epoch); truncated-poisson (Poisson, the
    batch cut to a random max_batch_size records where larger; add-remove only). shuffle and balls-in-bins are
    accounted without amplification: one Gaussian release per example per epoch."""
    max_batch_size: int | None = param(symbol="B", unit="records", example=320, default=None, ge=1, le=MAX_COUNT)
    """The cap of truncated-poisson batches (required there, and only there)."""
    data_loader: Sampler | None = param(example="shuffle", default=None)
    """What your data loader really does, if you know it differs from `sampling` (e.g. sampling='poisson' for a
    comparison with a shuffling loader): the answer then warns that its ε does not hold for that loader."""
    neighbouring: Literal["add-remove", "replace-one"] = param(example="add-remove", default="add-remove")
    """Neighbouring datasets: add-remove (one record added or removed) or replace-one (one record replaced; the
    sensitivity of the clipped sum is then 2·clip_norm). Also accepted under the US spelling `neighboring`."""

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
        issues += noise_given_twice(self.noise_multiplier, self.noise_std)
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
        if (self.max_batch_size is not None) != (self.sampling == "truncated-poisson"):
            issues.append(
                FieldIssue(
                    ("max_batch_size",),
                    "is required with sampling='truncated-poisson' and only there",
                    "an integer >= 1 with truncated-poisson, else omitted",
                    self.max_batch_size,
                )
            )
        if self.sampling == "truncated-poisson" and self.neighbouring != "add-remove":
            issues.append(
                FieldIssue(
                    ("neighbouring",),
                    "truncated Poisson batches are accounted under add-remove neighbours only (arXiv 2508.15089, "
                    "as dp_accounting 0.6.0)",
                    "add-remove (with sampling='truncated-poisson')",
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
    def full_batch(self) -> bool:
        """Every record in every batch (b = n, no cap): each step is a plain Gaussian release."""
        return self.batch_size == self.dataset_size and self.sampling != "truncated-poisson"

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


def batches_per_epoch(p: DpSgdParams) -> int:
    """⌊n/b⌋ (at least 1): the fewest batches an epoch of a shuffling or balls-in-bins loader has (a loader that keeps
    the last partial batch has ⌈n/b⌉), so ⌈t/⌊n/b⌋⌉ bounds the epochs begun within t steps for either loader."""
    return max(1, p.dataset_size // p.batch_size)


def participations(p: DpSgdParams, steps: int) -> int:
    """How often one example can be in a batch within ``steps`` steps of a shuffling or balls-in-bins loader: once
    per epoch begun, ⌈steps/⌊n/b⌋⌉, and at most ⌈epochs⌉ where the run is given in epochs."""
    begun = -(-steps // batches_per_epoch(p))
    return min(begun, math.ceil(p.epochs)) if p.epochs is not None else begun


def steps_and_rule(p: DpSgdParams) -> tuple[int, str]:
    if p.steps is not None:
        return p.steps, f"steps as given: {p.steps}"
    return _steps_from_epochs(p)


SAMPLING_TEXT = {
    "poisson": "Poisson: each record joins each batch independently with probability q = batch_size/dataset_size",
    "fixed-size": "fixed-size: each batch is a uniformly random subset of exactly batch_size records",
    "shuffle": "shuffle: each epoch a random permutation cut into consecutive batches, so each record is in exactly "
    "one batch per epoch; accounted without amplification (one Gaussian release per record per epoch)",
    "balls-in-bins": "balls-in-bins (random allocation): each epoch each record is placed in one uniformly random "
    "batch; accounted without amplification (one Gaussian release per record per epoch)",
    "truncated-poisson": "truncated Poisson: each record joins each batch independently with probability q = "
    "batch_size/dataset_size, and a batch larger than max_batch_size is cut to a uniformly random max_batch_size "
    "records",
}
SENSITIVITY_RULE = {
    "add-remove": "sensitivity = clip_norm (one clipped gradient added or removed)",
    "replace-one": "sensitivity = 2·clip_norm (one clipped gradient replaced by another)",
}
