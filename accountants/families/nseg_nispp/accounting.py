"""Every accountant's answer for the releases of Boob & Guzmán 2023's methods at a noise multiplier, and each one's
calibration."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import gdp
from ... import validation as check
from ...calibration import calibrate_rdp
from ...conversions import epsilon_for_linear_rdp, epsilon_from_rdp, noise_for_linear_rdp, order_grid
from ...errors import ParameterError
from ...family import CalibrationQuery
from ...mechanisms.gaussian import gaussian_noise_multiplier
from ...reports import (
    AccountantResult,
    Accounted,
    Assumption,
    BoundResult,
    Guarantee,
    PaperCalibration,
    RdpCurve,
    choose_accountant,
)
from .releases import MULTI_TIGHT_REASON, SINGLE_RDP_METHOD, TIGHT_METHOD, NoisyReleases, PaperStatement, RdpBound

# -- answers -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Accounting:
    """Every accountant's answer at one noise multiplier, and the chosen one."""

    noise_multiplier: float
    accounted: Accounted
    """Every accountant's answer at the multiplier and the chosen one."""
    bounds: tuple[BoundResult, ...]
    warnings: tuple[str, ...]
    certified: float
    """The best rigorous ε (what the paper's claims are checked against)."""


def account(
    releases: NoisyReleases,
    z: float,
    delta: float,
    paper: PaperStatement,
    accountant: str = "best",
    orders: Sequence[float] | np.ndarray | None = None,
    refine: bool = True,
    calibrated: bool = False,
) -> Accounting:
    """ε at ``delta`` from every accountant for multiplier ``z``; ``accountant`` picks the answer."""
    d = check.delta("delta", delta)
    grid = order_grid(orders)
    tag = z if calibrated else None
    rigorous = (
        _single_pass(z, d, grid, tag) if releases.passes == "single" else _multi_pass(releases, z, d, grid, refine, tag)
    )
    results = list(rigorous.results)
    certified = min(r.epsilon for r in results if r.applicable and r.epsilon is not None)
    claimed = paper.claimed_epsilon(z, d)
    valid = certified <= claimed * (1.0 + 1e-12)
    results.append(
        AccountantResult(
            "paper",
            True,
            claimed,
            _paper_guarantee(paper, valid, certified),
            f"{paper.source}: {paper.formula}",
            noise_multiplier=tag,
            kind=Guarantee.PAPER_VALID if valid else Guarantee.PAPER_AS_PRINTED,
        )
    )
    chosen = choose_accountant(results, accountant)
    warnings = list(_paper_warnings(paper, claimed, certified, valid, d))
    curve = RdpCurve(tuple(grid.tolist()), tuple(float(v) for v in rigorous.curve))
    order = rigorous.optimal_order if chosen.name == "rdp" else None
    return Accounting(
        noise_multiplier=z,
        accounted=Accounted(tuple(results), chosen, d, order, curve),
        bounds=_bound_results(releases.rdp_bounds(z), rigorous),
        warnings=tuple(warnings),
        certified=certified,
    )


@dataclass(frozen=True)
class _Rigorous:
    """The rigorous accountants' answers (rdp, tight), the run's Rényi curve on the grid, and each Rényi bound's
    curve and ε (in the order of :meth:`NoisyReleases.rdp_bounds`)."""

    results: tuple[AccountantResult, ...]
    optimal_order: float | None
    curve: np.ndarray
    bound_curves: list[np.ndarray]
    bound_epsilons: list[float]


def _single_pass(z: float, delta: float, grid: np.ndarray, tag: float | None) -> _Rigorous:
    """One Gaussian release per record: α/(2z²) converted exactly, and the analytic Gaussian."""
    rho = 1.0 / (2.0 * z * z)
    rdp_eps, alpha = epsilon_for_linear_rdp(rho, delta)
    order = alpha if math.isfinite(alpha) else None
    rdp = AccountantResult.certified("rdp", rdp_eps, SINGLE_RDP_METHOD, optimal_order=order, noise_multiplier=tag)
    tight = gdp.exact_result(1.0 / z, delta, TIGHT_METHOD, noise_multiplier=tag)
    curve = rho * grid
    return _Rigorous((rdp, tight), order, curve, [curve], [rdp_eps])


def _multi_pass(
    releases: NoisyReleases, z: float, delta: float, grid: np.ndarray, refine: bool, tag: float | None
) -> _Rigorous:
    """Sampled releases: the smallest of the Rényi bounds, converted; no tight accountant."""
    conversion = epsilon_from_rdp(releases.rdp_curve(z), delta, grid, refine)
    if not math.isfinite(conversion.value):
        raise ParameterError.single("noise_multiplier", "is too small for a finite ε bound at this δ", "a larger value")
    order = conversion.optimal_order
    rdp = AccountantResult.certified(
        "rdp", conversion.value, releases.rdp_method(), optimal_order=order, noise_multiplier=tag
    )
    bounds = releases.rdp_bounds(z)
    return _Rigorous(
        (rdp, AccountantResult.not_applicable("tight", MULTI_TIGHT_REASON)),
        order,
        conversion.rdp,
        [b.curve(grid) for b in bounds],
        [epsilon_from_rdp(b.curve, delta, grid, refine).value for b in bounds],
    )


def _bound_results(bounds: list[RdpBound], rigorous: _Rigorous) -> tuple[BoundResult, ...]:
    """Every Rényi bound considered, whether the rdp accountant uses it, its curve and its ε."""
    return tuple(
        BoundResult(
            name=b.name,
            source=b.source,
            applicable=b.used,
            reason=b.reason,
            conditions=(Assumption("used by the rdp accountant" if b.used else "not used", b.used, b.reason),),
            rdp=tuple(float(v) for v in values),
            epsilon=float(e),
            selected=b.used,
            releases="every release (the whole transcript)",
        )
        for b, values, e in zip(bounds, rigorous.bound_curves, rigorous.bound_epsilons, strict=True)
    )


def calibrate(
    releases: NoisyReleases, paper: PaperStatement, query: CalibrationQuery[Any]
) -> tuple[Accounting, PaperCalibration]:
    """The smallest multiplier meeting the target with the chosen accountant (best: the smallest over the rigorous
    ones), every accountant's own multiplier, and the paper's calibration with what it really certifies."""
    target, d, grid, accountant = query.target_epsilon, query.delta, query.orders, query.accountant
    z_paper = paper.multiplier(target, d)
    per_accountant: dict[str, float] = {}
    if releases.passes == "single":
        per_accountant["tight"] = gaussian_noise_multiplier(target, d)
        per_accountant["rdp"] = noise_for_linear_rdp(0.5, target, d)
    else:
        result = calibrate_rdp(releases.rdp_curve, d, target, orders=grid, initial=z_paper)
        per_accountant["rdp"] = result.noise
    if accountant == "paper":
        z = z_paper
    elif accountant == "best":
        z = min(per_accountant.values())
    elif accountant in per_accountant:
        z = per_accountant[accountant]
    else:
        account(releases, z_paper, d, paper, accountant, grid)  # raises: not applicable, with the reason
        raise AssertionError(accountant)
    answer = account(releases, z, d, paper, accountant, grid, calibrated=True)
    results = tuple(
        _with_multiplier(r, per_accountant.get(r.name, z_paper if r.name == "paper" else None), releases, d, paper)
        for r in answer.accounted.results
    )
    paper_calibration = _paper_calibration(releases, paper, query, z_paper, min(per_accountant.values()))
    warnings = list(answer.warnings)
    if not paper_calibration.valid:
        warnings.append(
            f"the paper's calibration under-noises: at its z = {z_paper:.6g} the rigorous accountants certify only "
            f"ε = {paper_calibration.epsilon_certified:.6g} > {target:g}"
        )
    return (
        Accounting(
            noise_multiplier=z,
            accounted=dataclasses.replace(answer.accounted, results=results),
            bounds=answer.bounds,
            warnings=tuple(dict.fromkeys(warnings)),
            certified=answer.certified,
        ),
        paper_calibration,
    )


def _paper_calibration(
    releases: NoisyReleases, paper: PaperStatement, query: CalibrationQuery[Any], z_paper: float, smallest: float
) -> PaperCalibration:
    """The paper's multiplier for the target and what the rigorous accountants certify for it (``smallest``: the
    smallest multiplier they find meeting the target)."""
    target = query.target_epsilon
    at_paper = account(releases, z_paper, query.delta, paper, "best", query.orders)
    valid = at_paper.certified <= target * (1.0 + 1e-12)
    note = (
        f"the paper prescribes z = {z_paper:.6g} ({paper.formula}); the rigorous accountants certify ε = "
        f"{at_paper.certified:.6g} for it"
        + ("" if valid else f", above the target {target:g}: the paper under-noises here")
        + (f"; the smallest multiplier meeting the target is {smallest:.6g}" if valid else "")
    )
    return PaperCalibration(
        source=paper.source,
        noise_multiplier=z_paper,
        epsilon_claimed=target,
        epsilon_certified=at_paper.certified,
        certified_by=at_paper.accounted.chosen.name if at_paper.accounted.chosen.name != "paper" else "best",
        valid=valid,
        note=note,
    )


def _with_multiplier(
    result: AccountantResult, z: float | None, releases: NoisyReleases, delta: float, paper: PaperStatement
) -> AccountantResult:
    """An accountant's result at its own calibrated multiplier (its ε there, ≤ the target)."""
    if not result.applicable or z is None:
        return result
    if result.name == "tight":  # one Gaussian release per record: exact, with the root's bracket
        return gdp.exact_result(1.0 / z, delta, result.method or "", result.guarantee or "exact", noise_multiplier=z)
    if result.name == "paper":
        epsilon = paper.claimed_epsilon(z, delta)
    elif releases.passes == "single":
        epsilon = epsilon_for_linear_rdp(1.0 / (2.0 * z * z), delta)[0]
    else:
        epsilon = epsilon_from_rdp(releases.rdp_curve(z), delta).value
    return AccountantResult(
        result.name,
        True,
        epsilon,
        result.guarantee,
        result.method,
        optimal_order=result.optimal_order,
        noise_multiplier=z,
    )


def _paper_guarantee(paper: PaperStatement, valid: bool, certified: float) -> str:
    if paper.kind == "gaussian":
        state = "holds (the exact Gaussian profile confirms it)" if valid else "fails (the exact profile exceeds η)"
        return f"the paper's statement, as printed; {state}"
    state = (
        f"confirmed by the rigorous accountants (ε = {certified:.6g})"
        if valid
        else f"NOT confirmed: the rigorous accountants certify only ε = {certified:.6g}"
    )
    return f"the paper's statement, as printed (Theorem 1's constant is not rigorous); {state}"


def _paper_warnings(paper: PaperStatement, claimed: float, certified: float, valid: bool, delta: float) -> list[str]:
    if valid:
        return []
    if paper.kind == "gaussian":
        return [
            f"the paper's Gaussian-mechanism form (Prop. 3, the Dwork–Roth form without the 1.25) claims ε = "
            f"{claimed:.6g}, but the exact profile needs ε = {certified:.6g} at δ = {delta:g}: the form fails for "
            "large ε"
        ]
    return [
        f"the paper's moments-accountant statement (Theorem 1, constant not rigorous) claims ε = {claimed:.6g}; the "
        f"rigorous accountants certify only ε = {certified:.6g} for this noise"
    ]
