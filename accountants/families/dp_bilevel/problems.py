"""Synthetic bilevel problems for verification jobs: quadratic and ridge-tuning data, their exact solutions and the
predicted utility."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ...errors import FieldIssue, ParameterError
from ...params import ParamsModel, param
from .params import BilevelParams
from .utility import error_budget, explicit_bound

# -- simulation (verification jobs) --------------------------------------------------------------------------------

MAX_SIMULATED_DIMENSION = 32
MAX_SIMULATED_RECORDS = 10**9


class BilevelProblem(ParamsModel):
    """The synthetic problem of a dp-bilevel verification job (ours, not the paper's)."""

    kind: Literal["quadratic", "ridge-tuning"] = param(example="quadratic", default="quadratic")
    """quadratic (default): a closed-form quadratic bilevel problem (ours), f_i = (a/2)‖y − w_i‖² + (ρ/2)‖x −
    v_i‖², g_i = (μ_g/2)‖y − B_i x − z_i‖², 𝒳 a ball, built to satisfy the declared constants. ridge-tuning: Section
    7, the ridge penalty ω of a linear model tuned on validation loss (dimension_x = 1)."""
    prototypes: int = param(unit="records", example=8, default=8, ge=2, le=32)
    """Distinct records: the n records are copies of this many random prototypes (so any dataset_size is cheap)."""
    omega_min: float = param(symbol="ω_min", example=0.1, ge=1e-3, le=1e3, default=0.1)
    """ridge-tuning: lower end of 𝒳 = [ω_min, ω_max] (g is ω_min-strongly convex in θ, which Section 7 needs)."""
    omega_max: float = param(symbol="ω_max", example=5.0, ge=1e-3, le=1e3, default=5.0)
    """ridge-tuning: upper end of 𝒳 = [ω_min, ω_max]."""
    initial_omega: float | None = param(symbol="ω₀", example=1.0, ge=1e-3, le=1e3, default=None)
    """ridge-tuning: the starting point ω₀ (default: 1 clipped to 𝒳)."""
    feature_norm: float = param(symbol="r", example=1.0, ge=1e-3, le=10, default=1.0)
    """ridge-tuning: bound r on ‖a_i‖ and |b_i| of every record."""
    printed_sign: bool = param(example=False, default=False)
    """ridge-tuning: use the Section 7 update as printed, ω + ηλ(R(θ^λ) − R(θ)) (gradient ascent, erratum),
    instead of Algorithm 1's step."""


@dataclass(frozen=True)
class Data:
    """Prototype records and their multiplicities; the canary (index 0) is the record that differs between D and D′."""

    counts: np.ndarray
    matrices: np.ndarray
    shifts: np.ndarray
    targets: np.ndarray
    anchors: np.ndarray
    train: np.ndarray


def _data_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32 + 3,)))


def _counts(n: int, prototypes: int) -> np.ndarray:
    """Multiplicities: the canary (1 record) then the n − 1 others spread over the prototypes."""
    rest = n - 1
    k = max(1, min(prototypes, rest))
    base = np.full(k, rest // k, dtype=np.int64)
    base[: rest % k] += 1
    return np.concatenate(([1], base[base > 0])).astype(np.int64) if rest > 0 else np.array([1], dtype=np.int64)


def project_to_ball(points: np.ndarray, radius: float) -> np.ndarray:
    norms = np.linalg.norm(points, axis=-1, keepdims=True)
    with np.errstate(over="ignore"):
        return np.asarray(points * np.minimum(1.0, radius / np.maximum(norms, 1e-300)))


def _quadratic_data(seed: int, n: int, dx: int, dy: int, prototypes: int, problem: Mapping[str, Any]) -> Data:
    """Prototypes with non-zero means (centre + 0.3·noise); coordinate 0 of x belongs to the canary: every
    B_i has a zero first column and every other record has v_i[0] = 0."""
    rng = _data_rng(seed)
    counts = _counts(n, prototypes)
    m = counts.size
    r, beta = problem["scale"], problem["coupling"]
    centre = rng.standard_normal((dy, dx))
    raw = centre[None] + 0.3 * rng.standard_normal((m, dy, dx))
    raw[:, :, 0] = 0.0
    norms = np.array([np.linalg.norm(b, 2) for b in raw])
    matrices = raw * (beta / max(float(norms.max()), 1e-300))
    matrices[0] = matrices[min(1, m - 1)]

    def vectors(d: int) -> np.ndarray:
        c = rng.standard_normal(d)
        c = 0.7 * r * c / max(float(np.linalg.norm(c)), 1e-300)
        return project_to_ball(c[None] + 0.3 * r * rng.standard_normal((m, d)) / math.sqrt(d), r)

    shifts, targets, anchors = vectors(dy), vectors(dy), vectors(dx)
    anchors[:, 0] = 0.0
    shifts[0], targets[0] = shifts[min(1, m - 1)], targets[min(1, m - 1)]
    anchors[0] = 0.0
    anchors[0, 0] = r  # the canary on D; D′ holds −r
    return Data(counts, matrices, shifts, targets, anchors, np.ones(m, dtype=bool))


def _ridge_data(seed: int, n: int, dy: int, prototypes: int, r: float) -> Data:
    """Ridge records (a_i, b_i), ‖a_i‖ ≤ r, |b_i| ≤ r, labels b = aᵀθ_true (+ noise on training records, so that the
    validation loss prefers some shrinkage): even prototypes train, odd ones validate (n_val = ⌊n/2⌋). Index 0 is the
    canary, one training record (a copy of the first training prototype) whose label flips sign between D and D′."""
    rng = _data_rng(seed)
    m = max(2, prototypes)
    truth = rng.standard_normal(dy)
    truth /= np.linalg.norm(truth)
    features = project_to_ball(r * rng.standard_normal((m, dy)), r)
    train = np.arange(m) % 2 == 0
    labels = np.clip(features @ truth + np.where(train, 0.5 * r * rng.standard_normal(m), 0.0), -r, r)
    n_val = n // 2
    n_tr = n - n_val
    counts = np.zeros(m, dtype=np.int64)
    tr_idx, val_idx = np.flatnonzero(train), np.flatnonzero(~train)
    counts[tr_idx] = (n_tr - 1) // tr_idx.size
    counts[tr_idx[: (n_tr - 1) % tr_idx.size]] += 1
    counts[val_idx] = n_val // val_idx.size
    counts[val_idx[: n_val % val_idx.size]] += 1
    keep = np.concatenate(([True], counts > 0))
    order = np.concatenate(([0], np.arange(m)))[keep]
    counts = np.concatenate(([1], counts))[keep]
    size = int(keep.sum())
    return Data(
        counts,
        np.zeros((size, dy, 1)),
        np.zeros((size, dy)),
        labels[order].copy(),
        features[order].copy(),
        train[order].copy(),
    )


def _ball_qp(matrix: np.ndarray, vector: np.ndarray, radius: float) -> np.ndarray:
    """argmin_{‖x‖ ≤ R} ½xᵀAx − bᵀx for A ≻ 0 (Lagrange multiplier by bisection)."""
    values, vecs = np.linalg.eigh(matrix)
    coords = vecs.T @ vector

    def norm_at(nu: float) -> float:
        return float(np.linalg.norm(coords / (values + nu)))

    if norm_at(0.0) <= radius:
        return np.asarray(vecs @ (coords / values))
    lo, hi = 0.0, 1.0
    while norm_at(hi) > radius:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if norm_at(mid) > radius else (lo, mid)
    return np.asarray(vecs @ (coords / (values + hi)))


def step_work(p: BilevelParams, records: int, trials: int) -> float:
    """Cost of one (inner or outer) step of all trials, in operations (priced in seconds by the simulator's
    ``seconds_per_operation``): a fixed cost per block of 64 trials (numpy calls dominate) plus the arithmetic per
    trial."""
    blocks = -(-trials // 64)
    per_trial = 0.3 * records * (p.dimension_x + p.dimension_y) + (8.0 * records if p.mini else 0.0)
    return blocks * 1000.0 + trials * per_trial


def resolve_quadratic(p: BilevelParams, pr: BilevelProblem, seed: int) -> dict[str, Any]:
    mu = p.strong_convexity
    beta = min(1.0, math.sqrt(max(0.0, p.smoothness_g / mu - 1.0)))
    curvature = min(1.0, p.smoothness_f)  # a = ρ
    ratio = 2.0  # R_x = 2r
    scale = min(
        1.0,
        p.lipschitz_g / (2.0 * mu * (beta * ratio + 1.0)),
        p.lipschitz_f / math.hypot(curvature * (ratio + 1.0), curvature * (beta * ratio + 2.0)),
    )
    resolved: dict[str, Any] = {
        "strong_convexity": mu,
        "coupling": beta,
        "curvature": curvature,
        "scale": scale,
        "radius": ratio * scale,
    }
    data = _quadratic_data(seed, p.dataset_size, p.dimension_x, p.dimension_y, pr.prototypes, resolved)
    a_f, a_l, b_f, b_l = quadratic_forms(p, resolved, data)
    x0 = np.zeros(p.dimension_x)
    x_f = _ball_qp(a_f, b_f, resolved["radius"])
    x_l = _ball_qp(a_l, b_l, resolved["radius"])

    def value(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> float:
        return float(0.5 * x @ a @ x - b @ x)

    resolved |= {
        "records": int(data.counts.size),
        "initial_suboptimality": value(a_f, b_f, x0) - value(a_f, b_f, x_f),
        "penalty_suboptimality": value(a_l, b_l, x0) - value(a_l, b_l, x_l),
        "penalty_smoothness": float(np.linalg.eigvalsh(a_l).max()),
    }
    return resolved


def quadratic_forms(
    p: BilevelParams, resolved: Mapping[str, Any], data: Data
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """F(x) = ½xᵀA_F x − b_Fᵀx + c and L*_λ(x) = ½xᵀA_λ x − b_λᵀx + c′ on D (with f's y-curvature a):
    A_F = ρI + aB̄ᵀB̄, A_λ = ρI + kB̄ᵀB̄ with k = aλμ/(a + λμ), b = ρv̄ + (a or k)B̄ᵀ(w̄ − z̄)."""
    w = data.counts / data.counts.sum()
    b_bar = np.einsum("j,jkl->kl", w, data.matrices)
    z_bar, w_bar, v_bar = w @ data.shifts, w @ data.targets, w @ data.anchors
    a, rho, mu, lam = resolved["curvature"], resolved["curvature"], resolved["strong_convexity"], p.regularization
    k = a * lam * mu / (a + lam * mu)
    gram = b_bar.T @ b_bar
    eye = np.eye(p.dimension_x)
    return (
        rho * eye + a * gram,
        rho * eye + k * gram,
        rho * v_bar + a * b_bar.T @ (w_bar - z_bar),
        rho * v_bar + k * b_bar.T @ (w_bar - z_bar),
    )


def _ridge_constants(p: BilevelParams, pr: BilevelProblem) -> dict[str, float]:
    """The constants the ridge instance has (after footnote 1's normalisation), over 𝒳 × 𝒴 with 𝒴 = 𝔹(0, r²/ω_min)."""
    n = p.dataset_size
    n_val = n // 2
    n_tr = n - n_val
    r, lo, hi = pr.feature_norm, pr.omega_min, pr.omega_max
    s_tr, s_val = n / n_tr, n / max(n_val, 1)
    y = r * r / lo
    return {
        "strong_convexity": lo,
        "lipschitz_g": s_tr * r * (r * y + r) + hi * y,
        "smoothness_g": s_tr * r * r + hi + y,
        "hessian_lipschitz_g": math.sqrt(2.0),
        "lipschitz_f": s_val * r * (r * y + r),
        "smoothness_f": s_val * r * r,
    }


def resolve_ridge(p: BilevelParams, pr: BilevelProblem, seed: int) -> dict[str, Any]:
    issues = []
    if p.dimension_x != 1:
        issues.append(
            FieldIssue(("params", "dimension_x"), "ridge-tuning tunes one hyperparameter ω", "1", p.dimension_x)
        )
    if p.dataset_size < 4:
        issues.append(
            FieldIssue(("params", "dataset_size"), "ridge-tuning needs training and validation records", ">= 4")
        )
    if pr.omega_max <= pr.omega_min:
        issues.append(
            FieldIssue(("problem", "omega_max"), "must exceed omega_min", f"> {pr.omega_min:g}", pr.omega_max)
        )
    start = pr.initial_omega if pr.initial_omega is not None else min(max(1.0, pr.omega_min), pr.omega_max)
    if not pr.omega_min <= start <= pr.omega_max:
        issues.append(
            FieldIssue(("problem", "initial_omega"), "must lie in [omega_min, omega_max]", None, pr.initial_omega)
        )
    if issues:
        raise ParameterError(issues)
    needed = _ridge_constants(p, pr)
    for name, value in needed.items():
        declared = getattr(p, name)
        wrong = declared > value * (1 + 1e-12) if name == "strong_convexity" else declared < value * (1 - 1e-12)
        if wrong:
            relation = "<=" if name == "strong_convexity" else ">="
            issues.append(
                FieldIssue(
                    ("params", name),
                    "does not hold for the ridge-tuning instance (after footnote 1's normalisation)",
                    f"{relation} {value:.6g}",
                    declared,
                )
            )
    if issues:
        raise ParameterError(issues)
    resolved: dict[str, Any] = {
        "omega_min": pr.omega_min,
        "omega_max": pr.omega_max,
        "initial_omega": start,
        "feature_norm": pr.feature_norm,
        "printed_sign": pr.printed_sign,
    }
    data = _ridge_data(seed, p.dataset_size, p.dimension_y, pr.prototypes, pr.feature_norm)
    grid = np.linspace(pr.omega_min, pr.omega_max, 201)
    hyper = np.array([_ridge_hyper(p, data, w)[0] for w in grid])
    penalty = np.array([_ridge_penalty(p, data, w) for w in grid])
    slopes = np.array([ridge_penalty_gradient(p, data, w) for w in grid])
    curvature = float(np.max(np.abs(np.diff(slopes)) / (grid[1] - grid[0])))
    resolved |= {
        "records": int(data.counts.size),
        "initial_suboptimality": float(_ridge_hyper(p, data, start)[0] - hyper.min()),
        "penalty_suboptimality": float(_ridge_penalty(p, data, start) - penalty.min()),
        "penalty_smoothness": curvature,
    }
    return resolved


def _ridge_moments(data: Data) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(H_tr, H_val, c_tr, c_val, [mean b² train, validation]): H = mean aaᵀ, c = mean b·a over each split."""
    a, b, c, train = data.anchors, data.targets, data.counts.astype(float), data.train
    wt, wv = c * train / (c * train).sum(), c * ~train / (c * ~train).sum()
    outer = np.einsum("j,jk,jl->kl", wt, a, a), np.einsum("j,jk,jl->kl", wv, a, a)
    linear = wt @ (b[:, None] * a), wv @ (b[:, None] * a)
    squares = np.array([wt @ (b * b), wv @ (b * b)])
    return outer[0], outer[1], linear[0], linear[1], squares


def _ridge_hyper(p: BilevelParams, data: Data, omega: float) -> tuple[float, np.ndarray]:
    """F(ω) = f_S(θ*(ω)) with θ*(ω) = (H_tr + ωI)^{-1}c_tr."""
    h_tr, h_val, c_tr, c_val, sq = _ridge_moments(data)
    theta = np.linalg.solve(h_tr + omega * np.eye(h_tr.shape[0]), c_tr)
    return float(0.5 * theta @ h_val @ theta - c_val @ theta + 0.5 * sq[1]), theta


def _ridge_lambda_point(p: BilevelParams, data: Data, omega: float) -> np.ndarray:
    h_tr, h_val, c_tr, c_val, _ = _ridge_moments(data)
    lam = p.regularization
    return np.linalg.solve(h_val + lam * (h_tr + omega * np.eye(h_tr.shape[0])), c_val + lam * c_tr)


def _ridge_penalty(p: BilevelParams, data: Data, omega: float) -> float:
    """L*_λ(ω) = f_S(θ^λ) + λ(g_S(ω, θ^λ) − g_S(ω, θ*))."""
    h_tr, h_val, c_tr, c_val, sq = _ridge_moments(data)
    _, theta = _ridge_hyper(p, data, omega)
    theta_l = _ridge_lambda_point(p, data, omega)

    def g(t: np.ndarray) -> float:
        return float(0.5 * t @ h_tr @ t - c_tr @ t + 0.5 * sq[0] + 0.5 * omega * t @ t)

    f = float(0.5 * theta_l @ h_val @ theta_l - c_val @ theta_l + 0.5 * sq[1])
    return f + p.regularization * (g(theta_l) - g(theta))


def ridge_penalty_gradient(p: BilevelParams, data: Data, omega: float) -> float:
    """∇L*_λ(ω) = λ(R(θ^λ) − R(θ*)) with R = ½‖·‖² (eq. 3; Section 7)."""
    _, theta = _ridge_hyper(p, data, omega)
    theta_l = _ridge_lambda_point(p, data, omega)
    return 0.5 * p.regularization * float(theta_l @ theta_l - theta @ theta)


def predicted_utility(
    p: BilevelParams, resolved: Mapping[str, Any], z: float, z_in: float
) -> tuple[float | None, str | None]:
    """The family's explicit bound with the problem's exact Δ_F, if the stepsize satisfies η ≤ 1/(2L)."""
    actual = resolved["initial_suboptimality"]
    if p.initial_suboptimality is not None and p.initial_suboptimality < actual * (1 - 1e-9):
        raise ParameterError.single(
            "params.initial_suboptimality",
            f"is below the problem's F(x₀) − min F = {actual:.6g}",
            f">= {actual:.6g}, or omit it",
            p.initial_suboptimality,
        )
    smooth = resolved["penalty_smoothness"]
    if p.stepsize > 1.0 / (2.0 * smooth):
        return None, (
            f"no prediction: stepsize {p.stepsize:.6g} > 1/(2L) = {1.0 / (2.0 * smooth):.6g} with L = {smooth:.6g} the "
            "smoothness of L*_λ on this problem (Proposition 4.6)"
        )
    used = p.model_copy(update={"initial_suboptimality": max(actual, 1e-300)})
    bound = explicit_bound(used, error_budget(used, z, z_in).total)
    note = (
        f"w.p. ≥ 1 − γ = {1 - p.failure_probability:g} per run; Δ_F = {actual:.6g} exact; the inner radii use the "
        "constants of Theorem 8.2's proof, reconstructed here"
    )
    return (bound if math.isfinite(bound) else None), note


def problem_data(p: BilevelParams, problem: Mapping[str, Any], seed: int, canary_sign: float) -> Data:
    if problem["kind"] == "quadratic":
        data = _quadratic_data(seed, p.dataset_size, p.dimension_x, p.dimension_y, problem["prototypes"], problem)
        data.anchors[0, 0] = canary_sign * problem["scale"]
    else:
        data = _ridge_data(seed, p.dataset_size, p.dimension_y, problem["prototypes"], problem["feature_norm"])
        data.targets[0] = canary_sign * data.targets[0]
    return data
