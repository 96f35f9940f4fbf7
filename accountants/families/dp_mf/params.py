"""Hyperparameters of the matrix-factorisation mechanism (DP-FTRL / BandMF): the strategy C, the participation
pattern of a record, the neighbouring relation and the noise."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from ...errors import FieldIssue
from ...params import MAX_COUNT, ParamsModel, noise_given_twice, noise_multiplier_param, param
from .strategies import MAX_DENSE_STEPS

ALGORITHM_ID = "dp-mf"
MAX_COEFFICIENTS = MAX_DENSE_STEPS

Participation = Literal["poisson", "single-epoch", "cyclic", "cyclic-poisson", "balls-in-bins"]
SAMPLED_PARTICIPATIONS = ("poisson", "cyclic-poisson", "balls-in-bins")
"""Participations where a record's steps are drawn at random (amplification by sampling may be claimed)."""
Amplification = Literal["spectral", "conditional", "none"]
MAX_CONDITIONAL_STEPS = 1024
"""Most steps of a conditional-composition account (its posterior bounds read C's dense rows)."""
MfNeighbouring = Literal["zero-out", "add-remove", "replace-one"]


def _as_tuples(value: Any) -> Any:
    """JSON arrays as tuples (hashable, immutable), nested arrays too."""
    if isinstance(value, list):
        return tuple(_as_tuples(v) for v in value)
    return value


class _StrategyModel(ParamsModel):
    @model_validator(mode="before")
    @classmethod
    def _arrays(cls, data: Any) -> Any:
        return {k: _as_tuples(v) for k, v in data.items()} if isinstance(data, dict) else data


class IdentityStrategy(_StrategyModel):
    type: Literal["identity"] = param(example="identity")
    """C = I: independent noise every step (DP-SGD)."""


class TreeStrategy(_StrategyModel):
    type: Literal["tree"] = param(example="tree")
    """Binary-tree aggregation (DP-FTRL): one noisy node per dyadic range of steps."""
    completion: bool = param(example=False, default=False)
    """Complete the tree to a power of two (every node holding a step is released: ⌈log₂T⌉ + 1 per step) instead
    of releasing only the nodes whose range has ended (the online tree: ⌈log₂(T+1)⌉ per step at most)."""
    restart_every: int | None = param(unit="steps", example=100, default=None, ge=1, le=MAX_DENSE_STEPS)
    """Start a new tree every so many steps (e.g. each epoch); default: one tree."""


class ToeplitzStrategy(_StrategyModel):
    type: Literal["toeplitz"] = param(example="toeplitz")
    """Lower-triangular Toeplitz C with Cᵢⱼ = c_{i−j}, banded by the number of coefficients (BandMF)."""
    coefficients: tuple[float, ...] = param(example=[1.0, 0.5, 0.25, 0.125], min_length=1, max_length=MAX_COEFFICIENTS)
    """c₀, c₁, …, c_{m−1}: C's first column (its m bands); c₀ must not be 0."""


class MatrixStrategy(_StrategyModel):
    type: Literal["matrix"] = param(example="matrix")
    """A dense lower-triangular C, T×T."""
    rows: tuple[tuple[float, ...], ...] = param(example=[[1.0], [0.5, 1.0]], min_length=1, max_length=MAX_DENSE_STEPS)
    """C row by row; row t holds its first t + 1 entries (zeros after them may be given or left out)."""


Strategy = Annotated[IdentityStrategy | TreeStrategy | ToeplitzStrategy | MatrixStrategy, Field(discriminator="type")]


class DpMfParams(ParamsModel):
    """Hyperparameters of the matrix-factorisation mechanism."""

    dataset_size: int = param(symbol="n", unit="records", example=10000, ge=1, le=MAX_COUNT)
    """Number of records in the training set."""
    batch_size: int = param(symbol="B", unit="records", example=100, ge=1, le=MAX_COUNT)
    """Records per step: the exact batch of cyclic and single-epoch passes, the expected batch of Poisson-type
    participation. At most dataset_size."""
    steps: int = param(symbol="T", unit="steps", example=1000, ge=1, le=MAX_COUNT)
    """Number of noisy steps (rows of the released C·G + Z). At most 2048 for strategies other than identity."""
    strategy: Strategy = param(example={"type": "toeplitz", "coefficients": [1.0, 0.5, 0.25, 0.125]})
    """The encoder C: {"type": "identity"} (= DP-SGD), {"type": "tree", "completion": false, "restart_every":
    null}, {"type": "toeplitz", "coefficients": [...]} or {"type": "matrix", "rows": [[...], ...]}."""
    participation: Participation = param(example="cyclic", default="cyclic")
    """When a record can be in a step's batch: cyclic (fixed batches in a fixed order, at most max_participations
    times, any two at least min_separation steps apart; no amplification); single-epoch (once; T ≤ ⌊n/B⌋);
    poisson (each step samples every record with q = B/n); cyclic-poisson (the records split into as many groups as C
    has bands, step t samples group t mod bands with q = B·bands/n: amplified BandMF); balls-in-bins (each record in
    one random batch per epoch of ⌊n/B⌋ steps)."""
    min_separation: int | None = param(symbol="b", unit="steps", example=100, default=None, ge=1, le=MAX_COUNT)
    """cyclic only: the fewest steps between two participations of a record; default ⌊n/B⌋ (one per epoch)."""
    max_participations: int | None = param(symbol="k", example=10, default=None, ge=1, le=MAX_COUNT)
    """cyclic only: the most participations of a record; default ⌈T/min_separation⌉."""
    noise_multiplier: float | None = noise_multiplier_param(
        symbol="z", unit="multiples of the strategy's sensitivity", example=1.0
    )
    """Noise std of each entry of Z over the L2 sensitivity of C·G under the participation and the relation
    (clip_norm·Δ under zero-out and add-remove, 2·clip_norm·Δ under replace-one; Δ of one participation under
    Poisson-type participation). Required for privacy accounting (or give noise_std); computed by calibration."""
    noise_std: float | None = param(symbol="σ", unit="gradient L2-norm units", gt=0, le=1e18, default=None, example=1.0)
    """Absolute std of each entry of Z; an alternative to noise_multiplier."""
    clip_norm: float = param(symbol="C", unit="gradient L2-norm units", example=1.0, gt=0, le=1e12, default=1.0)
    """Per-example L2 clipping norm; only converts between noise_multiplier and noise_std."""
    amplification: Amplification | None = param(example="spectral", default=None)
    """Poisson-type participation (poisson, cyclic-poisson, balls-in-bins) with C ≠ I: how sampling is credited.
    spectral (the default): DP-SGD's releases with the same participation at noise std σ/‖C‖₂ (a post-processing
    of them; ‖C‖₂ a certified upper bound) — cyclic-poisson with a group's columns orthogonal keeps its exact
    amplified banded reduction; conditional (poisson only; add-remove or zero-out; T ≤ 1024): conditional
    composition after MMCC (arXiv 2310.15526) — each step's release given the earlier ones is dominated by a mixture
    of Gaussians outside outputs of probability δ/4, which the answer spends (for comparison: spectral has been the
    tighter of the two on every banded C measured); none: one Gaussian of C's sensitivity over every pattern the
    participation allows (no amplification). Not given with other participations."""
    neighbouring: MfNeighbouring = param(example="zero-out", default="zero-out")
    """zero-out (one record's gradients replaced by zeros: the convention of matrix mechanisms, dp_accounting's
    REPLACE_SPECIAL), add-remove or replace-one (sensitivity doubled). Zero-out and add-remove give the same pairs of
    output distributions here, so the same ε. Also accepted as `neighboring`."""

    def check(self) -> list[FieldIssue]:
        issues = noise_given_twice(self.noise_multiplier, self.noise_std)
        if self.batch_size > self.dataset_size:
            issues.append(
                FieldIssue(("batch_size",), "must not exceed dataset_size", f"an integer in [1, {self.dataset_size}]")
            )
        if self.steps > MAX_DENSE_STEPS and not self.structured:
            issues.append(
                FieldIssue(
                    ("steps",),
                    f"at most {MAX_DENSE_STEPS} with a {self.strategy.type} strategy and this participation (its "
                    "Gram matrix is dense); longer runs: identity, or toeplitz with single-epoch, cyclic-poisson or "
                    "cyclic participation at least as many steps apart as it has coefficients",
                    f"an integer in [1, {MAX_DENSE_STEPS}]",
                    self.steps,
                )
            )
        issues += _strategy_issues(self)
        issues += _participation_issues(self)
        return issues

    @property
    def structured(self) -> bool:
        """Whether C's sensitivity follows from its column norms alone (any T): the identity; a Toeplitz C with one
        participation, cyclic-poisson groups, or cyclic participations at least its bands apart."""
        s = self.strategy
        if isinstance(s, IdentityStrategy):
            return True
        if not isinstance(s, ToeplitzStrategy):
            return False
        if self.participation in ("single-epoch", "cyclic-poisson") or self.spectral:
            return True
        return self.participation == "cyclic" and (self.min_separation or self.epoch_steps) >= len(s.coefficients)

    @property
    def spectral(self) -> bool:
        """Whether sampling is credited through ‖C‖₂ (:attr:`amplification`): Poisson-type participation, C ≠ I."""
        return (
            self.participation in SAMPLED_PARTICIPATIONS
            and not isinstance(self.strategy, IdentityStrategy)
            and self.amplification in (None, "spectral")
        )

    @property
    def epoch_steps(self) -> int:
        """⌊n/B⌋ (at least 1): the steps of one pass over the data."""
        return max(1, self.dataset_size // self.batch_size)


def _strategy_issues(p: DpMfParams) -> list[FieldIssue]:
    s = p.strategy
    if isinstance(s, ToeplitzStrategy) and s.coefficients[0] == 0.0:
        return [FieldIssue(("strategy", "coefficients"), "c₀ must not be 0 (C must be invertible)", "c₀ ≠ 0")]
    if isinstance(s, MatrixStrategy):
        if len(s.rows) != p.steps:
            return [FieldIssue(("strategy", "rows"), f"must have steps = {p.steps} rows", f"{p.steps} rows")]
        for t, row in enumerate(s.rows):
            if len(row) > p.steps or any(row[t + 1 :]) or len(row) <= t or row[t] == 0.0:
                return [
                    FieldIssue(
                        ("strategy", "rows", t),
                        "C must be lower-triangular with a non-zero diagonal: row t holds t + 1 entries (then only "
                        "zeros) and its entry t is not 0",
                        f"a row of {t + 1} numbers ending with a non-zero",
                    )
                ]
    return []


def _conditional_issues(p: DpMfParams) -> list[FieldIssue]:
    """Conditional composition reads independent per-step sampling, add/remove pairs and dense rows."""
    rule = "conditional amplification"
    if p.participation != "poisson":
        return [FieldIssue(("amplification",), f"{rule} needs participation='poisson' (independent steps)", "spectral")]
    if p.neighbouring == "replace-one":
        return [FieldIssue(("amplification",), f"{rule} accounts add/remove (or zero-out) neighbours", "spectral")]
    if p.steps > MAX_CONDITIONAL_STEPS and not isinstance(p.strategy, IdentityStrategy):
        return [
            FieldIssue(
                ("steps",),
                f"at most {MAX_CONDITIONAL_STEPS} with {rule} (it reads C's dense rows)",
                f"an integer in [1, {MAX_CONDITIONAL_STEPS}], or amplification='spectral'",
                p.steps,
            )
        ]
    return []


def _participation_issues(p: DpMfParams) -> list[FieldIssue]:
    issues = []
    if p.amplification is not None and p.participation not in SAMPLED_PARTICIPATIONS:
        issues.append(
            FieldIssue(
                ("amplification",),
                "describes Poisson-type participation: give it with poisson, cyclic-poisson or balls-in-bins only",
                "omitted unless participation is poisson, cyclic-poisson or balls-in-bins",
            )
        )
    if p.amplification == "conditional":
        issues += _conditional_issues(p)
    if p.participation != "cyclic":
        for name in ("min_separation", "max_participations"):
            if getattr(p, name) is not None:
                issues.append(
                    FieldIssue(
                        (name,),
                        "describes cyclic participation: give it with participation='cyclic' only",
                        "omitted unless participation='cyclic'",
                    )
                )
    if p.participation == "single-epoch" and p.steps > p.epoch_steps:
        issues.append(
            FieldIssue(
                ("steps",),
                "a single epoch has at most ⌊dataset_size/batch_size⌋ steps",
                f"an integer in [1, {p.epoch_steps}] (or participation='cyclic')",
                p.steps,
            )
        )
    return issues
