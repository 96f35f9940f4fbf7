"""The mechanisms of a run: the inner Gaussian steps and the outer release, their multipliers and sampling rates."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .params import BilevelParams

# -- the mechanisms --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mechanism:
    """One of the three Gaussian mechanisms of an outer step."""

    name: str
    per_sample_bound: float
    """L (inner) or G (outer): the clipping norm of the per-sample gradients it averages."""
    records: int
    """n (full batch) or the batch size."""
    releases_per_step: int
    """K for an inner solve, 1 for the outer release."""
    dimension: int

    @property
    def sensitivity(self) -> float:
        """Replace-one L2 sensitivity of the (batch) mean: 2·bound/records."""
        return 2.0 * self.per_sample_bound / self.records


def mechanisms(p: BilevelParams) -> tuple[Mechanism, Mechanism, Mechanism]:
    """The inner solve for ỹ_t, the inner solve for ỹ^λ_t, and the outer release, in that order."""
    b_in, b_out, k = p.inner_batch, p.outer_batch, p.inner_total
    return (
        Mechanism("inner solve ỹ_t ≈ argmin_y g(x_t, y)", p.lipschitz_g, b_in, k, p.dimension_y),
        Mechanism("inner solve ỹ^λ_t ≈ argmin_y f + λg", p.lipschitz_lambda, b_in, k, p.dimension_y),
        Mechanism("outer penalty hypergradient g̃_t", p.clip, b_out, 1, p.dimension_x),
    )


def inner_multiplier(p: BilevelParams, z: float) -> float:
    """z_in: given, or z·√K (each inner solve gets the Rényi budget of one outer release)."""
    return p.inner_noise_multiplier if p.inner_noise_multiplier is not None else z * math.sqrt(p.inner_total)


def sampling_rates(p: BilevelParams) -> tuple[float, float]:
    """(inner, outer) probability that a given record is in a batch: b/n without replacement, 1 − (1 − 1/n)^b with
    replacement (Lemma 2.3), 1 for full batches."""
    if not p.mini:
        return 1.0, 1.0
    n = p.dataset_size
    if p.batch_sampling == "without-replacement":
        return p.inner_batch / n, p.outer_batch / n
    return q_with_replacement(p.inner_batch, n), q_with_replacement(p.outer_batch, n)


def q_with_replacement(b: int, n: int) -> float:
    """1 − (1 − 1/n)^b (Lemma 2.3)."""
    return 1.0 if n == 1 else -math.expm1(b * math.log1p(-1.0 / n))
