"""A family written the way a new algorithm is: one package, a parameter model and a plan, nothing else.

The Gaussian sum query released ``releases`` times with noise multiplier z (std over the L2 sensitivity
``clip_norm``): the plan is k Gaussian releases, so the spine's ``rdp`` is kα/(2z²) and its ``tight`` the exact
Gaussian DP μ = √k/z. :func:`registered` registers it for a test and removes it afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from accountants import registry
from accountants.events import GaussianEvent, SelfComposedEvent
from accountants.family import Card, Examples
from accountants.params import NOISE_MULTIPLIER_RANGE, ParamsModel, param
from accountants.planned import PlannedFamily
from accountants.plans import MechanismPlan
from accountants.reports import Conventions, Noise

LO, HI = NOISE_MULTIPLIER_RANGE


class GaussianSumParams(ParamsModel):
    releases: int = param(symbol="k", example=10, ge=1, le=10**9)
    """How many times the sum is released."""
    clip_norm: float = param(symbol="C", unit="same as the sum", gt=0, example=1.0)
    """L2 bound on one record's contribution."""
    noise_multiplier: float | None = param(symbol="z", example=2.0, default=None, ge=LO, le=HI)
    """Noise std over clip_norm."""


class GaussianSum(PlannedFamily[GaussianSumParams]):
    id = "toy-gaussian-sum"
    card = Card(
        title="Gaussian sum query, released k times",
        summary="A clipped sum with Gaussian noise, composed k times (test family).",
        source="Dwork & Roth 2014, Thm. A.1; Dong, Roth & Su 2022",
        examples=Examples({"releases": 10, "clip_norm": 1.0, "noise_multiplier": 2.0}),
    )
    params_model = GaussianSumParams

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        p = self.parse(params)
        assert p.noise_multiplier is not None
        return MechanismPlan(SelfComposedEvent(GaussianEvent(p.noise_multiplier), p.releases), "add-remove")

    def conventions(self, p: GaussianSumParams, plan: MechanismPlan) -> Conventions:
        return Conventions(
            neighbouring="add-remove",
            steps=p.releases,
            step_rule="k releases as given",
            sampling="none: every release uses the whole dataset",
            noise_multiplier_definition="noise_multiplier = noise std / clip_norm",
            released="every noisy sum",
        )

    def noise(self, p: GaussianSumParams, value: float) -> Noise:
        return Noise(value, value * p.clip_norm, p.clip_norm, "add/remove one record moves the sum by ≤ C", "sum")


@contextmanager
def registered() -> Iterator[GaussianSum]:
    """The family registered for the duration of the block."""
    registry.register(GaussianSum)
    try:
        yield registry.get(GaussianSum.id)  # type: ignore[misc]  # registered just above
    finally:
        registry.unregister(GaussianSum.id)
