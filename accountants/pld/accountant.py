"""The privacy-loss-distribution accountant: interprets an event tree as dominating pairs, composes, answers.

``PldAccountant(neighbouring).epsilon(event, delta)`` returns a certified upper bound on the smallest ε at δ of the
adaptive composition described by ``event``; ``.delta(event, epsilon)`` the converse, ``.delta_curve`` δ at many ε
from one composition (non-increasing by construction). Which pair each release becomes, and in which direction, is
:mod:`accountants.pld.reading`.

Each direction is computed in passes on finer and finer grids (``_Passes``): a probe on ~2,000 knots per leaf
locates the answer and the tilt; each next pass uses a grid up to 64× finer and a window around the previous answer,
until the grid the answer needs. That grid follows the answer: the connect-the-dots error of T compositions grows
like T·Δ² (and like Δ for few), so Δ = min(10⁻⁴, √(τε/(2T)), 8τε) with the relative accuracy τ (default 10⁻⁴),
rounded down to a power of 2^(1/8), never more than ``max_points`` knots across the window (Δ is enlarged instead,
and reported).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .. import validation as check
from ..errors import ParameterError
from ..events import DpEvent
from ..rdp import NEIGHBOURING_RELATIONS, Neighbouring, UnsupportedEventError
from .composition import EXTENDED_U, TiltedComposition, Window, fft_rtol
from .curve import CirclePlan, PrefixCircle
from .discrete import LeafPld, connect_the_dots, wanted_grid
from .lower import LowerComposition, lower_leaves
from .pairs import ATOM_SNAP, DominatingPair, common_spacing
from .reading import Leaves, directed_leaves
from .window import LogMgf, WindowTooWide, plan_window

PROBE_KNOTS = 2048
"""Knots across the widest leaf in the first pass."""
PROBE_POINTS = 1 << 16
"""Most knots across the first pass's window (its grid is enlarged to fit)."""
PROBE_MIN_KNOTS = 256
"""The probe's grid leaves at least this many knots across the widest release (its window grows instead)."""
MAX_REFINEMENT = 64
"""Each pass's grid is at most this much finer than the previous one's."""
TAIL_SHARE = 1e-7
"""Each release's loss range leaves out at most this share of δ, divided by the number of releases (to the atom at
+∞, where it counts in δ)."""
MIN_LEAF_KNOTS = 32
"""A grid that leaves fewer knots than this across the widest release is refused (its discretisation error would
dominate the answer)."""
GRID_LADDER = 8
"""Grids are powers of 2^(1/8)."""
DELTA_QUERY_SCALE = 0.1
"""A δ(ε) query chooses its grid as if ε were at least this (δ(0), the total variation, needs no finer grid)."""
RETABULATE_KNOTS = 1 << 15
"""After a pass whose leaves have at most this many knots in all, K(θ) is tabulated again on them."""
MAX_PASSES = 6
"""A query stops after this many grids (each at most :data:`MAX_REFINEMENT` finer)."""
MIN_GRID = 1e-9
"""The grid a small ε asks for is never finer than this (absolute accuracy ~1e-8 below ε ≈ 1e-4)."""
START_KNOTS = 512
"""From a start, K(θ) is tabulated on leaves of this many knots (it only plans the window)."""
START_LOW = 0.8
"""From a start (calibration), the first window's bottom is this fraction of the nearby ε."""
PROBE_BELOW = 0.95
"""From a start (calibration), a direction whose nearby ε is below this fraction of the worse direction's probes
instead (unless every direction is refined): a probe usually certifies it below the answer, at a fraction of a fine
pass's cost."""
MAX_ATOM_DIVISIONS = 1 << 24
"""A grid through the atoms divides their spacing into at most this many steps (else the ladder's grid is used)."""
RETRY_SHARE = 1e-2
"""An answer whose FFT bound exceeds this share of δ is computed again with other tilts (:data:`TILT_RETRIES`)."""
TILT_RETRIES = 2
LOWER_WINDOW_MOVES = 4
"""Most windows the lower bound tries, each further down (it usually lies in the upper answer's own)."""
FFT_SHARE = 1e-4
EXTENDED_GAIN = EXTENDED_U / (float(np.finfo(float).eps) / 2.0)
"""How much smaller the FFT's rounding is in extended precision (≈ 1/2048 with x87 long double)."""
"""The tilt is chosen so that the FFT's rounding is predicted to take at most this share of δ."""


@dataclass(frozen=True)
class PldAccuracy:
    """How finely the PLD accountant works."""

    relative: float = 1e-4
    """τ: the targeted relative error of ε (the grid is chosen for it; the answer is an upper bound regardless)."""
    max_grid: float = 1e-4
    """The grid is never coarser than this (dp_accounting's default), unless ``max_points`` forces it."""
    max_points: int = 1 << 21
    """Most knots across a window (memory: 16 bytes each, a few arrays)."""


@dataclass(frozen=True)
class PldAnswer:
    """A certified ε (or δ) and how it was computed: the finest grid used, the window's knots, the tilt, and the
    part of δ that is error allowance (rounding, wrap-around, atoms at +∞) rather than the discretised law."""

    value: float
    grid: float
    points: int
    tilt: float
    error_allowance: float
    directions: int = 1
    passes: int = 1
    by_direction: tuple[float, ...] = ()
    """Each direction's value: where a nearby query (calibration) may start."""
    lower: float | None = None
    """A certified lower bound on the exact ε of the same pairs (:mod:`accountants.pld.lower`), where computed."""
    partial: bool = False
    """A direction's answer exceeded the ceiling (:meth:`PldAccountant.evaluate`) and the others were left unrefined
    or not run: the value is above the ceiling, but not the accountant's answer (below it where a direction was not
    run, so not an upper bound on the exact ε)."""


@dataclass
class _Direction:
    """One direction's leaves and its work so far."""

    leaves: Leaves
    steps: int = field(init=False)

    def __post_init__(self) -> None:
        self.steps = sum(count for count, _ in self.leaves)


class PldAccountant:
    """Tight (ε, δ) accounting by privacy-loss distributions for one neighbouring relation (module docstring)."""

    def __init__(self, neighbouring: Neighbouring = "add-remove", accuracy: PldAccuracy | None = None) -> None:
        if neighbouring not in NEIGHBOURING_RELATIONS:
            raise ParameterError.single(
                "neighbouring", "must be one of " + ", ".join(NEIGHBOURING_RELATIONS), value=neighbouring
            )
        self.neighbouring: Neighbouring = neighbouring
        self.accuracy = accuracy or PldAccuracy()

    # -- answers ---------------------------------------------------------------------------------------------

    def epsilon(self, event: DpEvent, delta: float, near: PldAnswer | None = None, lower: bool = False) -> PldAnswer:
        """Certified upper bound on the smallest ε with δ(ε) ≤ ``delta`` (the worse direction).

        ``near``: an answer for a nearby event of the same shape (e.g. another noise in a calibration); each
        direction then starts around its value, on the grid that value asks for, instead of probing (same guarantee,
        less work). ``lower``: also a certified lower bound (:attr:`PldAnswer.lower`).

        A direction whose first pass already certifies an ε below the worse direction's answer stops there (its
        value in :attr:`PldAnswer.by_direction` is that pass's): its finer passes could only lower it, so the answer
        — the worse direction's, with its grid, tilt and lower bound — is the same as with every direction refined
        (:meth:`epsilon_and_plans` refines every direction: prefixes read each one's circle)."""
        answer, _, bound = self._answered(event, delta, near, every_direction=False)
        return replace(answer, lower=bound()) if lower else answer

    def epsilon_and_plans(
        self, event: DpEvent, delta: float, near: PldAnswer | None = None, lower: bool = False
    ) -> tuple[PldAnswer, tuple[CirclePlan | None, ...]]:
        """:meth:`epsilon` with every direction refined, and per direction the plan of its answer (what
        :meth:`prefix_epsilons` reuses); the same answer as :meth:`epsilon`'s."""
        answer, plans, bound = self._answered(event, delta, near, every_direction=True)
        return (replace(answer, lower=bound()) if lower else answer), plans

    def evaluate(
        self, event: DpEvent, delta: float, near: PldAnswer | None = None, ceiling: float = math.inf
    ) -> tuple[PldAnswer, Callable[[], float | None]]:
        """:meth:`epsilon`, and a function that computes its certified lower bound later, from the same passes (a
        calibration asks for it at its answer only). Where a direction's answer exceeds ``ceiling``, the directions
        not yet computed are left out: the answer is then :attr:`PldAnswer.partial`, its value above the ceiling and
        at most the certified ε (all a calibration needs to know of a noise too small)."""
        answer, _, bound = self._answered(event, delta, near, every_direction=False, ceiling=ceiling)
        return answer, bound

    def _answered(
        self,
        event: DpEvent,
        delta: float,
        near: PldAnswer | None,
        every_direction: bool,
        ceiling: float = math.inf,
    ) -> tuple[PldAnswer, tuple[CirclePlan | None, ...], Callable[[], float | None]]:
        """Each direction's passes (from ``near``'s values where given); the worse direction's answer with every
        direction's value, the plans, and the lower bound to compute: the worse direction's (the answer's ε is at
        least its ε; the other's bound would rarely be larger). Unless ``every_direction``, a direction stops after
        its first pass where that is below a refined direction's answer (:meth:`epsilon`); above ``ceiling`` the
        directions left are not refined (:meth:`evaluate`; the values in ``by_direction`` of those not run are
        ``near``'s)."""
        d = check.delta("delta", delta)
        directions = self.directions(event)
        starts: list[float | None] = [None] * len(directions)
        hints: Sequence[float | None] = starts
        if near is not None and len(near.by_direction) == len(directions):
            # a direction well below the worse one probes (unless every direction is refined): that may be all it needs
            floor = -math.inf if every_direction else PROBE_BELOW * max(near.by_direction)
            starts = [value if math.isfinite(value) and value >= floor else None for value in near.by_direction]
            hints = near.by_direction
        passes = [_Passes(direction, self.accuracy, delta=d) for direction in directions]
        runs = [run.answers(start) for run, start in zip(passes, starts, strict=True)]
        found, cut = _refined(runs, every_direction, hints, ceiling)
        answers = [answer for answer in found if answer is not None]
        worst = max(answers, key=lambda a: a.value)
        if not math.isfinite(worst.value):
            raise _uncertified(worst, delta)
        assert near is not None or len(answers) == len(found)  # (without starts every direction has its first pass)
        by_direction = tuple(
            answer.value if answer is not None else near.by_direction[k] if near is not None else math.inf
            for k, answer in enumerate(found)
        )
        plans = tuple(run.best_plan for run in passes)
        worse = max(passes, key=lambda run: run.best_plan.value if run.best_plan else -math.inf)
        answer = replace(worst, directions=len(found), by_direction=by_direction, partial=cut)
        return answer, plans, worse.lower_epsilon

    def prefix_epsilons(
        self, plans: Sequence[CirclePlan | None], events: Sequence[DpEvent], delta: float
    ) -> list[PldAnswer | None]:
        """ε at δ of prefixes of the run whose :meth:`epsilon_and_plans` gave ``plans``, read off the run's tilted
        spectrum (:mod:`accountants.pld.curve`: certified like :meth:`epsilon`, within its accuracy); None for a
        prefix with other releases than the run's, or where the run's grid or circle does not suit it (ask
        :meth:`epsilon` for those)."""
        out: list[PldAnswer | None] = [None] * len(events)
        usable = [plan for plan in plans if plan is not None and plan.usable]
        if not usable or len(usable) != len(plans):
            return out
        rows, counts, steps = self._prefix_counts(usable, events)
        if not rows:
            return out
        found = [
            PrefixCircle(plan, delta, self.accuracy.relative, self.accuracy.max_grid).epsilons(counts[d], steps[d])
            for d, plan in enumerate(usable)
        ]
        for j, r in enumerate(rows):
            values = [direction[j] for direction in found]
            if any(value is None for value in values):
                continue
            by_direction = tuple(value.value for value in values if value is not None)
            worst = int(np.argmax(by_direction))
            plan, value = usable[worst], values[worst]
            assert value is not None
            out[r] = PldAnswer(
                value.value, plan.leaves[0].grid, plan.window.size, plan.theta, value.error_allowance,
                directions=len(values), passes=0, by_direction=by_direction,
            )  # fmt: skip
        return out

    def _prefix_counts(
        self, plans: Sequence[CirclePlan], events: Sequence[DpEvent]
    ) -> tuple[list[int], list[np.ndarray], list[list[int]]]:
        """The prefixes made of the run's releases only: their indices, and per direction their leaf counts (in the
        plan's order) and release counts."""
        rows: list[int] = []
        counts: list[list[np.ndarray]] = [[] for _ in plans]
        steps: list[list[int]] = [[] for _ in plans]
        for r, event in enumerate(events):
            try:
                directions = self.directions(event)
            except UnsupportedEventError:
                continue
            if len(directions) != len(plans):
                continue
            placed = [plan.counts(direction.leaves) for direction, plan in zip(directions, plans, strict=True)]
            if all(row is not None for row in placed):
                rows.append(r)
                for d, (direction, row) in enumerate(zip(directions, placed, strict=True)):
                    assert row is not None
                    counts[d].append(row)
                    steps[d].append(direction.steps)
        shapes = [(len(rows), len(plan.pairs)) for plan in plans]
        return (
            rows,
            [np.array(c, dtype=np.int64).reshape(shape) for c, shape in zip(counts, shapes, strict=True)],
            steps,
        )

    def delta(self, event: DpEvent, epsilon: float) -> PldAnswer:
        """Certified upper bound on δ(ε) (the worse direction)."""
        e = check.non_negative("epsilon", epsilon)
        answers = [_Passes(direction, self.accuracy, epsilon=e).run() for direction in self.directions(event)]
        worst = max(answers, key=lambda a: a.value)
        return replace(worst, directions=len(answers))

    def delta_curve(self, event: DpEvent, epsilons: Sequence[float]) -> np.ndarray:
        """Certified upper bounds on δ at each ε, non-increasing in ε by construction: each direction's certified
        values, then at each ε the smallest certified at any ε′ ≤ ε (the true δ is non-increasing, so that is a
        bound too), then the worse direction. Grids and windows follow each ε, so values computed alone may wiggle
        within the accuracy; this curve does not."""
        values = np.array([check.non_negative(f"epsilons.{k}", float(e)) for k, e in enumerate(epsilons)])
        order = np.argsort(values, kind="stable")
        worst = np.zeros(values.size)
        for direction in self.directions(event):
            found = np.array([_Passes(direction, self.accuracy, epsilon=float(e)).run().value for e in values[order]])
            worst = np.maximum(worst, np.minimum.accumulate(found))
        out = np.empty(values.size)
        out[order] = np.minimum(worst, 1.0)
        return out

    # -- interpretation --------------------------------------------------------------------------------------

    def directions(self, event: DpEvent) -> list[_Direction]:
        """The leaves of each direction to account (:func:`~accountants.pld.reading.directed_leaves`)."""
        return [_Direction(leaves) for leaves in directed_leaves(event, self.neighbouring)]


def _uncertified(worst: PldAnswer, delta: float) -> ParameterError:
    return ParameterError.single(
        "delta",
        "is too small: the PLD accountant certifies no finite epsilon at this delta (its error allowance "
        f"is {worst.error_allowance:.3g})",
        f"> {worst.error_allowance:.3g}",
        delta,
    )


CACHED_LEAF_KNOTS = 1 << 17
"""Leaves of at most this many knots are remembered (:func:`_leaf`; at most 8 of them, ~2 MB each)."""

_cached_leaf = functools.lru_cache(maxsize=8)(connect_the_dots)


def _leaf(pair: DominatingPair, grid: float, lo: int, hi: int) -> LeafPld:
    """connect_the_dots, remembered for the last few (pair, grid, knots) of at most :data:`CACHED_LEAF_KNOTS`: a
    plan's prefixes (ε over training) and a query's passes discretise the same releases again (leaves are
    immutable)."""
    if hi - lo > CACHED_LEAF_KNOTS:
        return connect_the_dots(pair, grid, lo, hi)
    return _cached_leaf(pair, grid, lo, hi)


def _refined(
    runs: list[Iterator[PldAnswer]], every_direction: bool, hints: Sequence[float | None], ceiling: float = math.inf
) -> tuple[list[PldAnswer | None], bool]:
    """Each direction's answer from its passes (:meth:`_Passes.answers`), the direction expected to be the worse
    refined first: the largest ``hints`` value (a nearby answer's: where it starts, or what its probe may confirm)
    where every direction has one, else every direction's first pass is run and the largest first value leads.
    Each next direction is refined in turn, unless (not ``every_direction``) its first value is already below the
    largest answer so far: its finer passes could only lower its value (the smallest pass is reported), so the worse
    direction, hence the answer, does not change. Once an answer exceeds ``ceiling``, the directions left are not
    refined (their first pass where it was run, else None): the ε of the whole is above the ceiling whatever they
    give (a calibration's infeasible noise needs no more). Returns the answers and whether the ceiling cut the
    refinement short."""
    firsts: dict[int, PldAnswer] = {}
    if any(hint is None for hint in hints):
        firsts = {k: next(run) for k, run in enumerate(runs)}
        order = sorted(range(len(runs)), key=lambda k: -firsts[k].value)
    else:
        order = sorted(range(len(runs)), key=lambda k: -float(hints[k] or 0.0))
    answers: list[PldAnswer | None] = [firsts.get(k) for k in range(len(runs))]
    settled: list[float] = []
    for d in order:
        if settled and max(settled) > ceiling:
            return answers, True
        answer = firsts[d] if d in firsts else next(runs[d])
        if every_direction or not settled or not answer.value < max(settled):
            answer = functools.reduce(lambda _, later: later, runs[d], answer)  # its last pass's answer
        answers[d] = answer
        settled.append(answer.value)
    return answers, False


def _near(value: float, guess: float) -> bool:
    """Whether an answer from a start is within a factor 2 of the start's ε (else the start is discarded)."""
    return 0.5 * guess <= value <= 2.0 * guess


# -- passes: a probe, then finer grids ------------------------------------------------------------------------------


class _Passes:
    """The grid refinement of one direction for one query: ε at ``delta``, or δ at ``epsilon``."""

    def __init__(
        self, direction: _Direction, accuracy: PldAccuracy, delta: float | None = None, epsilon: float | None = None
    ) -> None:
        self.leaves = direction.leaves
        self.steps = max(direction.steps, 1)
        self.accuracy = accuracy
        self.delta, self.epsilon = delta, epsilon
        scale = delta if delta is not None else 1e-12
        # what is cut off goes to +∞: ≤ TAIL_SHARE·δ in all; the releases counted up to a power of 2 (a smaller tail,
        # so still within the share) so that the runs of one plan's prefixes discretise the same ranges (ε over
        # training reuses their leaves: _leaf)
        releases = 1 << (self.steps - 1).bit_length()
        tail = max(TAIL_SHARE * scale / releases, 1e-300)
        self.ranges = [pair.loss_range(tail) for _, pair in self.leaves]
        tops = [count * pair.largest_loss() for count, pair in self.leaves]
        self.support_top = math.fsum(tops) * (1.0 + 4.0 * ATOM_SNAP) if all(map(math.isfinite, tops)) else math.inf
        """The composition's largest loss (rounded up): δ(ε) = 0 at and above it, exactly."""
        self.spacing = common_spacing(atom for _, pair in self.leaves for atom in pair.atoms())
        """Where the releases' atoms share a spacing, the grids of the answer divide it (atoms on knots)."""
        self.widest = max(max((hi - lo for lo, hi in self.ranges), default=0.0), 1e-12)
        self.last_built: list[tuple[int, LeafPld]] = []
        self.log_mgf: LogMgf | None = None
        self.last_plan: CirclePlan | None = None
        self.best_plan: CirclePlan | None = None
        """The plan of the reported answer's pass (ε queries): what the run's prefixes reuse (:mod:`.curve`)."""

    def run(self, start: float | None = None) -> PldAnswer:
        """The answer: the last of :meth:`answers`."""
        *_, answer = self.answers(start)
        return answer

    def answers(self, start: float | None = None) -> Iterator[PldAnswer]:
        """The certified answer after each pass (:meth:`_passes`, the best so far), capped at the composition's
        largest loss: δ(ε) = 0 at and above it, exactly (a bounded composition's tiny δ is otherwise all rounding
        allowance). The last one is the answer; a consumer may stop earlier with a valid, coarser one."""
        if self.delta is None and float(self.epsilon or 0.0) >= max(self.support_top, 0.0):
            yield PldAnswer(0.0, 0.0, 0, 0.0, 0.0)
            return
        for answer in self._passes(start):
            if self.delta is not None and answer.value > self.support_top:
                cap = max(self.support_top, 0.0)
                if self.best_plan is not None:
                    self.best_plan = replace(self.best_plan, value=cap)
                answer = replace(answer, value=cap, error_allowance=0.0)
            yield answer

    def _passes(self, start: float | None = None) -> Iterator[PldAnswer]:
        """Probe, then refine; or, from ``start`` (a nearby ε), a first pass around it on the grid it asks for
        (calibration: the answer at a nearby noise already knows where the answer lies). A start whose answer is
        not within a factor 2 of it is discarded for a probe. Yields the best answer after each pass."""
        grid = self.widest / PROBE_KNOTS
        self.best_plan = None
        if not self.leaves:  # nothing about the record is released: ε = 0 and δ(ε) = 0, exactly
            yield PldAnswer(0.0, 0.0, 0, 0.0, 0.0)
            return
        hint: tuple[float, float] | None = None  # (guess, window bottom) from the last pass
        last_grid = math.inf
        if start is not None:
            grid, hint, last_grid = self._started(start, grid)
        passes = 0
        best: PldAnswer | None = None
        probe_limit = PROBE_POINTS
        while True:
            limit = probe_limit if hint is None else self.accuracy.max_points
            try:
                answer = self._one_pass(grid, hint, limit)
            except WindowTooWide as wide:
                grid, probe_limit = self._widened(wide, grid, limit, hint is None, probe_limit)
                if hint is not None and grid >= last_grid / 1.25:
                    if best is None:  # a start too fine for the window: probe instead
                        yield from self._passes()
                    return  # no finer grid fits: the last answer yielded stands
                continue
            passes += 1
            if start is not None and passes == 1 and not _near(answer.value, start):
                yield from self._passes()  # the start was not near after all (its window misplaced): probe instead
                return
            if best is None or answer.value < best.value:
                best = answer  # every pass's answer is certified: the smallest is reported
                self.best_plan = self.last_plan
            yield replace(best, passes=passes)
            following = self._following(answer, grid, passes)
            if following is None:
                return
            grid, hint, last_grid = following

    def _started(self, start: float, grid: float) -> tuple[float, tuple[float, float], float]:
        """(grid, hint, last grid) of a first pass around a nearby ε ``start``: K(θ) tabulated on coarse leaves (no
        composition), the grid a probe would have led to, the window from below the start."""
        self._build(grid * PROBE_KNOTS / START_KNOTS)
        target = self._target_grid(start)
        grid = grid if grid <= target * 1.25 else target
        return grid, (start, max(0.0, START_LOW * start - 4.0 * grid)), grid * 2.0

    def _widened(
        self, wide: WindowTooWide, grid: float, limit: int, probing: bool, probe_limit: int
    ) -> tuple[float, int]:
        """(grid, probe limit) after a window too wide for ``limit`` knots: a grid coarse enough to fit it (for a
        long composition's probe, a wider window instead of a grid too coarse to mean anything); a
        :class:`ParameterError` where even a grid leaving :data:`MIN_LEAF_KNOTS` knots across a release does not
        fit."""
        grid *= wide.size / limit * 1.05
        if probing and grid > self.widest / PROBE_MIN_KNOTS and probe_limit < self.accuracy.max_points:
            grid, probe_limit = self.widest / PROBE_MIN_KNOTS, self.accuracy.max_points
        if grid > self.widest / MIN_LEAF_KNOTS:
            raise ParameterError.single(
                "event",
                "is a composition too wide for the PLD accountant: its window needs more than "
                f"{limit} knots even at a grid leaving {MIN_LEAF_KNOTS} knots across a release",
            ) from wide
        if probing:
            self.log_mgf = None  # tabulate K(θ) again on the coarser probe grid
        return grid, probe_limit

    def _following(
        self, answer: PldAnswer, grid: float, passes: int
    ) -> tuple[float, tuple[float, float], float] | None:
        """(grid, hint, last grid) of the pass after one on ``grid`` that gave ``answer``; None where that grid met
        the accuracy's (or ε = 0 is exact, or the passes are used up, or no finite ε was certified)."""
        value = answer.value if self.delta is not None else float(self.epsilon or 0.0)
        target = self._target_grid(value)
        exact = self.delta is not None and answer.value == 0.0  # δ(0) ≤ δ is certified: ε = 0
        if grid <= target * 1.25 or exact or passes >= MAX_PASSES or not math.isfinite(answer.value):
            return None
        low = max(0.0, answer.value - 4.0 * grid - 2.0 * self.steps * grid * grid)
        retabulate = self.log_mgf is None or self.log_mgf.built != self.last_built  # (not the probe's own leaves)
        if retabulate and sum(leaf.size for _, leaf in self.last_built) <= RETABULATE_KNOTS:
            # K(θ) again on this pass's finer leaves: coarse pessimistic leaves overstate K at large θ where
            # the loss has a heavy right tail, which misplaces the tilt and the window of the next pass
            self.log_mgf = LogMgf(self.last_built)
        finer = target if grid / target <= 2 * MAX_REFINEMENT else grid / MAX_REFINEMENT
        return finer, (answer.value, low), grid

    def lower_epsilon(self) -> float | None:
        """A certified lower bound on this direction's exact ε at δ (:mod:`accountants.pld.lower`): the optimistic
        leaves composed on the circle of the reported answer, the window moved down (up to
        :data:`LOWER_WINDOW_MOVES` times) where the bound lies below it; 0 for nothing released or where no bound
        above 0 is found, None without an answer to start from."""
        plan = self.best_plan
        if not self.leaves:
            return 0.0
        if plan is None or self.delta is None or not math.isfinite(plan.value):
            return None
        if plan.value == 0.0:
            return 0.0
        counts = [count for count, _ in self.leaves]
        optimistic = list(zip(counts, lower_leaves(plan.pairs, plan.leaves), strict=True))
        window, grid = plan.window, plan.leaves[0].grid
        for _ in range(LOWER_WINDOW_MOVES):
            composed = LowerComposition(optimistic, plan.theta, window, self.delta)
            found = composed.epsilon(self.delta, plan.value)
            if found is not None:  # less what snapping atoms to knots may have added to each release's loss
                reach = max(max(abs(lo), abs(hi)) for lo, hi in self.ranges)
                return max(found - self.steps * 2.0 * ATOM_SNAP * reach, 0.0)
            bottom = composed.composed.bottom
            low = max(0.0, bottom - 2.0 * max(plan.value - bottom, 16.0 * grid))
            assert self.log_mgf is not None
            upper_leaves = list(zip(counts, plan.leaves, strict=True))
            try:
                moved = plan_window(
                    self.log_mgf, plan.theta, upper_leaves, low, math.log(self.delta), self.accuracy.max_points
                )
            except WindowTooWide:
                break
            if moved.bottom >= window.bottom:
                break
            window = replace(moved, extended=plan.window.extended)
        return 0.0

    def _target_grid(self, epsilon: float) -> float:
        """Δ = min(max_grid, √(τε/(2T)), 8τε) rounded down to the ladder 2^(k/8) (nearby queries, e.g. along a
        calibration, land on the same grid and so on the same discretised law), not below :data:`MIN_GRID` nor finer
        than ``max_points`` knots across the widest release; for δ(ε) queries ε is taken ≥
        :data:`DELTA_QUERY_SCALE`."""
        eps = max(epsilon, 1e-9 if self.delta is not None else DELTA_QUERY_SCALE)
        finest = max(MIN_GRID, self.widest / self.accuracy.max_points)
        wanted = wanted_grid(self.accuracy.relative, self.accuracy.max_grid, eps, self.steps)
        return max(float(2.0 ** (math.floor(GRID_LADDER * math.log2(wanted)) / GRID_LADDER)), finest)

    def _aligned(self, grid: float) -> float:
        """The grid itself, or where the releases' atoms share a spacing a ≥ the grid, the largest a/N not above it
        (within a factor 2 of it)."""
        if self.spacing is None or not 1.0 <= self.spacing / grid <= MAX_ATOM_DIVISIONS:
            return grid
        return self.spacing / math.ceil(self.spacing / grid * (1.0 - 1e-12))

    def _build(self, grid: float) -> list[tuple[int, LeafPld]]:
        built = [
            (count, _leaf(pair, grid, math.floor(lo / grid), math.ceil(hi / grid)))
            for (count, pair), (lo, hi) in zip(self.leaves, self.ranges, strict=True)
        ]
        if self.log_mgf is None:  # the first (coarsest) pass tabulates K(θ)
            self.log_mgf = LogMgf(built)
        self.last_built = built
        return built

    def _one_pass(self, grid: float, hint: tuple[float, float] | None, max_points: int) -> PldAnswer:
        """One grid (through the atoms where they share a spacing): tilt and window from K(θ), compose, answer (the
        window moves down if the answer is below)."""
        grid = self._aligned(grid)
        built = self._build(grid)
        self.last_plan = None
        log_mgf = self.log_mgf
        assert log_mgf is not None
        atoms = sum(count * leaf.infinity for count, leaf in built)
        if atoms >= (self.delta if self.delta is not None else 1.0) or any(leaf.finite_mass == 0 for _, leaf in built):
            # the atoms at +∞ alone reach δ (or all of a release's loss is there): nothing finite is certified
            value = math.inf if self.delta is not None else 1.0
            return PldAnswer(value, grid, 0, 0.0, min(atoms, 1.0))
        if self.delta is None:
            eps = float(self.epsilon or 0.0)
            theta, window = self._tilt_and_window(built, eps, eps, None, max_points)
            composed = TiltedComposition(built, theta, window)
            return PldAnswer(composed.delta(eps), grid, window.size, theta, composed.error_terms(eps))
        if hint is None:
            guess = log_mgf.chernoff_epsilon(self.delta)
            low = max(0.0, min(guess - 12.0 * log_mgf.spread(log_mgf.saddle_tilt(guess)), log_mgf.mean()))
        else:
            guess, low = hint
        return self._epsilon_pass(built, grid, guess, low, max_points, self.delta)

    def _epsilon_pass(
        self, built: list[tuple[int, LeafPld]], grid: float, guess: float, low: float, max_points: int, delta: float
    ) -> PldAnswer:
        """ε at δ on one grid, the window moved down (up to 8 times) while the answer may lie below it. Where the
        composition's own FFT bound turns out above :data:`RETRY_SHARE` of δ (its prediction assumes a smooth law;
        atoms on a lattice keep the spectrum from decaying), the next tilts are tried, smallest first (up to
        :data:`TILT_RETRIES`), and the smallest certified answer stands."""
        for _ in range(8):
            best: tuple[float, TiltedComposition, float, Window] | None = None
            for theta, window in self._tilts_and_windows(built, guess, low, delta, max_points)[: TILT_RETRIES + 1]:
                composed = TiltedComposition(built, theta, window)
                value = composed.epsilon(delta)
                if value is None:
                    break
                if best is None or value < best[0]:
                    best = (value, composed, theta, window)
                at = value if math.isfinite(value) else composed.bottom
                if composed.fft_term(at) <= RETRY_SHARE * delta:
                    break
            if best is not None:
                value, composed, theta, window = best
                pairs = tuple(pair for _, pair in self.leaves)
                leaves = tuple(leaf for _, leaf in built)
                self.last_plan = CirclePlan(pairs, leaves, theta, window, value)
                at = value if math.isfinite(value) else composed.bottom
                return PldAnswer(value, grid, window.size, theta, composed.error_terms(at))
            low = max(0.0, composed.bottom - max(0.5, 0.5 * composed.bottom))
            guess = min(guess, low)
        raise ParameterError.single("delta", "the PLD accountant could not place its window (please report this)")

    def _tilt_and_window(
        self, built: list[tuple[int, LeafPld]], guess: float, low: float, delta: float | None, max_points: int
    ) -> tuple[float, Window]:
        """The preferred tilt and window (:meth:`_tilts_and_windows`)."""
        return self._tilts_and_windows(built, guess, low, delta, max_points)[0]

    def _tilts_and_windows(
        self, built: list[tuple[int, LeafPld]], guess: float, low: float, delta: float | None, max_points: int
    ) -> list[tuple[float, Window]]:
        """First, the tilt among θ_s·{0, 1/16, …, 1} (θ_s the Chernoff tilt at the guess) with the smallest window
        whose estimated FFT error stays below :data:`FFT_SHARE` of δ in double precision; else the same in extended
        precision (long double, ~5× slower); else the least estimated error, in extended precision. Then the other
        tilts, smallest first, each in extended precision where its estimate asks for it. Tilts whose window
        exceeds ``max_points`` are skipped (:class:`WindowTooWide` if all do)."""
        log_mgf = self.log_mgf
        assert log_mgf is not None
        saddle = log_mgf.saddle_tilt(guess)
        log_delta = math.log(delta) if delta is not None else min(log_mgf.at(saddle) - saddle * guess, 0.0) - 5.0
        budget = FFT_SHARE * math.exp(log_delta)
        candidates: list[tuple[float, float, Window]] = []  # (predicted FFT term, θ, window)
        narrowest = math.inf
        thetas = saddle * np.array([1.0, 0.5, 0.25, 0.125, 0.0625, 0.0])
        for theta, spread in zip(thetas.tolist(), log_mgf.spreads(thetas).tolist(), strict=True):
            try:
                window = plan_window(log_mgf, theta, built, low, log_delta, max_points)
            except WindowTooWide as wide:
                narrowest = min(narrowest, wide.size)
                continue
            candidates.append((self._fft_error(theta, spread, window.size, guess, built[0][1].grid), theta, window))
        if not candidates:
            raise WindowTooWide(int(narrowest))
        first: tuple[float, Window] | None = None
        for gain, extended in ((1.0, False), (EXTENDED_GAIN, True)):
            fitting = [c for c in candidates if c[0] * gain <= budget]
            if fitting:
                _, theta, window = min(fitting, key=lambda c: c[2].size)
                first = theta, replace(window, extended=extended)
                break
        if first is None:  # none fits: the least rounding, extended
            _, theta, window = min(candidates, key=lambda c: c[0])
            first = theta, replace(window, extended=True)
        others = [
            (theta, replace(window, extended=predicted > budget))
            for predicted, theta, window in sorted(candidates, key=lambda c: c[1])
            if theta != first[0]
        ]
        return [first, *others]

    def _fft_error(self, theta: float, deviation: float, size: int, epsilon: float, grid: float) -> float:
        """The FFT term of δ(ε) predicted for tilt θ: 2·(Σ c_i)·η·‖Φ‖₁·e^{K(θ)−θε}, with ‖Φ‖₁ ≈ n/(s√2π) + 1 for a
        composed tilted law of s knots' standard deviation (s = ``deviation``/Δ, ``deviation`` = √K″(θ))."""
        log_mgf = self.log_mgf
        assert log_mgf is not None
        spread = deviation / grid
        norm = size / (spread * math.sqrt(2.0 * math.pi) + 1.0) + 1.0
        log_chernoff = log_mgf.at(theta) - theta * epsilon
        return 2.0 * self.steps * fft_rtol(size) * norm * math.exp(min(log_chernoff, 700.0))
