"""Every accountant of private mirror descent (paper, rdp, tight) at a stepsize, and each one's calibration of the
stepsize (the privacy knob; seed 001 Cor. 3.6; spec §5)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...calibration import calibrate_rdp
from ...conversions import Conversion, epsilon_for_linear_rdp, epsilon_from_rdp, linear_rdp_for_epsilon
from ...errors import CalibrationError, ParameterError
from ...mechanisms.bounded_range_composition import BoundedRangeComposition
from ...mechanisms.pure_composition import (
    MAX_COMPOSITIONS,
    bounded_range_rdp,
    kov_epsilon,
    kov_max_epsilon0,
    pure_dp_rdp,
)
from ...reports import NOT_ASKED_REASON, AccountantResult, PaperCalibration
from .params import SOURCE
from .plan import Schedule

# -- the accountants --------------------------------------------------------------------------------------------------


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
    return tuple(_BR_NAME if b <= q else _PURE_RDP_NAME for b, q in zip(br, pure, strict=True))


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
    """Every accountant's answer at one stepsize."""

    rdp: Conversion
    kov: float | None
    tight_reason: str | None
    """Why KOV's optimal composition of pure ε₀-DP samples has no value (None: it has one)."""
    bounded_range: float | None
    bounded_range_reason: str | None
    paper: float
    delta: float

    @property
    def tight(self) -> float | None:
        """The smaller of the two optimal compositions that were computed (None where neither was)."""
        known = [v for v in (self.kov, self.bounded_range) if v is not None]
        return min(known) if known else None

    @property
    def paper_valid(self) -> bool:
        """Whether the paper's statement is in its regime, ε ≤ 8 log(1/δ) (Corollary 3.6)."""
        return self.paper <= 8.0 * (-math.log(self.delta))


def account(
    sched: Schedule, stepsize: float, delta: float, orders: np.ndarray, refine: bool, tight: bool = True
) -> Accounting:
    """Every accountant's answer at ``stepsize``; without ``tight`` the optimal compositions (the heavy part: a
    Bellman recursion composed by FFT) are not computed."""
    e0 = sched.epsilon0(stepsize)
    conversion = rdp_conversion(sched, stepsize, delta, orders, refine)
    kov, reason = None, None
    if not tight:
        reason = NOT_ASKED_REASON
    elif sched.count == 0:
        kov = 0.0
    elif sched.count > MAX_COMPOSITIONS:
        reason = _tight_too_many(sched.count)
    else:
        kov = kov_epsilon(sched.count, e0, delta)
    br, br_reason = bounded_range_optimum(sched, stepsize, delta) if tight else (None, NOT_ASKED_REASON)
    return Accounting(conversion, kov, reason, br, br_reason, paper_epsilon(sched, stepsize, delta), delta)


@functools.lru_cache(maxsize=256)
def _bounded_range_epsilon(width: float, count: int, delta: float) -> float:
    """ε of the composition (cached: calibration revisits its last feasible stepsize, and only floats are kept,
    not the PLDs of up to 2^20 points); ParameterError on ``delta`` where it is not certified."""
    return BoundedRangeComposition.build(width, count).epsilon(delta)


def bounded_range_optimum(sched: Schedule, stepsize: float, delta: float) -> tuple[float | None, str | None]:
    """ε of the optimal adaptive composition of k ε₀-BR samples (numerical, pessimistic), or why it is not used."""
    if sched.range_ratio != 1.0:
        return None, (
            "not used: these samples are ε₀-DP with bounded range 2ε₀ (Algorithm 5's mixture), which adds nothing to "
            "pure ε₀-DP, so the optimal pure-DP composition is already optimal for them"
        )
    if sched.count == 0:
        return 0.0, None
    if sched.count > MAX_COMPOSITIONS:
        return None, _tight_too_many(sched.count)
    try:
        return _bounded_range_epsilon(sched.epsilon0(stepsize), sched.count, delta), None
    except ParameterError as exc:
        return None, f"not certified here: {exc.issues[0].field} {exc.issues[0].message}"


def rdp_conversion(sched: Schedule, stepsize: float, delta: float, orders: np.ndarray, refine: bool) -> Conversion:
    """ε of the rdp accountant: the curve converted on the order grid, or, where smaller, its bounded-range part
    k·α·ε_BR²/8 converted exactly over real α (no grid edge: tiny ρ have optimal orders beyond any grid)."""
    if sched.count == 0:
        return Conversion(0.0, float(orders[0]), orders, np.zeros_like(orders))
    conversion = epsilon_from_rdp(rdp_curve(sched, stepsize), delta, orders, refine)
    rho = sched.count * (sched.range_ratio * sched.epsilon0(stepsize)) ** 2 / 8.0
    exact, alpha = _linear_epsilon(rho, delta)
    if exact < conversion.value:
        return Conversion(exact, alpha, conversion.orders, conversion.rdp)
    return conversion


def _tight_too_many(count: int) -> str:
    return (
        f"k = {count} compositions exceed {MAX_COMPOSITIONS:.0e}, the largest for which the optimal composition is "
        "evaluated with a certified error (the rdp bound applies)"
    )


_BR_NAME = "bounded range: α·ε_BR²/8 per sample (Cesar & Rogers 2021)"
_PURE_RDP_NAME = "exact RDP of ε₀-DP (randomized response)"
_RDP_METHOD = (
    "per order, k × min(α·ε_BR²/8 [ε_BR-bounded-range ⇒ ε_BR²/8-zCDP, Cesar & Rogers 2021], exact RDP of ε₀-DP "
    "[randomized response dominates, Kairouz–Oh–Viswanath 2015]), composed adaptively; improved conversion "
    "(Balle et al. 2020, Thm. 21) on the order grid, or over real α for the bounded-range part where smaller"
)
_TIGHT_METHOD = (
    "the smaller of (a) the optimal adaptive composition of k ε₀-bounded-range mechanisms, numerical and "
    "pessimistic (exact Bellman recursion over generalised randomised responses, lattice ε₀/8 with chords, blocks "
    "of 64 samples composed by FFT with bounded rounding; Algorithms 1 and 3 only) and (b) the optimal composition "
    "of k ε₀-DP mechanisms (Kairouz, Oh & Viswanath 2015, Thm. 3.3, in log space with certified tail and rounding "
    "margins); both valid adaptively"
)
_BR_OPTIMUM_NAME = "Optimal adaptive composition of ε₀-bounded-range mechanisms (numerical, pessimistic)"
_PAPER_METHOD = "the paper's privacy statement as printed (advanced composition, Corollary 3.6)"


# -- calibration per accountant ---------------------------------------------------------------------------------------


def _calibrations(
    sched: Schedule, target: float, delta: float, grid: np.ndarray, with_tight: bool = True
) -> list[AccountantResult]:
    """Each accountant's largest stepsize meeting (target, δ), checked one-sided at the stepsize returned; the
    tight one only ``with_tight``."""
    out: list[AccountantResult] = []
    unconstrained = "no released vertex depends on the data (steps = 1): every stepsize gives ε = 0"
    # rdp: the curve is k·min(pure, α ε_BR²/8); the bounded-range part alone gives ε₀ in closed form, and the minimum
    # can only allow more. Calibrate in units of that closed form (σ = ε₀_BR/ε₀, so ε decreases in σ).
    if sched.count == 0:
        out.append(AccountantResult.not_applicable("rdp", unconstrained))
        out.append(AccountantResult.not_applicable("tight", unconstrained))
    else:
        rho = _zcdp_budget(target, delta)
        reference = math.sqrt(8.0 * rho / sched.count) / sched.range_ratio

        def curve_of(sigma: float) -> Callable[[np.ndarray], np.ndarray]:
            return rdp_curve(sched, sched.stepsize_for(reference / sigma))

        try:
            found = calibrate_rdp(curve_of, delta, target, orders=grid, refine=True, parameter="ε₀-scale")
            on_grid = sched.stepsize_for(reference / found.noise)
        except CalibrationError:  # the grid cannot reach the optimal order (tiny ρ): the exact part below can
            on_grid = 0.0
        # the bounded-range part alone, converted exactly over real α, allows ε₀ = reference: keep the larger
        candidate = max(on_grid, sched.stepsize_for(reference))
        eta = _shrink(candidate, lambda s: rdp_conversion(sched, s, delta, grid, True).value <= target)
        conversion = rdp_conversion(sched, eta, delta, grid, True)
        out.append(
            AccountantResult.certified(
                "rdp", conversion.value, _RDP_METHOD, optimal_order=_order(conversion), calibrated_value=eta
            )
        )
        if not with_tight:
            out.append(AccountantResult.not_applicable("tight", NOT_ASKED_REASON))
        elif sched.count > MAX_COMPOSITIONS:
            out.append(AccountantResult.not_applicable("tight", _tight_too_many(sched.count)))
        else:
            # (b) solve a hair below the target, then check what privacy() reports (the bisected ε, an upper bound)
            e0 = kov_max_epsilon0(sched.count, target * (1.0 - 1e-9), delta)
            eta = _shrink(
                sched.stepsize_for(e0), lambda s: kov_epsilon(sched.count, sched.epsilon0(s), delta) <= target
            )
            # (a) allows more wherever it applies; tight is the smaller of the two, so the larger stepsize counts
            start = max(e0, sched.epsilon0(out[0].calibrated_value or 0.0))  # rdp's answer is nearly feasible here
            eta = max(eta, _bounded_range_stepsize(sched, target, delta, start, e0))
            acc = account(sched, eta, delta, grid, True)
            assert acc.tight is not None  # the stepsize was found by a computed optimal composition
            out.append(AccountantResult.certified("tight", acc.tight, _tight_method(acc), calibrated_value=eta))
    limit = 8.0 * (-math.log(delta))
    if target <= limit:
        eta = _shrink(paper_stepsize(sched, target, delta), lambda s: paper_epsilon(sched, s, delta) <= target)
        out.append(
            AccountantResult(
                "paper",
                True,
                paper_epsilon(sched, eta, delta),
                "the paper's statement (a valid advanced-composition bound)",
                _PAPER_METHOD + f"; {sched.paper_rule}",
                calibrated_value=eta,
            )
        )
    else:
        out.append(AccountantResult.not_applicable("paper", _paper_condition(target, delta)))
    for r in out:
        if r.applicable and not (r.calibrated_value and math.isfinite(r.calibrated_value) and r.calibrated_value > 0):
            raise CalibrationError(
                f"target_epsilon={target:g} at δ={delta:g} needs a stepsize outside the floating-point range "
                f"({r.name} accountant): choose a less extreme target"
            )
    return out


def _bounded_range_stepsize(sched: Schedule, target: float, delta: float, start: float, kov_epsilon0: float) -> float:
    """Largest stepsize (relative 5e-7, or ε within 2e-7 of the target; rounded down) whose optimal bounded-range
    composition meets the target; 0 where it does not apply. Bracket: the bounded-range optimum at ε₀ is at most
    KOV's at ε₀ (a smaller class) and at least KOV's at ε₀/2 (randomised response with ε₀/2 is ε₀-bounded-range),
    so with ε₀* the largest ε₀ KOV allows, the answer lies in [ε₀*, 2ε₀*]; the search starts at ``start`` (rdp's
    ε₀, usually just below)."""

    def epsilon_at(e0: float) -> float:
        value, _ = bounded_range_optimum(sched, sched.stepsize_for(e0), delta)
        return math.inf if value is None else value

    if sched.range_ratio != 1.0 or not kov_epsilon0 > 0.0:
        return 0.0
    lo, hi = min(start, 2.0 * kov_epsilon0), 2.0 * kov_epsilon0 * (1.0 + 1e-9)
    value = epsilon_at(lo)
    tries = 0
    while value > target:  # the discretisation can cost a little more than KOV at tiny counts
        lo, tries = lo / 1.05, tries + 1
        if tries > 4:
            return 0.0
        value = epsilon_at(lo)
    # ε grows about linearly in ε₀: proportional steps from below, then false position (a hair below the
    # interpolated root) inside the bracket, and bisection only if that stalls
    hi_value = math.inf
    for _ in range(24):
        if hi / lo <= 1.0 + 5e-7 or (target - value) <= 2e-7 * target:
            break
        if math.isfinite(hi_value) and hi_value > value:
            guess = lo + (hi - lo) * (target - value) / (hi_value - value) * (1.0 - 1e-7)
        else:
            guess = lo * (target / value) * (1.0 - 1e-4) if value > 0.0 else math.sqrt(lo * hi)
        guess = min(max(guess, lo * (1.0 + 2e-7)), hi / (1.0 + 2e-7))
        guess_value = epsilon_at(guess)
        if guess_value <= target:
            lo, value = guess, guess_value
        else:
            hi, hi_value = guess, guess_value
    return sched.stepsize_for(lo)


def _shrink(stepsize: float, feasible: Callable[[float], bool]) -> float:
    """The largest value ≤ ``stepsize`` (stepping down by relative 1e-12, then geometrically) that is feasible."""
    step = 1e-12
    eta = stepsize
    while eta > 0.0 and not feasible(eta):
        eta = stepsize * (1.0 - step)
        step *= 4.0
        if step >= 1.0:
            return 0.0
    return eta


def _paper_condition(epsilon: float, delta: float) -> str:
    return (
        f"Corollary 3.6 needs ε ≤ 8 log(1/δ) = {8.0 * (-math.log(delta)):.6g}; here ε = {epsilon:.6g}, so the "
        "printed statement does not apply"
    )


def _paper_calibration(
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


def _order(conversion: Conversion) -> float | None:
    return conversion.optimal_order if conversion.value > 0.0 and math.isfinite(conversion.optimal_order) else None


def _tight_method(acc: Accounting) -> str:
    by = "(a), bounded range" if acc.bounded_range is not None and acc.tight == acc.bounded_range else "(b), pure DP"
    note = "" if acc.bounded_range_reason is None else f"; (a) {acc.bounded_range_reason}"
    return f"{_TIGHT_METHOD}; answered by {by}{note}"


def _linear_epsilon(rho: float, delta: float) -> tuple[float, float]:
    """(ε, α*) of the curve ρα at δ: the exact conversion over real α (the grid one where the exact one cannot
    evaluate ρ, below ~1e-290)."""
    if not rho > 0.0:
        return 0.0, math.inf
    try:
        return epsilon_for_linear_rdp(rho, delta)
    except (ValueError, OverflowError):
        conversion = epsilon_from_rdp(lambda a: rho * np.asarray(a, dtype=float), delta)
        return conversion.value, conversion.optimal_order


def _zcdp_budget(epsilon: float, delta: float) -> float:
    """A ρ whose curve ρα converts to at most ε at δ: the exact largest one (improved conversion), or, where that
    cannot be evaluated (ρ below ~1e-290), the classic ρ = ε²/(√(log(1/δ) + ε) + √log(1/δ))², which is smaller."""
    try:
        return linear_rdp_for_epsilon(epsilon, delta)
    except (ValueError, OverflowError):
        lg = -math.log(delta)
        return epsilon * epsilon / (math.sqrt(lg + epsilon) + math.sqrt(lg)) ** 2
