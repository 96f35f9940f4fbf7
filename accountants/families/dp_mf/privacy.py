"""What the matrix-factorisation mechanism releases about one record, as an event tree the spine reads.

Five routes, chosen from the strategy, the participation and ``amplification`` (never from the noise, so a
calibration stays on one):

* **identity** strategy: DP-SGD's own tree (:func:`accountants.families.dp_sgd.privacy.mechanism`) for the loader
  with the same participation, at the per-step multiplier z·Δ — the same events, hence the same answers;
* **amplified banded** (``cyclic-poisson``, columns of C in one residue class mod the bands orthogonal): a record
  of group g is sampled with probability q at steps g, g + b, …, each time meeting noise independent of its other
  steps, so the release is ⌈T/b⌉ Poisson-subsampled Gaussians at z over one participation's sensitivity (the largest
  column norm) — the reduction of Choquette-Choo et al. 2023 (arXiv 2306.08153, Thm. 4; jax_privacy's
  ``amplified_bandmf_event``);
* **spectral** (Poisson-type participation with another C, unless ``amplification="none"``): DP-SGD's tree for the
  same participation at the per-step multiplier σ/‖C‖₂ (σ the noise std over the clip norm, ‖C‖₂ a certified
  upper bound). Soundness: Z has the law C·W₁ + Z′ with W₁ ~ N(0, λI), λ = σ²/‖C‖₂², and Z′ ~ N(0, σ²I − λCCᵀ)
  independent (σ²I − λCCᵀ ⪰ 0 exactly when λ ≤ σ²/‖C‖₂²), so C·G + Z = C·(G + W₁) + Z′: a post-processing, with
  independent randomness Z′ drawn up front, of G + W₁ — DP-SGD's releases (row t of G is the record's clipped
  gradient where it joins step t, chosen from rows of C·G + Z before t, all functions of (G + W₁) before t and Z′,
  C being lower-triangular in time). Conditioned on Z′, that is DP-SGD's adaptive composition for every Z′, hence
  also averaged over it. Any C, any sign; exact for C = I;
* **conditional** (``amplification="conditional"``, Poisson): each step's release given the earlier ones dominated
  by a mixture of Gaussians outside outputs of probability δ/4 (:mod:`.conditional`, its own soundness argument),
  the mixtures composed by the spine with δ/4 reserved in the plan;
* **Gaussian**: otherwise one Gaussian release of C·G at z over the sensitivity under the pattern (exact GDP
  μ = 1/z); under Poisson-type participation with ``amplification="none"`` this claims no amplification (a record
  may join any step: the pattern allows every step, or one per epoch for balls-in-bins).

Zero-out neighbours (a record's gradients replaced by zeros) give, for each of these releases, the same pairs of
output distributions as adding or removing the record, so the plan is read under add-remove; replace-one doubles
the sensitivity (the multiplier is relative to it, as dp-sgd's).
"""

from __future__ import annotations

import enum
import functools
import math
from dataclasses import dataclass

import numpy as np

from ...errors import ParameterError
from ...events import DpEvent, GaussianEvent, PoissonSampledEvent, SelfComposedEvent
from ...rdp import Neighbouring
from ..dp_sgd import privacy as dp_sgd_privacy
from ..dp_sgd.params import DpSgdParams, Sampler
from . import strategies
from .conditional import conditional_plan
from .params import DpMfParams, IdentityStrategy, MatrixStrategy, Strategy, ToeplitzStrategy, TreeStrategy
from .sensitivity import ONE_PARTICIPATION, Pattern, Sensitivity, sensitivity

SMALL_DENSE_STEPS = 64
"""Up to this T a Toeplitz C's operator norm is also bounded from its dense Gram matrix (well under a millisecond)."""
IDENTITY_LOADERS: dict[str, Sampler] = {
    "poisson": "poisson",
    "cyclic-poisson": "poisson",
    "single-epoch": "shuffle",
    "cyclic": "shuffle",
    "balls-in-bins": "balls-in-bins",
}
"""dp-sgd's loader with the same participation as an identity strategy's."""


class Route(enum.Enum):
    IDENTITY = "identity"
    AMPLIFIED_BANDED = "amplified-banded"
    SPECTRAL = "spectral"
    CONDITIONAL = "conditional"
    GAUSSIAN = "gaussian"


@dataclass(frozen=True)
class Release:
    """How the plan is built: the route, the sensitivity the multiplier is relative to (clip norm 1, before the
    relation's doubling), the pattern it was computed for, and for amplified routes the sampling."""

    route: Route
    sensitivity: Sensitivity
    pattern: Pattern
    sampling_rate: float | None = None
    """q where a record's steps are sampled (amplified banded, and C = I under Poisson-type sampling), else None."""
    rounds: int | None = None
    groups: int | None = None
    amplification_refused: str | None = None
    """Why a Poisson-type participation is accounted without amplification (None where it is not)."""
    operator_norm: float | None = None
    """The spectral route's certified upper bound on ‖C‖₂ (None on the other routes)."""
    loader: DpSgdParams | None = None
    """The spectral route's DP-SGD participation: dp-sgd's loader, dataset, batch and steps of one record."""

    @property
    def sampled(self) -> bool:
        """Whether a record's steps are sampled (at :attr:`sampling_rate`)."""
        return self.sampling_rate is not None


def spine_relation(p: DpMfParams) -> Neighbouring:
    """The relation the spine reads the plan under (zero-out as add-remove)."""
    return "replace-one" if p.neighbouring == "replace-one" else "add-remove"


def mechanism_plan(p: DpMfParams, release: Release, z: float, delta: float) -> tuple[DpEvent, float]:
    """The releases about one record at multiplier z, and the δ reserved outside them (the conditional route's
    failure probability; 0 elsewhere)."""
    if release.route is Route.CONDITIONAL:
        assert release.sampling_rate is not None
        rows, times = conditional_encoder(p.strategy, p.steps)
        plan = conditional_plan(rows, times, release.sampling_rate, z * release.sensitivity.value, delta)
        return plan.event, plan.reserved_delta
    return mechanism(p, release, z), 0.0


def mechanism(p: DpMfParams, release: Release, z: float) -> DpEvent:
    """The releases about one record at multiplier z (every route but the conditional one, which needs δ)."""
    if release.route is Route.IDENTITY:
        return dp_sgd_privacy.mechanism(*identity_as_dp_sgd(p, release, z))
    if release.route is Route.SPECTRAL:
        assert release.loader is not None and release.operator_norm is not None and release.rounds is not None
        per_step = z * release.sensitivity.value / release.operator_norm
        return dp_sgd_privacy.mechanism(release.loader, per_step, release.rounds)
    if release.route is Route.AMPLIFIED_BANDED:
        assert release.sampling_rate is not None and release.rounds is not None
        z_add_remove = 2.0 * z if p.neighbouring == "replace-one" else z
        return SelfComposedEvent(
            PoissonSampledEvent(release.sampling_rate, GaussianEvent(z_add_remove)), release.rounds
        )
    return GaussianEvent(z)


def identity_as_dp_sgd(p: DpMfParams, release: Release, z: float) -> tuple[DpSgdParams, float, int]:
    """dp-sgd's parameters, per-step multiplier and steps with the identity strategy's participation: per step the
    noise is z·Δ (Δ = √k without amplification, 1 with it)."""
    sgd = DpSgdParams(
        dataset_size=p.dataset_size,
        batch_size=p.batch_size,
        steps=p.steps,
        sampling=IDENTITY_LOADERS[p.participation],
        neighbouring=spine_relation(p),
    )  # the multiplier is passed on its own: z·Δ may lie outside the range a dp-sgd request accepts
    return sgd, z * release.sensitivity.value, p.steps


def release_of(p: DpMfParams) -> Release:
    """The route and sensitivity for these hyperparameters (independent of the noise)."""
    if p.amplification == "conditional" and not isinstance(p.strategy, IdentityStrategy):
        return _conditional_release(p.strategy, p.steps, p.dataset_size, p.batch_size)
    spectral = (p.strategy, p.steps, p.participation, p.dataset_size, p.batch_size, spine_relation(p))
    if p.spectral and p.participation != "cyclic-poisson":
        return _spectral_release(*spectral)
    release = _release(
        p.strategy, p.steps, p.participation, p.dataset_size, p.batch_size, p.min_separation, p.max_participations
    )
    if p.spectral and release.route is Route.GAUSSIAN:  # cyclic-poisson's amplified banded route is exact: kept
        return _spectral_release(*spectral)
    return release


@functools.lru_cache(maxsize=32)
def _conditional_release(strategy: Strategy, steps: int, dataset_size: int, batch_size: int) -> Release:
    """Poisson participation credited by conditional composition (:mod:`.conditional`); the multiplier is relative
    to one participation's sensitivity, C's largest column norm."""
    return Release(Route.CONDITIONAL, one_participation(strategy, steps), Pattern(steps, 1), batch_size / dataset_size)


@functools.lru_cache(maxsize=8)
def conditional_encoder(strategy: Strategy, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """C's rows and the step each is released at (a square C: row t at t; the tree: a node when its range ends)."""
    if isinstance(strategy, TreeStrategy):
        rows = strategies.tree_encoder(steps, strategy.completion, strategy.restart_every)
        times = np.minimum(steps - 1, rows.shape[1] - 1 - np.argmax(rows[:, ::-1] > 0.0, axis=1))
    else:
        rows, times = encoder(strategy, steps), np.arange(steps)
    rows.flags.writeable = False
    return rows, times


@functools.lru_cache(maxsize=32)
def _spectral_release(
    strategy: Strategy, steps: int, participation: str, dataset_size: int, batch_size: int, relation: Neighbouring
) -> Release:
    """Poisson-type participation with C ≠ I: DP-SGD's releases at σ/‖C‖₂ (the module's soundness argument); the
    multiplier is relative to one participation's sensitivity (C's largest column norm), as on the other amplified
    routes. cyclic-poisson samples a record at its group's ⌈T/b⌉ steps with q = B·b/n (b = C's bands)."""
    if isinstance(strategy, ToeplitzStrategy):
        norm = strategies.toeplitz_operator_norm(strategy.coefficients)
        if steps <= SMALL_DENSE_STEPS:  # a short run's C is smaller than the limit Σ|cᵢ|: its own bound is cheap
            norm = min(norm, strategies.gram_operator_norm(gram_matrix(strategy, steps)))
    else:
        norm = strategies.gram_operator_norm(gram_matrix(strategy, steps))
    one, groups = one_participation(strategy, steps), cyclic_groups(strategy, steps)
    q: float | None = batch_size / dataset_size if participation == "poisson" else None
    batch, rounds, loader = batch_size, steps, IDENTITY_LOADERS[participation]
    if participation == "cyclic-poisson":  # a record joins only its group's steps, each with q = B·b/n
        q, batch, rounds = _group_rate(groups, dataset_size, batch_size), batch_size * groups, -(-steps // groups)
    sgd = DpSgdParams(dataset_size=dataset_size, batch_size=batch, steps=rounds, sampling=loader, neighbouring=relation)
    return Release(Route.SPECTRAL, one, Pattern(steps, 1), q, rounds, groups, operator_norm=norm, loader=sgd)


@functools.lru_cache(maxsize=32)
def _release(
    strategy: Strategy,
    steps: int,
    participation: str,
    dataset_size: int,
    batch_size: int,
    min_separation: int | None,
    max_participations: int | None,
) -> Release:
    epoch = max(1, dataset_size // batch_size)
    if isinstance(strategy, IdentityStrategy):
        rate = batch_size / dataset_size
        return _identity_release(steps, participation, epoch, rate, min_separation, max_participations)
    if isinstance(strategy, ToeplitzStrategy):
        if participation == "cyclic-poisson":
            return _banded_toeplitz_release(strategy, steps, dataset_size, batch_size)
        structured = _toeplitz_release(strategy, steps, participation, epoch, min_separation, max_participations)
        if structured is not None:
            return structured
    gram = gram_matrix(strategy, steps)
    if participation == "cyclic-poisson":
        groups = cyclic_groups(strategy, steps)
        q = _group_rate(groups, dataset_size, batch_size)
        if strategies.orthogonal_within_residues(gram, groups):  # always where groups ≥ T: one step per record
            one = sensitivity(gram, Pattern(steps, 1))
            return Release(Route.AMPLIFIED_BANDED, one, Pattern(steps, 1), q, -(-steps // groups), groups)
        pattern = Pattern(groups, -(-steps // groups))
        not_independent = (
            f"columns of C a multiple of {groups} steps apart are not orthogonal, so a group's steps are not "
            "independent releases"
        )
        return Release(Route.GAUSSIAN, sensitivity(gram, pattern), pattern, amplification_refused=not_independent)
    pattern = _pattern(steps, participation, epoch, min_separation, max_participations)
    refused = (
        "amplification='none' was asked: the pattern allows "
        + ("every step" if participation == "poisson" else "one step per epoch, anywhere in it")
        if participation in ("poisson", "balls-in-bins")
        else None
    )
    return Release(Route.GAUSSIAN, sensitivity(gram, pattern), pattern, amplification_refused=refused)


def _toeplitz_release(
    strategy: ToeplitzStrategy,
    steps: int,
    participation: str,
    epoch: int,
    min_separation: int | None,
    max_participations: int | None,
) -> Release | None:
    """A Toeplitz C with participations at least its bands apart, from its column norms alone (any T): columns
    that far apart are orthogonal, so Δ² is the best pattern's sum of squared column norms; the norms do not
    increase with the column, so the pattern 0, b, 2b, … is best (its i-th step is at most any pattern's). None
    where the pattern allows closer participations (the dense bracket decides)."""
    bands = strategies.toeplitz_bands(strategy.coefficients)
    if participation not in ("single-epoch", "cyclic"):
        return None
    pattern = _pattern(steps, participation, epoch, min_separation, max_participations)
    k = pattern.effective_participations(steps)
    if k > 1 and pattern.min_separation < bands:
        return None
    value = math.sqrt(strategies.toeplitz_cyclic_sum(strategy.coefficients, steps, pattern.min_separation, k))
    witness = _every(pattern.min_separation, k)
    method = (
        ONE_PARTICIPATION
        if k == 1
        else f"columns of C at least {bands} steps apart are orthogonal (C has {bands} bands) and the column norms do "
        "not increase: the pattern 0, b, 2b, … (Choquette-Choo et al. 2023, arXiv 2306.08153), exact"
    )
    return Release(Route.GAUSSIAN, Sensitivity(value, value, witness, True, method), pattern)


def _banded_toeplitz_release(strategy: ToeplitzStrategy, steps: int, dataset_size: int, batch_size: int) -> Release:
    """cyclic-poisson with a Toeplitz C: as many groups as bands, so a group's columns are orthogonal (any T)."""
    groups = cyclic_groups(strategy, steps)
    q = _group_rate(groups, dataset_size, batch_size)
    one = one_participation(strategy, steps)
    return Release(Route.AMPLIFIED_BANDED, one, Pattern(steps, 1), q, -(-steps // groups), groups)


def one_participation(strategy: Strategy, steps: int) -> Sensitivity:
    """One participation's sensitivity, exact: C's largest column norm (column 0 of a Toeplitz C, in O(m); the
    tree's from its Gram matrix; a dense C's from its columns)."""
    if isinstance(strategy, ToeplitzStrategy):
        squares = strategies.toeplitz_column_norms(strategy.coefficients, steps, np.zeros(1))
    elif isinstance(strategy, TreeStrategy):
        squares = np.diagonal(gram_matrix(strategy, steps))
    else:
        squares = np.sum(np.square(encoder(strategy, steps)), axis=0)
    column = int(np.argmax(squares))
    value = math.sqrt(float(squares[column]))
    return Sensitivity(value, value, (column,), True, ONE_PARTICIPATION)


def cyclic_groups(strategy: Strategy, steps: int) -> int:
    """cyclic-poisson's groups: C's bands within its T rows (the tree: every step its own group)."""
    if isinstance(strategy, ToeplitzStrategy):
        return min(strategies.toeplitz_bands(strategy.coefficients), steps)
    if isinstance(strategy, TreeStrategy):
        return steps
    return strategies.bands(encoder(strategy, steps))


MAX_REPORTED_PATTERN = 1024
"""Most steps of a worst pattern an answer lists (longer ones are the pattern 0, b, 2b, … its method names)."""


def _every(sep: int, k: int) -> tuple[int, ...]:
    """The steps 0, b, …, (k − 1)·b, or () where there are more than :data:`MAX_REPORTED_PATTERN` of them."""
    return tuple(range(0, k * sep, sep)) if k <= MAX_REPORTED_PATTERN else ()


def _group_rate(groups: int, dataset_size: int, batch_size: int) -> float:
    """q = B·b/n for b groups of n/b records with an expected batch of B; a ParameterError above 1."""
    q = batch_size * groups / dataset_size
    if q > 1.0:
        raise ParameterError.single(
            "batch_size",
            f"cyclic-poisson samples each of {groups} groups (C's bands) at q = batch_size·{groups}/dataset_size, "
            "which exceeds 1 here",
            f"an integer in [1, {dataset_size // groups}]",
            batch_size,
        )
    return q


def _identity_release(
    steps: int,
    participation: str,
    epoch: int,
    rate: float,
    min_separation: int | None,
    max_participations: int | None,
) -> Release:
    """C = I: DP-SGD. Amplified loaders: Δ = 1 per participation (Poisson-type: each step sampled at q = B/n);
    cyclic and single-epoch: Δ = √k."""
    if participation in ("poisson", "cyclic-poisson", "balls-in-bins"):
        one = Sensitivity(1.0, 1.0, (0,), True, "C = I: one participation moves one row by at most 1")
        sampled = rate if participation != "balls-in-bins" else None
        return Release(Route.IDENTITY, one, Pattern(steps, 1), sampling_rate=sampled)
    pattern = _pattern(steps, participation, epoch, min_separation, max_participations)
    k = pattern.effective_participations(steps)
    witness = _every(pattern.min_separation, k)
    value = math.sqrt(k)
    exact = Sensitivity(value, value, witness, True, f"C = I: {k} participations, one row each (√k)")
    custom = min_separation is not None or max_participations is not None
    if custom and k != -(-steps // epoch):
        return Release(Route.GAUSSIAN, exact, pattern)  # not a dp-sgd loader: the Gaussian of Δ = √k
    return Release(Route.IDENTITY, exact, pattern)


def _pattern(
    steps: int, participation: str, epoch: int, min_separation: int | None, max_participations: int | None
) -> Pattern:
    if participation == "single-epoch":
        return Pattern(steps, 1)
    if participation == "cyclic":
        sep = min_separation or epoch
        return Pattern(sep, max_participations or -(-steps // sep))
    if participation == "balls-in-bins":
        return Pattern(1, -(-steps // epoch))
    return Pattern(1, steps)  # poisson without amplification: any steps


@functools.lru_cache(maxsize=16)
def encoder(strategy: Strategy, steps: int) -> np.ndarray:
    """C for a toeplitz or matrix strategy, read-only (the tree's Gram matrix is built directly)."""
    if isinstance(strategy, ToeplitzStrategy):
        c = strategies.toeplitz_encoder(strategy.coefficients, steps)
    else:
        assert isinstance(strategy, MatrixStrategy)
        c = np.zeros((steps, steps))
        for t, row in enumerate(strategy.rows):
            c[t, : len(row)] = row
    c.flags.writeable = False
    return c


@functools.lru_cache(maxsize=16)
def gram_matrix(strategy: Strategy, steps: int) -> np.ndarray:
    """X = CᵀC (read-only)."""
    if isinstance(strategy, TreeStrategy):
        gram = strategies.tree_gram(steps, strategy.completion, strategy.restart_every)
    else:
        gram = strategies.gram_of(encoder(strategy, steps))
    gram.flags.writeable = False
    return gram
