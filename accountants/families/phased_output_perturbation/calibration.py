"""Calibration of phased output perturbation (Zhang, Thekumparampil, Oh & He 2022) beside the spine's: the paper's
printed noise multiplier for the target (a row, in its regime), its calibration with what the tight accountant
certifies for it, and the hyperparameters recommended."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ...params import NOISE_MULTIPLIER_RANGE
from ...reports import AccountantResult, PaperCalibration, Recommendation
from .params import ALGORITHM, PHASED, SOURCE, SPLIT, PhasedOutputPerturbationParams
from .plan import Mechanism, mechanism
from .privacy import (
    paper_epsilon_limit,
    paper_noise_multiplier,
    paper_result,
    solver_failure,
)


@dataclass(frozen=True)
class Target:
    """A calibration target (ε, δ) for these parameters, with the δ the solver's failures take from it."""

    params: PhasedOutputPerturbationParams
    epsilon: float
    delta: float

    @property
    def failure(self) -> tuple[float, float, bool]:
        """(the solver's failure probability per run, the δ it spends, whether the probability is the default)."""
        return solver_failure(self.params, self.delta)

    @property
    def paper_noise(self) -> float | None:
        """The paper's printed z for the target (None where it is not a finite number dpcal accepts)."""
        z = paper_noise_multiplier(self.params.problem_class, self.epsilon, self.delta)
        return z if math.isfinite(z) and z <= NOISE_MULTIPLIER_RANGE[1] else None


def paper_row(target: Target) -> AccountantResult:
    """The paper's printed noise for the target as a calibration row (in its regime; not applicable outside it or
    where its σ is not a number dpcal accepts)."""
    z_paper = target.paper_noise
    if z_paper is None:
        return AccountantResult.not_applicable("paper", _overflow(target))
    row = paper_result(target.params, z_paper, target.delta, target.failure[0], target.epsilon)
    return replace(row, calibrated_value=z_paper) if row.applicable else row


def under_noised(paper: PaperCalibration, target: float) -> tuple[str, ...]:
    """The warning where the paper's own calibration certifies more than the target."""
    if paper.epsilon_certified is None or paper.epsilon_certified <= target:
        return ()
    return (
        f"the paper's calibration under-noises: its noise certifies ε = {paper.epsilon_certified:.6g} > {target:g}",
    )


def paper_calibration(target: Target, z_tight: float, certified: float | None) -> PaperCalibration:
    """The paper's printed σ for the target and what the tight accountant certifies for it (``certified``)."""
    p, cls = target.params, target.params.problem_class
    source = f"{SOURCE}, {ALGORITHM[cls]} (printed σ, Def. 2)"
    z_paper = target.paper_noise
    if z_paper is None or certified is None:
        return PaperCalibration.not_applicable(source, _overflow(target), target.epsilon)
    mech = mechanism(p, z_paper)
    first, last = mech.releases[0], mech.releases[-1]
    sigma_text = (
        f"σ = {first.noise_std:.6g}"
        if len(mech.releases) == 1
        else f"σ of {first.name} = {first.noise_std:.6g}, of {last.name} = {last.noise_std:.6g}"
    )
    regime = (
        f"in the paper's regime (ε {'≤ 2, ε/2 per release' if cls in SPLIT else '≤ 1'})"
        if target.epsilon <= paper_epsilon_limit(cls)
        else "outside the paper's regime: Def. 2 needs ε' ≤ 1, here ε' = "
        f"{target.epsilon / (2 if cls in SPLIT else 1):g}"
    )
    note = (
        f"{ALGORITHM[cls]}: z = {z_paper:.6g} ({sigma_text}); {regime}. The tight accountant certifies "
        f"ε = {certified:.6g} for it (with this run's δ_fail) and needs only z = {z_tight:.6g} "
        f"({z_paper / z_tight:.3g}× less noise)."
    )
    return PaperCalibration(
        source, z_paper, target.epsilon, certified, "tight", bool(certified <= target.epsilon), note
    )


def recommendations(target: Target, mech: Mechanism, z_tight: float, paper_chosen: bool) -> tuple[Recommendation, ...]:
    """The defaults the answer used (phases, regularisation), the paper's noise and its solver failure probability."""
    p, cls = target.params, target.params.problem_class
    recommended = applied(p, mech)
    z_paper = target.paper_noise
    if z_paper is not None:
        rule = "2√(2 ln(5/δ))/ε" if cls in SPLIT else "√(2 ln(2.5/δ))/ε"
        recommended += (
            Recommendation(
                "noise_multiplier",
                z_paper,
                f"the paper's σ_k = z·Δ_k with z = {rule} ({ALGORITHM[cls]}); the tight accountant needs {z_tight:.6g}",
                paper_chosen,
            ),
        )
    probability, _, default = target.failure
    if default:
        recommended += (
            Recommendation(
                "solver_failure_probability",
                probability,
                f"the paper's p = {'δ/8' if cls in SPLIT else 'δ/4'} per solver run (Markov on the in-expectation "
                "accuracy); 0 with a deterministic accuracy certificate",
                True,
            ),
        )
    return recommended


def applied(p: PhasedOutputPerturbationParams, mech: Mechanism) -> tuple[Recommendation, ...]:
    """The phases and the regularisation the plan used where the user left them to the paper's defaults."""
    out: list[Recommendation] = []
    if p.problem_class in PHASED:
        if p.phases is None:
            out.append(Recommendation("phases", mech.phases, "K = ⌈log₂ n⌉ (the paper's log n)", True))
        if p.regularization is None and mech.regularization is not None:
            rule = {
                "convex": "μ = (L/D)·max{1/√n, 14K√(d ln(2.5/δ))/(nε)} (Theorem 3.7)",
                "c-c": "μ = (L/D)·max{2/√n, 13K√(d ln(5/δ))/(nε)}, d = max{d_x, d_y} (Theorem 4.8)",
                "c-sc": "μ = 3(L/D)·max{1/√n, 4K√(d_x ln(2.5/δ))/(nε)} (Corollary 4.9)",
            }[p.problem_class]
            out.append(
                Recommendation(
                    "regularization",
                    float(mech.regularization),
                    f"{rule}, at the ε the paper attaches to this noise multiplier",
                    True,
                )
            )
    return tuple(out)


def _overflow(target: Target) -> str:
    return (
        f"the paper's σ for ε = {target.epsilon:.6g} is not a finite number dpcal accepts (above "
        f"{NOISE_MULTIPLIER_RANGE[1]:g} times the sensitivity): its printed calibration says nothing at this target"
    )
