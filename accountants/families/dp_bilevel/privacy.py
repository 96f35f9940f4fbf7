"""The run as events for the spine, the paper's own accountant (its chain of lemmas) and its budget splits (Kornowski
2024, proofs of Theorems 4.1/5.1: the printed split with its erratum, and the corrected one)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ...errors import FieldIssue, ParameterError
from ...events import (
    ComposedEvent,
    DpEvent,
    GaussianEvent,
    SampledWithoutReplacementEvent,
    SampledWithReplacementEvent,
    SelfComposedEvent,
)
from ...reports import AccountantResult, Guarantee, PaperCalibration
from .paper import PaperChain, PaperSplit, minimum_batch, paper_chain, safe_split
from .params import SOURCE, BilevelParams

# -- the run as events ---------------------------------------------------------------------------------------------


def plan_event(p: BilevelParams, z: float, z_in: float) -> DpEvent:
    """The run as events: per outer step 2K inner Gaussian steps and one outer release, T times (replace-one); a
    mini-batch release runs on a batch drawn without or with replacement."""
    k = p.inner_total
    if p.mini:
        n = p.dataset_size
        batch = (
            SampledWithoutReplacementEvent if p.batch_sampling == "without-replacement" else SampledWithReplacementEvent
        )
        inner: DpEvent = batch(n, p.inner_batch, GaussianEvent(z_in))
        outer: DpEvent = batch(n, p.outer_batch, GaussianEvent(z))
    else:
        inner, outer = GaussianEvent(z_in), GaussianEvent(z)
    return SelfComposedEvent(ComposedEvent((SelfComposedEvent(inner, 2 * k), outer)), p.steps)


WITH_REPLACEMENT = (
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


def paper_result(p: BilevelParams, chain: PaperChain) -> AccountantResult:
    """The paper's chain as an accountant row, where its lemmas' conditions hold."""
    if chain.valid and math.isfinite(chain.epsilon):
        return AccountantResult(
            "paper", True, chain.epsilon, _paper_guarantee(p), _paper_method(p), kind=_paper_kind(p)
        )
    return AccountantResult.not_applicable("paper", "; ".join(chain.problems) or "ε is not finite")


_TOO_SMALL = (
    "no finite noise meets ε = {target:.3g} at δ = {delta:.3g} (the target is below what floating point resolves)"
)


def paper_multipliers(p: BilevelParams, target: float, d: float) -> tuple[float, float, PaperChain] | None:
    """The corrected split's (z, z_in), moved up (never above the target) until the paper's chain meets it, with the
    chain there; None where the split does not apply or the chain cannot meet the target."""
    corrected = safe_split(p, target, d, "corrected")
    if not corrected.valid or corrected.multipliers is None:
        return None
    fixed = p.inner_noise_multiplier
    z, z_in = corrected.multipliers
    chain = paper_chain(p, z, z_in, d)
    step = 1e-15
    while chain.epsilon > target and step < 1.0:  # rounding: never above the target (geometric search)
        z, z_in = z * (1 + step), z_in if fixed is not None else z_in * (1 + step)
        chain = paper_chain(p, z, z_in, d)
        step *= 2.0
    return (z, z_in, chain) if chain.valid and chain.epsilon <= target else None


def paper_calibration_result(p: BilevelParams, target: float, d: float) -> AccountantResult:
    """The paper's answer to a calibration: the corrected split's noise (:func:`paper_multipliers`), or why it does
    not apply."""
    corrected = safe_split(p, target, d, "corrected")
    found = paper_multipliers(p, target, d)
    if found is None:
        reason = "; ".join(corrected.problems) or _TOO_SMALL.format(target=target, delta=d)
        return AccountantResult.not_applicable("paper", "corrected split: " + reason)
    z, z_in, chain = found
    corrected_note = (
        f"corrected split: ε_it = {corrected.per_iteration:.6g} per outer step (Lemma 2.1 inverted exactly over "
        f"T = {p.steps}), outer release {corrected.outer_budget:.6g}"
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


def inner_notes(given: BilevelParams, chosen: AccountantResult, z_in: float | None) -> list[str]:
    """What a calibration did with the inner noise: kept as given, or set by the paper's split (``z_in``)."""
    if given.inner_noise_multiplier is not None:
        return [
            f"inner_noise_multiplier = {given.inner_noise_multiplier:.6g} was kept fixed: only noise_multiplier "
            "(the outer release) was calibrated, against what the inner solves leave of the budget"
        ]
    if chosen.name == "paper" and z_in is not None:
        return [
            f"the paper's split sets the inner noise too: pass inner_noise_multiplier = {z_in:.6g} with "
            f"noise_multiplier = {chosen.calibrated_value:.6g} to reproduce this calibration"
        ]
    return []


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
    p: BilevelParams,
    target: float,
    d: float,
    printed: PaperSplit,
    corrected: PaperSplit,
    at_printed: Mapping[str, AccountantResult] | None,
) -> PaperCalibration:
    """The printed split as printed, what it really totals by Lemma 2.1, and what the spine's rigorous accountants
    certify for its noise (``at_printed``: their rows there)."""
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
    rigorous = [r for r in (at_printed or {}).values() if r.counts_for_best and r.epsilon is not None]
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
        notes.append(WITH_REPLACEMENT)
    if p.regularization < p.lipschitz_f / p.lipschitz_g:
        notes.append(
            f"λ < L₀^f/L₀^g: the ỹ^λ problem's per-sample bound L₀^f + λL₀^g = {p.lipschitz_lambda:.6g} is used (the "
            "paper's 2λL₀^g needs λ ≥ L₀^f/L₀^g)"
        )
    return notes


def _epsilon_key(result: AccountantResult) -> float:
    return math.inf if result.epsilon is None else result.epsilon
