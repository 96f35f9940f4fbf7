"""Synthetic problems with closed-form utility for the ``phased-output-perturbation`` simulator (Zhang, Thekumparampil,
Oh & He 2022, arXiv:2206.00363).

One problem per ``problem_class``, each scaled to the *declared* constants (L, ℓ, μ, D) so that the theorems apply:

* E1, strongly-convex: f(x; ξ) = (μ/2)‖x − ξ‖², ξ uniform on the sphere of radius R = L/(2μ) (so ‖∇f‖ ≤ 2μR = L),
  x* = 0, F(x) − F(x*) = (μ/2)‖x‖²; the ERM is the mean of the records (exact solver).
* E2, convex: least squares f = ½(aᵀx − b)², a uniform on the sphere of radius s in the first r = ⌈d/2⌉ coordinates
  (Σ = (s²/r)P_r, singular), b = aᵀθ + U[−0.1sD, 0.1sD], ‖θ‖ = D/2, 𝒳 = ball(D): L = 1.6s²D, ℓ = s²;
  F(x) − F(θ) = ½(x − θ)ᵀΣ(x − θ), measured at Π_𝒳(x̃_K) (least squares is L-Lipschitz on 𝒳 only); each phase is
  a ball-constrained quadratic solved exactly (eigh + bisection).
* E3, sc-sc: f = (μ_x/2)‖x‖² + xᵀAy − (μ_y/2)‖y‖² + b_ξᵀx − c_ξᵀy, b_ξ = b₀ + βu, c_ξ = c₀ + βv (u, v uniform
  on unit spheres); ‖[[μ_x I, A], [Aᵀ, −μ_y I]]‖ = ℓ, saddles interior to balls of radius R on which the joint
  gradient is ≤ L; strong gap ½e_xᵀH_Φe_x + ½e_yᵀH_Ψe_y (exact linear solves).
* E4, c-c: f = xᵀAy + b_ξᵀx − c_ξᵀy on balls of radius D, ‖A‖ = s = L/(1.75√2·D); gap max/min over the balls in
  closed form; phase problems solved by proximal extragradient to a certified accuracy (a-posteriori certificate).
* E5, c-sc: f = xᵀAy + b_ξᵀx − c_ξᵀy − (μ_y/2)‖y‖² on balls of radius D, b₀ chosen so that x* (‖x*‖ = D/2) is
  the minimiser of Φ(x) = max_y F(x, y) = b₀ᵀx + ψ(Aᵀx − c₀) (Huber-type ψ), so Φ* is closed-form.

The privacy audit distinguishes D from D′ (one record replaced) through the releases that see the record (phase 1
of each phased run), with a *compliant worst-case* base solver by default: it returns the exact solution moved by the
full accuracy the privacy proof allows, towards the other data set's output on one side and away on the other.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

CHUNK_FLOATS = 2_000_000
"""Records × coordinates drawn at once (memory bound of a trial chunk)."""


def problem_rng(seed: int) -> np.random.Generator:
    """The fixed synthetic problem and the audit's data set: a stream of the job's seed apart from the trials'."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32,)))


def audit_rng(seed: int) -> np.random.Generator:
    """The audit's fixed data set D: a stream of its own."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32, 1)))


def sphere(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Uniform on the unit sphere along the last axis."""
    g = rng.standard_normal(shape)
    return np.asarray(g / np.maximum(np.linalg.norm(g, axis=-1, keepdims=True), 1e-300))


def sphere_means(rng: np.random.Generator, trials: int, records: int, dim: int) -> np.ndarray:
    """(trials, dim): the mean of ``records`` uniform unit-sphere vectors, per trial (drawn in memory-bound chunks)."""
    out = np.empty((trials, dim))
    per_trial = max(1, records * dim)
    chunk = max(1, CHUNK_FLOATS // per_trial)
    for start in range(0, trials, chunk):
        stop = min(trials, start + chunk)
        if records * dim <= CHUNK_FLOATS:
            out[start:stop] = sphere(rng, (stop - start, records, dim)).mean(axis=1)
        else:
            for t in range(start, stop):
                total = np.zeros(dim)
                step = max(1, CHUNK_FLOATS // dim)
                for r0 in range(0, records, step):
                    total += sphere(rng, (min(step, records - r0), dim)).sum(axis=0)
                out[t] = total / records
    return out


def project_ball(v: np.ndarray, radius: float) -> np.ndarray:
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.asarray(v * np.minimum(1.0, radius / np.maximum(norms, 1e-300)))


def random_matrix(rng: np.random.Generator, rows: int, cols: int, top: float) -> np.ndarray:
    """A rows × cols matrix with singular values evenly spaced from ``top`` down to ``top``/2."""
    u, _, vt = np.linalg.svd(rng.standard_normal((rows, cols)), full_matrices=False)
    k = min(rows, cols)
    return np.asarray((u * np.linspace(top, top / 2.0, k)) @ vt)


def unit(rng: np.random.Generator, dim: int) -> np.ndarray:
    return sphere(rng, (dim,))


# -- solvers -------------------------------------------------------------------------------------------------------


def ball_quadratic(h: np.ndarray, g: np.ndarray, radius: float) -> np.ndarray:
    """argmin_{‖x‖ ≤ R} ½xᵀHx − gᵀx for a batch (H: (t, d, d) positive definite, g: (t, d)); exact to rounding.

    KKT: x = (H + νI)⁻¹g with ν ≥ 0 the root of ‖x(ν)‖ = R when the unconstrained minimiser lies outside; bisection
    on ν ∈ [0, ‖g‖/R] (100 halvings), keeping the feasible end."""
    w, v = np.linalg.eigh(h)
    gt = np.einsum("tij,ti->tj", v, g)
    x = gt / w
    outside = np.linalg.norm(x, axis=1) > radius
    if outside.any():
        lo = np.zeros(int(outside.sum()))
        hi = np.linalg.norm(g[outside], axis=1) / radius
        wo, go = w[outside], gt[outside]
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            big = np.linalg.norm(go / (wo + mid[:, None]), axis=1) > radius
            lo, hi = np.where(big, mid, lo), np.where(big, hi, mid)
        x[outside] = go / (wo + hi[:, None])
    return np.asarray(np.einsum("tij,tj->ti", v, x))


def extragradient_constant(ell_b: float, mu_g: float) -> float:
    """C of the certificate ‖z − z*‖ ≤ C‖z − prox_{ηg}(z − ηB(z))‖ with η = 1/(2ℓ_B) (the standard error bound for
    strongly monotone inclusions)."""
    eta = 1.0 / (2.0 * ell_b)
    return (1.0 / eta + ell_b + math.sqrt(ell_b * mu_g)) / mu_g + 1.0


def extragradient_iterations(ell_b: float, mu_g: float, radius: float, tol: float) -> int:
    """Estimated proximal-extragradient iterations to certify ‖z − z*‖ ≤ tol from ‖z₀ − z*‖ ≤ 2√2R.

    Assumes the contraction 1/(1 + ημ_g) per iteration (η = 1/(2ℓ_B)) and that the certificate's residual is at most
    2‖z − z*‖; on 300 random instances (constraints active or not) the iterations stayed below 0.85 of this. The
    solver gives up at :data:`ITERATION_CAP_FACTOR` times it."""
    eta = 1.0 / (2.0 * ell_b)
    c = extragradient_constant(ell_b, mu_g)
    ratio = max(2.0, 4.0 * math.sqrt(2.0) * radius * c / tol)
    return math.ceil(math.log(ratio) / math.log1p(eta * mu_g)) + 2


ITERATION_CAP_FACTOR = 4


def prox_extragradient(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    mu_x: float,
    center_x: np.ndarray,
    mu_y: float,
    center_y: np.ndarray,
    radius: float,
    tol: float,
    max_iterations: int,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Saddle point of xᵀAy + bᵀx − cᵀy + (μ_x/2)‖x − c_x‖² − (μ_y/2)‖y − c_y‖² over balls of radius R, per row.

    Proximal extragradient (Korpelevich/Tseng) with η = 1/(2‖A‖) on the bilinear part, the regularisers and balls in
    the prox; stops when the a-posteriori certificate C‖r(z)‖ ≤ tol guarantees ‖z − z*‖ ≤ tol in every row."""
    ell = max(float(np.linalg.norm(a, 2)), 1e-12 * min(mu_x, mu_y))
    eta = 1.0 / (2.0 * ell)
    constant = extragradient_constant(ell, min(mu_x, mu_y))
    sx, sy = 1.0 / (1.0 + eta * mu_x), 1.0 / (1.0 + eta * mu_y)
    ax, ay = eta * mu_x * center_x * sx, eta * mu_y * center_y * sy

    def operator(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return y @ a.T + b, c - x @ a

    def prox(vx: np.ndarray, vy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return project_ball(vx * sx + ax, radius), project_ball(vy * sy + ay, radius)

    x, y = project_ball(center_x.copy(), radius), project_ball(center_y.copy(), radius)
    for iteration in range(max_iterations):
        gx, gy = operator(x, y)
        px, py = prox(x - eta * gx, y - eta * gy)
        residual = np.sqrt(np.sum((x - px) ** 2, axis=1) + np.sum((y - py) ** 2, axis=1))
        if np.all(constant * residual <= tol):
            return x, y, iteration
        hx, hy = operator(px, py)
        x, y = prox(x - eta * hx, y - eta * hy)
    raise RuntimeError(f"proximal extragradient did not certify ‖z − z*‖ ≤ {tol:.3g} in {max_iterations} iterations")


# -- problems ------------------------------------------------------------------------------------------------------


def build(problem_class: str, consts: Mapping[str, Any], seed: int) -> dict[str, Any]:
    """The synthetic problem of ``problem_class`` for the declared constants, JSON-serialisable."""
    return _BUILDERS[problem_class](consts, problem_rng(seed))


def _e1(consts: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """E1 (strongly convex): (μ/2)‖x − ξ‖², ξ on a sphere of radius L/(2μ)."""
    L, mu = consts["lipschitz"], consts["mu_x"]
    return {"kind": "E1: (μ/2)‖x − ξ‖², ξ on a sphere", "curvature": mu, "radius": L / (2.0 * mu)}


def _e2(consts: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """E2 (convex): ball-constrained least squares of rank ⌈d/2⌉."""
    L, d, D = consts["lipschitz"], consts["d_x"], consts["diameter"]
    ell = consts.get("smoothness")
    s2 = L / (1.6 * D) if ell is None else min(L / (1.6 * D), ell)
    r = max(1, -(-d // 2))
    theta = np.zeros(d)
    theta[:r] = unit(rng, r) * D / 2.0
    return {
        "kind": "E2: ball-constrained least squares",
        "feature_norm": math.sqrt(s2),
        "rank": r,
        "theta": theta.tolist(),
        "label_noise": 0.1 * math.sqrt(s2) * D,
        "radius": D,
    }


def _e3(consts: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """E3 (SC-SC): a quadratic saddle with ‖M‖ = |μ_x − μ_y|/2 + √(((μ_x + μ_y)/2)² + s²) = ℓ."""
    L = consts["lipschitz"]
    mux, muy, ell, dx, dy = consts["mu_x"], consts["mu_y"], consts["smoothness"], consts["d_x"], consts["d_y"]
    top = max(0.0, (ell - abs(mux - muy) / 2.0) ** 2 - ((mux + muy) / 2.0) ** 2)
    s = math.sqrt(top) * (1.0 - 1e-9)
    a = random_matrix(rng, dx, dy, s) if s > 0 else np.zeros((dx, dy))
    r1 = math.sqrt(2.0) * 0.5 / min(mux, muy)
    l1 = math.hypot(mux * r1 + s * r1 + 0.5, s * r1 + muy * r1 + 0.5)
    t = L / l1
    return {
        "kind": "E3: quadratic SC-SC saddle",
        "a": a.tolist(),
        "b0": (0.3 * t * unit(rng, dx)).tolist(),
        "c0": (0.3 * t * unit(rng, dy)).tolist(),
        "spread": 0.2 * t,
        "radius": r1 * t,
    }


def _e4(consts: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """E4 (C-C): a bilinear saddle on balls."""
    L, D, dx, dy = consts["lipschitz"], consts["diameter"], consts["d_x"], consts["d_y"]
    ell = consts.get("smoothness")
    s = L / (1.75 * math.sqrt(2.0) * D)
    if ell is not None:
        s = min(s, ell)
    return {
        "kind": "E4: bilinear C-C on balls",
        "a": random_matrix(rng, dx, dy, s).tolist(),
        "b0": (0.25 * s * D * unit(rng, dx)).tolist(),
        "c0": (0.25 * s * D * unit(rng, dy)).tolist(),
        "spread": 0.5 * s * D,
        "radius": D,
    }


def _e5(consts: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """E5 (C-SC): a bilinear saddle on balls with a Huber-smoothed y-player, scaled by bisection to Lipschitz L."""
    L, D, dx, dy = consts["lipschitz"], consts["diameter"], consts["d_x"], consts["d_y"]
    ell, muy = consts.get("smoothness"), consts["mu_y"]
    base = random_matrix(rng, dx, dy, 1.0)
    x_star = 0.5 * D * unit(rng, dx)
    c_dir = unit(rng, dy)

    def instance(s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        a = s * base
        c0 = 0.25 * s * D * c_dir
        b0 = -a @ huber_argmax(a.T @ x_star - c0, muy, D)
        lip = math.hypot(s * D + float(np.linalg.norm(b0)) + 0.5 * s * D, s * D + muy * D + 0.25 * s * D + 0.5 * s * D)
        return a, b0, c0, lip

    hi = math.inf if ell is None else math.sqrt(max(0.0, ell * ell - muy * ell))
    hi = min(hi, L / D)
    lo = 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if instance(mid)[3] <= L:
            lo = mid
        else:
            hi = mid
    a, b0, c0, _ = instance(lo)
    return {
        "kind": "E5: bilinear C-SC on balls",
        "a": a.tolist(),
        "b0": b0.tolist(),
        "c0": c0.tolist(),
        "spread": 0.5 * lo * D,
        "radius": D,
        "x_star": x_star.tolist(),
        "phi_star": float(phi_csc(x_star[None, :], a, b0, c0, muy, D)[0]),
    }


_BUILDERS: Mapping[str, Callable[[Mapping[str, Any], np.random.Generator], dict[str, Any]]] = {
    "strongly-convex": _e1,
    "convex": _e2,
    "sc-sc": _e3,
    "c-c": _e4,
    "c-sc": _e5,
}


def csc_scale_exists(lipschitz: float, strong_concavity: float, diameter: float) -> bool:
    """E5 needs L > μ_y·D: the −(μ_y/2)‖y‖² term alone has gradient μ_y‖y‖ up to μ_y·D on the ball."""
    return lipschitz > strong_concavity * diameter * (1.0 + 1e-9)


def huber_argmax(v: np.ndarray, mu: float, radius: float) -> np.ndarray:
    """argmax_{‖y‖ ≤ R} vᵀy − (μ/2)‖y‖² = Π_ball(v/μ) (rows)."""
    return project_ball(v / mu, radius)


def phi_csc(x: np.ndarray, a: np.ndarray, b0: np.ndarray, c0: np.ndarray, mu: float, radius: float) -> np.ndarray:
    """Φ(x) = max_{‖y‖ ≤ R} F(x, y) = b₀ᵀx + ψ(Aᵀx − c₀), ψ(v) = ‖v‖²/(2μ) or R‖v‖ − μR²/2 (rows)."""
    v = x @ a - c0
    nv = np.linalg.norm(v, axis=-1)
    psi = np.where(nv <= mu * radius, nv * nv / (2.0 * mu), radius * nv - mu * radius * radius / 2.0)
    return np.asarray(x @ b0 + psi)


# -- utility trials ------------------------------------------------------------------------------------------------


def run_utility(
    problem_class: str,
    problem: Mapping[str, Any],
    phases: list[Mapping[str, Any]],
    rng: np.random.Generator,
    trials: int,
) -> np.ndarray:
    """Per-trial utility of the algorithm on fresh data sets drawn from the population."""
    return _RUNNERS[problem_class](problem, phases, rng, trials)


def _strongly_convex(
    problem: Mapping[str, Any], phases: list[Mapping[str, Any]], rng: np.random.Generator, trials: int
) -> np.ndarray:
    release = phases[0]
    n, d, mu, r = problem["records"], problem["dimension"], problem["curvature"], problem["radius"]
    xhat = r * sphere_means(rng, trials, n, d)  # the exact ERM: the mean of the records
    noisy = xhat + release["sigma"] * rng.standard_normal((trials, d))
    return np.asarray(0.5 * mu * np.sum(noisy * noisy, axis=1))


def _convex(
    problem: Mapping[str, Any], phases: list[Mapping[str, Any]], rng: np.random.Generator, trials: int
) -> np.ndarray:
    d, rank, s = problem["dimension"], problem["rank"], problem["feature_norm"]
    theta, eta, radius, nbar = np.array(problem["theta"]), problem["label_noise"], problem["radius"], problem["block"]
    out = np.empty(trials)
    chunk = max(1, CHUNK_FLOATS // max(1, nbar * d))
    eye = np.eye(d)
    for start in range(0, trials, chunk):
        t = min(trials, start + chunk) - start
        current = np.zeros((t, d))
        for phase in phases:
            feats = np.zeros((t, nbar, d))
            feats[:, :, :rank] = s * sphere(rng, (t, nbar, rank))
            labels = feats @ theta + rng.uniform(-eta, eta, (t, nbar))
            h = np.einsum("tni,tnj->tij", feats, feats) / nbar + phase["mu_k"] * eye
            g = np.einsum("tni,tn->ti", feats, labels) / nbar + phase["mu_k"] * current
            current = ball_quadratic(h, g, radius) + phase["sigma"] * rng.standard_normal((t, d))
        # least squares is L-Lipschitz on 𝒳 only: measure the output projected onto 𝒳 (post-processing), for which
        # the proof's step F(x̃_K) − F(x̂*_K) ≤ L‖x̃_K − x̂*_K‖ holds (the projection is non-expansive)
        err = (project_ball(current, radius) - theta)[:, :rank]
        out[start : start + t] = 0.5 * s * s / rank * np.sum(err * err, axis=1)
    return out


def sc_sc_matrices(problem: Mapping[str, Any], mux: float, muy: float) -> dict[str, np.ndarray]:
    a = np.array(problem["a"])
    dx, dy = a.shape
    m = np.block([[mux * np.eye(dx), a], [a.T, -muy * np.eye(dy)]])
    return {
        "a": a,
        "m": m,
        "h_phi": mux * np.eye(dx) + a @ a.T / muy,
        "h_psi": muy * np.eye(dy) + a.T @ a / mux,
    }


def sc_sc_saddle(m: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Rows (x, y) solving μ_x x + Ay + b = 0, Aᵀx − μ_y y − c = 0."""
    return np.linalg.solve(m, np.concatenate([-b, c], axis=-1).T).T


def _sc_sc(
    problem: Mapping[str, Any], phases: list[Mapping[str, Any]], rng: np.random.Generator, trials: int
) -> np.ndarray:
    mats = sc_sc_matrices(problem, problem["mu_x"], problem["mu_y"])
    n, beta = problem["records"], problem["spread"]
    b0, c0 = np.array(problem["b0"]), np.array(problem["c0"])
    dx, dy = b0.size, c0.size
    b = b0 + beta * sphere_means(rng, trials, n, dx)
    c = c0 + beta * sphere_means(rng, trials, n, dy)
    z = sc_sc_saddle(mats["m"], b, c)
    star = sc_sc_saddle(mats["m"], b0[None, :], c0[None, :])[0]
    ex = z[:, :dx] + phases[0]["sigma"] * rng.standard_normal((trials, dx)) - star[:dx]
    ey = z[:, dx:] + phases[1]["sigma"] * rng.standard_normal((trials, dy)) - star[dx:]
    return np.asarray(
        0.5 * np.einsum("ti,ij,tj->t", ex, mats["h_phi"], ex) + 0.5 * np.einsum("ti,ij,tj->t", ey, mats["h_psi"], ey)
    )


def sc_sc_expected_gap(problem: Mapping[str, Any], sigma_x: float, sigma_y: float) -> float:
    """E[strong gap] = ½tr(H M⁻¹ Cov M⁻ᵀ) + ½(σ_x² tr H_Φ + σ_y² tr H_Ψ), Cov of (b̄, c̄) = β²/n·diag(I/d_x, I/d_y)."""
    mats = sc_sc_matrices(problem, problem["mu_x"], problem["mu_y"])
    dx, dy = mats["a"].shape
    n, beta = problem["records"], problem["spread"]
    cov = np.diag(np.concatenate([np.full(dx, beta**2 / (dx * n)), np.full(dy, beta**2 / (dy * n))]))
    h = np.zeros((dx + dy, dx + dy))
    h[:dx, :dx], h[dx:, dx:] = mats["h_phi"], mats["h_psi"]
    inv = np.linalg.inv(mats["m"])
    return float(
        0.5 * np.trace(h @ inv @ cov @ inv.T)
        + 0.5 * (sigma_x**2 * np.trace(mats["h_phi"]) + sigma_y**2 * np.trace(mats["h_psi"]))
    )


def _phase_means(
    rng: np.random.Generator, trials: int, phases: int, nbar: int, dx: int, dy: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(sphere_means(rng, trials, nbar, dx), sphere_means(rng, trials, nbar, dy)) for _ in range(phases)]


def _bilinear(problem: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float, int]:
    """(A, b₀, c₀, β, radius, n̄) of a bilinear instance (E4, E5)."""
    a, b0, c0 = np.array(problem["a"]), np.array(problem["b0"]), np.array(problem["c0"])
    return a, b0, c0, problem["spread"], problem["radius"], problem["block"]


def _c_c(
    problem: Mapping[str, Any], phases: list[Mapping[str, Any]], rng: np.random.Generator, trials: int
) -> np.ndarray:
    a, b0, c0, beta, radius, nbar = _bilinear(problem)
    mu = problem["regularization"]
    dx, dy = a.shape
    alg4 = [p for p in phases if p["algorithm"] == "Algorithm 4"]
    alg5 = [p for p in phases if p["algorithm"] == "Algorithm 5"]
    means = _phase_means(rng, trials, len(alg4), nbar, dx, dy)  # Algorithms 4 and 5 see the same data set
    zero_x, zero_y = np.zeros((trials, dx)), np.zeros((trials, dy))
    x_t, y_t = zero_x, zero_y
    for phase, (u, v) in zip(alg4, means, strict=True):
        x, _, _ = prox_extragradient(
            a, b0 + beta * u, c0 + beta * v, phase["mu_k"], x_t, mu, zero_y, radius, phase["tol"], phase["cap"]
        )
        x_t = x + phase["sigma"] * rng.standard_normal((trials, dx))
    for phase, (u, v) in zip(alg5, means, strict=True):
        _, y, _ = prox_extragradient(
            a, b0 + beta * u, c0 + beta * v, mu, zero_x, phase["mu_k"], y_t, radius, phase["tol"], phase["cap"]
        )
        y_t = y + phase["sigma"] * rng.standard_normal((trials, dy))
    max_y = radius * np.linalg.norm(x_t @ a - c0, axis=1) + x_t @ b0
    min_x = -radius * np.linalg.norm(y_t @ a.T + b0, axis=1) - y_t @ c0
    return np.asarray(max_y - min_x)


def _c_sc(
    problem: Mapping[str, Any], phases: list[Mapping[str, Any]], rng: np.random.Generator, trials: int
) -> np.ndarray:
    a, b0, c0, beta, radius, nbar = _bilinear(problem)
    muy = problem["mu_y"]
    dx, dy = a.shape
    zero_y = np.zeros((trials, dy))
    x_t = np.zeros((trials, dx))
    for phase in phases:
        u, v = sphere_means(rng, trials, nbar, dx), sphere_means(rng, trials, nbar, dy)
        x, _, _ = prox_extragradient(
            a, b0 + beta * u, c0 + beta * v, phase["mu_k"], x_t, muy, zero_y, radius, phase["tol"], phase["cap"]
        )
        x_t = x + phase["sigma"] * rng.standard_normal((trials, dx))
    return np.asarray(phi_csc(x_t, a, b0, c0, muy, radius) - problem["phi_star"])


_RUNNERS: dict[str, Callable[..., np.ndarray]] = {
    "strongly-convex": _strongly_convex,
    "convex": _convex,
    "sc-sc": _sc_sc,
    "c-c": _c_c,
    "c-sc": _c_sc,
}


# -- the privacy audit ---------------------------------------------------------------------------------------------


def audit_releases(
    problem_class: str, problem: Mapping[str, Any], phases: list[Mapping[str, Any]], worst_case: bool, seed: int
) -> list[dict[str, Any]]:
    """Means of the releases that see the distinguishing record, on D and on D′, with their noise std.

    D: a fixed data set (the job's seed); D′: its first record replaced (ξ₁ → −ξ₁; for least squares b₁ → −b₁), a
    record that satisfies the same constants. The record sits in block 1, so the releases are phase 1's (x̃₁, and ỹ₁ of
    Algorithm 5 for c-c), computed from the centre x̃₀ = 0; later phases are post-processing. The base solver is exact,
    or (worst_case) moves each solution by the full accuracy the privacy proof allows, apart from the other one."""
    rng = audit_rng(seed)
    if problem_class == "strongly-convex":
        return _audit_strongly_convex(problem, phases, worst_case, rng)
    if problem_class == "convex":
        return _audit_convex(problem, phases, worst_case, rng)
    if problem_class == "sc-sc":
        return _audit_sc_sc(problem, phases, worst_case, rng)
    return _audit_bilinear(problem_class, problem, phases, worst_case, rng)


Phases = list[Mapping[str, Any]]


def _audit_strongly_convex(
    problem: Mapping[str, Any], phases: Phases, worst_case: bool, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """The mean of the records: D′ moves it by −2ξ₁/n."""
    first = phases[0]
    n, d, radius = problem["records"], problem["dimension"], problem["radius"]
    data = radius * sphere(rng, (n, d))
    mean_in = data.mean(axis=0)
    mean_out = mean_in - 2.0 * data[0] / n
    return [_apart(mean_in, mean_out, first, first["accuracy"] if worst_case else 0.0)]


def _audit_convex(
    problem: Mapping[str, Any], phases: Phases, worst_case: bool, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Regularised least squares on block 1 (b₁ → −b₁ on D′), solved exactly on the ball."""
    first = phases[0]
    d, rank, s, nbar = problem["dimension"], problem["rank"], problem["feature_norm"], problem["block"]
    theta, eta = np.array(problem["theta"]), problem["label_noise"]
    feats = np.zeros((nbar, d))
    feats[:, :rank] = s * sphere(rng, (nbar, rank))
    labels = feats @ theta + rng.uniform(-eta, eta, nbar)
    h = feats.T @ feats / nbar + first["mu_k"] * np.eye(d)
    g = feats.T @ labels / nbar
    g_out = g - 2.0 * feats[0] * labels[0] / nbar
    sol = ball_quadratic(np.stack([h, h]), np.stack([g, g_out]), problem["radius"])
    slack = first["accuracy"] * (1.0 - 1e-9) if worst_case else 0.0  # the QP is exact to rounding
    return [_apart(sol[0], sol[1], first, slack)]


def _audit_sc_sc(
    problem: Mapping[str, Any], phases: Phases, worst_case: bool, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """The strongly-convex–strongly-concave saddle point: its x and y parts are the two releases."""
    first = phases[0]
    mux, muy = problem["mu_x"], problem["mu_y"]
    mats = sc_sc_matrices(problem, mux, muy)
    n, beta = problem["records"], problem["spread"]
    b0, c0 = np.array(problem["b0"]), np.array(problem["c0"])
    dx, dy = b0.size, c0.size
    u, v = sphere(rng, (n, dx)), sphere(rng, (n, dy))
    b, c = b0 + beta * u.mean(axis=0), c0 + beta * v.mean(axis=0)
    b_out, c_out = b - 2.0 * beta * u[0] / n, c - 2.0 * beta * v[0] / n
    z = sc_sc_saddle(mats["m"], np.stack([b, b_out]), np.stack([c, c_out]))
    weights = np.concatenate([np.full(dx, mux), np.full(dy, muy)])
    slack = math.sqrt(first["accuracy"]) if worst_case else 0.0  # the weighted norm of each solver error
    gap = z[0] - z[1]
    norm_w = math.sqrt(float(np.sum(weights * gap * gap)))
    shift = slack * gap / norm_w if norm_w > 0 else np.zeros_like(gap)
    zin, zout = z[0] + shift, z[1] - shift
    return [
        {"mean_in": zin[:dx].tolist(), "mean_out": zout[:dx].tolist(), "sigma": phases[0]["sigma"]},
        {"mean_in": zin[dx:].tolist(), "mean_out": zout[dx:].tolist(), "sigma": phases[1]["sigma"]},
    ]


def _audit_bilinear(
    problem_class: str, problem: Mapping[str, Any], phases: Phases, worst_case: bool, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """The bilinear saddle problems (c-c: x̃₁ and Algorithm 5's ỹ₁; c-sc: x̃₁), by the proximal extragradient to the
    audit's tolerance; the worst case moves each by what the accuracy allows beyond that tolerance."""
    first = phases[0]
    a, b0, c0 = np.array(problem["a"]), np.array(problem["b0"]), np.array(problem["c0"])
    beta, radius, nbar = problem["spread"], problem["radius"], problem["block"]
    dx, dy = a.shape
    u, v = sphere(rng, (nbar, dx)), sphere(rng, (nbar, dy))
    b, c = b0 + beta * u.mean(axis=0), c0 + beta * v.mean(axis=0)
    bb = np.stack([b, b - 2.0 * beta * u[0] / nbar])
    cc = np.stack([c, c - 2.0 * beta * v[0] / nbar])
    tol, cap = problem["audit_tol"], problem["audit_cap"]
    zx, zy = np.zeros((2, dx)), np.zeros((2, dy))
    if problem_class == "c-c":
        mu = problem["regularization"]
        alg5 = next(p for p in phases if p["algorithm"] == "Algorithm 5")
        x, _, _ = prox_extragradient(a, bb, cc, first["mu_k"], zx, mu, zy, radius, tol, cap)
        _, y, _ = prox_extragradient(a, bb, cc, mu, zx, alg5["mu_k"], zy, radius, tol, cap)
        heavy = max(first["mu_k"], mu)
        out = []
        for sol, release in ((x, first), (y, alg5)):
            slack = max(0.0, math.sqrt(release["accuracy"]) - math.sqrt(heavy) * tol) / math.sqrt(release["mu_k"])
            out.append(_apart(sol[0], sol[1], release, slack if worst_case else 0.0))
        return out
    muy = problem["mu_y"]
    x, _, _ = prox_extragradient(a, bb, cc, first["mu_k"], zx, muy, zy, radius, tol, cap)
    heavy = max(first["mu_k"], muy)
    slack = max(0.0, math.sqrt(first["accuracy"]) - math.sqrt(heavy) * tol) / math.sqrt(first["mu_k"])
    return [_apart(x[0], x[1], first, slack if worst_case else 0.0)]


def _apart(mean_in: np.ndarray, mean_out: np.ndarray, release: Mapping[str, Any], slack: float) -> dict[str, Any]:
    """Move the two solutions apart by ``slack`` each along their difference (a compliant solver's error)."""
    gap = mean_in - mean_out
    norm = float(np.linalg.norm(gap))
    direction = gap / norm if norm > 0 else np.zeros_like(gap)
    return {
        "mean_in": (mean_in + slack * direction).tolist(),
        "mean_out": (mean_out - slack * direction).tolist(),
        "sigma": release["sigma"],
    }


def audit_gdp(releases: Sequence[Mapping[str, Any]]) -> float:
    """μ of the simulated pair: √Σ‖mean_in − mean_out‖²/σ² (independent Gaussian releases)."""
    total = 0.0
    for r in releases:
        gap = np.array(r["mean_in"]) - np.array(r["mean_out"])
        total += float(gap @ gap) / r["sigma"] ** 2
    return math.sqrt(total)


def audit_scores(releases: list[Mapping[str, Any]], rng: np.random.Generator, trials: int) -> tuple[np.ndarray, ...]:
    """Log-likelihood-ratio scores (most powerful test) of the releases drawn on D and on D′."""
    scores = []
    for inside in (True, False):
        total = np.zeros(trials)
        for r in releases:
            mean_in, mean_out = np.array(r["mean_in"]), np.array(r["mean_out"])
            centre = mean_in if inside else mean_out
            draw = centre + r["sigma"] * rng.standard_normal((trials, centre.size))
            total += (draw - mean_out) @ (mean_in - mean_out) / r["sigma"] ** 2
        scores.append(total)
    return tuple(scores)
