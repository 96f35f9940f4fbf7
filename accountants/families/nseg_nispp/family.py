"""What NSEG and NISPP answer alike: the plan of the releases a record is exposed to, on the spine.

A method supplies its wording at a noise multiplier (:class:`Wording`), its paper's statement, the utility bounds at
a calibrated multiplier and the paper's advice for the target; :class:`NoisyViFamily` gives the spine its plan and
the paper's rows, and the spine the rest.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ...family import Card
from ...params import ParamsModel
from ...plan_accounting import asks
from ...planned import Answered, CalibrationDetails, Details, PlannedFamily
from ...plans import MechanismPlan
from ...reports import AccountantResult, Conventions, Noise, Recommendation, Release, UtilityReport
from .paper import (
    bound_results,
    paper_calibration,
    paper_calibration_row,
    paper_row,
    paper_warnings,
    under_noised,
)
from .params import SOURCE, NoisyViParams
from .releases import TIGHT_METHOD, PaperStatement

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


class NoisyViFamily(PlannedFamily[S]):
    """An NSEG or NISPP method: Gaussian noise on every batch release, replace-one neighbours; rdp, tight, best and
    calibration are the spine's on :meth:`plan`, the paper's statement a row beside them (:mod:`.paper`)."""

    accountants = ("paper",)
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

    # -- on the spine ------------------------------------------------------------------------------------------

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """The noisy releases a record is exposed to (:meth:`~.releases.NoisyReleases.plan`)."""
        p = self.parse(params)
        z = self.knob_value(p)
        return p.releases().plan(1.0 if z is None else z)

    def knob_value(self, params: S) -> float | None:
        """noise_multiplier, or noise_std over the method's sensitivity (which only the method's wording resolves)."""
        if params.noise_multiplier is not None:
            return params.noise_multiplier
        if params.noise_std is None:
            return None
        return self.wording(params).noise_multiplier

    def conventions(self, params: S, plan: MechanismPlan) -> Conventions:
        return self.wording(params).conventions

    def noise(self, params: S, value: float) -> Noise:
        return self.wording(params, value).noise

    def method(self, accountant: str, params: S, plan: MechanismPlan) -> str | None:
        releases = params.releases()
        if accountant == "rdp":
            return releases.rdp_method()
        return TIGHT_METHOD if accountant == "tight" and releases.passes == "single" else None

    def extra_results(
        self, params: S, plan: MechanismPlan, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        z = self.knob_value(params)
        assert z is not None  # the spine checks the knob before any answer
        return [paper_row(self.paper(params), z, delta, spine)]

    def extra_calibrations(
        self, params: S, target: float, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        return [paper_calibration_row(self.paper(params), target, delta, spine)]

    def details(self, params: S, plan: MechanismPlan, answered: Answered) -> Details:
        """The releases, the Rényi bounds at the multiplier answered and the warnings (the paper's statement where
        it claims less than is certified)."""
        run = self.wording(params)
        rdp, paper = answered.row("rdp"), answered.row("paper")
        if answered.target is not None and (rdp is None or rdp.calibrated_value != run.noise_multiplier):
            rdp = None  # a calibration's rdp row is at its own multiplier
        bounds = bound_results(
            params.releases(), run.noise_multiplier, answered.delta, answered.orders, answered.refine, rdp
        )
        warnings = list(run.notes)
        if answered.target is None and paper is not None:
            warnings += paper_warnings(self.paper(params), paper, answered.results)
        return Details(tuple(dict.fromkeys(warnings)), bounds, run.releases)

    def calibration_details(self, at: S, plan: MechanismPlan, answered: Answered) -> CalibrationDetails:
        """The utility bounds at the calibrated multiplier, the paper's calibration with what the rigorous
        accountants certify for it, and the paper's advice for the target."""
        assert answered.target is not None  # a calibration's
        target, delta = answered.target, answered.delta
        z = self.wording(at).noise_multiplier
        statement = self.paper(at)
        utility = self.calibrated_utility(at, z, target, delta)
        shown = {(r.name, r.value) for r in utility.applied}
        advice = tuple(r for r in self.advice(at, target, delta) if (r.name, r.value) not in shown)
        row = answered.row("paper")  # the paper's multiplier for the target (extra_calibrations)
        if row is None or row.noise_multiplier is None:  # e.g. not a float: no paper calibration to show
            reason = None if row is None else row.reason
            return CalibrationDetails(utility.report, None, utility.applied + advice, (), paper_reason=reason)
        z_paper = row.noise_multiplier
        rigorous = [r for r in answered.results if r.counts_for_best and r.calibrated_value is not None]
        smallest = min((r.calibrated_value for r in rigorous if r.calibrated_value), default=None)
        request = "best" if asks(answered.accountant, "tight") else "rdp"
        at_paper = self.spine_answers(at.model_copy(update={"noise_multiplier": z_paper}), delta, request)
        paper = paper_calibration(statement, target, z_paper, tuple(at_paper.values()), smallest)
        return CalibrationDetails(utility.report, paper, utility.applied + advice, tuple(under_noised(paper, target)))
