"""How the matrix-factorisation mechanism's answers are worded: the noise in both units, the conventions, the
sensitivity and the route an accountant reads."""

from __future__ import annotations

from dataclasses import replace

from ...params import resolve_noise_multiplier
from ...reports import Conventions, Noise
from .params import DpMfParams
from .privacy import Release, Route

PARTICIPATION_TEXT = {
    "poisson": "poisson: every step samples each record independently with q = batch_size/dataset_size",
    "single-epoch": "single-epoch: each record is in one batch of one pass (no amplification claimed)",
    "cyclic": "cyclic: fixed batches in a fixed order, a record in at most k steps at least b apart (no "
    "amplification claimed)",
    "cyclic-poisson": "cyclic-poisson: the records split into b groups (b = C's bands), step t samples group t mod b "
    "with q = batch_size·b/dataset_size",
    "balls-in-bins": "balls-in-bins: each record in one uniformly random batch of each epoch of ⌊n/B⌋ steps",
}
RELATION_FACTOR = {"zero-out": 1.0, "add-remove": 1.0, "replace-one": 2.0}


def relation_scale(p: DpMfParams) -> float:
    """What multiplies Δ (C's sensitivity for unit gradients): clip_norm, doubled under replace-one."""
    return p.clip_norm * RELATION_FACTOR[p.neighbouring]


def relation_sensitivity(p: DpMfParams, release: Release) -> float:
    """The L2 sensitivity the multiplier is relative to: clip_norm·Δ, doubled under replace-one."""
    return relation_scale(p) * release.sensitivity.value


def noise_multiplier(p: DpMfParams, release: Release) -> float:
    return resolve_noise_multiplier(p.noise_multiplier, p.noise_std, relation_sensitivity(p, release))


def sensitivity_rule(p: DpMfParams, release: Release) -> str:
    s = release.sensitivity
    steps = ", ".join(map(str, s.witness[:12])) + (", …" if len(s.witness) > 12 else "") or "0, b, 2b, …"
    one = release.route in (Route.AMPLIFIED_BANDED, Route.SPECTRAL, Route.CONDITIONAL)
    over = "one participation" if one else "the participation pattern"
    kind = "exact" if s.exact else f"a certified upper bound (a pattern attains {s.lower:.6g}·clip_norm)"
    doubled = " × 2 (replace-one)" if p.neighbouring == "replace-one" else ""
    return (
        f"sensitivity = clip_norm·Δ{doubled}, Δ = {s.value:.10g} over {over}: {kind}; {s.method}; maximising "
        f"pattern: steps {steps} (0-based)"
    )


def noise(p: DpMfParams, release: Release, z: float) -> Noise:
    s = release.sensitivity
    return replace(
        Noise.scaled(
            z,
            relation_sensitivity(p, release),
            sensitivity_rule(p, release),
            "noise_std is the std of each entry of Z in C·G + Z, in the units of the summed clipped gradients",
        ),
        sensitivity_exact=s.exact,
        sensitivity_attained=s.lower * relation_scale(p),
        worst_pattern=s.witness or None,
    )


def conventions(p: DpMfParams, release: Release) -> Conventions:
    rule = f"steps as given: {p.steps}"
    if release.route is Route.AMPLIFIED_BANDED:
        rule += f"; rounds per record = ⌈T/b⌉ = ⌈{p.steps}/{release.groups}⌉ = {release.rounds}"
    elif release.route is Route.SPECTRAL and release.rounds != p.steps:
        rule += f"; steps of a record's group = ⌈T/b⌉ = {release.rounds}"
    elif release.route is Route.GAUSSIAN or p.participation in ("cyclic", "single-epoch"):
        pattern = release.pattern
        k = pattern.effective_participations(p.steps)
        rule += f"; participations ≤ {k}, at least {pattern.min_separation} steps apart"
    relation = {
        "zero-out": "zero-out (a record's gradients replaced by zeros; the same output distributions as add/remove "
        "one record for these releases, so the add-remove ε)",
        "add-remove": "add-remove",
        "replace-one": "replace-one (sensitivity doubled)",
    }[p.neighbouring]
    return Conventions(
        neighbouring=p.neighbouring,
        steps=p.steps,
        step_rule=rule,
        sampling=PARTICIPATION_TEXT[p.participation] + f"; neighbouring: {relation}",
        noise_multiplier_definition="noise_multiplier = std of each entry of Z / sensitivity; "
        + sensitivity_rule(p, release),
        released="every row of C·G + Z (the model iterates are its post-processing B·(C·G + Z))",
        sampling_rate=release.sampling_rate,
    )


def method(p: DpMfParams, release: Release) -> str:
    """How the spine's accountants read the plan, in words."""
    if release.route is Route.IDENTITY:
        return "C = I: DP-SGD's releases with the same participation (per-step multiplier z·Δ)"
    if release.route is Route.AMPLIFIED_BANDED:
        return (
            f"amplified banded reduction (Choquette-Choo et al. 2023, arXiv 2306.08153): {release.rounds} "
            f"Poisson-subsampled Gaussian releases at q = {release.sampling_rate:.6g}, z over one participation's "
            "sensitivity (C's largest column norm)"
        )
    if release.route is Route.SPECTRAL:
        assert release.loader is not None
        return (
            f"spectral reduction: a post-processing of DP-SGD's releases ({release.loader.sampling} participation, "
            f"{release.rounds} steps) at the per-step multiplier z·Δ/‖C‖₂, ‖C‖₂ ≤ {release.operator_norm:.10g} "
            "(certified), Δ one participation's sensitivity (Z = C·W₁ + Z′ splits the noise: dpcal's own argument, "
            "in accountants/families/dp_mf/privacy.py)"
        )
    if release.route is Route.CONDITIONAL:
        return (
            f"conditional composition (after MMCC, Choquette-Choo, Ganesh, Steinke & Thakurta 2024, arXiv 2310.15526; "
            f"dpcal's own bounds, in accountants/families/dp_mf/conditional.py): each step's release given the earlier "
            f"ones is dominated by a mixture of Gaussians whose participation probabilities are posterior bounds "
            f"(q = {release.sampling_rate:.6g} a priori), outside outputs of probability δ/4, spent from δ"
        )
    return "one Gaussian release of C·G at z over the sensitivity under the participation pattern (μ = 1/z)"


def notes(p: DpMfParams, release: Release) -> list[str]:
    out = []
    if release.route is Route.SPECTRAL:
        out.append(
            f"Sampling is credited through C's operator norm (‖C‖₂ ≤ {release.operator_norm:.6g}): the release is a "
            "post-processing of DP-SGD's with the same participation at noise std σ/‖C‖₂; exact for C = I, "
            "pessimistic by up to ‖C‖₂ over the column norm otherwise. amplification='none' gives the Gaussian of "
            "C's sensitivity over every pattern instead."
        )
    if release.route is Route.CONDITIONAL:
        out.append(
            "Sampling is credited by conditional composition: δ/4 of δ is spent on the outputs where a posterior "
            "bound on an earlier participation may fail (the accountants answer the mixtures at δ·3/4). "
            "amplification='spectral' is tighter for banded C in every case measured so far."
        )
    if release.amplification_refused:
        out.append(f"No amplification by sampling is claimed: {release.amplification_refused}.")
    if not release.sensitivity.exact:
        s = release.sensitivity
        out.append(
            f"The sensitivity is a certified upper bound Δ = {s.value:.6g}; the worst pattern found reaches "
            f"{s.lower:.6g} ({100 * (s.value / s.lower - 1):.3g} % lower), so ε may be pessimistic by that much."
        )
    return out
