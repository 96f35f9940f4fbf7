"""The mechanism plan: each phase's block, regularisation, solver accuracy and noisy release (Algorithms 1–5)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .params import PhasedOutputPerturbationParams
from .privacy import default_phases

# -- the mechanism plan --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedRelease:
    """One noisy release: x̃_k (or ỹ_k), its sensitivity Δ, noise σ = zΔ and the accuracy its solver run needs."""

    name: str
    algorithm: str
    phase: int
    block: tuple[int, int]
    """Records (0-based, half-open) the solver run of this release sees."""
    variable: str
    dimension: int
    sensitivity: float
    noise_std: float
    accuracy_required: float
    accuracy_measure: str
    gap_per_failure: float
    """γ(p) = gap_per_failure·p^gap_power: the in-expectation accuracy giving failure probability p (Markov)."""
    gap_power: int
    problem: str
    mu_k: float | None = None
    m_k: float | None = None

    @property
    def phase_mu(self) -> float:
        """μ_k of a phased release (ValueError for a release that has none: Algorithms 1 and 3)."""
        return _required(self.mu_k, f"{self.name}: μ_k")

    @property
    def phase_m(self) -> float:
        """m_k = min{μ_k, μ_y} of a C-SC release."""
        return _required(self.m_k, f"{self.name}: m_k")


def _required(value: float | None, what: str) -> float:
    if value is None:
        raise ValueError(f"{what} is not defined for this release")
    return value


@dataclass(frozen=True)
class Mechanism:
    """The run's plan: phases, blocks, regulariser and every release."""

    problem_class: str
    phases: int
    block_size: int
    unused: int
    regularization: float | None

    @property
    def phased_regularization(self) -> float:
        """μ of a phased class (ValueError for Algorithms 1 and 3, which have none)."""
        return _required(self.regularization, f"{self.problem_class}: the regularisation μ")

    releases: tuple[PlannedRelease, ...]
    noise_multiplier: float

    def by_algorithm(self, algorithm: str) -> list[PlannedRelease]:
        return [r for r in self.releases if r.algorithm == algorithm]


def theorem_regularization(p: PhasedOutputPerturbationParams, noise_multiplier: float, phases: int) -> float:
    """The theorems' μ (Thm 3.7, 4.8, Cor. 4.9) at the paper's calibration for this z.

    Thm 3.7: μ = (L/D)·max{1/√n, 14K√(d ln(2.5/δ))/(nε)}; Thm 4.8: (L/D)·max{2/√n, 13K√(d ln(5/δ))/(nε)}, d = max;
    Cor. 4.9: 3(L/D)·max{1/√n, 4K√(d_x ln(2.5/δ))/(nε)}. At the paper's σ, √(ln(2.5/δ))/ε = z/√2 and
    √(ln(5/δ))/ε = z/(2√2), so μ depends on (ε, δ) only through z (K stands for log n).
    """
    z, n, K = noise_multiplier, p.dataset_size, phases
    scale = p.lipschitz / p.given_diameter
    if p.problem_class == "convex":
        return scale * max(1.0 / math.sqrt(n), 14.0 * K * math.sqrt(p.d_x) * z / (math.sqrt(2.0) * n))
    if p.problem_class == "c-c":
        d = max(p.d_x, p.d_y)
        return scale * max(2.0 / math.sqrt(n), 13.0 * K * math.sqrt(d) * z / (2.0 * math.sqrt(2.0) * n))
    return 3.0 * scale * max(1.0 / math.sqrt(n), 4.0 * K * math.sqrt(p.d_x) * z / (math.sqrt(2.0) * n))


def mechanism(p: PhasedOutputPerturbationParams, noise_multiplier: float) -> Mechanism:
    """Every release with its block, regulariser, Δ, σ = zΔ and required solver accuracy (Algorithms 1–5; the
    sensitivity lemmas of Sections 3–4).

    ``accuracy_required`` is a distance for Alg. 1/2 (L/(μn), L/(μ_k n̄)) and a weighted squared distance for the
    minimax algorithms (L²/(μn²), L²/(μn̄²), L²/(n̄²m_k)); ``gap_per_failure``·p^power is the in-expectation gap γ(p)
    that meets it with probability ≥ 1 − p (Markov)."""
    z, n, cls = noise_multiplier, p.dataset_size, p.problem_class
    release = _Releases(p, z)
    if cls == "strongly-convex":
        return Mechanism(cls, 1, n, 0, None, (_algorithm1(p, release),), z)
    if cls == "sc-sc":
        return Mechanism(cls, 1, n, 0, None, _algorithm3(p, release), z)
    K = p.phases if p.phases is not None else default_phases(n)
    nbar = n // K
    mu = p.regularization if p.regularization is not None else theorem_regularization(p, z, K)
    out = [r for k in range(1, K + 1) for r in _phase(p, release, k, mu, nbar)]
    return Mechanism(cls, K, nbar, n - K * nbar, mu, tuple(out), z)


class _Releases:
    """Builds a :class:`PlannedRelease` with σ = zΔ and the defaults of a one-run release (phase 1, every record,
    variable x)."""

    def __init__(self, p: PhasedOutputPerturbationParams, noise_multiplier: float) -> None:
        self.p, self.z = p, noise_multiplier

    def __call__(self, name: str, algorithm: str, sensitivity: float, **kw: Any) -> PlannedRelease:
        defaults: dict[str, Any] = {"phase": 1, "block": (0, self.p.dataset_size), "variable": "x"}
        defaults["dimension"] = self.p.d_x
        return PlannedRelease(
            name=name, algorithm=algorithm, sensitivity=sensitivity, noise_std=self.z * sensitivity, **(defaults | kw)
        )


def _algorithm1(p: PhasedOutputPerturbationParams, release: _Releases) -> PlannedRelease:
    """Strongly convex: one release of the whole run, Δ = 4L/(μn)."""
    problem = "min_{x∈𝒳} (1/n) Σ f(x; ξ_i)"
    return _minimiser(release, "x̃ (Algorithm 1)", "Algorithm 1", p.lipschitz, p.mu_x, p.dataset_size, problem)


def _minimiser(
    release: _Releases, name: str, algorithm: str, L: float, mu: float, n: int, problem: str, **phase: Any
) -> PlannedRelease:
    """The output of a μ-strongly convex, L-Lipschitz minimisation over n records: Δ = 4L/(μn), solved to
    ‖x − x̂*‖ ≤ L/(μn) (Algorithm 1, and every phase of Algorithm 2)."""
    return release(
        name,
        algorithm,
        4.0 * L / (mu * n),
        accuracy_required=L / (mu * n),
        accuracy_measure="‖𝒜(S) − x̂*_S‖" if not phase else "‖x_k − x̂*_k‖",
        gap_per_failure=L * L / (2.0 * mu * n * n),
        gap_power=2,
        problem=problem,
        **phase,
    )


def _algorithm3(p: PhasedOutputPerturbationParams, release: _Releases) -> tuple[PlannedRelease, ...]:
    """SC-SC: x and y of one run, Δ = 4L/(n√(μ_var μ))."""
    L, n = p.lipschitz, p.dataset_size
    mu = min(p.mu_x, p.mu_y)
    return tuple(
        release(
            f"{var}̃ (Algorithm 3)",
            "Algorithm 3",
            4.0 * L / (n * math.sqrt(mu_var * mu)),
            variable=var,
            dimension=dim,
            accuracy_required=L * L / (mu * n * n),
            accuracy_measure="μ_x‖𝒜_x(S) − x̂*_S‖² + μ_y‖𝒜_y(S) − ŷ*_S‖² (one run for x and y)",
            gap_per_failure=L * L / (2.0 * mu * n * n),
            gap_power=1,
            problem="min_{x∈𝒳} max_{y∈𝒴} (1/n) Σ f(x, y; ξ_i)",
        )
        for var, mu_var, dim in (("x", p.mu_x, p.d_x), ("y", p.mu_y, p.d_y))
    )


def _phase(p: PhasedOutputPerturbationParams, release: _Releases, k: int, mu: float, nbar: int) -> list[PlannedRelease]:
    """Phase k of the phased algorithms (convex: Algorithm 2; c-c: Algorithms 4 and 5; c-sc: Algorithm 4's variant)
    on block S_k with μ_k = μ·2^k."""
    L, cls = p.lipschitz, p.problem_class
    mu_k = mu * 2.0**k
    phase: dict[str, Any] = {"phase": k, "block": ((k - 1) * nbar, k * nbar), "mu_k": mu_k}
    block = f"(1/n̄) Σ_{{i∈S_{k}}} f"
    if cls == "convex":
        problem = f"min_{{x∈𝒳}} {block}(x; ξ_i) + (μ_{k}/2)‖x − x̃_{k - 1}‖²"
        return [_minimiser(release, f"phase {k}: x̃_{k} (Algorithm 2)", "Algorithm 2", L, mu_k, nbar, problem, **phase)]
    if cls == "c-c":
        halves = (
            ("Algorithm 4", "x", p.d_x, f"(μ_{k}/2)‖x − x̃_{k - 1}‖² − (μ/2)‖y‖²", "μ_k‖x_k − x̂*_k‖² + μ‖y_k − ŷ*_k‖²"),
            ("Algorithm 5", "y", p.d_y, f"(μ/2)‖x‖² − (μ_{k}/2)‖y − ỹ_{k - 1}‖²", "μ‖x_k − x̂*_k‖² + μ_k‖y_k − ŷ*_k‖²"),
        )
        return [
            release(
                f"phase {k}: {var}̃_{k} ({algorithm})",
                algorithm,
                4.0 * L / (nbar * math.sqrt(mu_k * mu)),
                variable=var,
                dimension=dim,
                accuracy_required=L * L / (mu * nbar * nbar),
                accuracy_measure=measure,
                gap_per_failure=L * L / (2.0 * mu * nbar * nbar),
                gap_power=1,
                problem=f"min_{{x∈𝒳}} max_{{y∈𝒴}} {block} + {regularisers}",
                **phase,
            )
            for algorithm, var, dim, regularisers, measure in halves
        ]
    m_k = min(mu_k, p.mu_y)
    return [
        release(
            f"phase {k}: x̃_{k} (Algorithm 4, C-SC variant)",
            "Algorithm 4, C-SC variant",
            4.0 * L / (nbar * math.sqrt(mu_k * m_k)),
            m_k=m_k,
            accuracy_required=L * L / (nbar * nbar * m_k),
            accuracy_measure="μ_k‖x_k − x̂*_k‖² + μ_y‖y_k − ŷ*_k‖²",
            gap_per_failure=L * L / (2.0 * m_k * nbar * nbar),
            gap_power=1,
            problem=f"min_{{x∈𝒳}} max_{{y∈𝒴}} {block} + (μ_{k}/2)‖x − x̃_{k - 1}‖²",
            **phase,
        )
    ]


def expected_gap(release: PlannedRelease, probability: float) -> float:
    """γ(p): reaching E[suboptimality (or duality gap)] ≤ γ gives the accuracy w.p. ≥ 1 − p (Markov's inequality).

    Alg. 1/2: E‖𝒜 − x̂‖ ≤ √(2γ/μ) ⇒ γ = p²L²/(2μn²); minimax: E[weighted] ≤ 2γ (Lemma B.1) ⇒ γ = p·need/2."""
    return release.gap_per_failure * probability**release.gap_power


def certified_accuracy(release: PlannedRelease, probability: float) -> float:
    """The "2γ level" p·need: certifying it deterministically gives privacy with p = 0 and the utility bounds."""
    return probability * release.accuracy_required
