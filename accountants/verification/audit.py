"""The privacy audit's statistics: an empirical lower bound on ε from a membership test on neighbouring datasets, its
reach (the most a perfect test could certify), and the trials a target power needs — decided here, before a job runs.

Each trial runs the mechanism once on D (with the distinguishing record) and once on D′, and scores both outputs. The
threshold of the test is chosen on the even-numbered trials and evaluated on the odd ones with one-sided
Clopper–Pearson bounds (95 % overall, split between the two error rates), so ε_lower is a valid 95 % lower bound on
the ε of the mechanism simulated.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, Field
from scipy import special, stats

from ..errors import FieldIssue, ParameterError
from .simulator import BLOCK_TRIALS, CONFIDENCE, JobPlan


def clopper_pearson_upper(successes: int, n: int, alpha: float) -> float:
    """One-sided upper confidence bound (level 1 − α) on a binomial proportion."""
    return 1.0 if successes >= n else float(stats.beta.ppf(1.0 - alpha, successes + 1, n - successes))


def clopper_pearson_lower(successes: int, n: int, alpha: float) -> float:
    """One-sided lower confidence bound (level 1 − α) on a binomial proportion."""
    return 0.0 if successes <= 0 else float(stats.beta.ppf(alpha, successes, n - successes + 1))


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


def audit(plan: JobPlan, score_in: np.ndarray, score_out: np.ndarray, alpha: float = 1.0 - CONFIDENCE) -> AuditSummary:
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


def sized_for_power(plan: JobPlan, target_power: float, limit: int) -> JobPlan:
    """The plan with the trials its audit needs to certify ``target_power`` of the accounted ε (:class:`ParameterError`
    naming ``target_power`` where that is out of reach within ``limit`` trials, or known only after running: then
    with the trials a perfect test would need, a lower bound)."""
    target = target_power * plan.epsilon_accounted
    if "privacy-audit" not in plan.checks:
        raise ParameterError(FieldIssue(("target_power",), "needs the privacy-audit check", "omitted", target_power))
    reach = trials_for_reach(plan.delta, target, limit)
    if reach is None:
        raise ParameterError(_out_of_reach(plan, target_power, target, limit))
    if plan.gaussian_mu is None:
        raise ParameterError(
            FieldIssue(
                ("target_power",),
                f"the audit's power on this mechanism is known only after running (before running only for an "
                f"exact Gaussian transcript: dp-sgd with full batches); even a perfect test needs {reach} trials "
                f"to certify ε ≥ {target:.3g}: give trials ≥ {reach}, then read max_detectable_epsilon and "
                "informative",
                f"trials ≥ {reach} instead",
                target_power,
            )
        )
    needed = trials_for_power(plan.gaussian_mu, plan.delta, target, limit)
    if needed is None:
        raise ParameterError(_out_of_reach(plan, target_power, target, limit))
    return plan.scaled(needed)


def _out_of_reach(plan: JobPlan, target_power: float, target: float, limit: int) -> FieldIssue:
    return FieldIssue(
        ("target_power",),
        f"out of reach within {limit} trials (DPCAL_JOB_MAX_TRIALS): the audit cannot be expected to certify "
        f"ε ≥ {target:.3g} ({target_power:g} of the accounted ε = {plan.epsilon_accounted:.3g})",
        "a smaller target_power",
        target_power,
    )
