"""How the command line prints an answer to read (``--json`` prints it as sent): the headline, the noise, the
conventions and the sampling assumed, every accountant's row, ε over training and the statement, a job's result.
Answers are read by attribute (typed answers, or :class:`app.remote.Record`): no import beyond the standard library."""

from __future__ import annotations

from typing import Any


def summary(command: str, answer: Any) -> str:
    """A command's answer as lines to read."""
    if command == "verify":
        return _job_summary(answer)
    if command == "algorithms":
        return _algorithms_summary(answer)
    if command == "utility":
        if not answer.bounds:
            return f"{answer.algorithm}: no utility bound — {answer.reason}"
        lines = [f"{b.measure} ≤ {b.value:.6g}  ({b.kind}; {b.source})" for b in answer.bounds]
        lines += [f"  at {r.name} = {r.value} ({r.rule})" for r in answer.recommended if r.applied]
        return "\n".join(lines)
    lines = [_headline(command, answer)]
    noise = answer.noise
    if noise is not None:
        std = "n/a" if noise.noise_std is None else f"{noise.noise_std:.7g}"
        lines.append(f"  noise: multiplier {noise.noise_multiplier:.7g}, std {std} ({noise.sensitivity_rule})")
    c = answer.conventions
    protects = getattr(c, "protects", "example")  # (an older server's answer has no unit)
    if protects == "user":
        most = getattr(c, "examples_per_user", 1)
        lines.append(f"  protects: each user{f' with at most {most} examples' if most > 1 else ''} (user-level)")
    lines.append(f"  conventions: {c.neighbouring}; {c.step_rule}; {c.released} released")
    lines.append(f"  sampling assumed: {c.sampling}")  # the most common mistake: a loader that samples otherwise
    for r in answer.releases:
        count = f"{r.count} × " if r.count != 1 else ""
        lines.append(f"  release: {count}{r.name} ({r.composition})")
    for r in getattr(answer, "recommended", []):
        lines.append(f"  recommended: {r.name} = {r.value} ({r.rule}){'' if r.applied else ' [advice]'}")
    lines += _accountant_lines(command, answer)
    for b in answer.bounds:
        if b.selected:
            at = "" if b.epsilon is None else f": ε = {b.epsilon:.6g}"
            lines.append(f"  winning bound: {b.name} ({b.source}; {b.releases}){at}")
    lines += [f"  warning: {w}" for w in answer.warnings]
    return "\n".join(lines + _curve_and_statement(answer))


def _algorithms_summary(answer: Any) -> str:
    """The list of algorithms, a line each, or one algorithm with its parameters."""
    if isinstance(answer, list):
        return "\n".join(f"{a.id:28} {a.title}  [{', '.join(a.accountants)}]" for a in answer)
    lines = [f"{answer.id}: {answer.title}", answer.summary, f"source: {answer.source}", "parameters:"]
    for name, prop in answer.parameters.get("properties", {}).items():
        symbol = prop.get("x-symbol")
        lines.append(f"  {name}{f' ({symbol})' if symbol else ''}: {prop.get('description', '')}")
    return "\n".join(lines)


def _headline(command: str, answer: Any) -> str:
    """The answer in one line: the calibrated value and its ε, or ε (with the Rényi order beside an rdp answer)."""
    if command == "calibrate":
        return (
            f"{answer.algorithm}: {answer.calibrated_parameter} = {answer.calibrated_value:.7g} gives "
            f"ε = {answer.epsilon:.10g} ≤ {answer.target_epsilon:g} at δ = {answer.delta:g} "
            f"(accountant: {answer.accountant})"
        )
    rdp = answer.accountant == "rdp" and answer.optimal_order  # the Rényi order belongs to an rdp answer only
    order = f", optimal order {answer.optimal_order:.4g}" if rdp else ""
    return (
        f"{answer.algorithm}: ε = {answer.epsilon:.6g} at δ = {answer.delta:g} (accountant: {answer.accountant}{order})"
    )


def _accountant_lines(command: str, answer: Any) -> list[str]:
    """Every accountant's row (a not-valid one's value shown for comparison), and the paper's own calibration."""
    lines = []
    for a in answer.accountants:
        at = (
            f" at {answer.calibrated_parameter} = {a.calibrated_value:.7g}"
            if command == "calibrate" and a.calibrated_value is not None
            else ""
        )
        bracket = "" if a.epsilon_lower is None else f"; exact ε ≥ {a.epsilon_lower:.6g}, certified"
        shown = a.applicable or (a.epsilon is not None and a.kind == "not-valid")  # shown for comparison
        lines.append(
            f"  {a.name:6} "
            + (f"ε = {a.epsilon:.6g}{at} ({a.guarantee}{bracket})" if shown else f"not applicable: {a.reason}")
        )
    paper = getattr(answer, "paper", None)
    if paper is not None:
        certified = "" if paper.epsilon_certified is None else f", certified ε = {paper.epsilon_certified:.6g}"
        claim = "" if paper.epsilon_claimed is None else f"claims ε = {paper.epsilon_claimed:.6g}"
        verdict = {True: "valid", False: "NOT valid", None: "not checked"}[paper.valid]
        lines.append(f"  paper: {paper.source}: {claim}{certified} ({verdict})")
    return lines


def _curve_and_statement(answer: Any) -> list[str]:
    """ε over training as a table (where checkpoints were asked for) and the statement (where asked for)."""
    lines = []
    curve = getattr(answer, "curve", None)
    if curve:
        lines.append(f"  ε over training:  {'steps':>10}  {'epochs':>8}  {'ε':>10}  accountant")
        for point in curve:
            epochs = "" if point.epochs is None else f"{point.epochs:.3f}"
            lines.append(
                f"                    {point.steps:>10}  {epochs:>8}  {point.epsilon:>10.6g}  {point.accountant}"
            )
    statement = getattr(answer, "statement", None)
    if statement:
        lines.append(f"  statement: {statement}")
    return lines


def _job_summary(job: Any) -> str:
    lines = [f"job {job.id}: {job.status} ({job.progress.completed}/{job.progress.total} trials)"]
    if job.error is not None:
        lines.append(f"  error: {job.error.detail}")
    result = job.result
    if result is not None and result.utility is not None:
        u = result.utility
        m = u.measured
        predicted = (
            ""
            if u.predicted_bound is None
            else (f"; predicted {u.predicted_bound:.6g} ({'within' if u.within_bound else 'NOT within'} the bound)")
        )
        lines.append(
            f"  utility: {u.measure} = {m['mean']:.6g} ± {m['standard_error']:.2g} "
            f"[{m['ci95_low']:.6g}, {m['ci95_high']:.6g}]{predicted}"
        )
    if result is not None and result.privacy_audit is not None:
        a = result.privacy_audit
        exact = "" if a.epsilon_exact is None else f" ≤ exact {a.epsilon_exact:.6g}"
        lines.append(
            f"  privacy audit: ε ≥ {a.epsilon_lower_bound:.6g} (95 %){exact} ≤ accounted "
            f"{a.epsilon_accounted:.6g} ({a.accountant}): {'consistent' if a.consistent else 'INCONSISTENT'}"
        )
        power = "informative" if a.informative else f"not informative: {a.informative_reason}"
        lines.append(f"  audit power: these trials can certify at most ε ≥ {a.max_detectable_epsilon:.6g}; {power}")
    return "\n".join(lines)
