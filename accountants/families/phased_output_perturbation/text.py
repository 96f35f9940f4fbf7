"""How phased output perturbation's answers are worded: releases, noise, conventions and warnings."""

from __future__ import annotations

import math
from types import MappingProxyType

from ...reports import Conventions, Noise, Release
from .params import PHASED, SPLIT, PhasedOutputPerturbationParams
from .plan import Mechanism, certified_accuracy, expected_gap
from .privacy import failing_runs, releases_per_record
from .utility import finite_or_none

# -- presentation ----------------------------------------------------------------------------------------------------

_INDEPENDENCE = (
    "σ_k = z·Δ_k does not depend on the base solver's step size, batch size or number of iterations: only on the "
    "solver meeting the accuracy the plan lists (releases[].details.solver_accuracy_required); privacy fails if it "
    "does not"
)


def release_objects(mech: Mechanism, probability: float, utility_probability: float) -> tuple[Release, ...]:
    cls = mech.problem_class
    out = []
    for r in mech.releases:
        if cls in PHASED:
            if cls == "c-c":
                composition = (
                    f"parallel with the other phases of {r.algorithm} (disjoint blocks); composes with the same "
                    f"phase of {'Algorithm 5' if r.algorithm == 'Algorithm 4' else 'Algorithm 4'} (same records) "
                    "in Gaussian DP"
                )
            else:
                composition = "parallel: disjoint blocks, a record influences one phase (Lemma A.1)"
        elif cls == "sc-sc":
            composition = "sequential with the other variable's release (same records): Gaussian-DP composition"
        else:
            composition = "single release"
        details: dict[str, float | int | str] = {
            "algorithm": r.algorithm,
            "phase": r.phase,
            "records": f"{r.block[0] + 1}..{r.block[1]}",
            "block_size": r.block[1] - r.block[0],
            "variable": r.variable,
            "dimension": r.dimension,
            "solver_problem": r.problem,
            "solver_accuracy_measure": r.accuracy_measure,
            "solver_accuracy_required": r.accuracy_required,
            "solver_failure_probability": probability,
            "utility_expected_gap": expected_gap(r, utility_probability),
            "certified_accuracy_for_utility": certified_accuracy(r, utility_probability),
        }
        if probability > 0.0:
            details["solver_expected_gap"] = expected_gap(r, probability)
        if r.mu_k is not None:
            details["mu_k"] = r.mu_k
        if r.m_k is not None:
            details["m_k"] = r.m_k
        if mech.regularization is not None:
            details["regularization"] = mech.regularization
        noise_std = finite_or_none(r.noise_std)
        out.append(
            Release(
                r.name,
                1,
                r.sensitivity,
                noise_std,
                mech.noise_multiplier,
                composition,
                MappingProxyType(details),
            )
        )
    return tuple(out)


def stated_noise(mech: Mechanism) -> Noise:
    single = len(mech.releases) == 1
    r = mech.releases[0]
    rules = {
        "strongly-convex": "Δ = 4L/(μn): solver error L/(μn) on S and S′ plus ERM stability 2L/(μn) (Lemma 3.3)",
        "convex": "Δ_k = 4L/(μ_k n̄), μ_k = μ·2^k (Lemma 3.5 plus the solver error on S and S′)",
        "sc-sc": "Δ_x = 4L/(n√(μ_x μ)), Δ_y = 4L/(n√(μ_y μ)), μ = min{μ_x, μ_y} (Lemma 4.3 plus the solver error)",
        "c-c": "Δ_k = 4L/(n̄√(μ_k μ)) for x̃_k (Alg. 4) and ỹ_k (Alg. 5) (Lemma 4.5 plus the solver error)",
        "c-sc": "Δ_k = 4L/(n̄√(μ_k m_k)), m_k = min{μ_k, μ_y} (Lemma 4.3 for the phase problem plus the solver error)",
    }
    return Noise(
        noise_multiplier=mech.noise_multiplier,
        noise_std=finite_or_none(r.noise_std) if single else None,
        sensitivity=r.sensitivity if single else None,
        sensitivity_rule=rules[mech.problem_class]
        + ("" if single else "; each release's Δ and σ = zΔ are in releases"),
        units="noise_std is the per-coordinate std of the Gaussian added to the solver's output, in parameter units",
    )


def stated_conventions(mech: Mechanism) -> Conventions:
    cls = mech.problem_class
    count = len(mech.releases)
    if cls in PHASED:
        rule = (
            f"K = {mech.phases} phases on disjoint blocks of n̄ = {mech.block_size} records"
            + (f" ({mech.unused} records unused)" if mech.unused else "")
            + (", Algorithms 4 and 5 each" if cls == "c-c" else "")
            + f": {count} noisy releases, a record influences {releases_per_record(cls)} of them"
        )
        sampling = "none: phase k's solver sees the contiguous block of records (k−1)n̄+1..kn̄ (1-based)"
    else:
        rule = f"{count} noisy release{'s' if count > 1 else ''} of one solver run on all records"
        sampling = "none: the solver sees every record"
    return Conventions(
        neighbouring="replace-one",
        steps=count,
        step_rule=rule + " (neighbours as in the paper's Def. 1: one record replaced)",
        sampling=sampling,
        noise_multiplier_definition="noise_multiplier z = σ_k/Δ_k for every release (σ_k = z·Δ_k); " + _INDEPENDENCE,
        released="the last iterate only (x̃_K, ỹ_K), but every noisy iterate is accounted as released",
    )


def stated_warnings(
    p: PhasedOutputPerturbationParams, mech: Mechanism, delta: float, probability: float, default: bool
) -> list[str]:
    cls = p.problem_class
    runs = failing_runs(cls)
    notes = [_INDEPENDENCE]
    if default:
        share = "δ/4" if cls not in SPLIT else "δ/8"
        notes.append(
            f"δ includes δ_fail = {runs}p = {runs * probability:.6g} for the base solver missing its accuracy, "
            f"with the paper's p = {share} per run (solver_failure_probability); set it to 0 if your solver certifies "
            "the accuracy deterministically (an a-posteriori certificate), or to its real failure probability"
        )
    elif probability > 0.0:
        notes.append(f"δ includes δ_fail = {runs}p = {runs * probability:.6g} for the base solver missing its accuracy")
    else:
        notes.append(
            "solver_failure_probability = 0: you assert that every solver run certifies its accuracy (no δ added)"
        )
    if cls in PHASED and mech.unused:
        notes.append(f"{mech.unused} records (n − K·n̄) are not used by any phase")
    if cls == "c-sc":
        threshold = p.lipschitz / (p.given_diameter * math.sqrt(p.dataset_size))
        if p.mu_y < threshold:
            notes.append(
                f"μ_y = {p.mu_y:.6g} < L/(D√n) = {threshold:.6g}: Corollary 4.9's condition fails (privacy is "
                "unaffected); the paper advises Algorithms 4 + 5 (problem_class c-c) for weakly concave y"
            )
    if delta >= 1.0 / p.dataset_size:
        notes.append(f"δ = {delta:.3g} ≥ 1/n = {1.0 / p.dataset_size:.3g}: outside the paper's regime δ < 1/n")
    return notes
