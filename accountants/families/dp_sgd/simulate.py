"""Verification jobs for DP-SGD: logistic regression trained with clipping and noise, and a canary audit."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ...errors import ParameterError
from ...events import GaussianEvent, TruncatedPoissonSampledEvent
from ...mechanisms.gaussian import gaussian_epsilon
from ...params import ParamsModel, param
from ...synthetic.logistic import logistic_data, logistic_optimum
from ...verification import (
    BlockResult,
    Job,
    JobPlan,
    Simulator,
    allocation_canary_scores,
    canary_llr_scores,
    register_simulator,
)
from .batches import Loader, batch_chunks, touched_records
from .params import ALGORITHM_ID, WITHOUT_AMPLIFICATION, DpSgdParams, batches_per_epoch, participations

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
    seconds_per_operation: ClassVar[Mapping[str, float]] = {"utility": 8e-10, "privacy-audit": 1e-08}
    """Measured by ``python benchmarks/jobs.py --calibrate`` (the example job, one process)."""
    version = 3
    """2: batches drawn by :mod:`.batches` (other random draws than version 1's inclusion masks); 3: balls-in-bins
    with ⌊n/b⌋ bins (as accounted; was ⌈n/b⌉), fresh or persistent."""

    def plan(self, job: Job[DpSgdParams, DpSgdProblem]) -> JobPlan:
        p, pr, delta, trials, seed = job.params, job.problem, job.delta, job.trials, job.seed
        _simulated_or_refused(p)
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
        work = {
            "utility": trials
            * steps
            * (
                UTILITY_STEP_OPERATIONS
                + touched_records(_simulated_loader(p.sampling, records, q, p.dataset_size, p.max_batch_size))
                * pr.dimension
            ),
            "privacy-audit": trials * steps * 2.0,
        }
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

    def run_block(self, plan: JobPlan, rng: np.random.Generator, trials: int) -> BlockResult:
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
                        rng,
                        trials,
                        problem["epoch_lengths"],
                        problem["slots"],
                        sigma,
                        replace,
                        inside,
                        problem.get("persistent", False),
                    )
                else:
                    result[key] = canary_llr_scores(rng, trials, steps, problem["inclusion"], sigma, replace, inside)
        if "utility" in plan.checks:
            features, labels = logistic_data(plan.seed, plan.problem["records"], plan.problem["dimension"])
            losses = _train(rng, trials, features, labels, p, plan.problem)
            result["utility"] = losses - plan.problem["optimal_loss"]
        return BlockResult(**result)


def _simulated_or_refused(p: DpSgdParams) -> None:
    """The simulation places each record in one batch per epoch of a balls-in-bins loader: more is refused."""
    if p.num_selected > 1:
        raise ParameterError.single(
            "num_selected",
            "verification jobs simulate balls-in-bins loaders that place each record in one batch per epoch",
            "1 in a verification job",
            p.num_selected,
        )


def _loader(p: DpSgdParams, steps: int) -> dict[str, Any]:
    """How the simulation batches the canary: for shuffle, the epochs accounted (⌈n/b⌉ batches each, the last one cut
    to the steps left); for balls-in-bins the same with the ⌊n/b⌋ bins it is accounted with, fresh or persistent;
    otherwise the canary's inclusion probability per step (q; for truncated Poisson q(1 − p) + p·q′, its chance to
    survive the cut)."""
    if p.sampling in WITHOUT_AMPLIFICATION:
        slots = batches_per_epoch(p) if p.sampling == "balls-in-bins" else -(-p.dataset_size // p.effective_batch_size)
        epochs = participations(p, steps)
        last = max(1, min(slots, steps - (epochs - 1) * slots))
        return {
            "slots": slots,
            "epoch_lengths": [slots] * (epochs - 1) + [last],
            "persistent": p.sampling == "balls-in-bins" and p.bins == "persistent",
        }
    if p.sampling == "truncated-poisson":
        assert p.max_batch_size is not None
        cut, q_cut = TruncatedPoissonSampledEvent(
            p.dataset_size, p.sampling_rate, p.max_batch_size, GaussianEvent(1.0)
        ).truncation()
        return {"inclusion": p.sampling_rate * (1.0 - cut) + cut * q_cut, "max_batch_size": p.max_batch_size}
    return {"inclusion": p.sampling_rate}


UTILITY_STEP_OPERATIONS = 1500.0
"""Operations per trial and step of the utility simulation besides the records it touches (numpy calls per step,
shared by a block's trials)."""


def _simulated_loader(
    sampling: str, records: int, q: float, dataset_size: int, max_batch_size: int | None, persistent: bool = False
) -> Loader:
    """The loader the utility simulation runs on its ``records`` records: the rate q kept, the cap scaled."""
    cap = records if max_batch_size is None else max(1, round(max_batch_size * records / dataset_size))
    return Loader(sampling, records, q, cap, persistent)


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

    With v_j = −y_j·x_j, record j's gradient at θ is σ(⟨θ, v_j⟩)·v_j, of norm s·‖x_j‖ (s = σ(⟨θ, v_j⟩) ∈ [0, 1]), so
    clipped to C it is min(s, C/‖x_j‖)·v_j. Only the records in the batches are differentiated (:mod:`.batches` draws
    them in O(batch) per trial) and each trial's clipped sum is a segment sum; full batches are two dense products."""
    n, d = features.shape
    q, lr = problem["sampling_rate"], problem["learning_rate"]
    clip, z = p["clip_norm"], p["noise_multiplier"]
    std = z * clip * (2.0 if p["neighbouring"] == "replace-one" else 1.0)
    expected = max(q * n, 1.0)
    directions = -labels[:, None] * features  # v_j
    directions_t = np.ascontiguousarray(directions.T)
    with np.errstate(divide="ignore"):
        caps = clip / np.linalg.norm(features, axis=1)  # C/‖x_j‖ (∞ for a zero record: never clipped)
    loader = _simulated_loader(
        p["sampling"], n, q, p["dataset_size"], problem.get("max_batch_size"), problem.get("persistent", False)
    )
    theta = np.zeros((trials, d))
    for chunk in batch_chunks(rng, trials, loader, problem["steps"]):
        noise = std * rng.standard_normal((chunk.steps, trials, d))
        if chunk.records is None:
            for step in range(chunk.steps):
                weights = _sigmoid(theta @ directions.T)
                np.minimum(weights, caps, out=weights)
                theta -= lr * (weights @ directions + noise[step]) / expected
            continue
        v = np.take(directions_t, chunk.records, axis=1)  # d × pairs
        cap = caps[chunk.records]
        ends = np.cumsum(chunk.sizes.sum(axis=1))
        for step, counts in enumerate(chunk.sizes):
            at = slice(int(ends[step]) - int(counts.sum()), int(ends[step]))
            margins = (np.repeat(theta.T, counts, axis=1) * v[:, at]).sum(axis=0)
            weighted = v[:, at] * np.minimum(_sigmoid(margins), cap[at], out=margins)
            theta -= lr * (_segment_sums(weighted, counts) + noise[step]) / expected
    return np.asarray(np.mean(_softplus(theta @ directions.T), axis=1))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """σ(x) = 1/(1 + e^{−x}), computed in place in ``x`` (e^{−x} = ∞ gives 0, its limit)."""
    np.negative(x, out=x)
    with np.errstate(over="ignore"):
        np.exp(x, out=x)
    x += 1.0
    return np.asarray(np.reciprocal(x, out=x))


def _softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + e^x) = max(x, 0) + log1p(e^{−|x|}), elementwise (a new array)."""
    out = np.abs(x)
    np.negative(out, out=out)
    np.exp(out, out=out)
    np.log1p(out, out=out)
    out += np.maximum(x, 0.0)
    return np.asarray(out)


def _segment_sums(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Row j: the sum of the next ``counts[j]`` columns of ``values`` (d × pairs; consecutive segments, empty ones
    sum to 0)."""
    out = np.zeros((counts.size, values.shape[0]))
    nonempty = counts > 0
    if nonempty.any():
        starts = np.cumsum(counts) - counts
        out[nonempty] = np.add.reduceat(values, starts[nonempty], axis=1).T
    return out


register_simulator(ALGORITHM_ID, DpSgdSimulator())
