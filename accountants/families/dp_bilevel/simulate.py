"""Verification jobs for DP bilevel optimization: the algorithm simulated on synthetic problems, utility measured and
the releases audited."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from ...errors import ParameterError
from ...verification import BlockResult, Job, JobPlan, Simulator, register_simulator
from .params import ALGORITHM_ID, BilevelParams
from .plan import inner_multiplier, mechanisms
from .problems import (
    MAX_SIMULATED_DIMENSION,
    MAX_SIMULATED_RECORDS,
    BilevelProblem,
    Data,
    predicted_utility,
    problem_data,
    project_to_ball,
    quadratic_forms,
    resolve_quadratic,
    resolve_ridge,
    ridge_penalty_gradient,
    step_work,
)
from .utility import InnerSolve


class BilevelSimulator(Simulator[BilevelParams, BilevelProblem]):
    """Algorithm 1 (full batch) or 3 (mini-batch) run on a synthetic problem with closed forms.

    quadratic: the closed-form quadratic problem, built from the declared constants (μ = μ_g, a = ρ = min(1, L₁^f),
    ‖B_i‖ ≤ β = min(1, √(L₁^g/μ_g − 1)), data radius r and 𝒳 = 𝔹(0, 2r) shrunk until L₀^g and L₀^f hold on
    𝒳 × 𝒴), so the declared constants are valid. L*_λ and F are convex quadratics; Δ_F, the smoothness of L*_λ and
    the projected penalty hypergradient ‖G_{L*_λ,η}(x_out)‖ (the measured utility) are exact.
    ridge-tuning: Section 7 with R(θ) = ½‖θ‖², 𝒳 = [ω_min, ω_max] (g strongly convex), the footnote-1 normalisation
    (g_i = (n/n_tr)·loss·[train] + ωR, f_i = (n/n_val)·loss·[validation]); θ*(ω), θ^λ(ω) are linear solves.
    Both: inner solves by DP-Loc-GD/SGD with per-sample clipping at the declared constants and the explicit radius
    schedule; per-sample penalty hypergradients clipped at G; the records are copies of a few prototypes, so a step
    costs O(prototypes·d) whatever n is. Audit: the canary record (a dedicated coordinate of x for quadratic; a
    training label for ridge-tuning) is flipped between D and D′; the score is the last iterate's coordinate.
    """

    problem_model = BilevelProblem
    seconds_per_operation: ClassVar[Mapping[str, float]] = {"utility": 2.9e-08, "privacy-audit": 2.9e-08}
    """Measured by ``python benchmarks/jobs.py --calibrate`` (the example job, one process)."""

    def plan(self, job: Job[BilevelParams, BilevelProblem]) -> JobPlan:
        p, pr, trials, seed = job.params, job.problem, job.trials, job.seed
        if p.mini and p.dataset_size >= MAX_SIMULATED_RECORDS:
            raise ParameterError.single(
                "params.dataset_size",
                f"verification jobs simulate mini-batches of fewer than {MAX_SIMULATED_RECORDS:.0e} records (exact "
                "sampling without replacement)",
                f"an integer in [1, {MAX_SIMULATED_RECORDS - 1}] for variant='mini-batch'",
                p.dataset_size,
            )
        for name in ("dimension_x", "dimension_y"):
            if getattr(p, name) > MAX_SIMULATED_DIMENSION:
                raise ParameterError.single(
                    f"params.{name}",
                    f"verification jobs simulate at most {MAX_SIMULATED_DIMENSION} coordinates",
                    f"an integer in [1, {MAX_SIMULATED_DIMENSION}]",
                    getattr(p, name),
                )
        report = job.privacy()
        z = report.required_noise.noise_multiplier
        z_in = inner_multiplier(p, z)
        resolved = resolve_quadratic(p, pr, seed) if pr.kind == "quadratic" else resolve_ridge(p, pr, seed)
        resolved |= {"kind": pr.kind, "prototypes": pr.prototypes, "inner_noise_multiplier": z_in}
        prediction, note = None, None
        if job.utility:
            prediction, note = predicted_utility(p, resolved, z, z_in)
        run = p.steps * (2.0 * p.inner_total + 1.0) * step_work(p, int(resolved["records"]), trials)
        work = {"utility": run, "privacy-audit": 2.0 * run}  # the audit runs on D and on D′
        return job.plan(
            report,
            params=p.model_dump() | {"noise_multiplier": z, "inner_noise_multiplier": z_in},
            problem=resolved,
            epsilon_exact=None,
            exact_note="no closed form: the inner solves release information too (the accounted ε covers all "
            "T(2K + 1) releases)",
            utility_measure="projected penalty hypergradient ‖G_{L*_λ,η}(x_out)‖ at the output x_{t_out}",
            predicted_bound=prediction,
            predicted_source="explicit bound 4D + √(12·L·Δ_λ/T) (Kornowski 2024, Proposition 4.6, deterministic "
            "form) with the problem's exact Δ_F"
            if prediction is not None
            else None,
            prediction_note=note,
            audit_method=(
                "canary record flipped between D and D′ along a coordinate of x no other record uses; score: that "
                "coordinate of the last iterate"
                if pr.kind == "quadratic"
                else "a training record's label flipped between D and D′; score: the last iterate ω_T"
            ),
            work=work,
        )

    def run_block(self, plan: JobPlan, rng: np.random.Generator, trials: int) -> BlockResult:
        p = BilevelParams.model_validate(
            {k: v for k, v in plan.params.items() if k not in ("noise_multiplier", "inner_noise_multiplier")}
        )
        z, z_in = plan.params["noise_multiplier"], plan.params["inner_noise_multiplier"]
        problem = plan.problem
        out: dict[str, np.ndarray] = {}
        if "utility" in plan.checks:
            x_out, _ = _simulate(p, problem, plan.seed, z, z_in, rng, trials, canary_sign=1.0)
            out["utility"] = _measured(p, problem, plan.seed, x_out)
        if "privacy-audit" in plan.checks:
            _, last_in = _simulate(p, problem, plan.seed, z, z_in, rng, trials, canary_sign=1.0)
            _, last_out = _simulate(p, problem, plan.seed, z, z_in, rng, trials, canary_sign=-1.0)
            out["score_in"], out["score_out"] = last_in[:, 0], last_out[:, 0]
        return BlockResult(**out)


def _simulate(
    p: BilevelParams,
    problem: Mapping[str, Any],
    seed: int,
    z: float,
    z_in: float,
    rng: np.random.Generator,
    trials: int,
    canary_sign: float,
    trace: dict[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``trials`` independent runs of Algorithm 1/3; returns (x_out, x_T), each (trials, d_x).

    With ``trace`` (quadratic only) it records per trial, as maxima over t: ``error`` ‖g̃_t − ∇L*_λ(x_t)‖ (the D of
    Proposition 4.6), ``bias`` ‖g_t − ∇L*_λ(x_t)‖ (before the noise), ``lemma44`` its deterministic bound
    (L₁^f + λL₁^g)‖ỹ^λ_t − y^λ(x_t)‖ + λL₁^g‖ỹ_t − y*(x_t)‖, ``inner_g``/``inner_lambda`` the inner errors and
    ``phi`` the largest per-sample ‖φ_i‖ before clipping."""
    data = problem_data(p, problem, seed, canary_sign)
    objective: _Objective = _Quadratic(p, problem, data) if problem["kind"] == "quadratic" else _Ridge(p, problem, data)
    inner_g, inner_l, outer = mechanisms(p)
    lam, mu_g = p.regularization, p.strong_convexity
    sampler = _sampler(p, data.counts, rng, trials)
    x = objective.start(trials)
    per_solve = p.failure_probability / (4.0 * p.steps)
    r0 = 2.0 * p.lipschitz_g / mu_g
    best, best_move = x.copy(), np.full(trials, np.inf)
    for _ in range(p.steps):
        grad_g, grad_l = objective.gradients(x)
        y_g = _inner_solve(
            p, grad_g, mu_g, inner_g.per_sample_bound, z_in * inner_g.sensitivity, r0, per_solve, sampler, rng, trials
        )
        y_l = _inner_solve(
            p,
            grad_l,
            lam * mu_g / 2.0,
            inner_l.per_sample_bound,
            z_in * inner_l.sensitivity,
            r0 + p.lipschitz_f / (lam * mu_g),
            per_solve,
            sampler,
            rng,
            trials,
        )
        phi = objective.hypergradients(x, y_g, y_l, trials)
        traced = trace is not None and isinstance(objective, _Quadratic)
        raw = np.linalg.norm(phi, axis=-1).max(axis=1) if traced else None
        phi = _clip(phi, outer.per_sample_bound)
        noiseless = np.einsum("tj,tjk->tk", sampler("outer"), phi)
        estimate = noiseless + z * outer.sensitivity * rng.standard_normal((trials, p.dimension_x))
        if traced:
            _trace_step(p, problem, data, x, y_g, y_l, noiseless, estimate, raw, trace)  # type: ignore[arg-type]  # traced: both set
        moved = objective.step(x, estimate)
        move = np.linalg.norm(moved - x, axis=1)
        better = move < best_move
        best[better], best_move[better] = x[better], move[better]
        x = moved
    return best, x


Gradient = Callable[[np.ndarray], np.ndarray]


class _Objective:
    """One synthetic bilevel problem as the simulation uses it: start, per-sample inner gradients at the outer
    iterate, per-sample penalty hypergradients φ_i, and the projected outer step."""

    def __init__(self, p: BilevelParams, problem: Mapping[str, Any], data: Data) -> None:
        self.p, self.problem, self.data = p, problem, data

    def start(self, trials: int) -> np.ndarray:
        raise NotImplementedError

    def gradients(self, x: np.ndarray) -> tuple[Gradient, Gradient]:
        """Per-sample gradients in y of g and of f + λg at the outer iterates x."""
        raise NotImplementedError

    def hypergradients(self, x: np.ndarray, y_g: np.ndarray, y_l: np.ndarray, trials: int) -> np.ndarray:
        raise NotImplementedError

    def step(self, x: np.ndarray, estimate: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class _Quadratic(_Objective):
    """quadratic: g_j = (μ/2)‖y − (B_j x + z_j)‖², f_j = (a/2)‖y − t_j‖² + (ρ/2)‖x − anchor_j‖², on a ball."""

    def start(self, trials: int) -> np.ndarray:
        return np.zeros((trials, self.p.dimension_x))

    def gradients(self, x: np.ndarray) -> tuple[Gradient, Gradient]:
        data, a, mu, lam = self.data, self.problem["curvature"], self.problem["strong_convexity"], self.p.regularization
        centres = np.einsum("jkl,tl->tjk", data.matrices, x) + data.shifts[None]  # B_j x + z_j

        def grad_g(y: np.ndarray) -> np.ndarray:
            return np.asarray(mu * (y[:, None, :] - centres))

        def grad_l(y: np.ndarray) -> np.ndarray:
            return np.asarray(a * (y[:, None, :] - data.targets[None]) + lam * mu * (y[:, None, :] - centres))

        return grad_g, grad_l

    def hypergradients(self, x: np.ndarray, y_g: np.ndarray, y_l: np.ndarray, trials: int) -> np.ndarray:
        rho, mu, lam = self.problem["curvature"], self.problem["strong_convexity"], self.p.regularization
        return np.asarray(
            rho * (x[:, None, :] - self.data.anchors[None])
            - lam * mu * np.einsum("jkl,tk->tjl", self.data.matrices, y_l - y_g)
        )

    def step(self, x: np.ndarray, estimate: np.ndarray) -> np.ndarray:
        return project_to_ball(x - self.p.stepsize * estimate, self.problem["radius"])


class _Ridge(_Objective):
    """ridge-tuning: ω ∈ [ω_min, ω_max] tunes the ridge penalty of a training fit, scored on the validation half."""

    def __init__(self, p: BilevelParams, problem: Mapping[str, Any], data: Data) -> None:
        super().__init__(p, problem, data)
        n_val = p.dataset_size // 2
        self.s_tr, self.s_val = p.dataset_size / (p.dataset_size - n_val), p.dataset_size / n_val
        self.train = data.train.astype(float)

    def start(self, trials: int) -> np.ndarray:
        return np.full((trials, 1), self.problem["initial_omega"])

    def gradients(self, x: np.ndarray) -> tuple[Gradient, Gradient]:
        data, train, s_tr, s_val, lam = self.data, self.train, self.s_tr, self.s_val, self.p.regularization
        omega = x[:, :1]

        def residual(y: np.ndarray) -> np.ndarray:
            return np.asarray((y @ data.anchors.T - data.targets[None])[:, :, None] * data.anchors[None])  # (t, j, d)

        def grad_g(y: np.ndarray) -> np.ndarray:
            return np.asarray(s_tr * train[None, :, None] * residual(y) + (omega * y)[:, None, :])

        def grad_l(y: np.ndarray) -> np.ndarray:
            fit = residual(y)
            return np.asarray(
                s_val * (1.0 - train)[None, :, None] * fit
                + lam * (s_tr * train[None, :, None] * fit + (omega * y)[:, None, :])
            )

        return grad_g, grad_l

    def hypergradients(self, x: np.ndarray, y_g: np.ndarray, y_l: np.ndarray, trials: int) -> np.ndarray:
        gap = 0.5 * self.p.regularization * (np.sum(y_l * y_l, axis=1) - np.sum(y_g * y_g, axis=1))
        return np.broadcast_to(gap[:, None, None], (trials, self.data.counts.size, 1))

    def step(self, x: np.ndarray, estimate: np.ndarray) -> np.ndarray:
        sign = -1.0 if self.problem["printed_sign"] else 1.0
        return np.clip(x - sign * self.p.stepsize * estimate, self.problem["omega_min"], self.problem["omega_max"])


def _trace_step(
    p: BilevelParams,
    problem: Mapping[str, Any],
    data: Data,
    x: np.ndarray,
    y_g: np.ndarray,
    y_l: np.ndarray,
    noiseless: np.ndarray,
    estimate: np.ndarray,
    phi: np.ndarray,
    trace: dict[str, np.ndarray],
) -> None:
    """One outer step's diagnostics against the closed forms y*(x) = B̄x + z̄, y^λ(x) = (a w̄ + λμ y*)/(a + λμ)."""
    w = data.counts / data.counts.sum()
    b_bar = np.einsum("j,jkl->kl", w, data.matrices)
    a, mu, lam = problem["curvature"], problem["strong_convexity"], p.regularization
    y_star = x @ b_bar.T + w @ data.shifts
    y_lam = (a * (w @ data.targets) + lam * mu * y_star) / (a + lam * mu)
    _, a_l, _, b_l = quadratic_forms(p, problem, data)
    exact = x @ a_l.T - b_l[None]
    e0 = np.linalg.norm(y_g - y_star, axis=1)
    el = np.linalg.norm(y_l - y_lam, axis=1)
    values = {
        "error": np.linalg.norm(estimate - exact, axis=1),
        "bias": np.linalg.norm(noiseless - exact, axis=1),
        "lemma44": (p.smoothness_f + lam * p.smoothness_g) * el + lam * p.smoothness_g * e0,
        "inner_g": e0,
        "inner_lambda": el,
        "phi": phi,
    }
    for key, value in values.items():
        trace[key] = np.maximum(trace[key], value) if key in trace else value


def _clip(vectors: np.ndarray, bound: float) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    with np.errstate(over="ignore"):  # bound/norm may overflow to ∞ where the norm is tiny: no clipping there
        return np.asarray(vectors * np.minimum(1.0, bound / np.maximum(norms, 1e-300)))


def _sampler(
    p: BilevelParams, counts: np.ndarray, rng: np.random.Generator, trials: int
) -> Callable[[str], np.ndarray]:
    """weights(kind) → (trials, prototypes): the share of each prototype in the (batch) mean of one step."""
    full = np.broadcast_to(counts / counts.sum(), (trials, counts.size))
    if not p.mini:
        return lambda kind: full
    sizes = {"inner": p.batch_size_inner, "outer": p.batch_size_outer}
    shares = counts / counts.sum()

    def weights(kind: str) -> np.ndarray:
        b = sizes[kind]
        assert b is not None  # mini-batch parameters carry both batch sizes
        if p.batch_sampling == "without-replacement":
            drawn = rng.multivariate_hypergeometric(counts, b, size=trials, method="marginals")
        else:
            drawn = rng.multinomial(b, shares, size=trials)
        return drawn / b

    return weights


def _inner_solve(
    p: BilevelParams,
    gradient: Any,
    strong_convexity: float,
    lipschitz: float,
    noise_std: float,
    radius: float,
    failure: float,
    sampler: Any,
    rng: np.random.Generator,
    trials: int,
) -> np.ndarray:
    """DP-Loc-GD (Algorithm 2) / DP-Loc-SGD (Algorithm 4) from y₀ = 0: M rounds of T_GD projected noisy steps with
    η_t = 1/(μ(t+1)), per-sample gradients clipped at L, averaged iterates recentre the next ball, whose radius follows
    the explicit schedule (Theorem 8.2's proof, constants reconstructed here)."""
    rounds, steps, dy = p.inner_rounds, p.inner_steps, p.dimension_y
    batch = p.batch_size_inner if p.mini else None
    step = InnerSolve(lipschitz, strong_convexity, noise_std, rounds, steps, dy, failure, batch).radius_step()
    centre = np.zeros((trials, dy))
    for _ in range(rounds):
        y = centre.copy()
        total = np.zeros_like(centre)
        for t in range(steps):
            total += y
            grads = _clip(gradient(y), lipschitz)
            mean = np.einsum("tj,tjk->tk", sampler("inner"), grads)
            y = y - (mean + noise_std * rng.standard_normal((trials, dy))) / (strong_convexity * (t + 1))
            y = centre + project_to_ball(y - centre, radius)
        centre = total / steps
        radius = step(radius)
    return centre


def _measured(p: BilevelParams, problem: Mapping[str, Any], seed: int, x_out: np.ndarray) -> np.ndarray:
    """‖G_{L*_λ,η}(x_out)‖ = ‖x − Proj_𝒳(x − η∇L*_λ(x))‖/η on D, from the closed form of ∇L*_λ."""
    data = problem_data(p, problem, seed, 1.0)
    eta = p.stepsize
    if problem["kind"] == "quadratic":
        _, a_l, _, b_l = quadratic_forms(p, problem, data)
        gradient = x_out @ a_l.T - b_l[None]
        projected = project_to_ball(x_out - eta * gradient, problem["radius"])
    else:
        gradient = np.array([[ridge_penalty_gradient(p, data, float(w))] for w in x_out[:, 0]])
        projected = np.clip(x_out - eta * gradient, problem["omega_min"], problem["omega_max"])
    return np.asarray(np.linalg.norm(x_out - projected, axis=1) / eta)


register_simulator(ALGORITHM_ID, BilevelSimulator())
