"""The simulator protocol: a verification job's plan, its blocks of trials and their random streams, and the registry
of each family's simulator.

Randomness: trials come in fixed blocks of :data:`BLOCK_TRIALS`; block i draws from ``SeedSequence(seed).spawn(…)[i]``
(constructed directly as ``SeedSequence(seed, spawn_key=(i,))``). A block is the unit of randomness, so results depend
on the seed and the parameters only, not on how blocks are grouped into execution chunks or which worker runs them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import numpy as np

from ..errors import FieldIssue, ParameterError
from ..params import ParamsModel, parse_params

if TYPE_CHECKING:
    from ..reports import PrivacyReport

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
class JobPlan:
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

    def scaled(self, trials: int) -> JobPlan:
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
    def from_json(cls, data: Mapping[str, Any]) -> JobPlan:
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
    ) -> JobPlan:
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
        return JobPlan(
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
    """Seconds per estimated operation of each part of the plan's work (keys of :attr:`JobPlan.work_by_check`),
    measured on each family's example job (``python benchmarks/jobs.py --calibrate``: one process, the reference
    machine with 2 cores); a part without one counts at :data:`DEFAULT_SECONDS_PER_OPERATION`."""

    version: ClassVar[int] = 1
    """Incremented whenever a change alters what a block draws or returns for a seed: a job's blocks all come from one
    version (:func:`run_block` refuses a plan made for another, :class:`SimulatorChanged`)."""

    def stamped(self, plan: JobPlan) -> JobPlan:
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
    def plan(self, job: Job[P, Q]) -> JobPlan:
        """Resolve the problem, the accounted and exact ε (from ``job.privacy()``), and the predicted utility."""

    @abstractmethod
    def run_block(self, plan: JobPlan, rng: np.random.Generator, trials: int) -> BlockResult:
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


def run_block(simulator: Simulator[Any, Any], plan: JobPlan, block: int) -> BlockResult:
    """Block ``block`` of ``plan`` (its size and random stream are fixed by the block index); SimulatorChanged where
    the plan was made for another version of the simulator (a job's blocks never mix two versions)."""
    if plan.simulator_version != simulator.version:
        raise SimulatorChanged(
            f"this job was planned for version {plan.simulator_version} of the {plan.algorithm} simulator and this "
            f"worker runs version {simulator.version}: its blocks would not match; submit the job again"
        )
    return simulator.run_block(plan, block_rng(plan.seed, block), block_sizes(plan.trials)[block])
