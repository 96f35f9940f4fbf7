"""The parameters NSEG and NISPP share (Boob & Guzmán 2023): the base model, the rules between fields, the sampling
notes and the synthetic problem of their verification jobs."""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Literal

from ...errors import FieldIssue
from ...params import MAX_COUNT, ParamsModel, noise_given_twice, param
from .releases import NoisyReleases

SOURCE = "Boob & Guzmán 2023 (DP stochastic monotone VIs and saddle points, arXiv:2104.02988)"
MAX_STEPS = 10**15


class NoisyViParams(ParamsModel):
    """What NSEG and NISPP share: the data, the batches and the constants of the operator class 𝓜¹(L, M) on W.

    Each method documents its own batch_size, passes and steps (their meaning differs); the order here is the order
    of the published schema."""

    dataset_size: int = param(symbol="n", unit="records", example=10000, ge=1, le=MAX_COUNT)
    """Number of records."""
    batch_size: int = param(symbol="B", unit="records", example=10, ge=1, le=MAX_COUNT)
    """Records per noisy release (the expected number under Poisson sampling)."""
    passes: Literal["single", "multi"] = param(example="single", default="single")
    """single: disjoint batches, each record used once. multi: a random batch at every release."""
    steps: int | None = param(symbol="T", unit="steps", example=500, default=None, ge=1, le=MAX_STEPS)
    """Iterations (default: the method's own)."""
    sampling: Literal["poisson", "uniform"] = param(example="poisson", default="poisson")
    """Multi pass only: how each batch is drawn. poisson (default): each record independently with probability B/n,
    the sum divided by B. uniform: B distinct records uniformly at random (the paper's scheme), accounted with the
    looser Wang–Balle–Kasiviswanathan bound."""
    lipschitz: float = param(symbol="M", unit="operator units", example=2.414, gt=0, le=1e12)
    """Bound on the operator: sup over W of ‖F_β(w)‖ for every record (for a saddle point: f_β is M-Lipschitz in x
    and in y)."""
    smoothness: float = param(symbol="L", unit="operator units per parameter unit", example=1.0, ge=0, le=1e12)
    """Lipschitz constant of the operator F_β (for a saddle point L = √(L_x² + L_y²))."""
    diameter: float = param(symbol="D", unit="parameter units", example=2.828, gt=0, le=1e12)
    """Diameter of the feasible set W."""
    dimension: int = param(symbol="d", unit="coordinates", example=10, ge=1, le=MAX_COUNT)
    """Dimension of W."""

    if TYPE_CHECKING:  # declared by each method, after its own fields (the schema's order)
        noise_multiplier: float | None
        noise_std: float | None

    def check(self) -> list[FieldIssue]:
        return common_issues(self)

    @abstractmethod
    def steps_and_rule(self) -> tuple[int, str, bool]:
        """(the iteration count, how it was obtained, whether it is the default)."""

    @abstractmethod
    def releases(self) -> NoisyReleases:
        """What one record is exposed to over the run."""


def common_issues(p: NoisyViParams) -> list[FieldIssue]:
    """Rules every NSEG and NISPP parameter set obeys: B ≤ n and at most one of noise_multiplier, noise_std."""
    issues = []
    if p.batch_size > p.dataset_size:
        issues.append(
            FieldIssue(
                ("batch_size",), "must not exceed dataset_size", f"an integer in [1, {p.dataset_size}]", p.batch_size
            )
        )
    issues += noise_given_twice(p.noise_multiplier, p.noise_std)
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
    """bilinear: the saddle point xᵀAy + b_xᵀx − b_yᵀy on a product of balls (:mod:`accountants.synthetic.bilinear`)
    with ‖A‖ = smoothness, radius diameter/(2√2) and records bounded so that the operator bound is exactly lipschitz;
    closed-form gap."""
