"""Verification jobs for DP-SGD: logistic regression trained with clipping and noise, and a canary audit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...mechanisms.gaussian import gaussian_epsilon
from ...params import ParamsModel, param
from ...synthetic.logistic import logistic_data, logistic_loss, logistic_optimum
from ...verification import BlockResult, Job, Plan, Simulator, canary_llr_scores, register_simulator
from .params import ALGORITHM_ID, DpSgdParams

# -- simulation (verification jobs) --------------------------------------------------------------------------------


class DpSgdProblem(ParamsModel):
    """The synthetic problem of a dp-sgd verification job."""

    dimension: int = param(symbol="d", unit="features", example=5, default=5, ge=1, le=50)
    """Features of the synthetic logistic regression."""
    records: int | None = param(unit="records", example=1000, default=None, ge=2, le=5000)
    """Records of the synthetic data set for the utility check (default: dataset_size, at most 2000); the sampling rate
    q = batch_size/dataset_size is kept."""
    learning_rate: float = param(symbol="η", example=1.0, gt=0, le=100, default=1.0)
    """SGD learning rate: θ ← θ − learning_rate·(Σ clipped gradients + noise)/expected batch size."""


class DpSgdSimulator(Simulator[DpSgdParams, DpSgdProblem]):
    """DP-SGD on synthetic logistic regression, audited with a gradient canary.

    Audit: the distinguishing record is a *gradient canary*, a record whose per-example gradient is always C·u for a
    unit vector u orthogonal to every other record's gradients (a linear loss on a coordinate no other feature uses).
    Every step then releases, along u, B_t·C + N(0, (zΔ)²) with B_t the canary's inclusion (Bernoulli(q), or b/n for
    fixed-size batches); under replace-one the neighbour holds the opposite canary. The score is the log-likelihood
    ratio of the whole transcript along u, the most powerful test (Neyman–Pearson). For full batches it is Gaussian
    and the exact ε is the analytic Gaussian's.
    Utility: excess empirical logistic loss of the last iterate over the non-private optimum of the same data.
    """

    problem_model = DpSgdProblem

    def plan(self, job: Job[DpSgdParams, DpSgdProblem]) -> Plan:
        p, pr, delta, trials, seed = job.params, job.problem, job.delta, job.trials, job.seed
        report = job.privacy()
        z = report.required_noise.noise_multiplier
        steps = report.conventions.steps
        q = p.sampling_rate
        records = pr.records or min(p.dataset_size, 2000)
        resolved = {
            "kind": "logistic",
            "dimension": pr.dimension,
            "records": records,
            "learning_rate": pr.learning_rate,
            "steps": steps,
            "sampling_rate": q,
            "canary": "gradient canary along a dedicated coordinate",
        }
        optimum = None
        if job.utility:
            features, labels = logistic_data(seed, records, pr.dimension)
            optimum = logistic_optimum(features, labels)
            resolved["optimal_loss"] = optimum
        exact = gaussian_epsilon(z, delta, steps) if p.batch_size == p.dataset_size else None
        work = trials * steps * (2.0 + ((job.utility) * (q * records + 1) * pr.dimension))
        return job.plan(
            report,
            params=p.model_dump() | {"noise_multiplier": z, "noise_std": None},
            problem=resolved,
            epsilon_exact=exact,
            exact_note=None
            if exact is not None
            else "no closed form for a subsampled Gaussian (needs a privacy-loss-distribution accountant)",
            utility_measure="excess empirical logistic loss of the last iterate",
            predicted_bound=None,
            predicted_source=None,
            prediction_note="dp-sgd has no utility bound without assumptions on the loss",
            audit_method="gradient canary along a dedicated coordinate; score: log-likelihood ratio of the whole "
            "transcript along it (most powerful test)",
            work=work,
        )

    def run_block(self, plan: Plan, rng: np.random.Generator, trials: int) -> BlockResult:
        p = plan.params
        steps, q = plan.problem["steps"], plan.problem["sampling_rate"]
        result: dict[str, np.ndarray] = {}
        if "privacy-audit" in plan.checks:
            replace = p["neighbouring"] == "replace-one"
            sigma = p["noise_multiplier"] * (2.0 if replace else 1.0)  # noise std in units of C
            result["score_in"] = canary_llr_scores(rng, trials, steps, q, sigma, replace, inside=True)
            result["score_out"] = canary_llr_scores(rng, trials, steps, q, sigma, replace, inside=False)
        if "utility" in plan.checks:
            features, labels = logistic_data(plan.seed, plan.problem["records"], plan.problem["dimension"])
            losses = [_train(rng, features, labels, p, plan.problem) for _ in range(trials)]
            result["utility"] = np.array(losses) - plan.problem["optimal_loss"]
        return BlockResult(**result)


def _train(
    rng: np.random.Generator, features: np.ndarray, labels: np.ndarray, p: Mapping[str, Any], problem: Mapping[str, Any]
) -> float:
    """One DP-SGD run (Poisson or fixed-size batches, per-example clipping, Gaussian noise) from θ = 0."""
    n, d = features.shape
    q, steps, lr = problem["sampling_rate"], problem["steps"], problem["learning_rate"]
    clip, z = p["clip_norm"], p["noise_multiplier"]
    std = z * clip * (2.0 if p["neighbouring"] == "replace-one" else 1.0)
    expected = max(q * n, 1.0)
    batch = max(1, round(q * n))
    theta = np.zeros(d)
    for _ in range(steps):
        if p["sampling"] == "poisson":
            chosen = rng.choice(n, size=rng.binomial(n, q), replace=False)
        else:
            chosen = rng.choice(n, size=batch, replace=False)
        x, y = features[chosen], labels[chosen]
        grads = (-y * np.exp(-np.logaddexp(0.0, y * (x @ theta))))[:, None] * x
        norms = np.linalg.norm(grads, axis=1)
        grads *= np.minimum(1.0, clip / np.maximum(norms, 1e-300))[:, None]
        theta -= lr * (grads.sum(axis=0) + std * rng.standard_normal(d)) / expected
    return logistic_loss(theta, features, labels)


register_simulator(ALGORITHM_ID, DpSgdSimulator())
