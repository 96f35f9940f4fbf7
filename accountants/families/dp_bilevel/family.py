"""The dp-bilevel family on the spine: its plan is T outer steps of 2K inner Gaussian steps and one outer release
(replace-one; batches drawn without replacement as sampled events, with replacement as events no accountant reads
yet), so rdp, tight, best and the calibration of the outer multiplier come from
:class:`~accountants.planned.PlannedFamily`. What only this family adds: the paper's chain of lemmas (an accountant
in its regime) and its budget splits (printed, with the erratum, and corrected), the releases, and the utility
theorems at the calibrated noise."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...events import SampledWithReplacementEvent, leaves
from ...family import Card
from ...params import ParamsModel
from ...planned import Answered, CalibrationDetails, Details, PlannedFamily
from ...plans import MechanismPlan
from ...registry import register
from ...reports import AccountantResult, Conventions, Noise, UtilityReport
from .paper import paper_chain, safe_split
from .params import ALGORITHM_ID, SOURCE, BilevelParams
from .plan import inner_multiplier
from .privacy import (
    WITH_REPLACEMENT,
    inner_notes,
    paper_calibration,
    paper_calibration_result,
    paper_multipliers,
    paper_result,
    plan_event,
    refuse_small_batches,
    split_warnings,
    stated_notes,
)
from .text import stated_conventions, stated_noise, stated_releases
from .utility import utility_report

_TIGHT_FULL = (
    "the T(2K + 1) adaptive Gaussian releases compose exactly to μ-GDP with μ² = T(2K/z_in² + 1/z²) (Dong, Roth & "
    "Su 2019), converted by the analytic Gaussian (Balle & Wang 2018, Thm. 8): exact for this mechanism"
)
_RDP_FULL = (
    "Rényi DP of the T(2K + 1) Gaussian releases, α/(2z²) each, composed (Mironov 2017; not in Kornowski 2024), "
    "converted exactly with the improved conversion (Balle et al. 2020, Thm. 21) over real α"
)
_RDP_MINI = (
    "Rényi DP of the Gaussian on batches drawn without replacement (Wang, Balle & Kasiviswanathan 2019, Thm. 27), "
    "2K inner and 1 outer release per step, composed over T steps; improved conversion (Balle et al. 2020, Thm. 21)"
)


@register
class DpBilevel(PlannedFamily[BilevelParams]):
    id = ALGORITHM_ID
    card = Card.load(__file__, ALGORITHM_ID, SOURCE=SOURCE)
    params_model = BilevelParams
    accountants = ("paper",)

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """Per outer step 2K inner Gaussian steps and one outer release, T times, under replace-one."""
        p = self.parse(params)
        z = p.noise_multiplier if p.noise_multiplier is not None else 1.0
        return MechanismPlan(plan_event(p, z, inner_multiplier(p, z)), "replace-one")

    def conventions(self, params: BilevelParams, plan: MechanismPlan) -> Conventions:
        return stated_conventions(params, inner_multiplier(params, _outer(params)))

    def noise(self, params: BilevelParams, value: float) -> Noise:
        return stated_noise(params, value, inner_multiplier(params, value))

    def unread_reason(self, plan: MechanismPlan) -> str | None:
        drawn_with_replacement = any(isinstance(leaf, SampledWithReplacementEvent) for _, leaf in leaves(plan.event))
        return WITH_REPLACEMENT if drawn_with_replacement else None

    def method(self, accountant: str, params: BilevelParams, plan: MechanismPlan) -> str | None:
        if accountant == "rdp":
            return _RDP_MINI if params.mini else _RDP_FULL
        return _TIGHT_FULL if accountant == "tight" and not params.mini else None

    def extra_results(
        self, params: BilevelParams, plan: MechanismPlan, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        z = _outer(params)
        return [paper_result(params, paper_chain(params, z, inner_multiplier(params, z), delta))]

    def check_target(self, params: BilevelParams, target: float, delta: float) -> None:
        """Batches too small for the paper's mini-batch argument at this target are refused."""
        refuse_small_batches(params, safe_split(params, target, delta, "corrected"))

    def extra_calibrations(
        self, params: BilevelParams, target: float, delta: float, spine: Sequence[AccountantResult]
    ) -> Sequence[AccountantResult]:
        """The corrected split's multipliers (it sets the inner noise too: best takes it only where no spine
        accountant meets the target)."""
        return [paper_calibration_result(params, target, delta)]

    def calibrated_params(
        self, params: BilevelParams, chosen: AccountantResult, target: float, delta: float
    ) -> BilevelParams:
        """The outer multiplier, and the inner one where the paper's split set it."""
        calibrated = params.model_copy(update={"noise_multiplier": chosen.calibrated_value})
        found = paper_multipliers(params, target, delta) if chosen.name == "paper" else None
        return calibrated if found is None else calibrated.model_copy(update={"inner_noise_multiplier": found[1]})

    def details(self, params: BilevelParams, plan: MechanismPlan, answered: Answered) -> Details:
        """The releases and the warnings (the clipping assumption, the paper's chain where it does not apply)."""
        z = _outer(params)
        chain = paper_chain(params, z, inner_multiplier(params, z), answered.delta)
        warnings = stated_notes(params)
        if not chain.valid:
            warnings.append("the paper's chain does not apply at this noise: " + "; ".join(chain.problems))
        return Details(warnings, releases=stated_releases(params, z, inner_multiplier(params, z), chain))

    def calibration_details(self, at: BilevelParams, plan: MechanismPlan, answered: Answered) -> CalibrationDetails:
        """The utility theorems at the calibrated noise, the printed split beside the corrected one (with what the
        spine certifies for the printed noise), and the notes on the inner noise."""
        assert answered.target is not None  # a calibration's
        target, delta = answered.target, answered.delta
        printed = safe_split(at, target, delta, "printed")
        corrected = safe_split(at, target, delta, "corrected")
        at_printed = None
        if printed.multipliers is not None:
            z, z_in = printed.multipliers
            prescribed = at.model_copy(update={"noise_multiplier": z, "inner_noise_multiplier": z_in})
            at_printed = self.spine_answers(prescribed, delta, "best")
        paper = paper_calibration(at, target, delta, printed, corrected, at_printed)
        given = answered.requested if isinstance(answered.requested, BilevelParams) else at
        notes = inner_notes(given, answered.chosen, at.inner_noise_multiplier)
        notes += split_warnings(at, target, delta, printed, corrected, paper)
        utility = self.utility(at.model_copy(update={"epsilon": min(max(target, 1e-12), 1e4)}))
        reason = None if utility.bounds else utility.reason
        return CalibrationDetails(utility, paper, utility.recommended, tuple(notes), reason)

    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        return utility_report(self.parse(params))


def _outer(params: BilevelParams) -> float:
    assert params.noise_multiplier is not None  # the spine checks the knob before any answer
    return params.noise_multiplier
