"""Parameter fields and rules shared by the seed-000 families (NSEG and NISPP)."""

from __future__ import annotations

from typing import Any, Literal

from ...errors import FieldIssue
from ...params import ParamsModel, param
from .releases import NoisyReleases

# -- parameters shared by the seed-000 families ----------------------------------------------------------------------

MAX_COUNT = 10**12
MAX_STEPS = 10**15


def dataset_size_field() -> Any:
    return param("Number of records.", symbol="n", unit="records", example=10000, ge=1, le=MAX_COUNT)


def sampling_field() -> Any:
    return param(
        "Multi pass only: how each batch is drawn. poisson (default): each record independently with probability "
        "B/n, the sum divided by B. uniform: B distinct records uniformly at random (the paper's scheme), accounted "
        "with the looser Wang–Balle–Kasiviswanathan bound.",
        example="poisson",
        default="poisson",
    )


def lipschitz_field() -> Any:
    return param(
        "Bound on the operator: sup over W of ‖F_β(w)‖ for every record (for a saddle point: f_β is M-Lipschitz in x "
        "and in y).",
        symbol="M",
        unit="operator units",
        example=2.414,
        gt=0,
        le=1e12,
    )


def smoothness_field() -> Any:
    return param(
        "Lipschitz constant of the operator F_β (for a saddle point L = √(L_x² + L_y²)).",
        symbol="L",
        unit="operator units per parameter unit",
        example=1.0,
        ge=0,
        le=1e12,
    )


def diameter_field() -> Any:
    return param("Diameter of the feasible set W.", symbol="D", unit="parameter units", example=2.828, gt=0, le=1e12)


def dimension_field() -> Any:
    return param("Dimension of W.", symbol="d", unit="coordinates", example=10, ge=1, le=MAX_COUNT)


def common_issues(p: Any) -> list[FieldIssue]:
    """Rules every seed-000 parameter set obeys: B ≤ n and at most one of noise_multiplier, noise_std."""
    issues = []
    if p.batch_size > p.dataset_size:
        issues.append(
            FieldIssue(
                ("batch_size",), "must not exceed dataset_size", f"an integer in [1, {p.dataset_size}]", p.batch_size
            )
        )
    if p.noise_multiplier is not None and p.noise_std is not None:
        issues.append(
            FieldIssue(
                ("noise_std",),
                "give noise_multiplier or noise_std, not both",
                "at most one of noise_multiplier, noise_std",
            )
        )
    return issues


def sampling_notes(releases: NoisyReleases, sampled: str) -> list[str]:
    """What the answer assumes about the batches, in words (``sampled``: what the paper draws)."""
    if releases.passes == "single":
        return (
            ["sampling applies to the multi-pass variant only; ignored for passes='single'"]
            if releases.sampling != "poisson"
            else []
        )
    if releases.sampling == "poisson":
        return [
            f"multi pass is accounted for Poisson sampling (rate B/n); the paper draws {sampled}: implement Poisson "
            "batches, or set sampling='uniform' for the (looser) bound that covers the paper's scheme"
        ]
    return []


class BilinearProblemSettings(ParamsModel):
    """The synthetic problem of an nseg or nispp verification job."""

    kind: Literal["bilinear"] = param(example="bilinear", default="bilinear")
    """bilinear: the saddle point xᵀAy + b_xᵀx − b_yᵀy on a product of balls (spec §7.5) with ‖A‖ = smoothness, radius
    diameter/(2√2) and records bounded so that the operator bound is exactly lipschitz; closed-form gap."""
