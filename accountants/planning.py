"""Planning a verification job: the one place where a family's answers meet its simulator.

:func:`plan_job` validates the request against the family and its simulator, calibrates the privacy knob first when
the job names a target ε, and hands the simulator the family's privacy answer (lazily, after the simulator's own
input checks). Simulators never call their family; the service only stores, leases and runs the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import FieldIssue, ParameterError
from .family import AlgorithmFamily
from .params import ParamsModel
from .registry import families
from .reports import PrivacyReport
from .verification import Job, JobPlan


def plan_job(
    family: AlgorithmFamily[Any],
    params: Mapping[str, Any] | ParamsModel,
    delta: float,
    checks: tuple[str, ...],
    trials: int,
    seed: int,
    problem: Mapping[str, Any] | ParamsModel | None = None,
    target_epsilon: float | None = None,
) -> JobPlan:
    """The verification plan of ``family`` at ``params`` (the knob calibrated to ``target_epsilon`` when given).

    Raises :class:`ParameterError` naming the field: no simulator (``algorithm``), a check the simulator does not
    offer (``checks``), or anything the family or the simulator rejects."""
    simulator = family.simulator
    if simulator is None:
        able = [f.id for f in families() if f.simulator is not None]
        raise ParameterError(
            [
                FieldIssue(
                    ("algorithm",),
                    f"{family.id} has no simulator for verification jobs",
                    "one of: " + ", ".join(able),
                    family.id,
                )
            ]
        )
    unsupported = [c for c in checks if c not in simulator.checks]
    if unsupported:
        raise ParameterError(
            [
                FieldIssue(
                    ("checks",),
                    f"not offered for {family.id}: {', '.join(unsupported)}",
                    "any of: " + ", ".join(simulator.checks),
                )
            ]
        )
    p = family.parse(params)
    if target_epsilon is not None:
        calibrated = family.calibrate(p, target_epsilon, delta)
        knob = {name: None for name in family.noise_fields} | {
            calibrated.calibrated_parameter: calibrated.calibrated_value
        }
        p = p.model_copy(update={k: v for k, v in knob.items() if k in type(p).model_fields})
    parsed_problem = problem if isinstance(problem, ParamsModel) else simulator.parse_problem(problem)

    def privacy() -> PrivacyReport:
        return family.privacy(p, delta)

    plan = simulator.plan(Job(p, delta, tuple(dict.fromkeys(checks)), trials, seed, parsed_problem, privacy))
    return simulator.stamped(plan)


def plan_example(
    family: AlgorithmFamily[Any], checks: tuple[str, ...] | None = None, trials: int | None = None
) -> JobPlan:
    """The plan of ``family``'s example verification job (its parameters, δ, seed, problem and target ε), with its own
    checks and trials unless given (benchmarks and calibrations run it)."""
    example = family.job_example
    if example is None:
        raise ValueError(f"{family.id} has no example verification job")
    simulator_checks = family.simulator.checks if family.simulator is not None else ()
    return plan_job(
        family,
        example["params"],
        example["delta"],
        checks or tuple(example.get("checks", simulator_checks)),
        trials if trials is not None else int(example.get("trials", 256)),
        int(example.get("seed", 0)),
        example.get("problem"),
        example.get("target_epsilon"),
    )
