"""The privacy statement: a privacy answer said in plain language, with every assumption it rests on.

Written from the answer's data alone (ε, δ, the accountant and its guarantee, the conventions, the checkpoints, a
paper's claim), so the statement cannot say something the answer does not (cf. tensorflow-privacy's
``compute_dp_sgd_privacy_statement``, whose predecessor was deprecated for hiding its assumptions).
"""

from __future__ import annotations

from .reports import Answer, CalibrationReport, Conventions, Guarantee, Noise

RELATIONS = {
    "add-remove": "two datasets are neighbours when one is the other with one example added or removed",
    "replace-one": "two datasets are neighbours when one is the other with one example replaced by another "
    "(the dataset size is public)",
    "zero-out": "two datasets are neighbours when one is the other with one example's data replaced by zeros (for "
    "these releases the same pairs of output distributions as adding or removing the example)",
}


def privacy_statement(answer: Answer, subject: str) -> str:
    """A paragraph on ``answer`` (``subject`` names what was accounted, e.g. "dp-sgd with these hyperparameters")."""
    c = answer.conventions
    chosen = next((r for r in answer.accountants if r.name == answer.accountant), None)
    guarantee = chosen.guarantee if chosen is not None and chosen.guarantee else "certified upper bound"
    parts = [
        f"Privacy statement for {subject}. What is protected: {_protected(c)}.",
        f"Guarantee: ({answer.epsilon:.4g}, {answer.delta:.3g})-differential privacy, that is ε = {answer.epsilon:.4g} "
        f"at δ = {answer.delta:.3g}, from the {answer.accountant} accountant ({guarantee}).",
        f"Coverage: {c.steps} steps ({c.step_rule}); released: {c.released}. ε does not decrease with the number of "
        "steps, so every checkpoint published before the end of the run is covered by the same guarantee.",
    ]
    if answer.curve:
        points = ", ".join(f"{p.epsilon:.4g} after {p.steps} steps" for p in answer.curve)
        parts.append(f"ε at the requested checkpoints (same δ): {points}.")
    if answer.noise is not None:
        parts.append(_noise(answer.noise))
    parts.append(f"Sampling assumed: {c.sampling}.")
    if c.sampling.lower().startswith("poisson"):
        parts.append(
            "If the data loader does not sample this way (for instance it shuffles the data and cuts it into "
            "consecutive batches), this ε does not apply to it: no amplification by sampling is proven for such "
            "a loader, and its guarantee must be computed without it, which gives a much larger ε."
        )
    for result in answer.accountants:
        if result.kind is Guarantee.NOT_VALID and result.epsilon is not None:
            parts.append(
                f"For comparison only: {result.method} gives ε = {result.epsilon:.4g}, which is not valid for this "
                f"configuration ({result.reason})."
            )
    parts.append(f"Noise convention: {c.noise_multiplier_definition}.")
    parts.extend(_paper(answer))
    if answer.warnings:
        parts.append("Caveats: " + "; ".join(answer.warnings) + ".")
    return " ".join(parts)


def _protected(c: Conventions) -> str:
    """Who the guarantee protects, under which relation."""
    relation = RELATIONS.get(c.neighbouring, c.neighbouring)
    if c.protects == "example":
        return (
            f"each individual example (example-level differential privacy) under the {c.neighbouring} relation: "
            f"{relation}"
        )
    relation = relation.replace("one example", "one user's examples" if c.examples_per_user > 1 else "one user")
    if c.examples_per_user > 1:
        return (
            f"each user with at most {c.examples_per_user} examples (user-level differential privacy, per user, at "
            f"most {c.examples_per_user} examples) under the {c.neighbouring} relation: {relation}"
        )
    return (
        f"each user (user-level differential privacy: each record is one user, whose whole contribution is clipped "
        f"as one) under the {c.neighbouring} relation: {relation}"
    )


def _noise(noise: Noise) -> str:
    """The noise the guarantee rests on, in both units."""
    std = "" if noise.noise_std is None else f", noise std σ = {noise.noise_std:.6g}"
    return f"Noise: noise multiplier {noise.noise_multiplier:.6g}{std} ({noise.sensitivity_rule})."


def _paper(answer: Answer) -> list[str]:
    """The paper's claim beside the certified value, where it differs."""
    if isinstance(answer, CalibrationReport) and answer.paper is not None and answer.paper.epsilon_claimed is not None:
        paper = answer.paper
        certified = paper.epsilon_certified
        claimed = paper.epsilon_claimed
        if certified is not None and claimed is not None and abs(certified - claimed) > 1e-9 * max(certified, 1.0):
            return [
                f"The paper's own calibration ({paper.source}) claims ε = {claimed:.4g} for its noise; "
                f"dpcal certifies ε = {certified:.4g} for that noise ({'valid' if paper.valid else 'not valid'})."
            ]
    for result in answer.accountants:
        paper_epsilon = result.epsilon if result.name == "paper" and result.applicable else None
        if paper_epsilon is not None and abs(paper_epsilon - answer.epsilon) > 1e-9 * max(answer.epsilon, 1.0):
            kind = "not certified" if result.kind is Guarantee.PAPER_AS_PRINTED else "confirmed as an upper bound"
            return [
                f"The paper's own statement gives ε = {paper_epsilon:.4g} ({kind}); the certified value above is "
                f"ε = {answer.epsilon:.4g}."
            ]
    return []
