"""Utility of phased output perturbation: every theorem's explicit bound with its assumptions (Zhang, Thekumparampil, Oh
& He 2022, Sections 3–4)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from ...reports import Assumption, UtilityBound
from .params import SOURCE, PhasedOutputPerturbationParams
from .plan import Mechanism, PlannedRelease
from .privacy import paper_epsilon, paper_epsilon_limit, paper_failure_probability

# -- utility -------------------------------------------------------------------------------------------------------


def finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class UtilityValue:
    """A utility bound's value with the facts that decide whether it applies."""

    name: str
    measure: str
    value: float | None
    source: str
    assumptions: tuple[Assumption, ...] = ()
    role: str = "closed"
    """"closed" (a theorem as stated), "corrected" or "exact" (the proof's sum before simplification)."""
    valid: bool = True
    """Whether the value is a bound here: the exact sums always (they hold for every noise level, K ≥ 1 and μ > 0);
    a closed form when it is at least the exact sum (the paper's regime conditions are sufficient, not necessary)."""
    exact_sum: float | None = None
    """For a closed form: the proof's exact sum it must dominate to be a bound here."""


def utility_values(p: PhasedOutputPerturbationParams, mech: Mechanism, delta: float) -> list[UtilityValue]:
    """Every bound with its validity: the exact sums always; a closed form where it is at least the proof's exact
    sum (``exact_sum``) here."""
    ctx = _context(p, mech, delta)
    return [
        v
        if v.role == "exact"
        else replace(v, valid=v.value is not None and v.exact_sum is not None and bool(v.value >= v.exact_sum))
        for v in _BY_CLASS[p.problem_class](ctx)
    ]


@dataclass(frozen=True)
class _Context:
    """What the bounds of every problem class share, at noise z and δ.

    The closed forms of Theorems 3.4, 3.7, 4.4, 4.8 and Corollary 4.9 are stated at the paper's calibration; they are
    evaluated at ε_z, the ε the paper attaches to z (so that σ = zΔ is the paper's σ). The solver terms use the
    paper's in-expectation accuracy (failure p = δ/4 or δ/8 in the paper's Markov argument), which the proofs need
    whatever the privacy failure probability."""

    p: PhasedOutputPerturbationParams
    mech: Mechanism
    delta: float
    lipschitz: float
    n: int
    eps_z: float
    failure: float
    log25: float
    log5: float
    regime: tuple[Assumption, ...]
    solver: Assumption
    outside: Assumption

    def closed(
        self, problem: tuple[Assumption, ...], value: float, exact: float, extra: Sequence[Assumption] = ()
    ) -> tuple[Assumption, ...]:
        """A closed form's conditions; the last states whether the proof's exact sum implies it here."""
        implied = Assumption(
            f"implied by the proof's exact sum here (closed form {value:.6g} ≥ exact sum {exact:.6g}); this decides "
            "whether the closed form is a bound here",
            bool(value >= exact),
        )
        return (*problem, self.solver, self.outside, *self.regime, *extra, implied)

    def exact(self, problem: tuple[Assumption, ...]) -> tuple[Assumption, ...]:
        return (*problem, self.solver, self.outside)

    def closed_form(
        self,
        name: str,
        measure: str,
        value: float,
        source: str,
        problem: tuple[Assumption, ...],
        exact: float,
        extra: Sequence[Assumption] = (),
        role: str = "closed",
    ) -> UtilityValue:
        """A theorem's closed form, a bound here where it dominates the proof's ``exact`` sum."""
        return UtilityValue(
            name, measure, value, source, self.closed(problem, value, exact, extra), role, exact_sum=exact
        )

    def exact_form(
        self, name: str, measure: str, value: float, source: str, problem: tuple[Assumption, ...]
    ) -> UtilityValue:
        """The proof's exact sum (a bound for every noise level, K ≥ 1 and μ > 0)."""
        return UtilityValue(name, measure, value, source, self.exact(problem), "exact")


def _context(p: PhasedOutputPerturbationParams, mech: Mechanism, delta: float) -> _Context:
    cls, n = p.problem_class, p.dataset_size
    eps_z = paper_epsilon(cls, mech.noise_multiplier, delta)
    regime = (
        Assumption(
            f"ε_z = {eps_z:.6g} ≤ {paper_epsilon_limit(cls):g}: the ε the paper attaches to z is in its range",
            eps_z <= paper_epsilon_limit(cls),
            "the paper's simplifications assume ε ∈ (0, 1] (ε/2 per release for sc-sc and c-c); informational: "
            "dpcal checks the closed form against the proof's exact sum instead",
        ),
        Assumption(
            f"δ = {delta:.6g} < 1/n = {1.0 / n:.6g}",
            delta < 1.0 / n,
            "used to simplify the constants; informational, as above",
        ),
    )
    solver = Assumption(
        "the base solver reaches, in expectation, the paper's accuracy γ in every run (the plan's "
        "utility_expected_gap; or certifies the 2γ level, certified_accuracy_for_utility)",
        None,
        "a property of your solver; dpcal cannot check it",
    )
    outside = Assumption(
        "the loss has its constants (L-Lipschitz, ℓ-smooth) wherever the noisy output lands, which may be outside "
        "the domain; if they hold on the domain only, the bound is for the output projected onto it (post-processing)",
        None,
        "the proofs bound F(x̃) − F(x̂*) through ‖x̃ − x̂*‖; projecting onto the domain is non-expansive",
    )
    return _Context(
        p,
        mech,
        delta,
        p.lipschitz,
        n,
        eps_z,
        paper_failure_probability(cls, delta),
        (math.log(2.5) - math.log(delta)),
        (math.log(5.0) - math.log(delta)),
        regime,
        solver,
        outside,
    )


def _strongly_convex(ctx: _Context) -> list[UtilityValue]:
    """Theorem 3.4 and its proof's exact sums."""
    p, mech, L, n, eps_z = ctx.p, ctx.mech, ctx.lipschitz, ctx.n, ctx.eps_z
    mu, ell, d = p.mu_x, p.given_smoothness, p.d_x
    kappa = ell / mu
    r = mech.releases[0]
    noise = d * r.noise_std**2
    solv = (ctx.failure * r.accuracy_required) ** 2
    problem = (
        Assumption("f(·; ξ) is L-Lipschitz, ℓ-smooth and μ-strongly convex on 𝒳 (Assumption 3.2)", None),
        Assumption("x* and x̂*_S are interior points of 𝒳", None),
    )
    emp_exact = ell * (noise + solv)
    pop_exact = 1.5 * ell * (noise + solv + 4.0 * L * L / (mu * mu * n))
    emp = 33.0 * L * L * kappa * d * ctx.log25 / (mu * n * n * eps_z * eps_z)
    pop = L * L * kappa * (7.0 / (mu * n) + 48.0 * d * ctx.log25 / (mu * n * n * eps_z * eps_z))
    src = f"{SOURCE}, Theorem 3.4"
    return [
        ctx.closed_form("Theorem 3.4 (empirical)", _EMPIRICAL, emp, src, problem, emp_exact),
        ctx.closed_form("Theorem 3.4 (population)", _POPULATION, pop, src, problem, pop_exact),
        ctx.exact_form(
            "proof of Theorem 3.4, exact form (empirical)",
            _EMPIRICAL,
            emp_exact,
            f"{src} (proof, before simplification): ℓ(dσ² + E‖𝒜(S) − x̂*‖²)",
            problem,
        ),
        ctx.exact_form(
            "proof of Theorem 3.4, exact form (population)",
            _POPULATION,
            pop_exact,
            f"{src} (proof): (3ℓ/2)(dσ² + E‖𝒜(S) − x̂*‖² + 4L²/(μ²n))",
            problem,
        ),
    ]


def _sc_sc(ctx: _Context) -> list[UtilityValue]:
    """Theorem 4.4 and its proof's exact sums."""
    p, mech, L, n, eps_z = ctx.p, ctx.mech, ctx.lipschitz, ctx.n, ctx.eps_z
    mux, muy, ell = p.mu_x, p.mu_y, p.given_smoothness
    mu = min(mux, muy)
    d = max(p.d_x, p.d_y)
    c = (ell / mux) * (ell / muy) + ell / mu
    rx, ry = mech.releases
    noise = mux * p.d_x * rx.noise_std**2 + muy * p.d_y * ry.noise_std**2
    solv = ctx.failure * rx.accuracy_required
    problem = (
        Assumption("f is L-Lipschitz, ℓ-smooth, μ_x-strongly convex in x, μ_y-strongly concave in y (4.2)", None),
        Assumption("the empirical and population saddle points are interior", None),
    )
    emp_exact = c * (noise + solv)
    pop_exact = 1.5 * c * (noise + solv + 4.0 * math.sqrt(2.0) * L * L / (mu * n))
    emp = 257.0 * L * L * c * d * ctx.log5 / (mu * n * n * eps_z * eps_z)
    pop = 3.0 * L * L * c * (3.0 / (mu * n) + 128.0 * d * ctx.log5 / (mu * n * n * eps_z * eps_z))
    src = f"{SOURCE}, Theorem 4.4"
    return [
        ctx.closed_form("Theorem 4.4 (empirical)", _EMPIRICAL_GAP, emp, src, problem, emp_exact),
        ctx.closed_form("Theorem 4.4 (population)", _STRONG_GAP, pop, src, problem, pop_exact),
        ctx.exact_form(
            "proof of Theorem 4.4, exact form (empirical)",
            _EMPIRICAL_GAP,
            emp_exact,
            f"{src} (proof): (κ_xκ_y + κ)(μ_x d_x σ_x² + μ_y d_y σ_y² + 2γ)",
            problem,
        ),
        ctx.exact_form(
            "proof of Theorem 4.4, exact form (population)",
            _STRONG_GAP,
            pop_exact,
            f"{src} (proof): (3/2)(κ_xκ_y + κ)(μ_x d_x σ_x² + μ_y d_y σ_y² + 2γ + 4√2L²/(μn))",
            problem,
        ),
    ]


def _phased_conditions(ctx: _Context) -> tuple[Assumption, Assumption]:
    """The closed forms of the phased classes assume the theorem's μ and 2^K ≥ n."""
    K, mu = ctx.mech.phases, ctx.mech.phased_regularization
    theorem_mu = ctx.p.regularization is None
    mu_ok = Assumption(
        "regularization is the theorem's choice",
        theorem_mu,
        "the default" if theorem_mu else f"regularization = {mu:.6g} was given",
    )
    return mu_ok, Assumption(f"2^K ≥ n (K = {K})", 2.0**K >= ctx.n, "the closed forms use μ_K = μ·2^K ≥ μn")


def _phased_sum(ctx: _Context, releases: list[PlannedRelease], solver_sq: Sequence[float], dim: int) -> float:
    """L√E_K + Σ_{k≥2} (μ_k/2)E_{k−1} + (μ_1/2)D² with E_k = 2dσ_k² + (solver term)."""
    e = [2.0 * dim * r.noise_std**2 + s for r, s in zip(releases, solver_sq, strict=True)]
    mus = [r.phase_mu for r in releases]
    head = ctx.lipschitz * math.sqrt(e[-1]) + sum(mus[k] / 2.0 * e[k - 1] for k in range(1, len(e)))
    return float(head + mus[0] / 2.0 * ctx.p.given_diameter**2)


def _convex(ctx: _Context) -> list[UtilityValue]:
    """Theorem 3.7 and its proof's exact sum."""
    p, mech, L, n, eps_z = ctx.p, ctx.mech, ctx.lipschitz, ctx.n, ctx.eps_z
    D, K, nbar = p.given_diameter, mech.phases, mech.block_size
    rel = mech.releases
    d = p.d_x
    problem = (
        Assumption("f(·; ξ) is convex, L-Lipschitz and ℓ-smooth on 𝒳 (Assumption 3.1)", None),
        Assumption(f"some minimiser x* has ‖x* − x₀‖ ≤ D = {D:g} (x₀ = 0)", None),
    )
    head = _phased_sum(ctx, list(rel), [2.0 * (ctx.failure * r.accuracy_required) ** 2 for r in rel], d)
    exact = head + sum(2.0 * L * L / (r.phase_mu * nbar) for r in rel)
    closed = 4.0 * L * D * K * (1.0 / math.sqrt(n) + 7.0 * math.sqrt(d * ctx.log25) / (n * eps_z))
    src = f"{SOURCE}, Theorem 3.7"
    conditions = ctx.closed(problem, closed, exact, _phased_conditions(ctx))
    return [
        UtilityValue("Theorem 3.7", _POPULATION_K, closed, src, conditions, exact_sum=exact),
        ctx.exact_form(
            "proof of Theorem 3.7, exact sum",
            _POPULATION_K,
            exact,
            f"{src} (proof): L√E_K + Σ_{{k≥2}} (μ_k/2)E_{{k−1}} + Σ_k 2L²/(μ_k n̄) + (μ_1/2)D², "
            "E_k = 2dσ_k² + E‖x_k − x̂*_k‖²; any K ≥ 1 and μ > 0",
            problem,
        ),
    ]


def _c_c(ctx: _Context) -> list[UtilityValue]:
    """Theorem 4.8 and its proof's exact sum (eq. (4) for each half)."""
    p, mech, L, n, eps_z = ctx.p, ctx.mech, ctx.lipschitz, ctx.n, ctx.eps_z
    D, mu, K, nbar = p.given_diameter, mech.phased_regularization, mech.phases, mech.block_size
    d = max(p.d_x, p.d_y)
    problem = (
        Assumption("f is L-Lipschitz and ℓ-smooth, convex in x and concave in y (Assumption 4.1)", None),
        Assumption(f"max{{‖x‖, ‖y‖}} ≤ D = {D:g} on 𝒳×𝒴 (x₀ = y₀ = 0)", None),
    )
    total = 0.0
    for alg, dim in (("Algorithm 4", p.d_x), ("Algorithm 5", p.d_y)):
        rel = mech.by_algorithm(alg)
        head = _phased_sum(ctx, rel, [2.0 * ctx.failure * r.accuracy_required / r.phase_mu for r in rel], dim)
        total += head + 8.0 * K * L * L / (mu * nbar) + mu / 2.0 * D * D
    closed = 16.0 * L * D * K * K * (1.0 / math.sqrt(n) + 5.0 * math.sqrt(d * ctx.log5) / (n * eps_z))
    src = f"{SOURCE}, Theorem 4.8"
    conditions = ctx.closed(problem, closed, total, _phased_conditions(ctx))
    return [
        UtilityValue("Theorem 4.8", _WEAK_GAP, closed, src, conditions, exact_sum=total),
        ctx.exact_form(
            "proof of Theorem 4.8, exact sum",
            _WEAK_GAP,
            total,
            f"{src} (proof, eq. (4) for each half): Σ over Alg. 4 (d_x) and Alg. 5 (d_y) of L√E_K + "
            "Σ_{k≥2} (μ_k/2)E_{k−1} + 8KL²/(μn̄) + (μ_1/2)D² + (μ/2)D², E_k = 2dσ_k² + E‖x_k − x̂*_k‖²",
            problem,
        ),
    ]


def _c_sc(ctx: _Context) -> list[UtilityValue]:
    """Corollary 4.9 as stated and corrected (its last term re-derived from eq. (4)), and the exact sum of eq. (4)."""
    p, mech, L, n, eps_z, delta = ctx.p, ctx.mech, ctx.lipschitz, ctx.n, ctx.eps_z, ctx.delta
    D, K, nbar = p.given_diameter, mech.phases, mech.block_size
    dx, muy = p.d_x, p.mu_y
    rel = list(mech.releases)
    problem = (
        Assumption("f is L-Lipschitz, ℓ-smooth, convex in x and μ_y-strongly concave in y (§4.3)", None),
        Assumption(f"max{{‖x‖, ‖y‖}} ≤ D = {D:g} on 𝒳×𝒴 (x₀ = 0)", None),
    )
    valid = Assumption(
        f"μ_y ≥ L/(D√n) = {L / (D * math.sqrt(n)):.6g} (Corollary 4.9's condition)", muy >= L / (D * math.sqrt(n))
    )
    head = _phased_sum(ctx, rel, [2.0 * ctx.failure * r.accuracy_required / r.phase_mu for r in rel], dx)
    exact = head + sum(8.0 * L * L / (r.phase_m * nbar) for r in rel)
    part1 = 6.0 * L * D * K * (1.0 / math.sqrt(n) + 4.0 * math.sqrt(dx * ctx.log25) / (n * eps_z))
    stated = part1 + L * L * K * K * (
        8.0 / (muy * n) + 65.0 * dx * (math.log(2.5 * n) - math.log(delta)) / (muy * n * n * eps_z * eps_z)
    )
    corrected = part1 + L * L * K * K * (
        8.0 / (muy * n) + 65.0 * (K - 1) * dx * ctx.log25 / (muy * n * n * eps_z * eps_z)
    )
    src = f"{SOURCE}, Corollary 4.9"
    extra = (*_phased_conditions(ctx), valid)
    return [
        ctx.closed_form("Corollary 4.9 (as stated)", _PRIMAL_GAP, stated, src, problem, exact, extra=extra),
        ctx.closed_form(
            "Corollary 4.9 (corrected: 65(K−1)·d_x·log(2.5/δ))",
            _PRIMAL_GAP,
            corrected,
            f"{src}, last term re-derived from eq. (4) with μ → min{{μ_k, μ_y}}",
            problem,
            exact,
            extra=extra,
            role="corrected",
        ),
        ctx.exact_form(
            "proof of Corollary 4.9, exact sum",
            _PRIMAL_GAP,
            exact,
            f"{src} (eq. (4) with m_k = min{{μ_k, μ_y}}): L√E_K + Σ_{{k≥2}} (μ_k/2)E_{{k−1}} + Σ_k 8L²/(m_k n̄) + "
            "(μ_1/2)D², E_k = 2d_xσ_k² + E‖x_k − x̂*_k‖²",
            problem,
        ),
    ]


_BY_CLASS = MappingProxyType(
    {"strongly-convex": _strongly_convex, "sc-sc": _sc_sc, "convex": _convex, "c-c": _c_c, "c-sc": _c_sc}
)


_EMPIRICAL = "excess empirical risk E[F̂_S(x̃) − F̂_S(x̂*_S)]"
_POPULATION = "excess population risk E[F(x̃) − F(x*)]"
_POPULATION_K = "excess population risk E[F(x̃_K) − F(x*)]"
_EMPIRICAL_GAP = "empirical strong duality gap E[max_y F̂_S(x̃, y) − min_x F̂_S(x, ỹ)]"
_STRONG_GAP = "population strong duality gap E[max_y F(x̃, y) − min_x F(x, ỹ)]"
_WEAK_GAP = "population weak duality gap max_y E[F(x̃_K, y)] − min_x E[F(x, ỹ_K)]"
_PRIMAL_GAP = (
    "primal gap max_y E[F(x̃_K, y)] − F(x*, y*) (the paper claims it also for E[Φ(x̃_K) − Φ(x*)]; that step is not "
    "immediate: it needs a stability term)"
)

PREDICTED_MEASURE = MappingProxyType(
    {
        "strongly-convex": _POPULATION,
        "convex": _POPULATION_K,
        "sc-sc": _STRONG_GAP,
        "c-c": _WEAK_GAP,
        "c-sc": _PRIMAL_GAP,
    }
)


def utility_bounds(p: PhasedOutputPerturbationParams, mech: Mechanism, delta: float) -> tuple[UtilityBound, ...]:
    """The utility report's bounds; ``applicable`` says whether the value is a bound here (see UtilityValue.valid)."""
    out = []
    for v in utility_values(p, mech, delta):
        if v.value is None or not math.isfinite(v.value):
            continue
        out.append(UtilityBound.explicit(v.measure, v.value, f"{v.name} — {v.source}", v.assumptions, v.valid))
    return tuple(out)


def predicted_bound(p: PhasedOutputPerturbationParams, mech: Mechanism, delta: float) -> tuple[float, str]:
    """The smallest applicable explicit bound on the measure the simulator reports, and its name."""
    measure = PREDICTED_MEASURE[p.problem_class]
    found = [
        (v.value, v)
        for v in utility_values(p, mech, delta)
        if v.measure == measure and v.value is not None and v.valid and math.isfinite(v.value)
    ]
    value, best = min(found, key=lambda found: found[0])
    return float(value), f"{best.name}: {best.source}"
