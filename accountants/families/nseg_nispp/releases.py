"""What a record of NSEG's and NISPP's noisy releases is exposed to: the Gaussian releases (single or multi pass,
Poisson or uniform batches), their Rényi bounds and plan, and the paper's printed statements (Prop. 3, Theorem 1)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import optimize

from ...errors import CalibrationError
from ...events import DpEvent, GaussianEvent, PoissonSampledEvent, SampledWithoutReplacementEvent, SelfComposedEvent
from ...plans import MechanismPlan
from ...rdp import RdpAccountant
from ...reports import Release

Passes = Literal["single", "multi"]
Sampling = Literal["poisson", "uniform"]

TIGHT_METHOD = (
    "analytic Gaussian (Balle & Wang 2018, Thm. 8) with μ = 1/z: one Gaussian release per record (parallel "
    "composition over disjoint batches, Boob & Guzmán 2023, Prop. 4), not summed over the steps"
)
SINGLE_RDP_METHOD = "Gaussian RDP α/(2z²) of the one release per record, converted exactly over real α"


@dataclass(frozen=True)
class NoisyReleases:
    """What a record is exposed to: ``count`` Gaussian releases of batch statistics with replace-one sensitivity Δ."""

    passes: Passes
    sampling: Sampling
    count: int
    dataset_size: int
    batch_size: int

    @property
    def sampling_rate(self) -> float:
        return self.batch_size / self.dataset_size

    def plan(self, z: float) -> MechanismPlan:
        """The releases as events under replace-one (z is relative to the replace-one sensitivity Δ): one Gaussian
        release per record (single pass: disjoint batches, parallel composition), or ``count`` subsampled ones
        (Poisson: the event's multiplier is relative to the add/remove shift Δ/2, i.e. 2z)."""
        if self.passes == "single":
            return MechanismPlan(GaussianEvent(z), "replace-one", description="one release per record")
        if self.sampling == "uniform":
            inner: DpEvent = SampledWithoutReplacementEvent(self.dataset_size, self.batch_size, GaussianEvent(z))
        else:
            inner = PoissonSampledEvent(self.sampling_rate, GaussianEvent(2.0 * z))
        return MechanismPlan(SelfComposedEvent(inner, self.count), "replace-one")

    def rdp_bounds(self, z: float) -> list[RdpBound]:
        """Every Rényi bound for this structure at multiplier z (the used ones first)."""
        if self.passes == "single":
            return [RdpBound("Gaussian mechanism, one release per record", _SINGLE_SOURCE, _linear(z), True)]
        q, k = self.sampling_rate, self.count
        if self.sampling == "uniform":
            event = SampledWithoutReplacementEvent(self.dataset_size, self.batch_size, GaussianEvent(z))
            return [
                RdpBound(
                    f"Gaussian on uniformly sampled batches of {self.batch_size}, {k} releases",
                    "Wang, Balle & Kasiviswanathan 2019, Thm. 27 (replace-one), composed",
                    RdpAccountant("replace-one").curve(SelfComposedEvent(event, k)),
                    True,
                )
            ]
        # Poisson: the event's multiplier is relative to the add/remove shift Δ/2, i.e. 2z
        triangle = SelfComposedEvent(PoissonSampledEvent(q, GaussianEvent(2.0 * z)), k)
        option2 = SelfComposedEvent(PoissonSampledEvent(q, GaussianEvent(z)), k)
        return [
            RdpBound(
                f"Poisson-subsampled Gaussian (q = {q:.6g}), {k} releases, weak triangle inequality",
                "Mironov 2017, Prop. 11, through the dataset without the record; each leg Mironov, Talwar & Zhang "
                "2019 (exact) with shift Δ/2; capped by α/(2z²) per release",
                RdpAccountant("replace-one").curve(triangle),
                True,
            ),
            RdpBound(
                f"Poisson-subsampled Gaussian at the replace-one sensitivity Δ (not certified for replace-one), "
                f"{k} releases",
                "Mironov, Talwar & Zhang 2019 (add/remove curve) evaluated at the replace-one sensitivity Δ: the usual "
                "DP-SGD practice",
                RdpAccountant("add-remove").curve(option2),
                False,
                "shown for comparison, not used: no theorem covers the replace-one pair of Poisson mixtures with the "
                "add/remove curve at the doubled sensitivity; the weak-triangle bound is rigorous",
            ),
        ]

    def rdp_curve(self, z: float) -> Callable[[np.ndarray], np.ndarray]:
        """The per-order minimum of the used bounds."""
        used = [b.curve for b in self.rdp_bounds(z) if b.used]

        def curve(orders: np.ndarray) -> np.ndarray:
            return np.asarray(np.min([c(orders) for c in used], axis=0))

        return curve

    def rdp_method(self) -> str:
        if self.passes == "single":
            return SINGLE_RDP_METHOD
        if self.sampling == "uniform":
            return (
                f"RDP of the Gaussian on uniformly sampled batches (Wang, Balle & Kasiviswanathan 2019, Thm. 27), "
                f"{self.count} releases; improved conversion (Balle et al. 2020)"
            )
        return (
            f"RDP of the Poisson-subsampled Gaussian under replace-one neighbours (weak triangle inequality, "
            f"Mironov 2017 Prop. 11, with the exact MTZ19 curve), {self.count} releases; improved conversion "
            "(Balle et al. 2020)"
        )

    def release(
        self, name: str, sensitivity: float, noise_multiplier: float, details: Mapping[str, float | int | str]
    ) -> tuple[Release, ...]:
        """These releases as the answer lists them (one kind: ``count`` releases of std z·Δ)."""
        composition = (
            "parallel: disjoint batches, each record enters exactly one release"
            if self.passes == "single"
            else f"sequential over {self.count} releases, each on a {self.sampling} batch (rate "
            f"{self.sampling_rate:.6g})"
        )
        std = noise_multiplier * sensitivity
        return (Release(name, self.count, sensitivity, std, noise_multiplier, composition, details),)

    def sampling_text(self) -> str:
        if self.passes == "single":
            return (
                f"single pass: disjoint batches of {self.batch_size}, each record used in exactly one release "
                "(parallel composition); no sampling"
            )
        if self.sampling == "uniform":
            return (
                f"uniform: each of the {self.count} releases uses a uniformly random set of {self.batch_size} "
                f"distinct records out of {self.dataset_size}, independently across releases (the paper's scheme)"
            )
        return (
            f"Poisson: each record joins each of the {self.count} batches independently with probability "
            f"q = batch_size/dataset_size = {self.sampling_rate:.6g}, the batch sum divided by batch_size. The paper "
            "samples uniformly; implement Poisson sampling for this accounting to hold, or set sampling='uniform'"
        )


@dataclass(frozen=True)
class RdpBound:
    """One Rényi bound: the curve (a function of an array of orders) and whether the answer uses it."""

    name: str
    source: str
    curve: Callable[[np.ndarray], np.ndarray]
    used: bool
    reason: str | None = None


_SINGLE_SOURCE = "Mironov 2017, Prop. 7; parallel composition (Boob & Guzmán 2023, Prop. 4)"


def _linear(z: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda a: np.asarray(a, dtype=float) / (2.0 * z * z)


@dataclass(frozen=True)
class PaperStatement:
    """A paper's privacy statement of the form "the paper's noise multiplier z_p = c(η)/ε gives (ε, η)-DP".

    ``scale`` converts dpcal's multiplier to the paper's where the two are relative to different sensitivities
    (z_p = z·scale(z); NISPP: the paper's 4M/(λB) against Prop. 9's sharper bound); default 1."""

    source: str
    formula: str
    coefficient: Callable[[float], float]
    """c(η): the claimed ε at the paper's multiplier z_p is c(η)/z_p."""
    kind: Literal["gaussian", "moments"]
    """gaussian: Prop. 3, checked exactly; moments: Theorem 1's constant, not rigorous."""
    scale: Callable[[float], float] | None = None

    def claimed_epsilon(self, z: float, delta: float) -> float:
        return self.coefficient(delta) / (z * (1.0 if self.scale is None else self.scale(z)))

    def multiplier(self, epsilon: float, delta: float) -> float:
        """dpcal's multiplier z at which the paper prescribes its noise for (ε, δ) (z·scale(z) increases with z)."""
        paper = self.coefficient(delta) / epsilon
        if not paper <= 1e300:
            raise CalibrationError(
                f"target_epsilon {epsilon:.3g} is too small: the paper's noise multiplier overflows floating point"
            )
        scale = self.scale
        if scale is None:
            return paper

        def excess(log_z: float) -> float:
            z = math.exp(log_z)
            return math.log(z * scale(z)) - math.log(paper)

        lo, hi = math.log(paper) - 1.0, math.log(paper) + 1.0
        while excess(lo) > 0.0:
            lo -= 2.0
        while excess(hi) < 0.0:
            hi += 2.0
        return math.exp(optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=1e-15))


def gaussian_mechanism_statement(source: str, scale: Callable[[float], float] | None = None) -> PaperStatement:
    """Boob & Guzmán 2023, Prop. 3, in multiplier units: σ = Δ√(2 ln(1/η))/ε, i.e. z = √(2 ln(1/η))/ε."""
    return PaperStatement(
        source, "z = √(2 ln(1/η))/ε (Prop. 3)", lambda d: math.sqrt(2.0 * (-math.log(d))), "gaussian", scale
    )


def moments_statement(
    source: str, formula: str, coefficient: Callable[[float], float], scale: Callable[[float], float] | None = None
) -> PaperStatement:
    return PaperStatement(source, formula, coefficient, "moments", scale)
