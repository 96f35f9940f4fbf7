"""What NSEG and NISPP answer alike: privacy, calibration and plan from the releases a record is exposed to.

A method supplies its wording at a noise multiplier (:class:`Wording`), its paper's statement, the utility bounds at
a calibrated multiplier and the paper's advice for the target; :class:`NoisyViFamily` does the rest.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

from ...family import AlgorithmFamily, CalibrationQuery, Card, PrivacyQuery
from ...params import ParamsModel
from ...plans import MechanismPlan
from ...reports import CalibrationReport, Conventions, Noise, PrivacyReport, Recommendation, Release, UtilityReport
from .accounting import account, calibrate
from .answers import calibration_report, privacy_report
from .params import SOURCE, NoisyViParams
from .releases import PaperStatement

S = TypeVar("S", bound=NoisyViParams)
"""The parameter model of NSEG or NISPP."""


@dataclass(frozen=True)
class Wording:
    """A run at one noise multiplier, in the method's words."""

    noise_multiplier: float
    noise: Noise
    conventions: Conventions
    releases: tuple[Release, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class CalibratedUtility:
    """The utility bounds at a calibrated multiplier (or why there are none) and the defaults they used."""

    report: UtilityReport | None
    reason: str | None
    applied: tuple[Recommendation, ...]


class NoisyViFamily(AlgorithmFamily[S]):
    """An NSEG or NISPP method: Gaussian noise on every batch release, replace-one neighbours, accounted by
    :func:`~.accounting.account` (rdp, tight for a single pass, the paper's statement beside)."""

    accountants = ("rdp", "tight", "paper")
    accountant_notes: ClassVar[Mapping[str, str]] = MappingProxyType({})
    noise_fields = ("noise_multiplier", "noise_std")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.card = Card.load(__file__, cls.id, SOURCE=SOURCE)  # card.toml here holds both methods' cards

    @abstractmethod
    def wording(self, p: S, noise_multiplier: float | None = None) -> Wording:
        """The run at ``noise_multiplier`` (None: the noise given in ``p``)."""

    @abstractmethod
    def paper(self, p: S) -> PaperStatement:
        """The paper's own privacy statement for these parameters."""

    @abstractmethod
    def calibrated_utility(self, p: S, noise_multiplier: float, target: float, delta: float) -> CalibratedUtility:
        """The utility bounds at a calibrated multiplier, with the rates at the target."""

    @abstractmethod
    def advice(self, p: S, epsilon: float, delta: float) -> list[Recommendation]:
        """The paper's batch size and step count for the target (advice: adopting them changes the accounting)."""

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """The noisy releases a record is exposed to (:meth:`~.releases.NoisyReleases.plan`)."""
        p = self.parse(params)
        return p.releases().plan(self.wording(p).noise_multiplier)

    def _privacy(self, query: PrivacyQuery[S]) -> PrivacyReport:
        p, delta = query.params, query.delta
        run = self.wording(p)
        answer = account(
            p.releases(), run.noise_multiplier, delta, self.paper(p), query.accountant, query.orders, query.refine
        )
        return privacy_report(self.id, answer, delta, run.noise, run.conventions, run.releases, run.notes)

    def _calibrate(self, query: CalibrationQuery[S]) -> CalibrationReport:
        p, target, delta = query.params, query.target_epsilon, query.delta
        answer, paper = calibrate(p.releases(), self.paper(p), query)
        run = self.wording(p, answer.noise_multiplier)
        utility = self.calibrated_utility(p, answer.noise_multiplier, target, delta)
        shown = {(r.name, r.value) for r in utility.applied}
        advice = tuple(r for r in self.advice(p, target, delta) if (r.name, r.value) not in shown)
        return calibration_report(
            self.id,
            answer,
            target,
            delta,
            run.noise,
            run.conventions,
            run.releases,
            utility.report,
            paper,
            utility.applied + advice,
            run.notes,
            utility.reason,
        )
