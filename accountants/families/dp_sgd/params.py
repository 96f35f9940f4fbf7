"""Hyperparameters of DP-SGD and its step-count convention (steps as given, or ⌈epochs·n/B⌉)."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Literal

from ...errors import FieldIssue
from ...params import ParamsModel, noise_given_twice, noise_multiplier_param, param

ALGORITHM_ID = "dp-sgd"

MAX_COUNT = 10**12
MAX_EXAMPLES_PER_USER = 1000
"""Most examples per user (a mixture of Gaussians of up to 1,001 components per step)."""

Sampler = Literal["poisson", "fixed-size", "shuffle", "balls-in-bins", "truncated-poisson"]
Framework = Literal["opacus", "tensorflow_privacy", "jax_privacy"]
WITHOUT_AMPLIFICATION = ("shuffle", "balls-in-bins")
"""Samplers whose batches hold each example a fixed number of times per epoch (shuffle: accounted without
amplification; balls-in-bins: by random allocation under add-remove, :func:`allocated`)."""
Bins = Literal["fresh", "persistent"]


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
    """How epochs become steps: ceil (counts a final partial epoch, as TF-Privacy does) or floor (drops it)."""
    framework: Framework | None = param(example="opacus", default=None)
    """Compute the sampling rate q and the step count T as this library does from dataset_size, batch_size and epochs
    (Poisson sampling only): opacus q = 1/len(data_loader) = 1/⌈n/b⌉ and T = epochs·⌈n/b⌉ (its DPDataLoader and
    epoch loop); tensorflow_privacy q = b/n and T = ⌈epochs·n/b⌉ (compute_dp_sgd_privacy_statement); jax_privacy
    q = b/n and T = steps (its num_updates; epochs converted with ⌈epochs·n/b⌉). Default: dpcal's q = b/n with
    epoch_rounding. Only q and T: the noise multiplier is still std over the sensitivity (TF-Privacy's statement
    assumes microbatching by default, which halves its multiplier; give the halved value here)."""
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
    batch cut to a random max_batch_size records where larger; add-remove only). shuffle is accounted without
    amplification (one Gaussian release per example per epoch); balls-in-bins by its amplification (random
    allocation) under add-remove, without it under replace-one."""
    bins: Bins = param(example="fresh", default="fresh")
    """balls-in-bins only: fresh (a new allocation every epoch) or persistent (each example keeps its batch position
    in every epoch, as jax_privacy's BallsInBinsSampling)."""
    num_selected: int = param(symbol="k", unit="batches per epoch", example=1, default=1, ge=1, le=MAX_COUNT)
    """balls-in-bins only: each example is placed in this many of an epoch's ⌊n/b⌋ batches (chosen uniformly without
    repetition; a batch then holds about k·b examples). At most ⌊n/b⌋."""
    max_batch_size: int | None = param(symbol="B", unit="records", example=320, default=None, ge=1, le=MAX_COUNT)
    """The cap of truncated-poisson batches (required there, and only there)."""
    data_loader: Sampler | None = param(example="shuffle", default=None)
    """What your data loader really does, if you know it differs from `sampling` (e.g. sampling='poisson' for a
    comparison with a shuffling loader): the answer then warns that its ε does not hold for that loader."""
    neighbouring: Literal["add-remove", "replace-one"] = param(example="add-remove", default="add-remove")
    """Neighbouring datasets: add-remove (one record added or removed) or replace-one (one record replaced; the
    sensitivity of the clipped sum is then 2·clip_norm). Also accepted under the US spelling `neighboring`."""
    examples_per_user: int = param(symbol="K", unit="examples", example=1, default=1, ge=1, le=MAX_EXAMPLES_PER_USER)
    """User-level privacy: the ε protects every user who contributes at most this many examples (each clipped on its
    own). Under Poisson sampling each step holds Binomial(K, q) of the user's examples, moving the sum by that count
    times the sensitivity: a mixture of Gaussians per step (exact; Ganesh 2024, arXiv 2401.10294). Shuffle, and
    balls-in-bins under replace-one: one Gaussian at K times the sensitivity per epoch; balls-in-bins under
    add-remove: K random allocations at noise z/√K each (the noise split among the user's examples); fixed-size: one
    Gaussian at min(K, b) times the sensitivity per step (no amplification). Default 1: per example."""
    sampling_unit: Literal["example", "user"] = param(example="example", default="example")
    """What the loader samples: example (records are examples), or user (records are users: dataset_size counts users,
    batch_size users per batch, and each user's whole contribution is clipped to clip_norm as one record, so the ε
    is per user). With user, examples_per_user must be 1."""
    microbatch_size: int | None = param(symbol="m", unit="examples", example=1, default=None, ge=1, le=MAX_COUNT)
    """Per-microbatch clipping: the mean gradient of each microbatch of this many examples is clipped to clip_norm
    (TF-Privacy's num_microbatches = batch/m). Above 1, adding or removing a record changes its microbatch's clipped
    mean by up to 2·clip_norm: the add-remove sensitivity doubles (add-remove only; each record's microbatch is
    assumed fixed by the record alone). Default: per-example clipping (m = 1)."""
    gradient_accumulation_steps: int = param(symbol="a", unit="passes", example=1, default=1, ge=1, le=MAX_COUNT)
    """Physical batches accumulated per optimizer step: batch_size is then the batch of one forward/backward pass,
    the optimizer step's effective batch is a·batch_size (its sampling rate q = a·batch_size/dataset_size), and
    steps (and epochs) count optimizer steps."""

    def check(self) -> list[FieldIssue]:
        issues = []
        if (self.steps is None) == (self.epochs is None):
            issues.append(
                FieldIssue(("steps",), "give exactly one of steps and epochs", "exactly one of steps, epochs")
            )
        if self.effective_batch_size > self.dataset_size:
            issues.append(
                FieldIssue(
                    ("batch_size",),
                    "must not exceed dataset_size"
                    + (" (with gradient_accumulation_steps: times it)" if self.gradient_accumulation_steps > 1 else ""),
                    f"an integer in [1, {self.dataset_size // self.gradient_accumulation_steps}]",
                    self.batch_size,
                )
            )
        issues += _user_issues(self)
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
        issues += _allocation_issues(self)
        issues += _framework_issues(self)
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
    def effective_batch_size(self) -> int:
        """The optimizer step's batch: a·b with gradient accumulation, else b."""
        return self.batch_size * self.gradient_accumulation_steps

    @property
    def full_batch(self) -> bool:
        """Every record in every batch (b = n, no cap): each step is a plain Gaussian release."""
        return self.effective_batch_size == self.dataset_size and self.sampling != "truncated-poisson"

    @property
    def sampling_rate(self) -> float:
        """q = b/n (b the effective batch), or opacus's 1/⌈n/b⌉ (:attr:`framework`)."""
        if self.framework == "opacus":
            return 1.0 / math.ceil(self.dataset_size / self.effective_batch_size)
        return self.effective_batch_size / self.dataset_size

    @property
    def steps_per_epoch(self) -> Fraction:
        """n/b (b the effective batch), or opacus's len(data_loader) = ⌈n/b⌉ (:attr:`framework`)."""
        if self.framework == "opacus":
            return Fraction(-(-self.dataset_size // self.effective_batch_size))
        return Fraction(self.dataset_size, self.effective_batch_size)

    @property
    def microbatched(self) -> bool:
        """Per-microbatch clipping of microbatches of more than one example."""
        return self.microbatch_size is not None and self.microbatch_size > 1

    @property
    def sensitivity(self) -> float:
        """One record's sensitivity of the clipped sum: C under add-remove (2C with microbatches of more than one
        example), 2C under replace-one."""
        doubled = self.neighbouring == "replace-one" or self.microbatched
        return self.clip_norm * (2.0 if doubled else 1.0)

    @property
    def per_user(self) -> bool:
        """Whether the ε is per user (user sampling, or more than one example per user)."""
        return self.sampling_unit == "user" or self.examples_per_user > 1


def epochs_round_down(p: DpSgdParams) -> bool:
    """Whether epochs become steps rounded down (floor): opacus's whole passes, or epoch_rounding='floor' without a
    framework; the other frameworks round up."""
    return p.epoch_rounding == "floor" if p.framework is None else p.framework == "opacus"


@functools.lru_cache(maxsize=256)
def _steps_from_epochs(p: DpSgdParams) -> tuple[int, str]:
    """Steps from epochs and the rule used, in words (remembered: a request asks several times)."""
    assert p.epochs is not None  # steps are given otherwise
    if p.framework == "opacus":  # int(epochs / sample_rate): whole passes over its len(data_loader) batches
        steps = math.floor(Fraction(repr(p.epochs)) * p.steps_per_epoch)
        return steps, (
            f"steps = epochs·len(data_loader) = epochs·⌈dataset_size/{_batch_name(p)}⌉ = "
            f"{p.epochs:g}·{p.steps_per_epoch} = {steps} (opacus)"
        )
    if p.framework == "tensorflow_privacy":  # its own float arithmetic: ceil(num_epochs / q), q = b/n
        steps = math.ceil(p.epochs / (p.effective_batch_size / p.dataset_size))
        return steps, (
            f"steps = ceil(epochs/q), q = {_batch_name(p)}/dataset_size, in floating point = ceil({p.epochs:g}/"
            f"({p.effective_batch_size}/{p.dataset_size})) = {steps} (tensorflow_privacy)"
        )
    rounding = "floor" if epochs_round_down(p) else "ceil"
    exact = Fraction(repr(p.epochs)) * p.steps_per_epoch
    steps = math.floor(exact) if rounding == "floor" else math.ceil(exact)
    rule = (
        f"steps = {rounding}(epochs·dataset_size/{_batch_name(p)}) = {rounding}({p.epochs:g}·{p.dataset_size}/"
        f"{p.effective_batch_size}) = {steps}"
    )
    if p.framework == "jax_privacy":
        rule += " (jax_privacy counts updates, num_updates: epochs converted as TF-Privacy does)"
    return steps, rule


def _allocation_issues(p: DpSgdParams) -> list[FieldIssue]:
    """bins and num_selected describe a balls-in-bins loader (other loaders take their defaults only); num_selected
    fits an epoch."""
    issues = []
    if p.sampling != "balls-in-bins":
        for name, default in (("bins", "fresh"), ("num_selected", 1)):
            if getattr(p, name) != default:
                issues.append(
                    FieldIssue(
                        (name,),
                        "describes a balls-in-bins loader: give it with sampling='balls-in-bins' only",
                        f"{default!r} (or omitted) unless sampling='balls-in-bins'",
                        getattr(p, name),
                    )
                )
    elif p.num_selected > batches_per_epoch(p):
        issues.append(
            FieldIssue(
                ("num_selected",),
                "must not exceed the batches of an epoch, ⌊dataset_size/batch_size⌋",
                f"an integer in [1, {batches_per_epoch(p)}]",
                p.num_selected,
            )
        )
    return issues


def as_poisson(p: DpSgdParams) -> DpSgdParams:
    """The same run with Poisson batches at q = b/n (what is often reported for other loaders; its own defaults for
    the balls-in-bins fields)."""
    return p.model_copy(update={"sampling": "poisson", "bins": "fresh", "num_selected": 1})


def allocated(p: DpSgdParams) -> bool:
    """Whether the run is accounted by random allocation: balls-in-bins batches under add-remove neighbours (each
    example in num_selected of an epoch's ⌊n/b⌋ batches; Feldman & Shenfeld 2025)."""
    return p.sampling == "balls-in-bins" and p.neighbouring == "add-remove"


def without_amplification(p: DpSgdParams) -> bool:
    """Whether the run is accounted as one Gaussian release per example and epoch begun (shuffle; balls-in-bins under
    replace-one)."""
    return p.sampling in WITHOUT_AMPLIFICATION and not allocated(p)


def _framework_issues(p: DpSgdParams) -> list[FieldIssue]:
    """A framework's convention replaces epoch_rounding, and its accountants assume Poisson sampling."""
    if p.framework is None:
        return []
    issues = []
    if "epoch_rounding" in p.model_fields_set:
        issues.append(
            FieldIssue(
                ("epoch_rounding",),
                f"is set by framework={p.framework!r} (its own conversion of epochs to steps)",
                "omitted when framework is given",
                p.epoch_rounding,
            )
        )
    if p.sampling != "poisson":
        issues.append(
            FieldIssue(
                ("framework",),
                f"{p.framework}'s accounting assumes Poisson sampling; its convention is not defined for "
                f"sampling={p.sampling!r}",
                "sampling='poisson' with a framework, or no framework",
                p.framework,
            )
        )
    return issues


def batches_per_epoch(p: DpSgdParams) -> int:
    """⌊n/b⌋ (at least 1; b the effective batch): the fewest batches an epoch of a shuffling or balls-in-bins loader
    has (a loader that keeps the last partial batch has ⌈n/b⌉), so ⌈t/⌊n/b⌋⌉ bounds the epochs begun within t steps
    for either loader."""
    return max(1, p.dataset_size // p.effective_batch_size)


def _batch_name(p: DpSgdParams) -> str:
    """How the conventions name the batch of an optimizer step."""
    return "(gradient_accumulation_steps·batch_size)" if p.gradient_accumulation_steps > 1 else "batch_size"


def _user_issues(p: DpSgdParams) -> list[FieldIssue]:
    """examples_per_user > 1 needs example sampling and a loader it is derived for; microbatches need add-remove."""
    issues = []
    if p.examples_per_user > 1 and p.sampling_unit == "user":
        issues.append(
            FieldIssue(
                ("examples_per_user",),
                "must be 1 with sampling_unit='user' (each record is then a user, clipped as one)",
                "1 with sampling_unit='user'",
                p.examples_per_user,
            )
        )
    if p.examples_per_user > 1 and p.sampling == "truncated-poisson":
        issues.append(
            FieldIssue(
                ("examples_per_user",),
                "is not derived for truncated-poisson batches (the cut couples a user's examples): use sampling="
                "'poisson', 'shuffle', 'balls-in-bins' or 'fixed-size'",
                "1 with sampling='truncated-poisson'",
                p.examples_per_user,
            )
        )
    if p.examples_per_user > 1 and p.sampling == "poisson" and p.neighbouring != "add-remove":
        issues.append(
            FieldIssue(
                ("examples_per_user",),
                "under Poisson sampling a user's examples are accounted as a mixture of Gaussians, which is stated "
                "for adding or removing the user: use neighbouring='add-remove'",
                "1 with sampling='poisson' and neighbouring='replace-one'",
                p.examples_per_user,
            )
        )
    if p.microbatched and p.neighbouring != "add-remove":
        issues.append(
            FieldIssue(
                ("microbatch_size",),
                "microbatches of more than one example are accounted under add-remove neighbours only (where a "
                "record changes one microbatch's clipped mean by up to 2·clip_norm)",
                "1 (or omitted) with neighbouring='replace-one'",
                p.microbatch_size,
            )
        )
    return issues


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
    "balls-in-bins": "balls-in-bins (random allocation): each record is placed in num_selected uniformly random "
    "batches of each epoch's ⌊n/b⌋ (fresh bins: drawn again every epoch; persistent: the same every epoch)",
    "truncated-poisson": "truncated Poisson: each record joins each batch independently with probability q = "
    "batch_size/dataset_size, and a batch larger than max_batch_size is cut to a uniformly random max_batch_size "
    "records",
}
SENSITIVITY_RULE = {
    "add-remove": "sensitivity = clip_norm (one clipped gradient added or removed)",
    "replace-one": "sensitivity = 2·clip_norm (one clipped gradient replaced by another)",
}
