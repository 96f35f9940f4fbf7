"""Boob & Guzmán 2023's own privacy statements beside the spine's accountants, and the Rényi bounds an answer shows.

The rigorous accountants are the spine's on the releases' plan (:meth:`.releases.NoisyReleases.plan`). The paper's
statement (Prop. 3 for a single pass; Theorem 1's moments accountant, whose constant is not rigorous, for several) is
a row of its own: its claimed ε at the multiplier, marked valid where the rigorous accountants computed for the
request certify at most that; in a calibration, its multiplier for the target, valid where that multiplier is at
least the smallest one the rigorous accountants find (ε decreases in the multiplier).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...conversions import epsilon_from_rdp
from ...errors import CalibrationError
from ...reports import AccountantResult, Assumption, BoundResult, Guarantee, PaperCalibration
from .releases import NoisyReleases, PaperStatement, RdpBound

RELATIVE_SLACK = 1e-12
"""Rounding allowed when the paper's number is compared with a certified one."""


def certified(rows: Sequence[AccountantResult]) -> AccountantResult | None:
    """The smallest certified answer among the rigorous rows (None where none was computed)."""
    found = [r for r in rows if r.counts_for_best and r.epsilon is not None]
    return min(found, key=lambda r: r.epsilon or 0.0) if found else None


def paper_row(paper: PaperStatement, z: float, delta: float, rows: Sequence[AccountantResult]) -> AccountantResult:
    """The paper's claimed ε at multiplier z, valid where the rigorous ``rows`` certify at most that."""
    claimed = paper.claimed_epsilon(z, delta)
    best = certified(rows)
    valid = best is not None and best.epsilon is not None and best.epsilon <= claimed * (1.0 + RELATIVE_SLACK)
    return AccountantResult(
        "paper",
        True,
        claimed,
        _guarantee(paper, valid, best.epsilon if best is not None else None),
        f"{paper.source}: {paper.formula}",
        kind=Guarantee.PAPER_VALID if valid else Guarantee.PAPER_AS_PRINTED,
    )


def paper_calibration_row(
    paper: PaperStatement, target: float, delta: float, calibrations: Sequence[AccountantResult]
) -> AccountantResult:
    """The paper's multiplier for the target, valid where it is at least the smallest rigorous one (not applicable
    where the paper's multiplier is not a float, e.g. a target near the smallest float)."""
    try:
        z = paper.multiplier(target, delta)
    except CalibrationError as error:
        return AccountantResult.not_applicable("paper", str(error))
    found = [r.calibrated_value for r in calibrations if r.counts_for_best and r.calibrated_value is not None]
    valid = bool(found) and z >= min(found) * (1.0 - RELATIVE_SLACK)
    state = "meets the target by the rigorous accountants" if valid else "does NOT meet the target rigorously"
    return AccountantResult(
        "paper",
        True,
        paper.claimed_epsilon(z, delta),
        f"the paper's calibration, as printed; its multiplier {state}",
        f"{paper.source}: {paper.formula}",
        noise_multiplier=z,
        kind=Guarantee.PAPER_VALID if valid else Guarantee.PAPER_AS_PRINTED,
    )


def paper_warnings(paper: PaperStatement, row: AccountantResult, rows: Sequence[AccountantResult]) -> list[str]:
    """Where the paper's statement claims less than the rigorous accountants certify."""
    best = certified(rows)
    if row.kind is Guarantee.PAPER_VALID or best is None:
        return []
    if paper.kind == "gaussian":
        return [
            f"the paper's Gaussian-mechanism form (Prop. 3, the Dwork–Roth form without the 1.25) claims ε = "
            f"{row.epsilon:.6g}, but the exact profile needs ε = {best.epsilon:.6g}: the form fails for large ε"
        ]
    return [
        f"the paper's moments-accountant statement (Theorem 1, constant not rigorous) claims ε = {row.epsilon:.6g}; "
        f"the rigorous accountants certify only ε = {best.epsilon:.6g} for this noise"
    ]


def paper_calibration(
    paper: PaperStatement, target: float, z_paper: float, at_paper: Sequence[AccountantResult], smallest: float | None
) -> PaperCalibration:
    """The paper's multiplier for the target and what the rigorous accountants certify for it (``at_paper``: their
    rows there; ``smallest``: the smallest multiplier they find meeting the target)."""
    best = certified(at_paper)
    if best is None or best.epsilon is None:
        reason = "no rigorous accountant certifies an ε at the paper's multiplier"
        return PaperCalibration.not_applicable(paper.source, reason, target)
    valid = best.epsilon <= target * (1.0 + RELATIVE_SLACK)
    note = (
        f"the paper prescribes z = {z_paper:.6g} ({paper.formula}); the rigorous accountants certify ε = "
        f"{best.epsilon:.6g} for it"
        + ("" if valid else f", above the target {target:g}: the paper under-noises here")
        + (f"; the smallest multiplier meeting the target is {smallest:.6g}" if valid and smallest else "")
    )
    return PaperCalibration(paper.source, z_paper, target, best.epsilon, best.name, valid, note)


def under_noised(paper: PaperCalibration, target: float) -> list[str]:
    if paper.valid or paper.epsilon_certified is None:
        return []
    return [
        f"the paper's calibration under-noises: at its z = {paper.noise_multiplier:.6g} the rigorous accountants "
        f"certify only ε = {paper.epsilon_certified:.6g} > {target:g}"
    ]


def bound_results(
    releases: NoisyReleases, z: float, delta: float, orders: np.ndarray, refine: bool, rdp: AccountantResult | None
) -> tuple[BoundResult, ...]:
    """Every Rényi bound considered at multiplier z, whether the rdp accountant uses it, its curve and its ε (the
    rdp accountant's own for the bound it uses, ``rdp``, where it answered)."""

    def epsilon(bound: RdpBound) -> float:
        if bound.used and rdp is not None and rdp.epsilon is not None:
            return rdp.epsilon
        return float(epsilon_from_rdp(bound.curve, delta, orders, refine).value)

    return tuple(
        BoundResult(
            name=b.name,
            source=b.source,
            applicable=b.used,
            reason=b.reason,
            conditions=(Assumption("used by the rdp accountant" if b.used else "not used", b.used, b.reason),),
            rdp=tuple(float(v) for v in b.curve(orders)),
            epsilon=epsilon(b),
            selected=b.used,
            releases="every release (the whole transcript)",
        )
        for b in releases.rdp_bounds(z)
    )


def _guarantee(paper: PaperStatement, valid: bool, best: float | None) -> str:
    if paper.kind == "gaussian":
        state = "holds (the exact Gaussian profile confirms it)" if valid else "fails (the exact profile exceeds η)"
        return f"the paper's statement, as printed; {state}"
    state = (
        f"confirmed by the rigorous accountants (ε = {best:.6g})"
        if valid
        else f"NOT confirmed: the rigorous accountants certify only ε = {best:.6g}"
    )
    return f"the paper's statement, as printed (Theorem 1's constant is not rigorous); {state}"
