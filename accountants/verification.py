"""Verification by simulation: the interface family simulators implement, and the statistics of a verification run.

A verification job runs an algorithm many times on a small synthetic problem and reports

* the **utility** it reaches (mean, standard error, 95 % interval) against the predicted bound, and
* an **empirical lower bound on ε** from a membership test on neighbouring datasets: each trial runs the mechanism once
  on D (with the distinguishing record) and once on D′, and scores both outputs. The threshold of the test is chosen on
  the even-numbered trials and evaluated on the odd ones with one-sided Clopper–Pearson bounds (95 % overall, split
  between the two error rates), so ε_lower is a valid 95 % lower bound on the ε of the mechanism simulated.

Randomness: trials come in fixed blocks of :data:`BLOCK_TRIALS`; block i draws from ``SeedSequence(seed).spawn(…)[i]``
(constructed directly as ``SeedSequence(seed, spawn_key=(i,))``). A block is the unit of randomness, so results depend
on the seed and the parameters only, not on how blocks are grouped into execution chunks or which worker runs them.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import numpy as np
from pydantic import BaseModel, Field
from scipy import special, stats

from .errors import FieldIssue, ParameterError
from .params import ParamsModel, parse_params

if TYPE_CHECKING:
    from .reports import PrivacyReport

PrivacyOf = Callable[[], "PrivacyReport"]
"""The family's privacy answer at the job's parameters and δ, computed when the simulator asks for it (after its own
input checks): handed to :meth:`Simulator.plan` by :func:`accountants.planning.plan_job`, so that no simulator
calls its family."""
P = TypeVar("P", bound=ParamsModel)
"""A family's parameter model."""
Q = TypeVar("Q", bound=ParamsModel)
"""A simulator's problem model."""

BLOCK_TRIALS = 64
CHECKS = ("utility", "privacy-audit")
CONFIDENCE = 0.95


def block_rng(seed: int, block: int) -> np.random.Generator:
    """The random stream of block ``block``: ``SeedSequence(seed).spawn(block + 1)[block]``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(block,)))


DEFAULT_SECONDS_PER_OPERATION = 1e-8
"""A simulator's operations whose rate was not measured count at this (10 ns each)."""
BLOCK_SECONDS = 5e-5
"""Fixed cost of running one block (seeding, result arrays), in seconds."""


def block_sizes(trials: int) -> list[int]:
    """Trials per block: full blocks of :data:`BLOCK_TRIALS`, the last one possibly shorter."""
    full, rest = divmod(trials, BLOCK_TRIALS)
    return [BLOCK_TRIALS] * full + ([rest] if rest else [])


@dataclass(frozen=True)
class Plan:
    """Everything a simulation needs, fixed before the first trial (JSON-serialisable, so it can be stored)."""

    algorithm: str
    params: dict[str, Any]
    """Hyperparameters with the noise (calibrated first when the job asked for a target ε)."""
    problem: dict[str, Any]
    """The synthetic problem, every setting resolved."""
    checks: tuple[str, ...]
    trials: int
    seed: int
    delta: float
    epsilon_accounted: float
    accountant: str
    epsilon_exact: float | None
    exact_note: str | None
    utility_measure: str | None
    predicted_bound: float | None
    predicted_source: str | None
    prediction_note: str | None
    audit_method: str | None
    gaussian_mu: float | None = None
    """μ where the audited transcript is exactly a Gaussian shift of μ standard deviations between D and D′ (then the
    audit's error rates, and the trials a target power needs, are known before running: :func:`trials_for_power`)."""

    work_by_check: dict[str, float] = field(default_factory=dict)
    """The operations of each part of the simulation: a check (``utility``, ``privacy-audit``) where the simulator
    runs them apart, ``simulation`` where one simulation serves every check."""
    estimated_seconds: float = 0.0
    """Estimated running time on one worker process of the reference machine (:meth:`Simulator.stamped`, calibrated
    per family and check; the service bounds it)."""
    seconds_by_check: dict[str, float] = field(default_factory=dict)
    """The part of :attr:`estimated_seconds` each part of :attr:`work_by_check` takes (blocks' fixed cost apart)."""
    simulator_version: int = 1
    """The :attr:`Simulator.version` the plan was made for (plans stored before versions existed: 1)."""

    @property
    def work(self) -> float:
        """Estimated cost in elementary operations, all parts together."""
        return sum(self.work_by_check.values())

    def scaled(self, trials: int) -> Plan:
        """The same plan with ``trials`` trials (its work and time scaled in proportion)."""
        ratio = trials / self.trials
        return replace(
            self,
            trials=trials,
            work_by_check={k: v * ratio for k, v in self.work_by_check.items()},
            estimated_seconds=self.estimated_seconds * ratio,
            seconds_by_check={k: v * ratio for k, v in self.seconds_by_check.items()},
        )

    def to_json(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        fields = {k: v for k, v in data.items() if k != "work"}  # plans stored before work_by_check held the total
        return cls(**{**fields, "checks": tuple(data["checks"])})


@dataclass(frozen=True)
class BlockResult:
    """One block's raw results: per-trial utility values and the audit scores on D and D′ (empty when not run)."""

    utility: np.ndarray = field(default_factory=lambda: np.zeros(0))
    score_in: np.ndarray = field(default_factory=lambda: np.zeros(0))
    score_out: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"utility": self.utility, "score_in": self.score_in, "score_out": self.score_out}


@dataclass(frozen=True)
class Job(Generic[P, Q]):
    """A validated verification job as :func:`accountants.planning.plan_job` hands it to a simulator: the
    hyperparameters (the knob calibrated already, where the job named a target ε), the problem, the checks, and the
    family's privacy answer on demand."""

    params: P
    delta: float
    checks: tuple[str, ...]
    trials: int
    seed: int
    problem: Q
    privacy: PrivacyOf
    """The family's privacy answer at ``params`` and ``delta`` (computed when called, after the simulator's checks)."""

    @property
    def utility(self) -> bool:
        """Whether the job measures utility."""
        return "utility" in self.checks

    @property
    def audit(self) -> bool:
        """Whether the job audits privacy."""
        return "privacy-audit" in self.checks

    def plan(
        self,
        report: PrivacyReport,
        *,
        params: dict[str, Any],
        problem: dict[str, Any],
        work: float | Mapping[str, float],
        epsilon_exact: float | None = None,
        exact_note: str | None = None,
        utility_measure: str | None = None,
        predicted_bound: float | None = None,
        predicted_source: str | None = None,
        prediction_note: str | None = None,
        audit_method: str | None = None,
        gaussian_mu: float | None = None,
    ) -> Plan:
        """The plan of this job: its checks, trials, seed and δ, the accounted ε of ``report``, and the simulator's
        resolved problem and prediction (the utility measure and prediction only where utility is checked, the audit
        method only where privacy is audited). ``work``: operations by check (only the checks asked for count), or
        one number for a simulation that serves every check."""
        utility = self.utility
        by_check = (
            {"simulation": float(work)}
            if isinstance(work, int | float)
            else {check: float(ops) for check, ops in work.items() if check in self.checks}
        )
        return Plan(
            algorithm=report.algorithm,
            params=params,
            problem=problem,
            checks=self.checks,
            trials=self.trials,
            seed=self.seed,
            delta=self.delta,
            epsilon_accounted=report.epsilon,
            accountant=report.accountant,
            epsilon_exact=epsilon_exact,
            exact_note=exact_note,
            utility_measure=utility_measure if utility else None,
            predicted_bound=predicted_bound if utility else None,
            predicted_source=predicted_source if utility else None,
            prediction_note=prediction_note if utility else None,
            audit_method=audit_method if self.audit else None,
            gaussian_mu=gaussian_mu,
            work_by_check=by_check,
        )


class Simulator(ABC, Generic[P, Q]):
    """A family's simulator: it plans a verification run and runs blocks of trials (deterministic given the rng)."""

    problem_model: type[Q]
    checks: ClassVar[tuple[str, ...]] = CHECKS
    seconds_per_operation: ClassVar[Mapping[str, float]] = {}
    """Seconds per estimated operation of each part of the plan's work (keys of :attr:`Plan.work_by_check`),
    measured on each family's example job (``python benchmarks/jobs.py --calibrate``: one process, the reference
    machine with 2 cores); a part without one counts at :data:`DEFAULT_SECONDS_PER_OPERATION`."""

    version: ClassVar[int] = 1
    """Incremented whenever a change alters what a block draws or returns for a seed: a job's blocks all come from one
    version (:func:`run_block` refuses a plan made for another, :class:`SimulatorChanged`)."""

    def stamped(self, plan: Plan) -> Plan:
        """The plan as stored: this simulator's :attr:`version`, and the running time on one worker process (each
        part's operations at its measured rate, :attr:`seconds_per_operation`, and a fixed cost per block,
        :data:`BLOCK_SECONDS`)."""
        parts = {
            part: ops * self.seconds_per_operation.get(part, DEFAULT_SECONDS_PER_OPERATION)
            for part, ops in plan.work_by_check.items()
        }
        total = sum(parts.values()) + BLOCK_SECONDS * len(block_sizes(plan.trials))
        return replace(plan, estimated_seconds=total, seconds_by_check=parts, simulator_version=self.version)

    @abstractmethod
    def plan(self, job: Job[P, Q]) -> Plan:
        """Resolve the problem, the accounted and exact ε (from ``job.privacy()``), and the predicted utility."""

    @abstractmethod
    def run_block(self, plan: Plan, rng: np.random.Generator, trials: int) -> BlockResult:
        """Run ``trials`` trials (for the requested checks) drawing only from ``rng``."""

    def parse_problem(self, problem: Mapping[str, Any] | None) -> Q:
        try:
            return parse_params(self.problem_model, problem or {})
        except ParameterError as error:
            raise ParameterError(
                [FieldIssue(("problem", *i.loc), i.message, i.allowed, i.value) for i in error.issues]
            ) from None


_SIMULATORS: dict[str, Simulator[Any, Any]] = {}


def register_simulator(algorithm: str, simulator: Simulator[P, Q]) -> Simulator[P, Q]:
    """Make ``simulator`` the one that runs verification jobs for ``algorithm`` (each family's ``simulate`` module
    registers its own; the family does not know its simulator)."""
    known = _SIMULATORS.get(algorithm)
    if known is not None and type(known) is not type(simulator):
        raise RuntimeError(f"a second simulator registered for {algorithm!r}")
    _SIMULATORS[algorithm] = simulator
    return simulator


def simulator_for(algorithm: str) -> Simulator[Any, Any] | None:
    """The simulator registered for ``algorithm``, if any."""
    return _SIMULATORS.get(algorithm)


class SimulatorChanged(RuntimeError):
    """A plan made for another version of its simulator: its blocks would not be those of its other blocks."""


def run_block(simulator: Simulator[Any, Any], plan: Plan, block: int) -> BlockResult:
    """Block ``block`` of ``plan`` (its size and random stream are fixed by the block index); SimulatorChanged where
    the plan was made for another version of the simulator (a job's blocks never mix two versions)."""
    if plan.simulator_version != simulator.version:
        raise SimulatorChanged(
            f"this job was planned for version {plan.simulator_version} of the {plan.algorithm} simulator and this "
            f"worker runs version {simulator.version}: its blocks would not match; submit the job again"
        )
    return simulator.run_block(plan, block_rng(plan.seed, block), block_sizes(plan.trials)[block])


def canary_llr_scores(
    rng: np.random.Generator,
    trials: int,
    releases: int,
    sampling_rate: float,
    noise: float,
    replace: bool,
    inside: bool,
) -> np.ndarray:
    """Audit scores of a *canary*: the log-likelihood ratio (D vs D′) of a transcript along the canary's direction.

    Each of ``releases`` noisy releases includes the canary with probability ``sampling_rate`` (independently; 1 for
    a deterministic batch) and then shows, along its direction, +1 (the canary, on D) or −1 (the opposite canary,
    on D′ under replace-one; 0 under add/remove) plus N(0, noise²). Units: the canary's own contribution, so
    ``noise`` is the noise std over that contribution. The score is the log-likelihood ratio of the whole
    transcript, the most powerful test (Neyman–Pearson); one score per trial, drawn on D (``inside``) or on D′.
    """
    score = np.zeros(trials)
    for start in range(0, releases, 4096):
        n = min(4096, releases - start)
        included = rng.random((trials, n)) < sampling_rate
        signal = np.where(included, 1.0 if inside else (-1.0 if replace else 0.0), 0.0)
        x = signal + noise * rng.standard_normal((trials, n))
        without = _log_mixture(x, sampling_rate, noise, -1.0) if replace else -0.5 * (x / noise) ** 2
        score += np.sum(_log_mixture(x, sampling_rate, noise, 1.0) - without, axis=1)
    return score


def allocation_canary_scores(
    rng: np.random.Generator,
    trials: int,
    epoch_lengths: list[int],
    slots: int,
    noise: float,
    replace: bool,
    inside: bool,
) -> np.ndarray:
    """Audit scores of a canary under a shuffling or balls-in-bins loader: each epoch puts the canary in one of
    ``slots`` batches uniformly at random (its position in a random permutation, or its bin), of which the epoch runs
    the first ``epoch_lengths[e]``. Along the canary's direction a run shows +1 in the canary's batch (−1 for the
    opposite canary on D′ under replace-one; nothing under add/remove) plus N(0, noise²) at every step. The score is
    the log-likelihood ratio of the whole transcript, per epoch log[(t − L)/t + (1/t)Σ_s e^{(x_s − ½)/σ²}] (over
    the same for the opposite canary under replace-one), the most powerful test."""
    score = np.zeros(trials)
    var = noise * noise
    for length in epoch_lengths:
        position = rng.integers(slots, size=trials)
        x = noise * rng.standard_normal((trials, length))
        hit = position < length
        x[hit, position[hit]] += 1.0 if inside else (-1.0 if replace else 0.0)
        absent = math.log(slots - length) if slots > length else -math.inf
        score += _log_allocation(x, var, absent, slots, 1.0)
        if replace:
            score -= _log_allocation(x, var, absent, slots, -1.0)
    return score


def _log_allocation(x: np.ndarray, var: float, log_absent: float, slots: int, sign: float) -> np.ndarray:
    """log[(t − L)/t + (1/t)Σ_s e^{(sign·x_s − ½)/σ²}] per row (``log_absent`` = log(t − L))."""
    terms = special.logsumexp((sign * x - 0.5) / var, axis=1)
    return np.asarray(np.logaddexp(log_absent, terms) - math.log(slots))


def _log_mixture(x: np.ndarray, q: float, sigma: float, shift: float) -> np.ndarray:
    """log[(1 − q)·φ(x/σ) + q·φ((x − shift)/σ)] up to the shared constant."""
    if q >= 1.0:
        return -0.5 * ((x - shift) / sigma) ** 2
    return np.asarray(
        np.logaddexp(np.log1p(-q) - 0.5 * (x / sigma) ** 2, math.log(q) - 0.5 * ((x - shift) / sigma) ** 2)
    )


# -- statistics -----------------------------------------------------------------------------------------------------


def clopper_pearson_upper(successes: int, n: int, alpha: float) -> float:
    """One-sided upper confidence bound (level 1 − α) on a binomial proportion."""
    return 1.0 if successes >= n else float(stats.beta.ppf(1.0 - alpha, successes + 1, n - successes))


def clopper_pearson_lower(successes: int, n: int, alpha: float) -> float:
    """One-sided lower confidence bound (level 1 − α) on a binomial proportion."""
    return 0.0 if successes <= 0 else float(stats.beta.ppf(alpha, successes, n - successes + 1))


class UtilitySummary(BaseModel):
    """The utility measured over the trials against the predicted bound."""

    measure: str = Field(description="What was measured.", examples=["excess loss φ(X_T) − φ* of the last iterate"])
    measured: dict[str, float | int] = Field(
        description="mean, standard_error, ci95_low, ci95_high (Student t) and trials.",
        examples=[{"mean": 0.0266, "standard_error": 0.0003, "ci95_low": 0.0260, "ci95_high": 0.0271, "trials": 20000}],
    )
    predicted_bound: float | None = Field(
        description="The prediction (null when the algorithm has none).", examples=[0.0264]
    )
    predicted_source: str | None = Field(
        description="Where the prediction comes from.", examples=["exact expectation of the Gaussian last iterate"]
    )
    within_bound: bool | None = Field(
        description="The measurement does not refute the prediction: the lower end of the 95 % interval is at most "
        "the predicted bound (null without a prediction).",
        examples=[True],
    )
    ratio: float | None = Field(description="Measured mean over the prediction.", examples=[1.008])
    note: str | None = Field(description="Caveats.", examples=[None])


class AuditSummary(BaseModel):
    """The empirical lower bound on ε against the accounted (and, where known, exact) ε."""

    epsilon_accounted: float = Field(description="ε the accountant certifies for the simulated run.", examples=[9.01])
    accountant: str = Field(description="The accountant that certified it.", examples=["rdp"])
    epsilon_lower_bound: float = Field(
        description="One-sided 95 % lower confidence bound on ε from the audit.", examples=[1.35]
    )
    epsilon_exact: float | None = Field(
        description="The exact ε of the simulated mechanism, where closed-form.", examples=[2.75]
    )
    exact_note: str | None = Field(description="How the exact ε is known, or why not.", examples=["analytic Gaussian"])
    consistent: bool = Field(description="The lower bound does not exceed the accounted ε.", examples=[True])
    max_detectable_epsilon: float = Field(
        description="The largest lower bound these trials could certify even with a perfect test (no errors on the "
        "evaluation half; the same Clopper–Pearson construction): the audit's power.",
        examples=[8.1],
    )
    informative: bool = Field(
        description="Whether the audit can say something about the accounting: false where max_detectable_epsilon or "
        "the measured bound is below INFORMATIVE_FRACTION (a quarter) of the accounted ε.",
        examples=[True],
    )
    informative_reason: str | None = Field(
        description="Why the audit is not informative (too few trials, or a weak score / a drowned signal).",
        examples=[None],
    )
    trials: int = Field(description="Trials (each: one run on D and one on D′).", examples=[20000])
    method: str = Field(
        description="Distinguishing record, score, threshold selection and confidence bounds.",
        examples=["gradient canary; log-likelihood ratio; Clopper–Pearson"],
    )
    threshold: float = Field(description="The selected threshold on the score.", examples=[0.41])
    direction: str = Field(
        description="above: scores above the threshold say D; below: the reverse.", examples=["above"]
    )
    error_rates: dict[str, float] = Field(
        description="Empirical true- and false-positive rates on the evaluation half.",
        examples=[{"true_positive": 0.2, "false_positive": 0.01}],
    )


def summarize_utility(plan: Plan, values: np.ndarray) -> UtilitySummary:
    """Mean, standard error and 95 % interval of the per-trial utility; the prediction is not refuted when the lower
    end of the interval is at most the predicted bound."""
    n = int(values.size)
    mean = float(values.mean())
    se = float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    half = float(stats.t.ppf(0.975, n - 1)) * se if n > 1 else math.inf
    measured: dict[str, float | int] = {
        "mean": mean,
        "standard_error": se,
        "ci95_low": mean - half,
        "ci95_high": mean + half,
        "trials": n,
    }
    bound = plan.predicted_bound
    within = None if bound is None else bool(mean - half <= bound)
    ratio = None if bound is None or bound == 0 else mean / bound
    return UtilitySummary(
        measure=plan.utility_measure or "utility",
        measured=_finite(measured),
        predicted_bound=bound,
        predicted_source=plan.predicted_source,
        within_bound=within,
        ratio=ratio,
        note=plan.prediction_note,
    )


def _finite(values: dict[str, float | int]) -> dict[str, float | int]:
    return {k: (v if math.isfinite(v) else 0.0) for k, v in values.items()}


def _epsilon_from_rates(positive_rate: float, false_rate: float, delta: float) -> float:
    """ε ≥ log((TPR − δ)/FPR) for a test with these rates (0 where it says nothing)."""
    if false_rate <= 0.0:
        return math.inf if positive_rate - delta > 0 else 0.0
    gain = positive_rate - delta
    return max(0.0, math.log(gain / false_rate)) if gain > 0 else 0.0


def _bound_from_counts(tp: int, n_in: int, fp: int, n_out: int, delta: float, alpha: float) -> float:
    """ε ≥ log((TPR_low − δ)/FPR_high) from a test's counts: ``tp`` of ``n_in`` D trials and ``fp`` of ``n_out`` D′
    trials said D, the rates bounded by one-sided Clopper–Pearson at 1 − α/2 each."""
    return _epsilon_from_rates(
        clopper_pearson_lower(tp, n_in, alpha / 2), clopper_pearson_upper(fp, n_out, alpha / 2), delta
    )


def _bound_both_ways(tp: int, n_in: int, fp: int, n_out: int, delta: float, alpha: float) -> float:
    """The larger of the test's bound read as is (TPR against FPR) and read the other way (TNR against FNR)."""
    return max(
        _bound_from_counts(tp, n_in, fp, n_out, delta, alpha),
        _bound_from_counts(n_out - fp, n_out, n_in - tp, n_in, delta, alpha),
    )


INFORMATIVE_FRACTION = 0.25
"""An audit whose reach (or result) is below this share of the accounted ε cannot tell a sound accountant from one that
overstates privacy four-fold (the size of the gaps shuffled batches show): it is reported as not informative."""


def max_detectable_epsilon(n_in: int, n_out: int, delta: float, alpha: float = 1.0 - CONFIDENCE) -> float:
    """The largest ε lower bound :func:`audit` can certify from ``n_in`` and ``n_out`` evaluation trials: a perfect
    test (every D trial said D, no D′ trial said D), log((CPlow(n_in, n_in) − δ)/CPhigh(0, n_out)) with one-sided
    Clopper–Pearson bounds at 1 − α/2: (α/2)^{1/n_in} and 1 − (α/2)^{1/n_out}. Every measured bound is at most this
    (the bound grows with the true positives and falls with the false positives)."""
    if n_in == 0 or n_out == 0:
        return 0.0
    return min(_bound_from_counts(n_in, n_in, 0, n_out, delta, alpha), 1e6)


def trials_for_reach(delta: float, target: float, limit: int, alpha: float = 1.0 - CONFIDENCE) -> int | None:
    """The fewest trials (a multiple of :data:`BLOCK_TRIALS`) whose audit could certify ε ≥ ``target`` with a perfect
    test (:func:`max_detectable_epsilon` on half of them each side), or None beyond ``limit``: a lower bound on the
    trials any score needs, known before running."""

    def blocks(b: int) -> float:
        return max_detectable_epsilon(b * BLOCK_TRIALS // 2, b * BLOCK_TRIALS // 2, delta, alpha)

    top = limit // BLOCK_TRIALS
    if top < 1 or blocks(top) < target:
        return None
    lo, hi = 0, top  # blocks(hi) ≥ target; blocks(lo) < target (0 blocks certify nothing)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if blocks(mid) >= target else (mid, hi)
    return hi * BLOCK_TRIALS


def trials_for_power(mu: float, delta: float, target: float, limit: int, alpha: float = 1.0 - CONFIDENCE) -> int | None:
    """The fewest trials (a multiple of :data:`BLOCK_TRIALS`) with which :func:`audit` is expected to certify
    ε ≥ ``target`` on a μ-Gaussian-shift transcript, or None beyond ``limit``.

    The likelihood-ratio test at threshold t has FPR = Φ̄(t) and TPR = Φ̄(t − μ); on the m evaluation trials of each
    side the counts are taken two standard deviations on the pessimistic side of their means (the measured bound
    then reaches the target in ~97 % of runs), and the Clopper–Pearson construction of :func:`audit` is applied."""
    thresholds = np.linspace(-2.0, 10.0, 61) + 0.5 * mu
    fpr, tpr = special.ndtr(-thresholds), special.ndtr(mu - thresholds)
    trials = BLOCK_TRIALS
    while trials <= limit:
        m = trials // 2
        fp = np.minimum(m, np.ceil(fpr * m + 2.0 * np.sqrt(m * fpr * (1.0 - fpr))))
        tp = np.maximum(0, np.floor(tpr * m - 2.0 * np.sqrt(m * tpr * (1.0 - tpr))))
        best = max(_bound_from_counts(int(t), m, int(f), m, delta, alpha) for t, f in zip(tp, fp, strict=True))
        if best >= target:
            return trials
        trials = math.ceil(trials * 1.25 / BLOCK_TRIALS) * BLOCK_TRIALS
    return None


def _informative(lower: float, reach: float, accounted: float, exact: float | None, trials: int) -> str | None:
    """Why an audit is not informative, or None where it is (see :data:`INFORMATIVE_FRACTION`)."""
    floor = INFORMATIVE_FRACTION * accounted
    if reach < floor:
        return (
            f"too few trials: even a perfect test on these {trials} trials certifies at most ε ≥ {reach:.3g}, below "
            f"{INFORMATIVE_FRACTION:g} of the accounted ε = {accounted:.3g}; run more trials"
        )
    if lower < floor and exact is not None and lower >= INFORMATIVE_FRACTION * exact:
        return (
            f"a loose accountant: the measured ε ≥ {lower:.3g} is below {INFORMATIVE_FRACTION:g} of the accounted "
            f"ε = {accounted:.3g}, but the simulated mechanism's exact ε is {exact:.3g}: the audit cannot test the "
            "accounted value, only the mechanism"
        )
    if lower < floor:
        return (
            f"a weak score or a drowned signal: the measured ε ≥ {lower:.3g} is below {INFORMATIVE_FRACTION:g} of the "
            f"accounted ε = {accounted:.3g} although the trials could certify up to {reach:.3g}; the canary's signal "
            "is small against the noise of the rest of the run (or the accounting is loose)"
        )
    return None


def audit(plan: Plan, score_in: np.ndarray, score_out: np.ndarray, alpha: float = 1.0 - CONFIDENCE) -> AuditSummary:
    """One-sided lower confidence bound on ε from paired scores on D (in) and D′ (out).

    Threshold tests "say in when the score is above t" (and, for the other direction, below t). The threshold and
    direction maximise the bound on the even-numbered trials; the odd-numbered trials estimate the error rates with
    Clopper–Pearson bounds at level 1 − α/2 each, and ε_lower = max{log((TPR_low − δ)/FPR_high),
    log((TNR_low − δ)/FNR_high), 0}, since (ε, δ)-DP forces TPR ≤ e^ε·FPR + δ and TNR ≤ e^ε·FNR + δ.
    """
    select, evaluate = slice(0, None, 2), slice(1, None, 2)
    best = (-1.0, 0.0, "above")
    for direction, sign in (("above", 1.0), ("below", -1.0)):
        inside, outside = sign * score_in[select], sign * score_out[select]
        candidates = np.unique(np.quantile(np.concatenate((inside, outside)), np.linspace(0.0, 1.0, 401)))
        for t in candidates:
            value = _bound_at(inside, outside, t, plan.delta, alpha)
            if value > best[0]:
                best = (value, float(sign * t), direction)
    _, threshold, direction = best
    sign = 1.0 if direction == "above" else -1.0
    inside, outside = sign * score_in[evaluate], sign * score_out[evaluate]
    n_in, n_out = inside.size, outside.size
    tp, fp = int(np.sum(inside > sign * threshold)), int(np.sum(outside > sign * threshold))
    lower = min(_bound_both_ways(tp, n_in, fp, n_out, plan.delta, alpha), 1e6)
    reach = max_detectable_epsilon(n_in, n_out, plan.delta, alpha)
    reason = _informative(lower, reach, plan.epsilon_accounted, plan.epsilon_exact, int(score_in.size))
    return AuditSummary(
        epsilon_accounted=plan.epsilon_accounted,
        accountant=plan.accountant,
        epsilon_lower_bound=lower,
        epsilon_exact=plan.epsilon_exact,
        exact_note=plan.exact_note,
        consistent=bool(lower <= plan.epsilon_accounted),
        max_detectable_epsilon=reach,
        informative=reason is None,
        informative_reason=reason,
        trials=int(score_in.size),
        method=(plan.audit_method or "")
        + f"; threshold test chosen on the {score_in[select].size} even-numbered trials, error rates of the "
        f"{n_in} odd-numbered ones bounded by one-sided Clopper–Pearson at {1 - alpha / 2:.3g} each "
        f"({1 - alpha:.0%} overall)",
        threshold=threshold,
        direction=direction,
        error_rates={"true_positive": tp / n_in if n_in else 0.0, "false_positive": fp / n_out if n_out else 0.0},
    )


def _bound_at(inside: np.ndarray, outside: np.ndarray, t: float, delta: float, alpha: float) -> float:
    n_in, n_out = inside.size, outside.size
    tp, fp = int(np.sum(inside > t)), int(np.sum(outside > t))
    return _bound_both_ways(tp, n_in, fp, n_out, delta, alpha)


class VerificationResult(BaseModel):
    """What a verification job found."""

    utility: UtilitySummary | None = Field(description="The utility check (null if not requested).")
    privacy_audit: AuditSummary | None = Field(description="The privacy audit (null if not requested).")
    trials: int = Field(description="Trials run.", examples=[20000])
    seed: int = Field(description="The seed (the result depends on it and the parameters only).", examples=[0])
    problem: dict[str, Any] = Field(
        description="The synthetic problem, every setting resolved.",
        examples=[{"kind": "linear-gaussian", "curvature": 1.0}],
    )
    noise_multiplier: float | None = Field(
        description="The noise multiplier simulated (calibrated when the job gave a target ε).", examples=[2.0]
    )
    params: dict[str, Any] = Field(description="The hyperparameters simulated.", examples=[{"steps": 50}])


def summarize(plan: Plan, blocks: Sequence[BlockResult]) -> VerificationResult:
    """The verification result from every block, in block order."""
    utility = audit_summary = None
    if "utility" in plan.checks:
        utility = summarize_utility(plan, np.concatenate([b.utility for b in blocks]))
    if "privacy-audit" in plan.checks:
        audit_summary = audit(
            plan, np.concatenate([b.score_in for b in blocks]), np.concatenate([b.score_out for b in blocks])
        )
    return VerificationResult(
        utility=utility,
        privacy_audit=audit_summary,
        trials=plan.trials,
        seed=plan.seed,
        problem=plan.problem,
        noise_multiplier=plan.params.get("noise_multiplier"),
        params=plan.params,
    )
