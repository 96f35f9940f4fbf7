"""Rényi and Gaussian-DP accounting of the run (not in the paper), every accountant's answer and each
one's calibration of the outer multiplier."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ... import gdp
from ...calibration import calibrate_rdp
from ...conversions import DEFAULT_ORDERS, Conversion, epsilon_for_linear_rdp, linear_rdp_for_epsilon
from ...errors import CalibrationError, FieldIssue, ParameterError
from ...events import ComposedEvent, DpEvent, GaussianEvent, SampledWithoutReplacementEvent, SelfComposedEvent
from ...mechanisms.gaussian import gdp_epsilon, gdp_mu_for
from ...rdp import RdpAccountant
from ...reports import AccountantResult, Guarantee, PaperCalibration, RdpCurve, choose_accountant
from .paper import PaperSplit, minimum_batch, paper_chain
from .params import MAX_MULTIPLIER, SOURCE, BilevelParams
from .plan import inner_multiplier
from .text import finite_list, finite_order

# -- Rényi and Gaussian-DP accounting (not in the paper) --------------------------------------------------------------


def rdp_event(p: BilevelParams, z: float, z_in: float) -> DpEvent:
    """The run as events: per outer step 2K inner Gaussian steps and one outer release, T times (replace-one)."""
    k = p.inner_total
    if p.mini:
        n = p.dataset_size
        inner: DpEvent = SampledWithoutReplacementEvent(n, p.inner_batch, GaussianEvent(z_in))
        outer: DpEvent = SampledWithoutReplacementEvent(n, p.outer_batch, GaussianEvent(z))
    else:
        inner, outer = GaussianEvent(z_in), GaussianEvent(z)
    return SelfComposedEvent(ComposedEvent((SelfComposedEvent(inner, 2 * k), outer)), p.steps)


def full_batch_rho(p: BilevelParams, z: float, z_in: float) -> float:
    """ρ of the full-batch run, ε(α) = ρα: T·(2K/z_in² + 1/z²)/2 (Mironov 2017, Prop. 7, composed)."""
    return p.steps * (2.0 * p.inner_total / (z_in * z_in) + 1.0 / (z * z)) / 2.0


_RDP_FULL = (
    "Rényi DP of the T(2K + 1) Gaussian releases, α/(2z²) each, composed (Mironov 2017; not in Kornowski 2024), "
    "converted exactly with the improved conversion (Balle et al. 2020, Thm. 21) over real α"
)
_RDP_MINI = (
    "Rényi DP of the Gaussian on batches drawn without replacement (Wang, Balle & Kasiviswanathan 2019, Thm. 27), "
    "2K inner and 1 outer release per step, composed over T steps; improved conversion (Balle et al. 2020, Thm. 21)"
)
_TIGHT_METHOD = (
    "the T(2K + 1) adaptive Gaussian releases compose exactly to μ-GDP with μ² = T(2K/z_in² + 1/z²) (Dong, Roth & "
    "Su 2019), converted by the analytic Gaussian (Balle & Wang 2018, Thm. 8): exact for this mechanism"
)
_TIGHT_MINI = (
    "dpcal's privacy-loss-distribution accountant covers Poisson sampling under add/remove-one (dp-sgd); "
    "dp-bilevel's batches are drawn without replacement under replace-one, where no tight accountant is "
    "implemented: the rdp bound is certified"
)
_WITH_REPLACEMENT = (
    "batches drawn with replacement have no certified accountant in dpcal: a record may be drawn up to b times, so "
    "the Rényi curve has a heavy tail (all b draws hitting the record shift the batch mean by its whole contribution), "
    "and Lemma 2.3's δ = δ₀ ignores repeated draws; use sampling='without-replacement' (same "
    "utility guarantees up to constants, Remark 5.2) or accountant='paper' for the paper's own statement"
)
_PAPER_CERTIFIED = "certified upper bound (the paper's lemmas, conditions checked)"
_PAPER_LITERAL = "the paper's statement (Lemma 2.3 as printed, whose δ ignores repeated draws; not certified)"


def _paper_method(p: BilevelParams) -> str:
    amplification = ""
    if p.mini:
        amplification = (
            ", amplification by sampling without replacement ln(1 + (b/n)(e^ε̃ − 1)), δ = (b/n)δ̃ (Balle, Barthe & "
            "Gaboardi 2018)"
            if p.batch_sampling == "without-replacement"
            else ", Lemma 2.3 amplification ln(1 + (1 − (1 − 1/n)^b)(e^ε̃ − 1)) with δ = δ₀ (as printed)"
        )
    return (
        "the paper's chain (proofs of Theorems 4.1/5.1): Lemma 2.2 (classic Gaussian) for every release"
        + amplification
        + ", Lemma 2.1 over the K inner steps of each solve, basic composition of the 3 mechanisms of an outer step, "
        "Lemma 2.1 over the T outer steps; δ split δ/(T+1), /3, /(K+1)"
    )


def _paper_guarantee(p: BilevelParams) -> str:
    return _PAPER_LITERAL if _paper_as_printed(p) else _PAPER_CERTIFIED


def _paper_kind(p: BilevelParams) -> Guarantee:
    return Guarantee.PAPER_AS_PRINTED if _paper_as_printed(p) else Guarantee.PAPER_VALID


def _paper_as_printed(p: BilevelParams) -> bool:
    """Lemma 2.3's chain for batches drawn with replacement is not certified: its δ = δ₀ ignores that a record can be
    drawn several times."""
    return p.mini and p.batch_sampling == "with-replacement"


def privacy_results(
    p: BilevelParams, z: float, z_in: float, d: float, grid: np.ndarray, refine: bool
) -> tuple[list[AccountantResult], RdpCurve | None, Conversion | None]:
    results: list[AccountantResult] = []
    curve: RdpCurve | None = None
    conversion: Conversion | None = None
    with_replacement = p.mini and p.batch_sampling == "with-replacement"
    if p.mini:
        results.append(AccountantResult.not_applicable("tight", _WITH_REPLACEMENT if with_replacement else _TIGHT_MINI))
    else:
        mu = math.sqrt(2.0 * full_batch_rho(p, z, z_in))
        results.append(gdp.exact_result(mu, d, _TIGHT_METHOD))
    if with_replacement:
        results.append(AccountantResult.not_applicable("rdp", _WITH_REPLACEMENT))
    elif p.mini:
        conversion = RdpAccountant("replace-one").epsilon(rdp_event(p, z, z_in), d, grid, refine)
        results.append(
            AccountantResult.certified("rdp", conversion.value, _RDP_MINI, optimal_order=conversion.optimal_order)
        )
        curve = RdpCurve(
            tuple(float(a) for a in conversion.orders),
            tuple(float(e) if math.isfinite(e) else None for e in conversion.rdp),
        )
    else:
        rho = full_batch_rho(p, z, z_in)
        epsilon, alpha = epsilon_for_linear_rdp(rho, d)
        results.append(AccountantResult.certified("rdp", epsilon, _RDP_FULL, optimal_order=finite_order(alpha)))
        curve = RdpCurve(tuple(grid.tolist()), tuple(finite_list(rho * grid)))
    chain = paper_chain(p, z, z_in, d)
    if chain.valid and math.isfinite(chain.epsilon):
        results.append(
            AccountantResult("paper", True, chain.epsilon, _paper_guarantee(p), _paper_method(p), kind=_paper_kind(p))
        )
    else:
        results.append(AccountantResult.not_applicable("paper", "; ".join(chain.problems) or "ε is not finite"))
    return results, curve, conversion


def choose_calibration(results: list[AccountantResult], accountant: str) -> AccountantResult:
    """``best``: the least outer noise among the accountants that keep the family's inner rule (rdp, tight); the paper's
    split, which sets its own inner noise, only when neither applies."""
    if accountant != "best":
        return choose_accountant(results, accountant, key="noise_multiplier")
    usable = [r for r in results if r.counts_for_best and r.name != "paper"]
    if not usable:
        return choose_accountant(results, "best", key="noise_multiplier")
    return min(usable, key=_noise_key)


def calibration_results(
    p: BilevelParams, target: float, d: float, grid: np.ndarray, corrected: PaperSplit
) -> list[AccountantResult]:
    """Each accountant's smallest outer multiplier z (inner rule z_in = z√K, or the given z_in kept) meeting the target;
    the paper's is the corrected split's."""
    if p.mini and p.batch_sampling == "with-replacement":
        results = [AccountantResult.not_applicable(name, _WITH_REPLACEMENT) for name in ("tight", "rdp")]
    elif p.mini:
        rdp = _mini_batch_rdp(p, target, d, grid, corrected)
        results = [AccountantResult.not_applicable("tight", _TIGHT_MINI), rdp]
    else:
        results = [_full_batch(p, name, target, d) for name in ("tight", "rdp")]
    return [*results, _paper_calibration_result(p, target, d, corrected)]


def _mini_batch_rdp(
    p: BilevelParams, target: float, d: float, grid: np.ndarray, corrected: PaperSplit
) -> AccountantResult:
    """The rdp calibration of the mini-batch tree (replace-one), started from the corrected split's multiplier."""
    accountant = RdpAccountant("replace-one")
    try:
        found = calibrate_rdp(
            lambda z: accountant.curve(rdp_event(p, z, inner_multiplier(p, z))),
            d,
            target,
            orders=grid,
            initial=min(max(corrected.noise_multiplier or 1.0, 1e-4), 1e8),
        )
    except CalibrationError as error:
        return AccountantResult.not_applicable("rdp", str(error))
    except ArithmeticError:
        return AccountantResult.not_applicable("rdp", _TOO_SMALL.format(target=target, delta=d))
    return AccountantResult.certified(
        "rdp",
        found.conversion.value,
        _RDP_MINI,
        optimal_order=found.conversion.optimal_order,
        noise_multiplier=found.noise,
    )


def _full_batch(p: BilevelParams, name: str, target: float, d: float) -> AccountantResult:
    """The full-batch tree is ρ-zCDP: ``tight`` (Gaussian DP, μ² = 2ρ) or ``rdp`` (ρ's linear curve) inverted."""

    def rho(z: float) -> float:
        return full_batch_rho(p, z, inner_multiplier(p, z))

    try:
        if name == "tight":
            mu = gdp_mu_for(target, d)
            return _solve_full_batch(p, mu * mu, name, target, d, lambda z: gdp_epsilon(math.sqrt(2.0 * rho(z)), d))
        scale = 2.0 * linear_rdp_for_epsilon(target, d)
        return _solve_full_batch(p, scale, name, target, d, lambda z: epsilon_for_linear_rdp(rho(z), d)[0])
    except (ArithmeticError, ValueError):
        return AccountantResult.not_applicable(name, _TOO_SMALL.format(target=target, delta=d))


def _solve_full_batch(
    p: BilevelParams, scale: float, name: str, target: float, d: float, epsilon_of: Callable[[float], float]
) -> AccountantResult:
    """z from ``scale``, the Gaussian-DP μ² (tight) or 2ρ (rdp) the target allows: μ² = T(2K/z_in² + 1/z²), which is
    3T/z² under the rule z_in = z√K; then a geometric search up where rounding (or cancellation with a fixed inner
    noise) leaves ε above the target."""
    fixed, k, t = p.inner_noise_multiplier, p.inner_total, p.steps
    inverse_square = scale / (3.0 * t) if fixed is None else scale / t - 2.0 * k / (fixed * fixed)
    if not inverse_square > 0.0:
        return AccountantResult.not_applicable(name, _inner_exhausts(fixed))
    z = 1.0 / math.sqrt(inverse_square)
    step = 1e-16
    while epsilon_of(z) > target:
        z *= 1.0 + step
        step *= 2.0
        if z > MAX_MULTIPLIER:
            reason = _inner_exhausts(fixed) if fixed is not None else _TOO_SMALL.format(target=target, delta=d)
            return AccountantResult.not_applicable(name, reason)
    rho = full_batch_rho(p, z, inner_multiplier(p, z))
    if name == "tight":
        return gdp.exact_result(math.sqrt(2.0 * rho), d, _TIGHT_METHOD, noise_multiplier=z)
    order = finite_order(epsilon_for_linear_rdp(rho, d)[1])
    return AccountantResult.certified(name, epsilon_of(z), _RDP_FULL, optimal_order=order, noise_multiplier=z)


_TOO_SMALL = (
    "no finite noise meets ε = {target:.3g} at δ = {delta:.3g} (the target is below what floating point resolves)"
)


def _paper_calibration_result(p: BilevelParams, target: float, d: float, corrected: PaperSplit) -> AccountantResult:
    """The paper's answer to a calibration: the corrected split's noise, moved up (never above the target) until the
    paper's chain meets it, or why it does not apply."""
    fixed = p.inner_noise_multiplier
    t = p.steps
    multipliers = corrected.multipliers
    if corrected.valid and multipliers is not None:
        z, z_in = multipliers
        chain = paper_chain(p, z, z_in, d)
        step = 1e-15
        while chain.epsilon > target and step < 1.0:  # rounding: never above the target (geometric search)
            z, z_in = z * (1 + step), z_in if fixed is not None else z_in * (1 + step)
            chain = paper_chain(p, z, z_in, d)
            step *= 2.0
    if corrected.valid and chain.valid and chain.epsilon <= target:
        corrected_note = (
            f"corrected split: ε_it = {corrected.per_iteration:.6g} per outer step (Lemma 2.1 inverted exactly over "
            f"T = {t}), outer release {corrected.outer_budget:.6g}"
            + (f", each inner solve {corrected.inner_budget:.6g}" if corrected.inner_budget is not None else "")
            + f"; inner_noise_multiplier = {z_in:.6g}"
        )
        return AccountantResult(
            "paper",
            True,
            chain.epsilon,
            _paper_guarantee(p),
            _paper_method(p) + "; " + corrected_note,
            noise_multiplier=z,
            kind=_paper_kind(p),
        )
    else:
        reason = "; ".join(corrected.problems) or _TOO_SMALL.format(target=target, delta=d)
        return AccountantResult.not_applicable("paper", "corrected split: " + reason)


def _inner_exhausts(fixed: float | None) -> str:
    return (
        f"the inner solves alone, with the given inner_noise_multiplier = {fixed:.6g}, already exceed the target: "
        "no outer noise can meet it (raise inner_noise_multiplier or omit it)"
    )


def refuse_small_batches(p: BilevelParams, corrected: PaperSplit) -> None:
    """Refuse batches below what the paper's mini-batch argument needs at this target: Lemma 2.2 is
    applied to the unamplified batch, so ε̃ = ln(1 + (e^{ε_b} − 1)/q) < 1 with ε_b the release's share of the budget."""
    if not p.mini or not corrected.per_iteration < 1.0:
        return
    issues = []
    n = p.dataset_size
    checks = [("batch_size_outer", p.outer_batch, corrected.outer_budget, "outer release")]
    if corrected.inner_step is not None:
        checks.append(("batch_size_inner", p.inner_batch, corrected.inner_step, "inner gradient step"))
    for name, size, budget, what in checks:
        if budget <= 0.0:
            continue
        smallest = minimum_batch(p, budget)
        if size < smallest:
            allowed = f"an integer in [{smallest}, {n}]" if smallest <= n else "none at this target: use full-batch"
            issues.append(
                FieldIssue(
                    (name,),
                    f"is too small for the mini-batch privacy argument (proofs of Theorems 5.1/A.1): Lemma 2.2 must "
                    f"hold on the unamplified batch, ε̃ = ln(1 + (e^ε₁ − 1)/q) < 1, where ε₁ = {budget:.6g} is the "
                    f"{what}'s share of the target under the corrected split; the minimum is {smallest}",
                    allowed,
                    size,
                )
            )
    if issues:
        raise ParameterError(issues)


def paper_calibration(
    p: BilevelParams, target: float, d: float, printed: PaperSplit, corrected: PaperSplit
) -> PaperCalibration:
    """The printed split as printed, what it really totals by Lemma 2.1, and what our rigorous accountant certifies."""
    source = (
        f"{SOURCE}, proofs of Theorems 4.1/5.1: (ε/√(18T), δ/(3(T+1))) per mechanism, 3 mechanisms per outer step "
        "(printed split)"
    )
    multipliers = printed.multipliers
    if multipliers is None:
        return PaperCalibration.not_applicable(source, "; ".join(printed.problems), target)
    z, z_in = multipliers
    chain = paper_chain(p, z, z_in, d)
    certified, by = None, None
    if not (p.mini and p.batch_sampling == "with-replacement"):
        results, _, _ = privacy_results(p, z, z_in, d, DEFAULT_ORDERS, True)
        rigorous = [r for r in results if r.applicable and r.name != "paper"]
        if rigorous:
            best = min(rigorous, key=_epsilon_key)
            certified, by = best.epsilon, best.name
    note = (
        f"per mechanism ε₁ = ε/√(18T) = {printed.outer_budget:.6g}, δ₁ = δ/(3(T+1)); noise_multiplier = {z:.6g}, "
        f"inner_noise_multiplier = {z_in:.6g} (Lemma 2.2 exactly, Lemma 2.1 inverted over K = {p.inner_total} inner "
        f"steps). By the paper's own Lemma 2.1 these {p.steps} outer steps total ε√(ln((T+1)/δ)) + ε² = "
        f"{chain.epsilon:.6g}, not {target:g} (an erratum in the paper's split)"
    )
    if corrected.valid:
        note += (
            f"; the corrected split (ε_it = {corrected.per_iteration:.6g}, outer {corrected.outer_budget:.6g}) needs "
            f"noise_multiplier = {corrected.noise_multiplier:.6g}, inner_noise_multiplier = "
            f"{corrected.inner_noise_multiplier:.6g}"
        )
    if printed.problems:
        note += "; the printed split also breaks the lemmas' conditions: " + "; ".join(printed.problems)
    valid = certified is not None and certified <= target and not printed.problems
    return PaperCalibration(source, z, target, certified, by, valid, note)


def split_warnings(
    p: BilevelParams, target: float, d: float, printed: PaperSplit, corrected: PaperSplit, paper: PaperCalibration
) -> list[str]:
    notes = []
    if printed.multipliers is not None:
        total = paper_chain(p, *printed.multipliers, d).epsilon
        notes.append(
            f"erratum: the printed split ε/√(18T) per mechanism really totals "
            f"ε√(ln((T+1)/δ)) + ε² = {total:.6g} by Lemma 2.1, not ε = {target:g}"
            + (
                f"; the corrected split ε_it = {corrected.per_iteration:.6g} per outer step (outer release "
                f"{corrected.outer_budget:.6g}) inverts Lemma 2.1 exactly"
                if corrected.valid
                else ""
            )
        )
    if paper.epsilon_certified is not None and paper.epsilon_certified > target:
        notes.append(
            f"the paper's printed calibration under-noises: {paper.certified_by} certifies ε = "
            f"{paper.epsilon_certified:.6g} > {target:g} for its noise"
        )
    return notes


def stated_notes(p: BilevelParams) -> list[str]:
    notes = [
        f"the outer sensitivity 2G/n assumes per-sample penalty hypergradients clipped at G = {p.clip:.6g}: Lemma 4.5 "
        "bounds them only at the exact y*(x), y^λ(x), not at the private ỹ's"
    ]
    if p.mini and p.batch_sampling == "with-replacement":
        notes.append(_WITH_REPLACEMENT)
    if p.regularization < p.lipschitz_f / p.lipschitz_g:
        notes.append(
            f"λ < L₀^f/L₀^g: the ỹ^λ problem's per-sample bound L₀^f + λL₀^g = {p.lipschitz_lambda:.6g} is used (the "
            "paper's 2λL₀^g needs λ ≥ L₀^f/L₀^g)"
        )
    return notes


def _noise_key(result: AccountantResult) -> float:
    return math.inf if result.noise_multiplier is None else result.noise_multiplier


def _epsilon_key(result: AccountantResult) -> float:
    return math.inf if result.epsilon is None else result.epsilon
