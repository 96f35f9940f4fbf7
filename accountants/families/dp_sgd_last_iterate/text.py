"""How last-iterate DP-SGD's answers are worded: method, noise, conventions, bounds and warnings."""

from __future__ import annotations

import numpy as np

from ...conversions import epsilon_for_linear_rdp
from ...params import resolve_noise_multiplier
from ...reports import BoundResult, Conventions, Noise
from .bounds import LinearBound
from .params import LastIterateParams

# -- presentation ----------------------------------------------------------------------------------------------------

METHOD = (
    "minimum over the applicable Kong & Ribero bounds and composition (all linear in α), converted exactly with the "
    "improved conversion (Balle et al. 2020, Thm. 21) over real α"
)


def smallest_bound(found: list[LinearBound]) -> LinearBound:
    """The applicable bound with the smallest coefficient (the composition bound always applies)."""
    return min((b for b in found if b.coefficient is not None), key=coefficient)


def coefficient(bound: LinearBound) -> float:
    """K of an applicable bound's curve Kα/z²."""
    if bound.coefficient is None:
        raise ValueError(f"{bound.name} does not apply here: it has no coefficient")
    return bound.coefficient


def resolved_noise_multiplier(p: LastIterateParams) -> float:
    return resolve_noise_multiplier(p.noise_multiplier, p.noise_std, p.stepsize * p.clip_norm / p.batch_size)


def stated_noise(p: LastIterateParams, z: float) -> Noise:
    unit = p.stepsize * p.clip_norm / p.batch_size
    return Noise.scaled(
        z,
        unit,
        "noise_multiplier is relative to λC/b (one clipped gradient's share of a step): σ = stepsize·z·C/b; "
        f"the swap sensitivity of a step is 2λC/b = {2 * unit:.6g}",
        "noise_std is per coordinate, in parameter units (added to the iterate, not to the gradient)",
    )


def stated_conventions(p: LastIterateParams, steps: int, rule: str) -> Conventions:
    ell = p.steps_per_pass
    return Conventions(
        neighbouring="replace-one",
        steps=steps,
        step_rule=f"{rule}; ℓ = k/b = {ell} steps per pass, E = ⌊T/ℓ⌋ = {steps // ell} complete passes, a record "
        f"is used at most ⌈T/ℓ⌉ = {-(-steps // ell)} times",
        sampling="cyclic: disjoint batches in a fixed order, no sampling",
        noise_multiplier_definition="noise_multiplier z = bσ/(λC): σ = λ·z·C/b per coordinate on the parameters",
        released="last iterate only (composition, where it wins, also covers every iterate)",
    )


def bound_results(
    found: list[LinearBound], best: LinearBound, z: float, delta: float, grid: np.ndarray
) -> list[BoundResult]:
    out = []
    for bound in found:
        if bound.coefficient is None:
            out.append(
                BoundResult(
                    bound.name, bound.source, False, bound.reason, bound.conditions, None, None, False, bound.releases
                )
            )
            continue
        rho = bound.coefficient / (z * z)
        out.append(
            BoundResult(
                bound.name,
                bound.source,
                True,
                None,
                bound.conditions,
                tuple((rho * grid).tolist()),
                epsilon_for_linear_rdp(rho, delta)[0],
                bound is best,
                bound.releases,
            )
        )
    return out


def stated_warnings(p: LastIterateParams, found: list[LinearBound], best: LinearBound) -> list[str]:
    notes = []
    composition = found[-1]
    last_iterate = [b for b in found[:-1] if b.coefficient is not None]
    if best is composition:
        if not last_iterate:
            reasons = "; ".join(f"{b.name}: {b.reason}" for b in found[:-1])
            notes.append(
                f"no last-iterate bound applies ({reasons}): the answer is the composition bound, which "
                "accounts for releasing every iterate"
            )
        else:
            smallest = min(b.coefficient for b in last_iterate if b.coefficient is not None)
            ratio = smallest / composition.coefficient  # type: ignore[operator]  # composition always has its coefficient
            notes.append(
                f"the last-iterate bounds lose to composition here (best one is {ratio:.3g}× composition): "
                "the answer is the composition bound, which also covers releasing every iterate"
            )
        if p.clipping == "active" and p.constant == "printed":
            notes.append(
                "with clipping possibly active, Theorem 2.3's printed bound (17) is at least "
                "4α(1 + E/2)/z² because θ_{√2·L_λ} ≥ 1/2, so it never beats composition's 2α⌈T/ℓ⌉/z²; "
                "clipping='inactive' (if condition (18) holds) or constant='proof' can"
            )
    if p.clipping == "inactive":
        notes.append(
            "clipping='inactive' asserts condition (18): every per-example gradient norm stays ≤ clip_norm "
            "along both trajectories; dpcal cannot check it"
        )
    if p.diameter is not None and p.clipping == "active":
        notes.append(
            "Theorem 2.2 is used with √2·L_λ (erratum): the printed L_λ is not supported when clipping may be active"
        )
    return notes
