"""Every accountant of private mirror descent (paper, rdp, tight) at a stepsize, and each one's calibration of the
stepsize (the privacy knob; González, Guzmán & Paquette 2024, Cor. 3.6).

``rdp`` and ``tight`` are the spine's (:mod:`accountants.plan_accounting`) on the family's mechanism plan — k vertex
samples, each ε₀-DP with bounded range (range ratio)·ε₀, adaptively composed under replace-one — so
``/v1/privacy`` and ``/v1/compose`` with an ``algorithm`` node give the same numbers: rdp is the Rényi curve
k·min(exact RDP of ε₀-DP, α·ε_BR²/8) converted on the orders, or its zCDP envelope over real α, or kε₀, whichever is
smallest; tight is the PLD accountant with the samples read as blocks of 64 adaptive steps of the class (exact
Bellman recursion, :mod:`accountants.pld.bounded_range`): the optimal adaptive composition of bounded-range samples
for Algorithms 1 and 3, and of pure ε₀-DP samples (randomised response) for Algorithm 5, whose 2ε₀ range adds
nothing. The paper's statement (Cor. 3.6 as printed) is this module's own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...conversions import Conversion, linear_rdp_for_epsilon
from ...events import BoundedRangeEvent, PureDpEvent, SelfComposedEvent
from ...mechanisms.pure_composition import bounded_range_rdp, pure_dp_rdp
from ...plan_accounting import PlanAccounting, account_plan, calibrate_plan
from ...plans import Knob, MechanismPlan
from ...reports import AccountantResult, PaperCalibration
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
    event = SelfComposedEvent(sample, sched.count) if sched.count else PureDpEvent(0.0)
    return MechanismPlan(event, "replace-one")


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
class Accounting:
    """Every accountant's answer at one stepsize: the spine's (rdp, tight) and the paper's statement."""

    spine: PlanAccounting
    paper: float
    delta: float

    @property
    def rdp(self) -> Conversion:
        """The rdp accountant's conversion (it reads every plan of this family)."""
        assert self.spine.conversion is not None
        return self.spine.conversion

    @property
    def results(self) -> tuple[AccountantResult, AccountantResult]:
        """(rdp, tight) as the spine reports them."""
        by_name = {r.name: r for r in self.spine.results}
        return by_name["rdp"], by_name["tight"]

    @property
    def tight(self) -> float | None:
        """The tight accountant's ε (None where it was not computed or does not apply)."""
        return self.results[1].epsilon if self.results[1].applicable else None

    @property
    def paper_valid(self) -> bool:
        """Whether the paper's statement is in its regime, ε ≤ 8 log(1/δ) (Corollary 3.6)."""
        return self.paper <= 8.0 * (-math.log(self.delta))


def account(
    sched: Schedule, stepsize: float, delta: float, orders: np.ndarray, refine: bool, tight: bool = True
) -> Accounting:
    """Every accountant's answer at ``stepsize``; without ``tight`` the PLD accountant is not run (an rdp request)."""
    spine = account_plan(mechanism_plan(sched, stepsize), delta, "best" if tight else "rdp", orders, refine)
    return Accounting(spine, paper_epsilon(sched, stepsize, delta), delta)


BR_NAME = "bounded range: α·ε_BR²/8 per sample (Cesar & Rogers 2021)"
PURE_RDP_NAME = "exact RDP of ε₀-DP (randomized response)"
RDP_METHOD = (
    "per order, k × min(α·ε_BR²/8 [ε_BR-bounded-range ⇒ ε_BR²/8-zCDP, Cesar & Rogers 2021], exact RDP of ε₀-DP "
    "[randomized response dominates, Kairouz–Oh–Viswanath 2015]), composed adaptively; improved conversion "
    "(Balle et al. 2020, Thm. 21) on the order grid, or over real α for the bounded-range part where smaller"
)
PAPER_METHOD = "the paper's privacy statement as printed (advanced composition, Corollary 3.6)"


# -- calibration per accountant ---------------------------------------------------------------------------------------


def calibrations(
    sched: Schedule, target: float, delta: float, grid: np.ndarray, with_tight: bool = True
) -> list[AccountantResult]:
    """Each accountant's largest stepsize meeting (target, δ): the spine's calibration for rdp and tight (the tight
    one only ``with_tight``), the paper's rule for the paper accountant."""
    out: list[AccountantResult] = []
    if sched.count == 0:
        unconstrained = "no released vertex depends on the data (steps = 1): every stepsize gives ε = 0"
        out.append(AccountantResult.not_applicable("rdp", unconstrained))
        out.append(AccountantResult.not_applicable("tight", unconstrained))
    else:
        out.extend(
            calibrate_plan(
                lambda noise: mechanism_plan(sched, STEPSIZE.from_noise(noise)),
                delta,
                target,
                STEPSIZE,
                "best" if with_tight else "rdp",
                grid,
            )
        )
    limit = 8.0 * (-math.log(delta))
    if target <= limit:
        eta = shrink(paper_stepsize(sched, target, delta), lambda s: paper_epsilon(sched, s, delta) <= target)
        out.append(
            AccountantResult(
                "paper",
                True,
                paper_epsilon(sched, eta, delta),
                "the paper's statement (a valid advanced-composition bound)",
                PAPER_METHOD + f"; {sched.paper_rule}",
                calibrated_value=eta,
            )
        )
    else:
        out.append(AccountantResult.not_applicable("paper", paper_condition(target, delta)))
    return out


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
    sched: Schedule, target: float, delta: float, grid: np.ndarray, with_tight: bool = True
) -> PaperCalibration:
    """The paper's rule as printed, and what the rigorous accountants certify at the stepsize it prescribes (the
    tight one only ``with_tight``)."""
    eta = paper_stepsize(sched, target, delta)
    acc = account(sched, eta, delta, grid, True, with_tight)
    certified = acc.rdp.value if acc.tight is None else min(acc.rdp.value, acc.tight)
    by = "rdp" if acc.tight is None or acc.rdp.value <= acc.tight else "tight"
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


def finite_order(conversion: Conversion) -> float | None:
    return conversion.reported_order


def zcdp_budget(epsilon: float, delta: float) -> float:
    """A ρ whose curve ρα converts to at most ε at δ: the exact largest one (improved conversion), or, where that
    cannot be evaluated (ρ below ~1e-290), the classic ρ = ε²/(√(log(1/δ) + ε) + √log(1/δ))², which is smaller."""
    try:
        return linear_rdp_for_epsilon(epsilon, delta)
    except (ValueError, OverflowError):
        lg = -math.log(delta)
        return epsilon * epsilon / (math.sqrt(lg + epsilon) + math.sqrt(lg)) ** 2
