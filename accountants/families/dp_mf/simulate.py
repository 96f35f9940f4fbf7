"""Verification jobs for dp-mf: the correlated-noise release simulated on a small problem.

Utility: the workload is the prefix sums A (lower-triangular ones: the iterates of SGD with momentum 0 are
θ_t = θ₀ − η·(prefix sum of the gradients)), decoded as B = A·C⁺ (for a square C, A·C⁻¹; for the tree the least
squares decoder over its nodes, Honaker's estimator). The released prefix sums are B·(C·G + Z) = A·G + B·Z, so the
error is B·Z whatever the gradients: the simulation draws Z (rows × d, std σ per entry), measures the mean squared
error of the T·d prefix sums, and compares it with its exact expectation σ²‖B‖²_F/T (the factorisation's ‖B‖ term).

Audit: the distinguishing record is a canary whose gradient is a unit vector u along a coordinate no other record
uses, present at the steps its participation puts it in; along u the release is Y = C·x + Z with x the canary's
indicator of steps (zero on D′ under zero-out and add-remove; −x under replace-one). The score is the
log-likelihood ratio of Y (the most powerful test), computed from projections of Y drawn with Z:

* a fixed pattern (cyclic, single-epoch: the worst pattern the sensitivity found): v = C·x, score ⟨v, Y⟩/σ² (a
  Gaussian shift of μ = ‖v‖/σ, whose exact ε is the analytic Gaussian's);
* cyclic-poisson with a banded C (and C = I under Poisson): the canary's group steps, each taken with probability q;
  its columns are orthogonal, so the projections on them are independent and the score is the sum of the
  per-step mixture log-ratios log(1 − q + q·e^{(yⱼ‖cⱼ‖ − ‖cⱼ‖²/2)/σ²});
* Poisson or balls-in-bins participation with a general C: not audited (the optimal test is a mixture over every
  pattern); a 422 names the participation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from ...errors import ParameterError
from ...mechanisms.gaussian import gaussian_epsilon
from ...params import ParamsModel, param
from ...verification import BlockResult, Job, JobPlan, Simulator, register_simulator
from . import strategies
from .params import ALGORITHM_ID, DpMfParams, IdentityStrategy, TreeStrategy
from .privacy import Release, Route, encoder, release_of
from .text import relation_sensitivity

MAX_SIMULATED_STEPS = 1024
"""Most steps a verification job simulates (B is a dense T × rows matrix)."""


TRIAL_OPERATIONS = 75_000.0
"""A trial's utility work besides the decoder's product (drawing its noise, numpy calls), in the same operations."""


class DpMfProblem(ParamsModel):
    """The synthetic problem of a dp-mf verification job."""

    dimension: int = param(symbol="d", unit="coordinates", example=4, default=4, ge=1, le=64)
    """Coordinates of the gradients whose prefix sums are released (the error is measured on all of them)."""


class DpMfSimulator(Simulator[DpMfParams, DpMfProblem]):
    """The release C·G + Z: prefix-sum error against σ²‖B‖²_F/T, and a canary audit along a dedicated coordinate."""

    problem_model = DpMfProblem
    seconds_per_operation: ClassVar[Mapping[str, float]] = {"utility": 3e-10, "privacy-audit": 2.3e-8}
    """Measured by ``python benchmarks/jobs.py --calibrate`` and at T = 512 (one process, this VM in its slower
    phase): utility counts T·rows·d per trial for the decoder's product plus :data:`TRIAL_OPERATIONS`."""
    version = 1

    def plan(self, job: Job[DpMfParams, DpMfProblem]) -> JobPlan:
        p = job.params
        release = release_of(p)
        _simulated_or_refused(p, release, job.audit)
        report = job.privacy()
        z = report.required_noise.noise_multiplier
        sigma = z * relation_sensitivity(p, release) / p.clip_norm  # std per entry, in units of clip_norm
        encoder = encoder_matrix(p)
        decoder = prefix_decoder(encoder)
        predicted = sigma**2 * float(np.sum(decoder**2)) / p.steps
        canary = _canary(release, encoder, z)
        mu = canary.get("mu")
        exact = gaussian_epsilon(1.0 / mu, job.delta) if mu is not None and release.sensitivity.exact else None
        rows = encoder.shape[0]
        return job.plan(
            report,
            params=p.model_dump() | {"noise_multiplier": z, "noise_std": None},
            problem={
                "dimension": job.problem.dimension,
                "steps": p.steps,
                "rows": rows,
                "sigma": sigma,
                **{k: v for k, v in canary.items() if k not in ("method", "mu")},
            },
            work={
                "utility": job.trials * (p.steps * rows * job.problem.dimension + TRIAL_OPERATIONS),
                "privacy-audit": job.trials * rows * 2.0,
            },
            epsilon_exact=exact,
            exact_note=None if exact is not None else _exact_note(release),
            utility_measure="mean squared error of the released prefix sums (per step and coordinate)",
            predicted_bound=predicted,
            predicted_source="exact expectation σ²‖B‖²_F/T of the decoder B = A·C⁺ for the prefix sums A",
            prediction_note="an expectation, not a bound: the measured mean should match it within its interval",
            audit_method=canary["method"],
            gaussian_mu=mu,
        )

    def run_block(self, plan: JobPlan, rng: np.random.Generator, trials: int) -> BlockResult:
        problem = plan.problem
        result: dict[str, np.ndarray] = {}
        if "privacy-audit" in plan.checks:
            replace = plan.params["neighbouring"] == "replace-one"
            for inside, key in ((True, "score_in"), (False, "score_out")):
                result[key] = _scores(rng, trials, problem, replace, inside)
        if "utility" in plan.checks:
            decoder = _decoder(DpMfParams.model_validate(plan.params))
            result["utility"] = _prefix_errors(rng, trials, decoder, problem["sigma"], problem["dimension"])
        return BlockResult(**result)


def encoder_matrix(p: DpMfParams) -> np.ndarray:
    """C as a dense matrix (rows × T)."""
    s = p.strategy
    if isinstance(s, IdentityStrategy):
        return np.eye(p.steps)
    if isinstance(s, TreeStrategy):
        return strategies.tree_encoder(p.steps, s.completion, s.restart_every)
    return encoder(s, p.steps)


@functools.lru_cache(maxsize=4)
def _decoder(p: DpMfParams) -> np.ndarray:
    """B for a job's blocks (a pseudo-inverse: computed once per process and job)."""
    return prefix_decoder(encoder_matrix(p))


def prefix_decoder(encoder: np.ndarray) -> np.ndarray:
    """B = A·C⁺ with A the prefix sums: the least-squares decoder (A·C⁻¹ for an invertible C)."""
    steps = encoder.shape[1]
    workload = np.tril(np.ones((steps, steps)))
    decoder: np.ndarray = workload @ np.linalg.pinv(encoder)
    return decoder


def _prefix_errors(rng: np.random.Generator, trials: int, decoder: np.ndarray, sigma: float, d: int) -> np.ndarray:
    """Per trial: the mean over steps and coordinates of (B·Z)², Z with i.i.d. N(0, σ²) entries (trials in chunks
    of one matrix product each)."""
    rows = decoder.shape[1]
    chunk = max(1, min(trials, 2**22 // (rows * d)))
    errors = []
    for start in range(0, trials, chunk):
        n = min(chunk, trials - start)
        noise = sigma * rng.standard_normal((rows, n * d))
        squared = (decoder @ noise) ** 2
        errors.append(squared.reshape(decoder.shape[0], n, d).mean(axis=(0, 2)))
    return np.concatenate(errors)


def _canary(release: Release, encoder: np.ndarray, z: float) -> dict[str, Any]:
    """Where the canary is: its group's steps sampled at rate q, or a fixed pattern (the shift v = C·x and its μ =
    ‖v‖/(z·Δ): the shift over the noise, both in the relation's units, whose doubling cancels)."""
    if release.sampling_rate is not None:
        rate = release.sampling_rate
        groups = release.groups or 1
        norms = np.linalg.norm(encoder[:, ::groups], axis=0)
        return {
            "sampled_norms": norms.tolist(),
            "rate": rate,
            "method": f"gradient canary in the first of {groups} group(s), sampled at q = {rate:.6g} at each of its "
            f"{len(norms)} steps; score: the log-likelihood ratio of the projections on its (orthogonal) columns",
        }
    steps = list(release.sensitivity.witness)
    shift = encoder[:, steps].sum(axis=1)
    return {
        "shift": shift.tolist(),
        "mu": float(np.linalg.norm(shift)) / (z * release.sensitivity.value),
        "method": f"gradient canary at steps {steps[:8]}{'…' if len(steps) > 8 else ''} (the worst pattern found); "
        "score: ⟨C·x, Y⟩, the log-likelihood ratio of a Gaussian shift",
    }


def _scores(
    rng: np.random.Generator, trials: int, problem: Mapping[str, Any], replace: bool, inside: bool
) -> np.ndarray:
    """The canary's log-likelihood ratios on D (``inside``) or on D′, each from a fresh draw of the release."""
    sigma = float(problem["sigma"])
    if "shift" in problem:
        shift = np.asarray(problem["shift"])
        sign = 1.0 if inside else (-1.0 if replace else 0.0)
        projected: np.ndarray = sign * float(shift @ shift) + sigma * (
            rng.standard_normal((trials, len(shift))) @ shift
        )
        return projected / sigma**2
    norms = np.asarray(problem["sampled_norms"])
    rate = problem["rate"]
    taken = rng.random((trials, len(norms))) < rate
    sign = 1.0 if inside else (-1.0 if replace else 0.0)
    y = np.where(taken, sign * norms, 0.0) + sigma * rng.standard_normal((trials, len(norms)))
    with_canary = _log_mixture(y, norms, rate, sigma, 1.0)
    without = _log_mixture(y, norms, rate, sigma, -1.0) if replace else -0.5 * (y / sigma) ** 2
    scores: np.ndarray = np.sum(with_canary - without, axis=1)
    return scores


def _log_mixture(y: np.ndarray, norms: np.ndarray, rate: float, sigma: float, sign: float) -> np.ndarray:
    """log((1 − q)·φ(y/σ) + q·φ((y − sign·n)/σ)) up to the common constant."""
    absent = math.log1p(-rate) - 0.5 * (y / sigma) ** 2 if rate < 1.0 else np.full_like(y, -np.inf)
    present = math.log(rate) - 0.5 * ((y - sign * norms) / sigma) ** 2
    return np.logaddexp(absent, present)


def _simulated_or_refused(p: DpMfParams, release: Release, audit: bool) -> None:
    if p.steps > MAX_SIMULATED_STEPS:
        raise ParameterError.single(
            "steps",
            f"verification jobs simulate at most {MAX_SIMULATED_STEPS} steps of dp-mf (B is dense)",
            f"an integer in [1, {MAX_SIMULATED_STEPS}] in a verification job",
            p.steps,
        )
    if audit and release.route in (Route.SPECTRAL, Route.CONDITIONAL):
        raise ParameterError.single(
            "participation",
            "the privacy audit of dp-mf simulates a sampled record only where its columns of C are orthogonal "
            "(amplified banded, C = I); a sampled general C (the spectral and conditional routes) needs the "
            "mixture over every pattern",
            "cyclic, single-epoch, or cyclic-poisson with a banded C in a job with privacy-audit",
            p.participation,
        )
    if audit and not release.sampled and p.participation not in ("cyclic", "single-epoch"):
        raise ParameterError.single(
            "participation",
            "the privacy audit of dp-mf simulates fixed patterns (cyclic, single-epoch) and the amplified banded "
            "case (cyclic-poisson with a banded C, or C = I); this participation needs a mixture over every pattern",
            "cyclic, single-epoch or cyclic-poisson with a banded C in a job with privacy-audit",
            p.participation,
        )


def _exact_note(release: Release) -> str:
    if release.route is Route.GAUSSIAN and not release.sensitivity.exact:
        return "the sensitivity is an upper bound: the mechanism's exact ε lies between the audited pattern's and it"
    return "no closed form for a subsampled Gaussian (needs a privacy-loss-distribution accountant)"


register_simulator(ALGORITHM_ID, DpMfSimulator())
