"""Verification jobs for last-iterate DP-SGD: linear and logistic problems run cyclically with clipping and noise."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from ...errors import ParameterError
from ...params import ParamsModel, param
from ...synthetic.logistic import logistic_data, logistic_loss, logistic_optimum
from ...verification import BlockResult, Job, JobPlan, Simulator, register_simulator
from .params import ALGORITHM_ID, LastIterateParams

# -- simulation (verification jobs) --------------------------------------------------------------------------------


class LastIterateProblem(ParamsModel):
    """The synthetic problem of a dp-sgd-last-iterate verification job."""

    kind: Literal["linear-gaussian", "logistic"] = param(example="linear-gaussian", default="linear-gaussian")
    """linear-gaussian (default): a 1-D quadratic instance, f_i(x) = (a/2)x² + c_i x, no clipping, whose
    exact ε and expected excess loss are closed-form. logistic: clipped logistic regression."""
    curvature: float | None = param(symbol="a", example=1.0, ge=-1e6, le=1e6, default=None)
    """a of the linear-Gaussian instance; must respect the declared constants (max(0, a) ≤ smoothness, max(0, −a) ≤
    weak_convexity). Default: smoothness, or −weak_convexity when smoothness is 0."""
    dimension: int = param(symbol="d", example=5, default=5, ge=2, le=50)
    """Features of the logistic problem (one more coordinate carries the canary)."""


class LastIterateSimulator(Simulator[LastIterateParams, LastIterateProblem]):
    """Algorithm 1 on synthetic problems, with the swapped record at the slot where it matters most.

    linear-gaussian: x_t = x_{t−1} − λ(a·x_{t−1} + c̄_t) + N(0, σ²), the batch means c̄_t from records c_i ∈ [−C, C];
    the neighbour swaps the record at the worst slot for one 2C away. X_T is Gaussian, so the score X_T is the most
    powerful test, the exact ε is the analytic Gaussian's, and the expected excess loss E φ(X_T) − φ* is closed-form
    (it is the "predicted bound": an exact expectation, not an inequality).
    logistic: clipped logistic regression in d features plus a canary coordinate that no other record uses; the
    swapped record is a gradient canary (gradient ∓C on that coordinate), the score is X_T on it, and the exact ε is
    again the analytic Gaussian's (the coordinate only ever sees the canary's pushes and the noise).
    """

    problem_model = LastIterateProblem
    seconds_per_operation: ClassVar[Mapping[str, float]] = {"simulation": 3.3e-08}
    """Measured by ``python benchmarks/jobs.py --calibrate`` (the example job, one process)."""

    def plan(self, job: Job[LastIterateParams, LastIterateProblem]) -> JobPlan:
        from ...mechanisms.gaussian import gdp_epsilon

        p, pr, delta, checks = job.params, job.problem, job.delta, job.checks
        report = job.privacy()
        z = report.required_noise.noise_multiplier
        steps = report.conventions.steps
        sigma = p.stepsize * z * p.clip_norm / p.batch_size
        setup = _linear_instance if pr.kind == "linear-gaussian" else _logistic_instance
        instance = setup(job, sigma, steps)
        resolved: dict[str, Any] = {"kind": pr.kind, "steps": steps, "noise_std": sigma} | instance.resolved
        prediction, work = instance.prediction, instance.work
        exact = gdp_epsilon(instance.mu, delta)
        return job.plan(
            report,
            params=p.model_dump() | {"noise_multiplier": z, "noise_std": None},
            problem=resolved,
            epsilon_exact=exact,
            exact_note="analytic Gaussian of the simulated instance's last iterate (Balle & Wang 2018)",
            utility_measure=(
                "excess loss φ(X_T) − φ* of the last iterate"
                if pr.kind == "linear-gaussian"
                else "excess empirical logistic loss of the last iterate"
            ),
            predicted_bound=prediction,
            predicted_source="exact expectation E φ(X_T) − φ* of the Gaussian last iterate (closed form)"
            if prediction is not None
            else None,
            prediction_note=None
            if prediction is not None or "utility" not in checks
            else "Kong & Ribero 2024 prove no utility bound; measured only",
            audit_method="the last iterate (the swapped record's coordinate for logistic), most powerful test for "
            "the Gaussian it is",
            work=work,
        )

    def run_block(self, plan: JobPlan, rng: np.random.Generator, trials: int) -> BlockResult:
        p, problem = plan.params, plan.problem
        if problem["kind"] == "linear-gaussian":
            return _run_linear(plan, p, problem, rng, trials)
        return _run_logistic(plan, p, problem, rng, trials)


def _geometric(ratio: float, steps: int) -> float:
    """Σ_{j<T} ratio^{2j}."""
    r2 = ratio * ratio
    return float(steps) if r2 == 1.0 else float(np.expm1(steps * np.log(r2)) / (r2 - 1.0)) if r2 > 0 else 1.0


def _worst_slot(a: float, lam: float, C: float, b: int, ell: int, steps: int) -> tuple[int, float]:
    t = np.arange(1, steps + 1)
    weights = (1.0 - lam * a) ** (steps - t).astype(float)
    per_slot = np.bincount((t - 1) % ell, weights=weights, minlength=ell)
    slot = int(np.argmax(np.abs(per_slot)))
    return slot, 2.0 * lam * C / b * float(per_slot[slot])


def _linear_records(seed: int, n: int, C: float) -> np.ndarray:
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32,)))
    return rng.uniform(-C, C, size=n)


def _batch_means(records: np.ndarray, b: int, steps: int) -> np.ndarray:
    """c̄_t for t = 1..T in the cyclic order."""
    per_batch = records.reshape(-1, b).mean(axis=1)
    return np.asarray(per_batch[np.arange(steps) % per_batch.size])


def _linear_expected_excess(a: float, p: LastIterateParams, steps: int, records: np.ndarray, sd: float) -> float:
    means = _batch_means(records, p.batch_size, steps)
    mean = 0.0
    for c in means:
        mean = mean - p.stepsize * (a * mean + c)
    optimum = -float(records.mean()) / a
    return 0.5 * a * ((mean - optimum) ** 2 + sd * sd)


def _run_linear(
    plan: JobPlan, p: Mapping[str, Any], problem: Mapping[str, Any], rng: np.random.Generator, trials: int
) -> BlockResult:
    a, lam, C, b = problem["curvature"], p["stepsize"], p["clip_norm"], p["batch_size"]
    steps, sigma, slot = problem["steps"], problem["noise_std"], problem["slot"]
    ell = p["dataset_size"] // b
    records = _linear_records(plan.seed, p["dataset_size"], C)
    means = _batch_means(records, b, steps)
    # the neighbour: the record at the worst slot (in batch `slot`) moved by 2C (towards the other end)
    record = slot * b
    moved = records[record] - 2.0 * C if records[record] >= 0 else records[record] + 2.0 * C
    change = (moved - records[record]) / b
    x_in, x_out = np.zeros(trials), np.zeros(trials)
    for t in range(steps):
        noise_in, noise_out = rng.standard_normal(trials), rng.standard_normal(trials)
        c = means[t]
        x_in = x_in - lam * (a * x_in + c) + sigma * noise_in
        x_out = x_out - lam * (a * x_out + c + (change if t % ell == slot else 0.0)) + sigma * noise_out
    result: dict[str, np.ndarray] = {}
    if "privacy-audit" in plan.checks:
        result |= {"score_in": x_in, "score_out": x_out}
    if "utility" in plan.checks:
        c_bar = float(records.mean())
        result["utility"] = 0.5 * a * (x_in + c_bar / a) ** 2
    return BlockResult(**result)


def _logistic_features(seed: int, n: int, dimension: int) -> tuple[np.ndarray, np.ndarray]:
    return logistic_data(seed, n, dimension)


def _run_logistic(
    plan: JobPlan, p: Mapping[str, Any], problem: Mapping[str, Any], rng: np.random.Generator, trials: int
) -> BlockResult:
    features, labels = _logistic_features(plan.seed, p["dataset_size"], problem["dimension"])
    lam, C, b = p["stepsize"], p["clip_norm"], p["batch_size"]
    steps, sigma = problem["steps"], problem["noise_std"]
    n, d = features.shape
    ell = n // b
    canary_gradient = {True: -C, False: C}  # the swapped record: gradient ∓C on the canary coordinate
    scores: dict[bool, np.ndarray] = {}
    utility = np.zeros(trials)
    for inside in (True, False):
        theta = np.zeros((trials, d))
        canary = np.zeros(trials)
        for t in range(steps):
            batch = (t % ell) * b
            x, y = features[batch : batch + b], labels[batch : batch + b]
            margins = (theta @ x.T) * y  # (trials, b)
            weights = -y * np.exp(-np.logaddexp(0.0, margins))
            grads = weights[:, :, None] * x[None, :, :]  # (trials, b, d)
            norms = np.linalg.norm(grads, axis=2, keepdims=True)
            grads *= np.minimum(1.0, C / np.maximum(norms, 1e-300))
            mean_grad = grads.sum(axis=1) / b
            theta = theta - lam * mean_grad + sigma * rng.standard_normal((trials, d))
            push = canary_gradient[inside] / b if t % ell == 0 else 0.0  # the canary sits in the first batch
            canary = canary - lam * push + sigma * rng.standard_normal(trials)
        scores[inside] = canary
        if inside and "utility" in plan.checks:
            utility = np.array([logistic_loss(theta[i], features, labels) for i in range(trials)])
            utility -= problem["optimal_loss"]
    result: dict[str, np.ndarray] = {}
    if "privacy-audit" in plan.checks:
        result |= {"score_in": scores[True], "score_out": scores[False]}
    if "utility" in plan.checks:
        result["utility"] = utility
    return BlockResult(**result)


register_simulator(ALGORITHM_ID, LastIterateSimulator())


@dataclass(frozen=True)
class _Instance:
    """A simulated instance: what it resolves (shown in the job), the μ of its last iterate's Gaussian, the predicted
    excess loss (utility checks of the linear instance) and the work estimate."""

    resolved: dict[str, Any]
    mu: float
    prediction: float | None
    work: float


def _linear_instance(job: Job[LastIterateParams, LastIterateProblem], sigma: float, steps: int) -> _Instance:
    """The 1-d quadratic φ(x) = a·x²/2 − b·x: its curvature checked against the declared constants, the worst slot
    of the differing record, the exact last-iterate Gaussian and its expected excess loss."""
    p, pr = job.params, job.problem
    a = pr.curvature if pr.curvature is not None else (p.smoothness if p.smoothness > 0 else -p.weak_convexity)
    if max(0.0, a) > p.smoothness * (1 + 1e-12) or max(0.0, -a) > p.weak_convexity * (1 + 1e-12):
        raise ParameterError.single(
            "problem.curvature",
            "must respect the declared constants",
            "max(0, a) ≤ smoothness and "
            f"max(0, −a) ≤ weak_convexity, i.e. a in [{-p.weak_convexity:g}, {p.smoothness:g}]",
            a,
        )
    if job.utility and a <= 0:
        raise ParameterError.single(
            "problem.curvature", "the utility check needs a convex instance (a > 0: a finite minimiser)", "> 0", a
        )
    records = _linear_records(job.seed, p.dataset_size, p.clip_norm)
    slot, shift = _worst_slot(a, p.stepsize, p.clip_norm, p.batch_size, p.steps_per_pass, steps)
    sd = sigma * math.sqrt(_geometric(1.0 - p.stepsize * a, steps))
    prediction = _linear_expected_excess(a, p, steps, records, sd) if job.utility else None
    resolved = {"curvature": a, "slot": slot, "records_mean": float(records.mean())}
    return _Instance(resolved, abs(shift) / sd, prediction, job.trials * steps * 4.0)


def _logistic_instance(job: Job[LastIterateParams, LastIterateProblem], sigma: float, steps: int) -> _Instance:
    """Logistic regression with a gradient canary on a coordinate no other record uses (slot 0)."""
    p, pr = job.params, job.problem
    uses = -(-steps // p.steps_per_pass)
    mu = 2.0 * p.stepsize * p.clip_norm / p.batch_size * uses / (sigma * math.sqrt(steps))
    resolved: dict[str, Any] = {
        "dimension": pr.dimension,
        "records": p.dataset_size,
        "slot": 0,
        "canary": "gradient canary on a coordinate no other record uses",
    }
    if job.utility:
        features, labels = _logistic_features(job.seed, p.dataset_size, pr.dimension)
        resolved["optimal_loss"] = logistic_optimum(features, labels)
    work = job.trials * steps * (4.0 + 2.0 * p.batch_size * pr.dimension)
    return _Instance(resolved, mu, None, work)
