"""Verification jobs for DP-SGD: logistic regression trained with clipping and noise, and a canary audit."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
from scipy import sparse

from ...events import GaussianEvent, TruncatedPoissonSampledEvent
from ...mechanisms.gaussian import gaussian_epsilon
from ...params import ParamsModel, param
from ...synthetic.logistic import logistic_data, logistic_optimum
from ...verification import (
    BlockResult,
    Job,
    Plan,
    Simulator,
    allocation_canary_scores,
    canary_llr_scores,
    register_simulator,
)
from .params import ALGORITHM_ID, WITHOUT_AMPLIFICATION, DpSgdParams, participations

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
        loader = _loader(p, steps)
        resolved = {
            "kind": "logistic",
            "dimension": pr.dimension,
            "records": records,
            "learning_rate": pr.learning_rate,
            "steps": steps,
            "sampling_rate": q,
            "canary": "gradient canary along a dedicated coordinate",
            **loader,
        }
        optimum = None
        if job.utility:
            features, labels = logistic_data(seed, records, pr.dimension)
            optimum = logistic_optimum(features, labels)
            resolved["optimal_loss"] = optimum
        exact = gaussian_epsilon(z, delta, steps) if p.full_batch else None
        if p.sampling in WITHOUT_AMPLIFICATION:
            exact = None  # the certified value claims no amplification; the loader's true ε is unknown
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
            audit_method="gradient canary along a dedicated coordinate, batched as the declared loader batches it ("
            + p.sampling
            + "); score: log-likelihood ratio of the whole transcript along it (most powerful test)",
            work=work,
            gaussian_mu=None if exact is None else math.sqrt(steps) / z,  # the canary's shift over the noise, T times
        )

    def run_block(self, plan: Plan, rng: np.random.Generator, trials: int) -> BlockResult:
        p = plan.params
        steps = plan.problem["steps"]
        result: dict[str, np.ndarray] = {}
        if "privacy-audit" in plan.checks:
            replace = p["neighbouring"] == "replace-one"
            sigma = p["noise_multiplier"] * (2.0 if replace else 1.0)  # noise std in units of C
            problem = plan.problem
            for inside, key in ((True, "score_in"), (False, "score_out")):
                if "epoch_lengths" in problem:
                    result[key] = allocation_canary_scores(
                        rng, trials, problem["epoch_lengths"], problem["slots"], sigma, replace, inside
                    )
                else:
                    result[key] = canary_llr_scores(rng, trials, steps, problem["inclusion"], sigma, replace, inside)
        if "utility" in plan.checks:
            features, labels = logistic_data(plan.seed, plan.problem["records"], plan.problem["dimension"])
            losses = _train(rng, trials, features, labels, p, plan.problem)
            result["utility"] = losses - plan.problem["optimal_loss"]
        return BlockResult(**result)


def _loader(p: DpSgdParams, steps: int) -> dict[str, Any]:
    """How the simulation batches the canary: for shuffle and balls-in-bins, the epochs accounted (⌈n/b⌉ batches
    each, the last one cut to the steps left); otherwise the canary's inclusion probability per step (q; for
    truncated Poisson q(1 − p) + p·q′, its chance to survive the cut)."""
    if p.sampling in WITHOUT_AMPLIFICATION:
        slots = -(-p.dataset_size // p.batch_size)
        epochs = participations(p, steps)
        last = max(1, min(slots, steps - (epochs - 1) * slots))
        return {"slots": slots, "epoch_lengths": [slots] * (epochs - 1) + [last]}
    if p.sampling == "truncated-poisson":
        assert p.max_batch_size is not None
        cut, q_cut = TruncatedPoissonSampledEvent(
            p.dataset_size, p.sampling_rate, p.max_batch_size, GaussianEvent(1.0)
        ).truncation()
        return {"inclusion": p.sampling_rate * (1.0 - cut) + cut * q_cut, "max_batch_size": p.max_batch_size}
    return {"inclusion": p.sampling_rate}


def _masks(
    rng: np.random.Generator, trials: int, n: int, p: Mapping[str, Any], problem: Mapping[str, Any]
) -> Iterator[np.ndarray]:
    """Each step's batches of every trial as a (trials × n) inclusion mask, drawn as the declared loader draws them
    (the sampling rate kept): Poisson rows, uniformly random b-subsets, a permutation (shuffle) or an allocation
    (balls-in-bins) per epoch, Poisson rows cut to a random subset of the cap (truncated)."""
    q, steps, sampling = problem["sampling_rate"], problem["steps"], p["sampling"]
    batch = max(1, round(q * n))
    slots = max(1, -(-n // batch))
    cap = max(1, round(problem.get("max_batch_size", n) * n / p["dataset_size"]))
    place = np.zeros((trials, n), dtype=np.int64)
    for step in range(steps):
        if sampling in WITHOUT_AMPLIFICATION:
            k = step % slots
            if k == 0:  # a new epoch: each record's batch, from a permutation's ranks or a uniform allocation
                if sampling == "shuffle":
                    place = np.argsort(np.argsort(rng.random((trials, n)), axis=1), axis=1) // batch
                else:
                    place = rng.integers(slots, size=(trials, n))
            yield place == k
        elif sampling == "fixed-size":
            yield _smallest(rng.random((trials, n)), batch)  # b uniformly random records
        else:
            included = rng.random((trials, n)) < q
            if sampling == "truncated-poisson":
                over = np.flatnonzero(included.sum(axis=1) > cap)
                if over.size:  # the rows over the cap keep a uniformly random cap of their records
                    keys = np.where(included[over], rng.random((over.size, n)), np.inf)
                    included[over] = _smallest(keys, cap)
            yield included


def _smallest(keys: np.ndarray, size: int) -> np.ndarray:
    """The mask of each row's ``size`` smallest keys (random keys: a uniformly random subset of that size)."""
    mask = np.zeros(keys.shape, dtype=bool)
    np.put_along_axis(mask, np.argpartition(keys, size - 1, axis=1)[:, :size], True, axis=1)
    return mask


def _train(
    rng: np.random.Generator,
    trials: int,
    features: np.ndarray,
    labels: np.ndarray,
    p: Mapping[str, Any],
    problem: Mapping[str, Any],
) -> np.ndarray:
    """``trials`` DP-SGD runs at once (batches as the declared loader draws them, per-example clipping, Gaussian
    noise) from θ = 0; the final empirical logistic loss of each.

    Per-example gradients are c_ij·x_j with c_ij = −y_j σ(−y_j⟨x_j, θ_i⟩), so their norms are |c_ij|·‖x_j‖; only the
    sampled (trial, record) pairs are differentiated, and each step's clipped sums are one sparse (trials × n) @ (n × d)
    product."""
    n, d = features.shape
    q, lr = problem["sampling_rate"], problem["learning_rate"]
    clip, z = p["clip_norm"], p["noise_multiplier"]
    std = z * clip * (2.0 if p["neighbouring"] == "replace-one" else 1.0)
    expected = max(q * n, 1.0)
    lengths = np.linalg.norm(features, axis=1)
    theta = np.zeros((trials, d))
    for mask in _masks(rng, trials, n, p, problem):
        rows, cols = np.nonzero(mask)  # (trial, record) pairs in the batches: only those are differentiated
        x, y = features[cols], labels[cols]
        coefficient = -y * np.exp(-np.logaddexp(0.0, y * np.einsum("ij,ij->i", theta[rows], x)))
        coefficient *= np.minimum(1.0, clip / np.maximum(np.abs(coefficient) * lengths[cols], 1e-300))
        summed = sparse.csr_matrix((coefficient, (rows, cols)), shape=(trials, n)) @ features
        theta -= lr * (summed + std * rng.standard_normal((trials, d))) / expected
    return np.asarray(np.mean(np.logaddexp(0.0, -labels * (theta @ features.T)), axis=1))


register_simulator(ALGORITHM_ID, DpSgdSimulator())
