"""Utility of DP bilevel optimization (Kornowski 2024, Section 4): the error budget, the explicit bound, the theorems'
rates and recommendations."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ...reports import Assumption, Recommendation, UtilityBound, UtilityReport
from .params import ALGORITHM_ID, MAX_ROUNDS, SOURCE, BilevelParams
from .plan import inner_multiplier, mechanisms

# -- utility (Section 4) ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InnerSolve:
    """One private inner solve, DP-Loc-GD/SGD (Algorithms 2 and 4): M = ``rounds`` rounds of T = ``steps`` noisy
    steps on a μ-strongly convex, L-Lipschitz objective in ``dimension`` coordinates, failure probability γ, batches
    of ``batch`` records (None: full batch)."""

    lipschitz: float
    strong_convexity: float
    noise_std: float
    rounds: int
    steps: int
    dimension: int
    failure: float
    batch: int | None = None

    def radius(self, initial_radius: float) -> float:
        """R_M: the localisation radius after M rounds, ‖y_out − y*‖ ≤ R_M w.p. ≥ 1 − γ (per solve).

        Explicit instantiation of the proof of Theorem 8.2 / A.1 (constants *reconstructed* here, not
        printed): R_{m+1}² = (2/μ)[2R_m(σ + 2L/√b)√(2 ln(4M/γ)/T) + (1 + ln T)(L² + σ²(√d + √(2 ln(2MT/γ)))²)/(μT)],
        the 2L/√b term for batches only, T = T_GD steps per round, γ/M per round."""
        radius = initial_radius
        step = self.radius_step()
        for _ in range(self.rounds):
            radius = step(radius)
        return radius

    def radius_step(self) -> Callable[[float], float]:
        """R_m ↦ R_{m+1} of :meth:`radius` (the schedule DP-Loc-GD/SGD uses for its localisation balls)."""
        mu, sigma = self.strong_convexity, self.noise_std
        spread = sigma + (2.0 * self.lipschitz / math.sqrt(self.batch) if self.batch is not None else 0.0)
        concentration = math.sqrt(2.0 * math.log(4.0 * self.rounds / self.failure) / self.steps)
        tail = (
            math.sqrt(self.dimension) + math.sqrt(2.0 * math.log(2.0 * self.rounds * self.steps / self.failure))
        ) ** 2
        optimisation = (1.0 + math.log(self.steps)) * (self.lipschitz**2 + sigma**2 * tail) / (mu * self.steps)

        def step(radius: float) -> float:
            return math.sqrt((2.0 / mu) * (2.0 * radius * spread * concentration + optimisation))

        return step


@dataclass(frozen=True)
class ErrorBudget:
    """The pieces of D = max_t ‖g̃_t − ∇L*_λ(x_t)‖ (Lemma 4.4, Proposition 4.6), each w.p. as allotted from γ."""

    inner_g: float
    inner_lambda: float
    bias: float
    noise: float
    sampling: float

    @property
    def total(self) -> float:
        return self.bias + self.noise + self.sampling


def error_budget(p: BilevelParams, z: float, z_in: float) -> ErrorBudget:
    """D ≤ β + σ(√d_x + √(2 ln(4T/γ))) [+ 2G√(2 ln(8T/γ)/b_out)], with β = (L₁^f + λL₁^g)e_λ + λL₁^g e_0 (Lemma 4.4,
    deterministic first step) and e_0, e_λ the inner radii; γ/2 to the 2T inner solves, γ/4 to the outer noise
    (Gaussian norm concentration), γ/4 to the outer batch (Pinelis' inequality for bounded vectors)."""
    inner_g, inner_l, outer = mechanisms(p)
    t, gamma, lam, mu = p.steps, p.failure_probability, p.regularization, p.strong_convexity
    per_solve = gamma / (4.0 * t)
    batch = p.batch_size_inner if p.mini else None
    r0 = 2.0 * p.lipschitz_g / mu
    rounds, steps, dy = p.inner_rounds, p.inner_steps, p.dimension_y
    solve_g = InnerSolve(inner_g.per_sample_bound, mu, z_in * inner_g.sensitivity, rounds, steps, dy, per_solve, batch)
    solve_l = InnerSolve(
        inner_l.per_sample_bound, lam * mu / 2.0, z_in * inner_l.sensitivity, rounds, steps, dy, per_solve, batch
    )
    e0 = solve_g.radius(r0)
    el = solve_l.radius(r0 + p.lipschitz_f / (lam * mu))
    bias = (p.smoothness_f + lam * p.smoothness_g) * el + lam * p.smoothness_g * e0
    noise = z * outer.sensitivity * (math.sqrt(p.dimension_x) + math.sqrt(2.0 * (math.log(4.0 * t) - math.log(gamma))))
    sampling = 0.0
    if p.mini:
        sampling = 2.0 * p.clip * math.sqrt(2.0 * (math.log(8.0 * t) - math.log(gamma)) / p.outer_batch)
    return ErrorBudget(e0, el, bias, noise, sampling)


def penalty_gap(p: BilevelParams) -> float:
    """(L₀^f)²/(2λμ_g) ≥ F − L*_λ ≥ 0 (Lemma 4.3(i) made explicit)."""
    return p.lipschitz_f**2 / (2.0 * p.regularization * p.strong_convexity)


def explicit_bound(p: BilevelParams, error: float) -> float:
    """‖G_{L*_λ,η}(x_out)‖ ≤ 4D + √(12·L·Δ_λ/T) with L = 1/(2η) and Δ_λ ≤ Δ_F + (L₀^f)²/(2λμ_g) (Proposition 4.6's
    proof, deterministic form)."""
    smooth = 1.0 / (2.0 * p.stepsize)
    gap = p.given_initial_suboptimality + penalty_gap(p)
    return 4.0 * error + math.sqrt(12.0 * smooth * gap / p.steps)


@dataclass(frozen=True)
class Rates:
    """The Õ rate forms of Theorems 4.1, 5.1 and 6.1 with unit constants."""

    k1: float
    k2: float
    k2_printed: float
    k3: float
    privacy_term: float
    privacy_term_printed: float
    batch_term: float
    batch_term_printed: float
    population_term: float
    admissible_limit: float


def rates(p: BilevelParams, epsilon: float, suboptimality: float) -> Rates:
    """K₁(√d_x/(εn))^{1/2} + K₂(√d_y/(εn))^{1/3}, K₁ = Δ^{1/4}ℓ^{3/4}κ^{5/4}, K₂ = Δ^{1/6}ℓ^{5/6}κ^{11/6} (corrected;
    printed ℓ^{1/2}: an erratum), batch term K₃/√b_out (printed K₃/b_out: an erratum), population K₃√(d_x/n)."""
    ell, kappa, n = p.ell, p.kappa, p.dataset_size
    k1 = suboptimality**0.25 * ell**0.75 * kappa**1.25
    k2 = suboptimality ** (1 / 6) * ell ** (5 / 6) * kappa ** (11 / 6)
    k2_printed = suboptimality ** (1 / 6) * ell**0.5 * kappa ** (11 / 6)
    k3 = ell * kappa
    x_term = (math.sqrt(p.dimension_x) / (epsilon * n)) ** 0.5
    y_term = (math.sqrt(p.dimension_y) / (epsilon * n)) ** (1 / 3)
    b = p.batch_size_outer if p.mini else None
    limit = (
        ell
        * kappa**3
        * min(
            1.0 / (2.0 * kappa),
            p.lipschitz_g / p.lipschitz_f,
            p.smoothness_g / p.smoothness_f,
            suboptimality / (ell * kappa),
        )
    )
    return Rates(
        k1,
        k2,
        k2_printed,
        k3,
        k1 * x_term + k2 * y_term,
        k1 * x_term + k2_printed * y_term,
        k3 / math.sqrt(b) if b else 0.0,
        k3 / b if b else 0.0,
        k3 * math.sqrt(p.dimension_x / n),
        limit,
    )


def utility_report(p: BilevelParams) -> UtilityReport:
    """Every utility bound these hyperparameters allow, with the paper's recommended hyperparameters beside."""
    missing: list[str] = []
    bounds = _explicit_bounds(p, missing)
    if p.epsilon is None or p.initial_suboptimality is None:
        missing.append("the rate forms need epsilon and initial_suboptimality")
    else:
        try:
            bounds.extend(_rate_bounds(p, p.epsilon, p.initial_suboptimality))
        except (ArithmeticError, ValueError):
            missing.append("the rate forms overflow floating point at these constants")
    bounds = [b for b in bounds if math.isfinite(b.value)]
    try:
        advice = [r for r in recommendations(p) if not isinstance(r.value, float) or math.isfinite(r.value)]
    except (ArithmeticError, ValueError):  # constants at the ends of their ranges: no advice rather than a wrong one
        advice = []
    return UtilityReport(ALGORITHM_ID, tuple(bounds), "; ".join(missing) if missing else None, tuple(advice))


@dataclass(frozen=True)
class _Conditions:
    """The conditions the explicit bounds share: λ's floor, the stepsize's limit, no clipping."""

    lam_ok: Assumption
    step_ok: Assumption
    clip_ok: Assumption
    unit_smooth: float
    """ℓκ³: the smoothness of L*_λ with unit constant (Lemma 4.3(iii))."""

    @classmethod
    def of(cls, p: BilevelParams) -> _Conditions:
        unit_smooth = p.ell * p.kappa**3
        return cls(
            lam_ok=Assumption(
                f"λ ≥ max{{2L₁^f/μ_g, 2L₁^g/μ_g, L₀^f/L₀^g, L₁^f/L₁^g}} = {p.regularization_floor:.6g} (Lemmas 4.4, "
                "8.1, 8.8)",
                p.regularization >= p.regularization_floor,
                f"λ = {p.regularization:.6g}",
            ),
            step_ok=Assumption(
                "stepsize ≤ 1/(2·smoothness of L*_λ) (Proposition 4.6 with L = 1/(2η)); Lemma 4.3(iii) gives the "
                "smoothness only as O(ℓκ³)",
                None,
                f"η = {p.stepsize:.6g}; with unit constant, 1/(2ℓκ³) = {1.0 / (2.0 * unit_smooth):.6g}",
            ),
            clip_ok=Assumption(
                "clipping never acts: per-sample inner gradients stay within their Lipschitz constants and ‖φ_i‖ ≤ G "
                "at the private ỹ's (Lemma 4.5 bounds φ_i only at the exact solutions)",
                None,
            ),
            unit_smooth=unit_smooth,
        )


def _explicit_bounds(p: BilevelParams, missing: list[str]) -> list[UtilityBound]:
    """The inner errors and the hypergradient error D at the given noise (Theorems 8.2/A.1, Lemma 4.4), then the
    bounds at the output (Proposition 4.6) where Δ_F is given; what is missing is appended to ``missing``."""
    if p.noise_multiplier is None:
        missing.append("the explicit bounds need the noise: give noise_multiplier (or use /v1/calibrate)")
        return []
    budget = error_budget(p, p.noise_multiplier, inner_multiplier(p, p.noise_multiplier))
    bounds = [*_inner_error_bounds(p, budget), _hypergradient_error_bound(p, budget)]
    if p.initial_suboptimality is None:
        missing.append("the hypergradient bounds need initial_suboptimality (Δ_F)")
        return bounds
    return [*bounds, *_output_bounds(p, budget.total)]


def _inner_error_bounds(p: BilevelParams, budget: ErrorBudget) -> list[UtilityBound]:
    """The inner solvers' errors at every outer step (Theorem 8.2, or A.1 with mini-batches)."""
    gamma = p.failure_probability
    inner_source = (
        f"{SOURCE}, Theorem {'A.1' if p.mini else '8.2'} (explicit localisation radius; constants "
        "reconstructed from the proof, not printed); union bound over the 2T solves"
    )
    strongly_convex = p.regularization >= 2.0 * p.smoothness_f / p.strong_convexity
    return [
        UtilityBound.explicit(
            "‖ỹ_t − y*(x_t)‖ at every outer step (inner error of the g problem)",
            budget.inner_g,
            inner_source,
            (Assumption(f"holds w.p. ≥ 1 − γ/4, γ = {gamma:g}", True),),
        ),
        UtilityBound.explicit(
            "‖ỹ^λ_t − y^λ(x_t)‖ at every outer step (inner error of the f + λg problem)",
            budget.inner_lambda,
            inner_source,
            (
                Assumption(
                    "f + λg is (λμ_g/2)-strongly convex: λ ≥ 2L₁^f/μ_g (Lemma 8.1)",
                    strongly_convex,
                    f"λ = {p.regularization:.6g}",
                ),
                Assumption(f"holds w.p. ≥ 1 − γ/4, γ = {gamma:g}", True),
            ),
            applicable=strongly_convex,
        ),
    ]


def _hypergradient_error_bound(p: BilevelParams, budget: ErrorBudget) -> UtilityBound:
    """D, the hypergradient error (Lemma 4.4 with the inner radii)."""
    c = _Conditions.of(p)
    pieces = f"bias β = {budget.bias:.6g}, noise {budget.noise:.6g}" + (
        f", batch {budget.sampling:.6g}" if p.mini else ""
    )
    batch = ", Pinelis' inequality for the outer batch (Lemma 8.8 with 1/√b_out, printed 1/b_out)" if p.mini else ""
    return UtilityBound.explicit(
        f"D = max_t ‖g̃_t − ∇L*_λ(x_t)‖, the hypergradient error ({pieces})",
        budget.total,
        f"{SOURCE}, Lemma 4.4 (deterministic first step) with the inner radii, Gaussian norm concentration" + batch,
        (c.lam_ok, c.clip_ok, Assumption(f"holds w.p. ≥ 1 − γ, γ = {p.failure_probability:g}", True)),
        applicable=bool(c.lam_ok.holds),
    )


def _output_bounds(p: BilevelParams, error: float) -> list[UtilityBound]:
    """The projected hypergradients at the output (Proposition 4.6), given D = ``error`` and Δ_F."""
    assert p.initial_suboptimality is not None  # checked by the caller
    c = _Conditions.of(p)
    value = explicit_bound(p, error)
    gap = p.initial_suboptimality + penalty_gap(p)
    return [
        UtilityBound.explicit(
            f"‖G_{{L*_λ,η}}(x_out)‖ ≤ 4D + √(12·L·Δ_λ/T), L = 1/(2η) = {1.0 / (2.0 * p.stepsize):.6g}, "
            f"Δ_λ ≤ Δ_F + (L₀^f)²/(2λμ_g) = {gap:.6g}: projected penalty hypergradient at the output",
            value,
            f"{SOURCE}, Proposition 4.6 (deterministic form), Lemma 2.4, Lemma 4.3(i) made explicit",
            (c.step_ok, c.lam_ok, c.clip_ok, Assumption(f"holds w.p. ≥ 1 − γ, γ = {p.failure_probability:g}", True)),
            applicable=bool(c.lam_ok.holds),
        ),
        UtilityBound.rate(
            "‖G_{F,η}(x_out)‖ ≤ the bound above + ℓκ³/λ: projected hypergradient of F at the output",
            value + c.unit_smooth / p.regularization,
            f"{SOURCE}, Lemma 2.4 and Lemma 4.3(ii) (‖∇F − ∇L*_λ‖ = O(ℓκ³/λ), constant not given)",
            (c.step_ok, c.lam_ok, c.clip_ok),
            applicable=bool(c.lam_ok.holds),
        ),
    ]


def _rate_bounds(p: BilevelParams, epsilon: float, suboptimality: float) -> list[UtilityBound]:
    r = rates(p, epsilon, suboptimality)
    theorem = "Theorem 5.1 (Algorithm 3)" if p.mini else "Theorem 4.1 (Algorithm 1)"
    corrected = r.privacy_term + r.batch_term
    admissible = Assumption(
        f"α ≤ ℓκ³·min{{1/(2κ), L₀^g/L₀^f, L₁^g/L₁^f, Δ_F/(ℓκ)}} = {r.admissible_limit:.6g} (precondition of "
        "Theorem 4.1; else n is too small)",
        corrected <= r.admissible_limit,
        f"α = {corrected:.6g}",
    )
    unit = Assumption("Õ: absolute constants and polylog factors set to 1", None)
    batch = " + K₃/√b_out" if p.mini else ""
    out = [
        UtilityBound.rate(
            f"‖G_{{F_S,η}}(x_out)‖ ≤ K₁(√d_x/(εn))^{{1/2}} + K₂(√d_y/(εn))^{{1/3}}{batch} (corrected: K₁ = "
            f"{r.k1:.6g}, K₂ = Δ_F^{{1/6}}ℓ^{{5/6}}κ^{{11/6}} = {r.k2:.6g}"
            + (f", K₃ = ℓκ = {r.k3:.6g}" if p.mini else "")
            + ")",
            corrected,
            f"{SOURCE}, {theorem}; K₂ exponent ℓ^{{5/6}} (the proofs' β carries ℓ^{{5/2}}; printed ℓ^{{1/2}})"
            + ("; K₃/√b_out (the mean of b_out independent vectors; printed K₃/b_out)" if p.mini else ""),
            (admissible, unit),
            applicable=bool(admissible.holds),
        ),
        UtilityBound.rate(
            f"the same, as printed (K₂ = Δ_F^{{1/6}}ℓ^{{1/2}}κ^{{11/6}} = {r.k2_printed:.6g}"
            + (", K₃/b_out" if p.mini else "")
            + "): superseded by the corrected form",
            r.privacy_term_printed + r.batch_term_printed,
            f"{SOURCE}, {theorem} as printed (superseded: the printed exponent ℓ^{{1/2}}"
            + (" and K₃/b_out" if p.mini else "")
            + ")",
            (admissible, unit),
            applicable=False,
        ),
        UtilityBound.rate(
            "‖G_{F_𝒫,η}(x_out)‖ (population) ≤ the corrected rate + K₃√(d_x/n)",
            corrected + r.population_term,
            f"{SOURCE}, Theorem 6.1 (K₁ with ℓ^{{3/4}} as in Theorems 4.1/5.1, printed ℓ^{{1/4}}; the √(d_x/n) term "
            "as stated)",
            (admissible, unit),
            applicable=bool(admissible.holds),
        ),
    ]
    return out


def _count_value(value: float) -> int | float:
    return int(value) if value < 2**53 else float(value)


def recommendations(p: BilevelParams) -> list[Recommendation]:
    """Theorem 4.1's parameter assignment at its predicted α (unit constants), as advice."""
    out: list[Recommendation] = []
    ell, kappa, n = p.ell, p.kappa, p.dataset_size
    unit_smooth = ell * kappa**3
    out.append(
        Recommendation(
            "stepsize",
            1.0 / (2.0 * unit_smooth),
            "η = 1/(2L) with L = ℓκ³ the smoothness of L*_λ (Proposition 4.6, Lemma 4.3(iii), unit constant)",
            False,
        )
    )
    out.append(Recommendation("inner_steps", _count_value(float(n) * n), "T_GD = n² (Theorem 8.2)", False))
    if p.epsilon is not None:
        budget = p.epsilon / math.sqrt(18.0 * p.steps)
        ratio = p.lipschitz_g / (p.strong_convexity * budget * n)
        rounds = max(1, math.ceil(math.log2(math.log(1.0 / ratio)))) if ratio < 1.0 / math.e else 1
        out.append(
            Recommendation(
                "inner_rounds",
                min(rounds, MAX_ROUNDS),
                f"M = ⌈log₂ ln(μ_g ε′ n/L₀^g)⌉, ε′ = ε/√(18T) = {budget:.6g} (Theorem 8.2; 1 when μ_g ε′ n/L₀^g ≤ e)",
                False,
            )
        )
    if p.epsilon is not None and p.initial_suboptimality is not None:
        r = rates(p, p.epsilon, p.initial_suboptimality)
        alpha = r.privacy_term
        out.append(
            Recommendation(
                "regularization",
                unit_smooth / alpha,
                f"λ = ℓκ³/α at the predicted α = {alpha:.6g} (Theorem 4.1, unit constants)",
                False,
            )
        )
        out.append(
            Recommendation(
                "steps",
                _count_value(max(1.0, math.ceil(p.initial_suboptimality * unit_smooth / (alpha * alpha)))),
                f"T = ⌈Δ_F ℓκ³/α²⌉ at α = {alpha:.6g} (Theorem 4.1, unit constants)",
                False,
            )
        )
        if p.mini:
            out.append(
                Recommendation(
                    "batch_size_outer",
                    _count_value(min(float(n), max(1.0, math.ceil((ell * kappa / alpha) ** 2)))),
                    "b_out ≍ (ℓκ/α)²: the batch term K₃/√b_out then matches α (Remark 5.2 with the corrected "
                    "1/√b_out; the printed b_out is its square root)",
                    False,
                )
            )
    return out
