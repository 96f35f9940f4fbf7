"""Private mirror descent's releases as a plan, and the paper's own accountant (González, Guzmán & Paquette 2024,
Cor. 3.6).

``rdp`` and ``tight`` are the spine's (:class:`~accountants.planned.PlannedFamily`) on the family's mechanism plan —
k vertex samples, each ε₀-DP with bounded range (range ratio)·ε₀, adaptively composed under replace-one — so
``/v1/privacy`` and ``/v1/compose`` with an ``algorithm`` node give the same numbers: rdp is the Rényi curve
k·min(exact RDP of ε₀-DP, α·ε_BR²/8) converted on the orders, or its zCDP envelope over real α, or kε₀, whichever is
smallest; tight is the PLD accountant with the samples read as blocks of 64 adaptive steps of the class (exact
Bellman recursion, :mod:`accountants.pld.bounded_range`): the optimal adaptive composition of bounded-range samples
for Algorithms 1 and 3, and of pure ε₀-DP samples (randomised response) for Algorithm 5, whose 2ε₀ range adds
nothing. The paper's statement (Cor. 3.6 as printed) and its stepsize rule are this module's own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from ...conversions import linear_rdp_for_epsilon
from ...events import BoundedRangeEvent, PureDpEvent, SelfComposedEvent
from ...mechanisms.pure_composition import bounded_range_rdp, pure_dp_rdp
from ...plans import Knob, MechanismPlan
from ...reports import AccountantResult, PaperCalibration, RdpCurve
from .params import SOURCE
from .plan import Schedule

STEPSIZE = Knob("stepsize", "η (the stepsize: each vertex sample is ε₀ = (ε₀ per unit stepsize)·η-DP)", False)
"""The privacy knob: a smaller stepsize is more private."""

# -- the accountants --------------------------------------------------------------------------------------------------


def mechanism_plan(sched: Schedule, stepsize: float) -> MechanismPlan:
    """k vertex samples, each ε₀-DP with bounded range (range ratio)·ε₀, adaptively composed (replace-one neighbours
    of fixed size n, González, Guzmán & Paquette 2024, §1.3); with k = 0 nothing depends on the data."""
    e0 = sched.epsilon0(stepsize)
    sample = BoundedRangeEvent(sched.range_ratio * e0, e0)
    if not sched.count:
        return MechanismPlan(PureDpEvent(0.0), "replace-one", description=NOTHING_RELEASED)
    return MechanismPlan(SelfComposedEvent(sample, sched.count), "replace-one")


NOTHING_RELEASED = (
    "with steps = 1 no released vertex depends on the data (the first samples come from the uniform start), so "
    "every stepsize gives ε = 0; use steps ≥ 2"
)


def rdp_curve(sched: Schedule, stepsize: float) -> Callable[[np.ndarray], np.ndarray]:
    """k·min(exact RDP of ε₀-DP, α·ε_BR²/8) at each order (every sample satisfies both)."""
    e0 = sched.epsilon0(stepsize)
    e_br = sched.range_ratio * e0
    k = float(sched.count)

    def curve(orders: np.ndarray) -> np.ndarray:
        a = np.asarray(orders, dtype=float)
        with np.errstate(over="ignore"):
            return np.asarray(k * np.minimum(pure_dp_rdp(e0, a), bounded_range_rdp(e_br, a)))

    return curve


def rdp_labels(sched: Schedule, stepsize: float, orders: np.ndarray) -> tuple[str, ...]:
    e0 = sched.epsilon0(stepsize)
    pure = pure_dp_rdp(e0, orders)
    br = bounded_range_rdp(sched.range_ratio * e0, orders)
    return tuple(BR_NAME if b <= q else PURE_RDP_NAME for b, q in zip(br, pure, strict=True))


def paper_epsilon(sched: Schedule, stepsize: float, delta: float) -> float:
    """ε of Corollary 3.6 as printed: 2√(2k log(1/δ))·ε₀ with the paper's ε₀ and count."""
    return 2.0 * math.sqrt(2.0 * sched.paper_count * (-math.log(delta))) * sched.paper_epsilon0_per_stepsize * stepsize


def paper_stepsize(sched: Schedule, epsilon: float, delta: float) -> float:
    """The paper's stepsize rule: ε₀ = ε/(2√(2k log(1/δ))) (Cor. 3.6), η = ε₀ over ε₀ per unit stepsize."""
    return (
        epsilon / (2.0 * math.sqrt(2.0 * sched.paper_count * (-math.log(delta)))) / (sched.paper_epsilon0_per_stepsize)
    )


@dataclass(frozen=True)
class Reading:
    """What the wording reads at one stepsize: the spine's rdp and tight rows, the Rényi curve on its orders (∞
    where infinite), and the paper's ε."""

    rdp: AccountantResult
    tight_row: AccountantResult
    orders: np.ndarray
    curve: np.ndarray
    paper: float
    delta: float

    @classmethod
    def of(cls, rows: Mapping[str, AccountantResult], curve: RdpCurve, paper: float, delta: float) -> Reading:
        values = np.array([math.inf if e is None else e for e in curve.epsilons], dtype=float)
        return cls(rows["rdp"], rows["tight"], np.asarray(curve.orders, dtype=float), values, paper, delta)

    @property
    def rdp_epsilon(self) -> float:
        """The rdp accountant's ε (it reads every plan of this family)."""
        assert self.rdp.epsilon is not None
        return self.rdp.epsilon

    @property
    def tight(self) -> float | None:
        """The tight accountant's ε (None where it was not computed or does not apply)."""
        return self.tight_row.epsilon if self.tight_row.applicable else None

    @property
    def paper_valid(self) -> bool:
        """Whether the paper's statement is in its regime, ε ≤ 8 log(1/δ) (Corollary 3.6)."""
        return paper_in_regime(self.paper, self.delta)


def paper_in_regime(epsilon: float, delta: float) -> bool:
    """Corollary 3.6's condition ε ≤ 8 log(1/δ)."""
    return epsilon <= 8.0 * (-math.log(delta))


BR_NAME = "bounded range: α·ε_BR²/8 per sample (Cesar & Rogers 2021)"
PURE_RDP_NAME = "exact RDP of ε₀-DP (randomized response)"
RDP_METHOD = (
    "per order, k × min(α·ε_BR²/8 [ε_BR-bounded-range ⇒ ε_BR²/8-zCDP, Cesar & Rogers 2021], exact RDP of ε₀-DP "
    "[randomized response dominates, Kairouz–Oh–Viswanath 2015]), composed adaptively; improved conversion "
    "(Balle et al. 2020, Thm. 21) on the order grid, or over real α for the bounded-range part where smaller"
)
PAPER_METHOD = "the paper's privacy statement as printed (advanced composition, Corollary 3.6)"


# -- calibration per accountant ---------------------------------------------------------------------------------------


def paper_row(sched: Schedule, stepsize: float, delta: float) -> AccountantResult:
    """The paper's statement at ``stepsize`` as an accountant row (not applicable outside its regime)."""
    epsilon = paper_epsilon(sched, stepsize, delta)
    if not paper_in_regime(epsilon, delta):
        return AccountantResult.not_applicable("paper", paper_condition(epsilon, delta))
    return AccountantResult(
        "paper",
        True,
        epsilon,
        "the paper's statement (a valid advanced-composition bound)",
        PAPER_METHOD + f"; {sched.paper_rule}",
    )


def paper_calibration_row(sched: Schedule, target: float, delta: float) -> AccountantResult:
    """The paper's largest stepsize for the target (its rule, moved down until its own statement meets the
    target), in its regime."""
    if not paper_in_regime(target, delta):
        return AccountantResult.not_applicable("paper", paper_condition(target, delta))
    eta = shrink(paper_stepsize(sched, target, delta), lambda s: paper_epsilon(sched, s, delta) <= target)
    return replace(paper_row(sched, eta, delta), calibrated_value=eta)


def shrink(stepsize: float, feasible: Callable[[float], bool]) -> float:
    """The largest value ≤ ``stepsize`` (stepping down by relative 1e-12, then geometrically) that is feasible."""
    step = 1e-12
    eta = stepsize
    while eta > 0.0 and not feasible(eta):
        eta = stepsize * (1.0 - step)
        step *= 4.0
        if step >= 1.0:
            return 0.0
    return eta


def paper_condition(epsilon: float, delta: float) -> str:
    return (
        f"Corollary 3.6 needs ε ≤ 8 log(1/δ) = {8.0 * (-math.log(delta)):.6g}; here ε = {epsilon:.6g}, so the "
        "printed statement does not apply"
    )


def paper_calibration(
    sched: Schedule, target: float, delta: float, rows: Mapping[str, AccountantResult]
) -> PaperCalibration:
    """The paper's rule as printed, and what the rigorous accountants certify at the stepsize it prescribes
    (``rows``: the spine's there, tight where it was asked)."""
    eta = paper_stepsize(sched, target, delta)
    rdp, tight = rows["rdp"].epsilon, rows["tight"].epsilon if rows["tight"].applicable else None
    assert rdp is not None  # the rdp accountant reads every plan of this family
    certified = rdp if tight is None else min(rdp, tight)
    by = "rdp" if tight is None or rdp <= tight else "tight"
    condition = target <= 8.0 * (-math.log(delta))
    valid = condition and certified <= target
    e0 = sched.paper_epsilon0_per_stepsize * eta
    note = (
        f"prescribed stepsize η = {eta:.6g} (ε₀ = {e0:.6g} per sample as the paper counts it, "
        f"k = {sched.paper_count}); "
        f"{sched.paper_rule}. Condition ε ≤ 8 log(1/δ) = {8.0 * (-math.log(delta)):.6g}: "
        f"{'holds' if condition else 'fails'}. The paper's rule is conservative (it halves the exact "
        "advanced-composition ε₀ and ignores bounded range)"
    )
    if not valid:
        note += (
            f"; NOT VALID as stated: {'the condition fails' if not condition else ''}"
            f"{' and ' if not condition and certified > target else ''}"
            f"{f'the certified ε {certified:.6g} exceeds the claimed {target:.6g}' if certified > target else ''}"
        )
    source = f"{SOURCE}, {sched.paper_rule.split(':')[0]}"
    return PaperCalibration(source, None, target, certified, by, valid, note)


def zcdp_budget(epsilon: float, delta: float) -> float:
    """A ρ whose curve ρα converts to at most ε at δ: the exact largest one (improved conversion), or, where that
    cannot be evaluated (ρ below ~1e-290), the classic ρ = ε²/(√(log(1/δ) + ε) + √log(1/δ))², which is smaller."""
    try:
        return linear_rdp_for_epsilon(epsilon, delta)
    except (ValueError, OverflowError):
        lg = -math.log(delta)
        return epsilon * epsilon / (math.sqrt(lg + epsilon) + math.sqrt(lg)) ** 2
