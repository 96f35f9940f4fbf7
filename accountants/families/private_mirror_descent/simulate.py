"""Verification jobs for private mirror descent: bilinear games on simplices, Algorithms 1, 3 and 5 simulated with
vertex sampling, and a canary audit of the vertex samples."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from ...errors import ParameterError
from ...params import ParamsModel, param
from ...verification import BlockResult, Job, JobPlan, Simulator, register_simulator
from .params import ALGORITHM_ID, SADDLE_VARIANTS, PrivateMirrorDescentParams
from .plan import Schedule, schedule
from .utility import EXPLICIT_SOURCE, ell12, explicit_gap_bound, regime

# -- simulation (verification jobs) -----------------------------------------------------------------------------------

MAX_SIMULATED_VERTICES = 64
"""Largest simplex the simulator builds (the game's value is solved by linear programming at plan time)."""
_TABLE_MAX_BATCH = 48


class MirrorDescentProblem(ParamsModel):
    """The synthetic problem of a private-mirror-descent verification job."""

    kind: Literal["matrix-game", "linear"] | None = param(example="matrix-game", default=None)
    """matrix-game (default for the saddle-point variants): f(x, y; ξ) = xᵀA_ξy with A_ξ ∈ {±c}^{d₁×d₂}, E A_ξ = A ~
    U[−c, c]; the gap max_j(Aᵀx̂)_j − min_i(Aŷ)_i is exact and the game's value is solved by linear
    programming. linear (sco, the default there): f(x; ξ) = ⟨a_ξ, x⟩ with a_ξ ∈ {±c}^d, E a_ξ = a ~ U[−c, c]; the
    excess risk ⟨a, x̂⟩ − min_i a_i is exact."""
    scale: float | None = param(symbol="c", example=1.0, gt=0, le=1e6, default=None)
    """c: every gradient coordinate is ±c, so the game has L₀ = L₁ = c (linear: L₀ = c, L₁ = 0); must not exceed
    lipschitz (nor smoothness for the matrix game). Default: the largest allowed."""


class MirrorDescentSimulator(Simulator[PrivateMirrorDescentParams, MirrorDescentProblem]):
    """The variants run for real on matrix games (saddle points) or linear losses on the simplex (sco).

    utility: every trial draws its own data set (records ±c entry by entry, in one pass) and measures the exact gap
    (excess risk for sco) of the released output. The prediction is the explicit bound [D] of Algorithm 1.
    privacy-audit: each trial runs the algorithm on D (record 1 = r) or on D′ (record 1 = −r), with r = c·s tᵀ for
    alternating sign vectors s, t (linear: r = c·s), the other records fresh per trial and public; the score is the
    exact log-likelihood ratio log P_D(τ)/P_D′(τ) of the whole transcript τ of vertex samples (both score recursions
    are run along the realised transcript), the most powerful test for it. The output is a post-processing of τ, and
    the accountants bound the transcript, so the audit tests exactly what is accounted.
    """

    problem_model = MirrorDescentProblem
    seconds_per_operation: ClassVar[Mapping[str, float]] = {"utility": 5.0e-08, "privacy-audit": 6.9e-08}
    """Measured by ``python benchmarks/jobs.py --calibrate`` (the example job, one process), 2026-11-29 in this VM's
    slower phase (2.4× the earlier figures, which a fresh service's first time-left fell short of by more than 3×)."""

    def plan(self, job: Job[PrivateMirrorDescentParams, MirrorDescentProblem]) -> JobPlan:
        p, pr, checks, trials, seed = job.params, job.problem, job.checks, job.trials, job.seed
        report = job.privacy()
        sched = schedule(p)
        kind, scale = _checked_problem(p, pr)
        resolved = _resolved(p, sched, kind, scale, seed)
        prediction, source, note = _prediction(p, sched, checks)
        d1, d2 = p.dimension_x, (p.dimension_y or 1)
        run = trials * sched.steps * _work_per_step(p, d1, d2, sched)
        setup = 10.0 * d1 * d2 * sched.steps
        work = {"utility": run + setup, "privacy-audit": 2.0 * run + setup}  # the audit runs on D and on D′
        record = (
            "record 1 = r = c·s tᵀ (s, t alternating ±1), in the first batch"
            if kind == "matrix-game"
            else "the record of the batch of step ⌈(T − 1)/2⌉ = r = c·s (s alternating ±1)"
        )
        return job.plan(
            report,
            params=p.model_dump(),
            problem=resolved,
            epsilon_exact=None,
            exact_note="the transcript's exact ε is not closed-form (a composition of data-dependent exponential "
            "mechanisms); the audit's lower bound is compared with the accounted ε",
            utility_measure=(
                "strong duality gap max_j(Aᵀx̂)_j − min_i(Aŷ)_i of the output"
                if kind == "matrix-game"
                else "excess risk ⟨a, x̂⟩ − min_i a_i of the output"
            ),
            predicted_bound=prediction,
            predicted_source=source,
            prediction_note=note,
            audit_method=f"transcript of every vertex sample of the run on D ({record}) or on D′ (that record = −r), "
            "the other records fresh per trial and public; score = exact log-likelihood ratio of the transcript",
            work=work,
        )

    def run_block(self, plan: JobPlan, rng: np.random.Generator, trials: int) -> BlockResult:
        p, pb = plan.params, plan.problem
        result: dict[str, np.ndarray] = {}
        if pb["kind"] == "matrix-game":
            matrix = _game_matrix(plan.seed, pb["dimension_x"], pb["dimension_y"], pb["scale"])
            runner = _run_algorithm3 if p["variant"] == "bias-reduced" else _run_algorithm1
            if "utility" in plan.checks:
                x, y, _ = runner(_Run(matrix, pb, p, rng, trials, None))
                result["utility"] = gap(matrix, x, y)
            if "privacy-audit" in plan.checks:
                result["score_in"] = runner(_Run(matrix, pb, p, rng, trials, True))[2]
                result["score_out"] = runner(_Run(matrix, pb, p, rng, trials, False))[2]
        else:
            vector = _linear_vector(plan.seed, pb["dimension_x"], pb["scale"])
            if "utility" in plan.checks:
                x, _ = _run_algorithm5(_Run(vector, pb, p, rng, trials, None))
                result["utility"] = x @ vector - vector.min()
            if "privacy-audit" in plan.checks:
                result["score_in"] = _run_algorithm5(_Run(vector, pb, p, rng, trials, True))[1]
                result["score_out"] = _run_algorithm5(_Run(vector, pb, p, rng, trials, False))[1]
        return BlockResult(**result)


def _checked_problem(p: PrivateMirrorDescentParams, pr: MirrorDescentProblem) -> tuple[str, float]:
    """The problem's kind and scale c, refused (422) where they do not fit the variant or the declared constants."""
    saddle = p.variant in SADDLE_VARIANTS
    kind = pr.kind or ("matrix-game" if saddle else "linear")
    if (kind == "matrix-game") != saddle:
        raise ParameterError.single(
            "problem.kind",
            f"{kind} does not fit variant {p.variant}",
            "matrix-game for the saddle-point variants, linear for sco",
            kind,
        )
    for name, value in (("dimension_x", p.dimension_x), ("dimension_y", p.dimension_y or 1)):
        if value > MAX_SIMULATED_VERTICES:
            raise ParameterError.single(
                name,
                f"exceeds {MAX_SIMULATED_VERTICES}, the largest simplex verification jobs simulate",
                f"an integer in [2, {MAX_SIMULATED_VERTICES}] for verification jobs",
                value,
            )
    limit = min(p.lipschitz, p.smoothness) if kind == "matrix-game" else p.lipschitz
    if limit <= 0.0:
        raise ParameterError.single(
            "smoothness",
            "must be > 0 for the matrix game (its gradients are Lipschitz with constant c > 0)",
            "> 0",
            p.smoothness,
        )
    scale = pr.scale if pr.scale is not None else limit
    if scale > limit * (1.0 + 1e-12):
        raise ParameterError.single(
            "problem.scale",
            "must respect the declared constants (c ≤ lipschitz" + (", c ≤ smoothness)" if saddle else ")"),
            f"a number in (0, {limit:g}]",
            scale,
        )
    return kind, scale


def _resolved(p: PrivateMirrorDescentParams, sched: Schedule, kind: str, scale: float, seed: int) -> dict[str, Any]:
    """The synthetic problem with every setting resolved (the game's value, or the linear loss's minimum)."""
    eta = p.stepsize
    assert eta is not None
    d1, d2 = p.dimension_x, (p.dimension_y or 1)
    resolved: dict[str, Any] = {
        "kind": kind,
        "scale": scale,
        "dimension_x": d1,
        "variant": p.variant,
        "steps": sched.steps,
        "samples_per_step": sched.samples_per_step,
        "epsilon0": sched.epsilon0(eta),
        "samples_composed": sched.count,
    }
    if kind == "matrix-game":
        matrix = _game_matrix(seed, d1, d2, scale)
        resolved |= {"dimension_y": d2, "value": game_value(matrix)}
    else:
        vector = _linear_vector(seed, d1, scale)
        resolved |= {"minimum": float(vector.min())}
    if sched.max_level is not None:
        resolved["max_level"] = sched.max_level
    if p.variant == "sco":
        resolved |= {
            "warmup_steps": p.warmup_steps or 1,
            "refresh_period": p.refresh_period or 1,
            "final_samples": p.final_samples or sched.samples_per_step,
        }
    return resolved


def _prediction(
    p: PrivateMirrorDescentParams, sched: Schedule, checks: tuple[str, ...]
) -> tuple[float | None, str | None, str | None]:
    """(predicted gap, its source, a note): the explicit bound [D] for Algorithm 1, measured only otherwise."""
    if "utility" not in checks:
        return None, None, None
    if p.variant in ("first-order", "second-order"):
        bound = explicit_gap_bound(
            sched.steps,
            sched.samples_per_step,
            p.stepsize,  # type: ignore[arg-type]  # set: privacy was answered
            ell12(p),
            p.lipschitz,
            p.smoothness,
            p.second_order_smoothness or 0.0,
            regime(p),
        )
        same = (
            "first-order and second-order simulate the same algorithm (Algorithm 1): their measurements agree for one "
            "seed; only the predicted bound differs"
        )
        return bound, EXPLICIT_SOURCE, same
    note = (
        f"variant {p.variant}: the paper's bound is a rate whose constants are lost (Theorem "
        f"{'3.14' if p.variant == 'bias-reduced' else '4.2'}); measured only"
    )
    return None, None, note


def _work_per_step(p: PrivateMirrorDescentParams, d1: int, d2: int, sched: Schedule) -> float:
    """Work units (≈ 60 ns) per trial and step, measured: data draws, products, softmaxes, sampling, overhead."""
    entries = d1 * d2
    draw = 0.05 * (p.batch_size + 8) if p.batch_size <= _TABLE_MAX_BATCH else 2.0
    if p.variant == "bias-reduced":
        level = sched.max_level or 1
        draw = max(draw, 2.0) * 2.0  # batches of 2^N·B records: binomial draws, twice the Algorithm 1 cost
        return entries * (draw + 0.2) + (d1 + d2) * (4.0 + level) + 40.0
    k = max(sched.samples_per_step, 1)
    return entries * (draw + 0.2) + (d1 + d2) * (4.0 + 0.05 * k) + 40.0


def _game_matrix(seed: int, d1: int, d2: int, scale: float) -> np.ndarray:
    """A ~ U[−c, c]^{d₁×d₂}, a function of the job's seed (its own stream)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32 + 1001,)))
    return rng.uniform(-scale, scale, size=(d1, d2))


def _linear_vector(seed: int, d: int, scale: float) -> np.ndarray:
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32 + 1002,)))
    return rng.uniform(-scale, scale, size=d)


def game_value(matrix: np.ndarray) -> float | None:
    """v* = min_{x∈Δ} max_j (Aᵀx)_j by linear programming (HiGHS), solved on A/max|A| and scaled back (None if the
    solver fails; the value is only a sanity reference, the gap itself is exact without it)."""
    from scipy.optimize import linprog

    scale = float(np.max(np.abs(matrix)))
    if not scale > 0.0:
        return 0.0
    matrix = matrix / scale
    d1, d2 = matrix.shape
    cost = np.zeros(d1 + 1)
    cost[-1] = 1.0
    result = linprog(
        cost,
        A_ub=np.hstack([matrix.T, -np.ones((d2, 1))]),
        b_ub=np.zeros(d2),
        A_eq=np.hstack([np.ones((1, d1)), np.zeros((1, 1))]),
        b_eq=[1.0],
        bounds=[(0, None)] * d1 + [(None, None)],
        method="highs",
    )
    return None if result.x is None else float(result.x[-1]) * scale


def gap(matrix: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Strong duality gap max_j (Aᵀx)_j − min_i (Ay)_i of each row of x, y (exact for bilinear games)."""
    return np.asarray(np.max(x @ matrix, axis=1) - np.min(y @ matrix.T, axis=1))


def _log_softmax(theta: np.ndarray) -> np.ndarray:
    top = theta.max(axis=1, keepdims=True)
    shifted = theta - top
    return np.asarray(shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True)))


def _sample_counts(rng: np.random.Generator, counts: int | np.ndarray, log_p: np.ndarray) -> np.ndarray:
    """Multinomial(counts, softmax) draws per row (``counts`` samples from P(x) per trial)."""
    probs = np.exp(log_p)
    probs /= probs.sum(axis=1, keepdims=True)
    return rng.multinomial(counts, probs).astype(float)


class _RecordSums:
    """Sums of m records with entries ±c, P(+c) = (1 + A/c)/2 entrywise: c·(2·Bin(m, P) − m).

    Small fixed m draws by inverse CDF tables (one uniform per entry); otherwise numpy's binomial sampler."""

    def __init__(self, mean: np.ndarray, scale: float, size: int) -> None:
        self.prob = np.clip((1.0 + mean / scale) / 2.0, 0.0, 1.0)
        self.scale, self.size = scale, size
        self.table: np.ndarray | None = None
        if size <= _TABLE_MAX_BATCH:
            from scipy.stats import binom

            ks = np.arange(size)  # P(Bin ≤ k) for k < m
            self.table = binom.cdf(ks, size, self.prob[..., None])

    def draw(self, rng: np.random.Generator, trials: int, size: int | np.ndarray | None = None) -> np.ndarray:
        m = self.size if size is None else size
        if self.table is not None and size is None:
            u = rng.random((trials, *self.prob.shape))
            ones = np.sum(u[..., None] >= self.table, axis=-1, dtype=float)
        else:
            shape = (trials, *self.prob.shape)
            mm = np.asarray(m).reshape((-1,) + (1,) * self.prob.ndim) if np.ndim(m) else m
            ones = rng.binomial(mm, self.prob, size=shape).astype(float)
            m = mm
        return np.asarray(self.scale * (2.0 * ones - m))


@dataclass(frozen=True)
class _Run:
    """``trials`` independent runs of an algorithm on one problem (the game's matrix, or the linear loss's vector):
    a utility run on fresh records (``inside`` None), or an audit run on D (True) or D′ (False)."""

    data: np.ndarray
    problem: Mapping[str, Any]
    params: Mapping[str, Any]
    rng: np.random.Generator
    trials: int
    inside: bool | None

    @property
    def audit(self) -> bool:
        return self.inside is not None

    @property
    def sign(self) -> float:
        """+1 on D, −1 on D′: the audited record's sign, and that of its log-likelihood ratio."""
        return 1.0 if self.inside else -1.0

    @property
    def scale(self) -> float:
        return float(self.problem["scale"])

    @property
    def batch(self) -> int:
        return int(self.params["batch_size"])

    @property
    def stepsize(self) -> float:
        return float(self.params["stepsize"])


def _mean_records(
    run: _Run, records: _RecordSums, others: _RecordSums | None, record: np.ndarray, audited: bool
) -> tuple[np.ndarray, np.ndarray]:
    """A step's mean record on D and on D′: fresh records, or, at the audited step, the audited record (±) with the
    batch's other records."""
    if not audited:
        mine = records.draw(run.rng, run.trials) / run.batch
        return mine, mine
    assert others is not None  # an audit run draws the other records
    rest = others.draw(run.rng, run.trials)
    return (rest + run.sign * record) / run.batch, (rest - run.sign * record) / run.batch


def _audit_record(shape: tuple[int, ...], scale: float) -> np.ndarray:
    signs = [np.where(np.arange(s) % 2 == 0, 1.0, -1.0) for s in shape]
    return scale * (np.outer(signs[0], signs[1]) if len(shape) == 2 else signs[0])


def _run_algorithm1(run: _Run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 1 on the matrix game for ``trials`` independent runs: (x̂, ŷ, transcript log-likelihood ratio).

    ``run.inside``: None for a utility run (fresh records), True/False for an audit run on D / D′."""
    matrix, pb, rng, trials, audit, sign = run.data, run.problem, run.rng, run.trials, run.audit, run.sign
    d1, d2 = matrix.shape
    c, b, eta = run.scale, run.batch, run.stepsize
    steps, k = pb["steps"], pb["samples_per_step"]
    records = _RecordSums(matrix, c, b)
    others = _RecordSums(matrix, c, b - 1) if audit else None
    record = _audit_record((d1, d2), c)
    theta = [np.zeros((trials, d1)), np.zeros((trials, d2))]  # the run's own scores (D for inside, D′ otherwise)
    other = [np.zeros((trials, d1)), np.zeros((trials, d2))]  # the neighbour's scores along the same transcript
    sum_x, sum_y, llr = np.zeros((trials, d1)), np.zeros((trials, d2)), np.zeros(trials)
    for t in range(steps):
        lx, ly = _log_softmax(theta[0]), _log_softmax(theta[1])
        cx, cy = _sample_counts(rng, k, lx), _sample_counts(rng, k, ly)
        if audit and t > 0:
            ox, oy = _log_softmax(other[0]), _log_softmax(other[1])
            llr += sign * (np.sum(cx * (lx - ox), axis=1) + np.sum(cy * (ly - oy), axis=1))
        xs, ys = cx / k, cy / k
        sum_x += xs
        sum_y += ys
        if t == steps - 1:
            break  # the last batch's gradient never reaches a released sample
        mine, theirs = _mean_records(run, records, others, record, audit and t == 0)
        theta[0] -= eta * np.einsum("tij,tj->ti", mine, ys)
        theta[1] += eta * np.einsum("tij,ti->tj", mine, xs)
        if audit:
            other[0] -= eta * np.einsum("tij,tj->ti", theirs, ys)
            other[1] += eta * np.einsum("tij,ti->tj", theirs, xs)
    return sum_x / steps, sum_y / steps, np.clip(llr, -1e6, 1e6)


def _run_algorithm3(run: _Run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 3 (multilevel oracle, random stopping) on the matrix game, ``trials`` runs at once.

    For a bilinear f the multilevel correction G(z_full) − ½(G(z_a) + G(z_b)) vanishes identically (G is linear in
    the sparsified point), so g = G(z₀) exactly; the other 2^N − 1 draws per player only enter the transcript, and
    are drawn for the audit (a utility run skips them: they do not affect the output)."""
    matrix, pb, rng, trials, audit, sign = run.data, run.problem, run.rng, run.trials, run.audit, run.sign
    d1, d2 = matrix.shape
    c, b, eta = run.scale, run.batch, run.stepsize
    budget, level = pb["steps"], pb["max_level"]
    levels = np.arange(1, level + 1)
    weights = 0.5**levels
    weights /= weights.sum()
    records = _RecordSums(matrix, c, _TABLE_MAX_BATCH + 1)  # variable batch sizes: binomial draws
    record = _audit_record((d1, d2), c)
    theta = [np.zeros((trials, d1)), np.zeros((trials, d2))]
    other = [np.zeros((trials, d1)), np.zeros((trials, d2))]
    sum_x, sum_y, count, llr = np.zeros((trials, d1)), np.zeros((trials, d2)), np.zeros(trials), np.zeros(trials)
    used = np.zeros(trials, dtype=np.int64)
    active = np.ones(trials, dtype=bool)
    first = True
    while True:
        size = 2 ** rng.choice(levels, size=trials, p=weights)  # N_t drawn before the budget check
        active &= used + size <= budget
        if not active.any():
            break
        used += np.where(active, size, 0)
        on = active.astype(float)
        lx, ly = _log_softmax(theta[0]), _log_softmax(theta[1])
        x0, y0 = _sample_counts(rng, 1, lx), _sample_counts(rng, 1, ly)  # z₀ of the multilevel estimate
        out_x, out_y = _sample_counts(rng, 1, lx), _sample_counts(rng, 1, ly)  # "Line 8": the output samples
        sum_x += on[:, None] * out_x
        sum_y += on[:, None] * out_y
        count += on
        if audit:
            rest_x, rest_y = _sample_counts(rng, size - 1, lx), _sample_counts(rng, size - 1, ly)
            ox, oy = _log_softmax(other[0]), _log_softmax(other[1])
            drawn_x, drawn_y = x0 + rest_x + out_x, y0 + rest_y + out_y
            llr += on * sign * (np.sum(drawn_x * (lx - ox), axis=1) + np.sum(drawn_y * (ly - oy), axis=1))
        m = size * b
        if audit and first:
            rest = records.draw(rng, trials, m - 1)
            mine, theirs = rest + sign * record, rest - sign * record
        else:
            mine = records.draw(rng, trials, m)
            theirs = mine
        step = eta * on[:, None] / m[:, None]
        _play(theta, mine, step, x0, y0)
        if audit:
            _play(other, theirs, step, x0, y0)
        first = False
    return sum_x / count[:, None], sum_y / count[:, None], np.clip(llr, -1e6, 1e6)


def _play(theta: list[np.ndarray], summed: np.ndarray, step: np.ndarray, x0: np.ndarray, y0: np.ndarray) -> None:
    """One simultaneous step of both players on the batch mean ``summed``/m (``step`` = η·active/m per trial): x
    descends along A·y₀, y ascends along Aᵀ·x₀."""
    theta[0] -= step * np.einsum("tij,tj->ti", summed, y0)
    theta[1] += step * np.einsum("tij,ti->tj", summed, x0)


def _run_algorithm5(run: _Run) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 5 (exponentiated gradient + anytime online-to-batch, α_t = t) on f(x; ξ) = ⟨a_ξ, x⟩: (x̂, LLR).

    x_t = (A_{t−1}x_{t−1} + t·w_t)/A_t is kept in log space. The gradient of a linear loss does not depend on the
    private estimate x̃, so the refresh samples only enter the transcript: drawn for the audit, skipped otherwise.
    The audited record sits in the batch of step ⌈(T − 1)/2⌉: a record's weight α_s = s grows with s, while the
    samples it can influence are those after s."""
    vector, pb, rng, trials, audit, sign = run.data, run.problem, run.rng, run.trials, run.audit, run.sign
    d = vector.size
    c, b, eta = run.scale, run.batch, run.stepsize
    steps, k = pb["steps"], pb["samples_per_step"]
    warmup, period, final = pb["warmup_steps"], pb["refresh_period"], pb["final_samples"]
    records = _RecordSums(vector, c, b)
    others = _RecordSums(vector, c, b - 1) if audit else None
    record = _audit_record((d,), c)
    theta, other = np.zeros((trials, d)), np.zeros((trials, d))
    log_x, log_xo = np.zeros((trials, d)), np.zeros((trials, d))
    llr = np.zeros(trials)
    slot = max(1, (steps - 1 + 1) // 2)  # the audited record's batch: weight α_s = s, felt by the samples after s
    total = 0.0
    for t in range(1, steps + 1):
        previous, total = total, total + t
        if previous == 0.0:
            log_x, log_xo = _log_softmax(theta), _log_softmax(other)
        else:
            keep, new = math.log(previous / total), math.log(t / total)
            log_x = np.logaddexp(keep + log_x, new + _log_softmax(theta))
            log_xo = np.logaddexp(keep + log_xo, new + _log_softmax(other))
        if audit and (t <= warmup or (t - warmup) % period == 0):
            llr += sign * np.sum(_sample_counts(rng, k, log_x) * (log_x - log_xo), axis=1)
        if t == steps:
            break  # g_T only moves θ_{T+1}, which x_T does not use
        mine, theirs = _mean_records(run, records, others, record, audit and t == slot)
        theta -= eta * t * mine
        if audit:
            other -= eta * t * theirs
    counts = _sample_counts(rng, final, log_x)
    if audit:
        llr += sign * np.sum(counts * (log_x - log_xo), axis=1)
    return counts / final, np.clip(llr, -1e6, 1e6)


register_simulator(ALGORITHM_ID, MirrorDescentSimulator())
