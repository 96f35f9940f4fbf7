"""Verification by simulation: the interface family simulators implement (:mod:`.simulator`), the canaries' scores
(:mod:`.canaries`), the audit's statistics and power (:mod:`.audit`) and the summaries of a run (:mod:`.summary`).

A verification job runs an algorithm many times on a small synthetic problem and reports

* the **utility** it reaches (mean, standard error, 95 % interval) against the predicted bound, and
* an **empirical lower bound on ε** from a membership test on neighbouring datasets: each trial runs the mechanism once
  on D (with the distinguishing record) and once on D′, and scores both outputs. The threshold of the test is chosen on
  the even-numbered trials and evaluated on the odd ones with one-sided Clopper–Pearson bounds (95 % overall, split
  between the two error rates), so ε_lower is a valid 95 % lower bound on the ε of the mechanism simulated.

A job's plan is a :class:`JobPlan` (not to be confused with a family's :class:`~accountants.plans.MechanismPlan`);
its trials come in blocks with fixed random streams (:mod:`.simulator`).
"""

from .audit import (
    INFORMATIVE_FRACTION,
    AuditSummary,
    audit,
    clopper_pearson_lower,
    clopper_pearson_upper,
    max_detectable_epsilon,
    sized_for_power,
    trials_for_power,
    trials_for_reach,
)
from .canaries import allocation_canary_scores, canary_llr_scores
from .simulator import (
    BLOCK_SECONDS,
    BLOCK_TRIALS,
    CHECKS,
    CONFIDENCE,
    DEFAULT_SECONDS_PER_OPERATION,
    BlockResult,
    Job,
    JobPlan,
    P,
    PrivacyOf,
    Q,
    Simulator,
    SimulatorChanged,
    block_rng,
    block_sizes,
    register_simulator,
    run_block,
    simulator_for,
)
from .summary import UtilitySummary, VerificationResult, summarize, summarize_utility

__all__ = [
    "BLOCK_SECONDS",
    "BLOCK_TRIALS",
    "CHECKS",
    "CONFIDENCE",
    "DEFAULT_SECONDS_PER_OPERATION",
    "INFORMATIVE_FRACTION",
    "AuditSummary",
    "BlockResult",
    "Job",
    "JobPlan",
    "P",
    "PrivacyOf",
    "Q",
    "Simulator",
    "SimulatorChanged",
    "UtilitySummary",
    "VerificationResult",
    "allocation_canary_scores",
    "audit",
    "block_rng",
    "block_sizes",
    "canary_llr_scores",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "max_detectable_epsilon",
    "register_simulator",
    "run_block",
    "simulator_for",
    "sized_for_power",
    "summarize",
    "summarize_utility",
    "trials_for_power",
    "trials_for_reach",
]
