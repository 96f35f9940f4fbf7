"""Verification jobs on bilinear saddle points shared by NSEG and NISPP: batches, canaries and the simulator base."""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

import numpy as np

from ...errors import ParameterError
from ...mechanisms.gaussian import gdp_epsilon
from ...synthetic.bilinear import BilinearProblem
from ...verification import BlockResult, Job, JobPlan, Simulator, canary_llr_scores
from .params import BilinearProblemSettings, NoisyViParams

# -- simulation on bilinear saddle points ------------------------------------------------------------------------------

S = TypeVar("S", bound=NoisyViParams)
"""The parameter model of NSEG or NISPP."""

MAX_SIMULATED_DIMENSION = 64
MAX_SIMULATED_RECORDS = 10**6
"""Multi-pass runs keep each trial's dataset in memory: dataset_size·dimension is bounded by this."""


class BatchSource:
    """Batch means for successive evaluations of a run, for ``runs`` independent runs.

    Single pass: every batch is fresh (disjoint batches of i.i.d. records). Multi pass: each run owns one dataset of
    n records, and every batch is drawn from it (Poisson: each record with probability B/n, the sum divided by B;
    uniform: B distinct records).
    """

    def __init__(self, problem: BilinearProblem, params: Mapping[str, Any], rng: np.random.Generator, runs: int):
        self.problem, self.rng, self.runs = problem, rng, runs
        self.batch = int(params["batch_size"])
        self.multi = params["passes"] == "multi"
        self.sampling = params.get("sampling", "poisson")
        if self.multi:
            n, d = int(params["dataset_size"]), problem.dimension
            signs = rng.choice(np.array([-1.0, 1.0]), size=(runs, n, d))
            self.records = problem.mean + (problem.spread / math.sqrt(d)) * signs

    def next(self) -> np.ndarray:
        if not self.multi:
            return self.problem.batch_means(self.rng, self.runs, self.batch)
        runs, n = self.records.shape[0], self.records.shape[1]
        if self.sampling == "poisson":
            mask = self.rng.random((runs, n)) < self.batch / n
            return np.asarray(np.einsum("rn,rnd->rd", mask.astype(float), self.records) / self.batch)
        if self.batch == 1:
            index = self.rng.integers(n, size=runs)
            return np.asarray(self.records[np.arange(runs), index])
        chosen = np.argpartition(self.rng.random((runs, n)), self.batch - 1, axis=1)[:, : self.batch]
        return np.asarray(np.take_along_axis(self.records, chosen[:, :, None], axis=1).mean(axis=1))


class BilinearSimulator(Simulator[S, BilinearProblemSettings]):
    """An NSEG or NISPP method run on the bilinear saddle point of :mod:`accountants.synthetic.bilinear`, built with the
    family's own constants (M, L, D, d), plus a canary audit of the releases.

    Audit: the distinguishing record is a *canary* with the constant operator F ≡ M·v (monotone, 0-Lipschitz,
    M-bounded: in the class), its replacement F ≡ −M·v, and every other record of the audited dataset has the zero
    operator. The transcript along v then shows the canary's contribution (±1 in its own units) plus Gaussian noise
    in every release that includes it: one deterministic release in a single pass, each release with probability
    q in a multi pass. Scores are the transcript's log-likelihood ratio (:func:`canary_llr_scores`).
    """

    algorithm: ClassVar[str]

    @abstractmethod
    def resolve(self, p: Any, sigma: float) -> dict[str, Any]:
        """The method's remaining settings (step size, regularisation, …) as simulated."""

    @abstractmethod
    def prediction(self, p: Any, sigma: float, resolved: Mapping[str, Any]) -> tuple[float, str]:
        """(predicted explicit bound on the measured gap, its source)."""

    @abstractmethod
    def canary_units(self, p: Any, sigma: float) -> float:
        """The noise std in units of the canary's contribution to a release."""

    @abstractmethod
    def run(self, plan: JobPlan, problem: BilinearProblem, rng: np.random.Generator, trials: int) -> np.ndarray:
        """The measured gaps of ``trials`` independent runs."""

    @abstractmethod
    def work(self, p: Any, steps: int, trials: int, checks: tuple[str, ...]) -> float:
        """Estimated operations of the given checks (priced in seconds by ``seconds_per_operation``)."""

    def audit_support(self, p: Any) -> str | None:
        """Why the audit is not offered for these parameters (None: it is)."""
        return None

    def plan(self, job: Job[S, BilinearProblemSettings]) -> JobPlan:
        p, delta, checks, trials = job.params, job.delta, job.checks, job.trials
        self._check_simulable(job)
        report = job.privacy()
        noise = report.required_noise
        z, sigma = noise.noise_multiplier, noise.noise_std
        assert sigma is not None  # NSEG's and NISPP's noise is absolute as well
        steps = report.conventions.steps
        resolved: dict[str, Any] = {"kind": "bilinear", "steps": steps, "noise_std": sigma}
        resolved |= self.resolve(p, sigma)
        releases = report.releases[0]
        single = p.passes == "single"
        units = self.canary_units(p, sigma)
        resolved |= {
            "canary_releases": 1 if single else releases.count,
            "canary_rate": 1.0 if single else p.batch_size / p.dataset_size,
            "canary_noise": units,
        }
        predicted = source = None
        if job.utility:
            predicted, source = self.prediction(p, sigma, resolved)
        exact = gdp_epsilon(2.0 / units, delta) if single else None
        return job.plan(
            report,
            params=p.model_dump() | {"noise_multiplier": z, "noise_std": None},
            problem=resolved,
            epsilon_exact=exact,
            exact_note="analytic Gaussian of the canary's one release (Balle & Wang 2018)"
            if single
            else "no closed form for a subsampled Gaussian transcript",
            utility_measure="strong VI gap (= SP gap) of the output at the population mean" if predicted else None,
            predicted_bound=predicted,
            predicted_source=source,
            prediction_note="the strong gap dominates the weak gap the multi-pass theorems bound: a conservative check"
            if predicted is not None and not single
            else None,
            audit_method="constant-operator canary F ≡ ±M·v, the other records of the audited dataset zero; score: "
            "log-likelihood ratio of the transcript along v (most powerful test)",
            work={check: self.work(p, steps, trials, (check,)) for check in checks},
        )

    def _check_simulable(self, job: Job[S, BilinearProblemSettings]) -> None:
        """The audit is supported, the dimension and the dataset fit the simulator, and the records' own bound
        lipschitz − smoothness·diameter/2 is positive."""
        p = job.params
        if job.audit and (reason := self.audit_support(p)) is not None:
            raise ParameterError.single("checks", reason, "utility")
        if p.dimension > MAX_SIMULATED_DIMENSION or p.dimension < 2:
            raise ParameterError.single(
                "params.dimension",
                "the bilinear simulator needs a dimension in [2, 64]",
                f"an integer in [2, {MAX_SIMULATED_DIMENSION}]",
                p.dimension,
            )
        if p.passes == "multi" and job.utility and p.dataset_size * p.dimension > MAX_SIMULATED_RECORDS:
            raise ParameterError.single(
                "params.dataset_size",
                f"multi-pass simulation keeps each trial's dataset in memory: dataset_size·dimension must be at most "
                f"{MAX_SIMULATED_RECORDS:g}",
                f"an integer ≤ {MAX_SIMULATED_RECORDS // p.dimension}",
                p.dataset_size,
            )
        bound = p.smoothness * p.diameter / 2.0
        if p.lipschitz <= bound:
            raise ParameterError.single(
                "params.lipschitz",
                "the bilinear instance needs lipschitz > smoothness·diameter/2 (the records' own bound is "
                "lipschitz − smoothness·diameter/2)",
                f"> {bound:.6g}",
                p.lipschitz,
            )

    def run_block(self, plan: JobPlan, rng: np.random.Generator, trials: int) -> BlockResult:
        p, resolved = plan.params, plan.problem
        result: dict[str, np.ndarray] = {}
        if "utility" in plan.checks:
            problem = BilinearProblem.for_constants(
                plan.seed, p["dimension"], p["lipschitz"], p["smoothness"], p["diameter"]
            )
            result["utility"] = self.run(plan, problem, rng, trials)
        if "privacy-audit" in plan.checks:
            count, rate, units = resolved["canary_releases"], resolved["canary_rate"], resolved["canary_noise"]
            result["score_in"] = canary_llr_scores(rng, trials, count, rate, units, True, inside=True)
            result["score_out"] = canary_llr_scores(rng, trials, count, rate, units, True, inside=False)
        return BlockResult(**result)
