"""The dp-bilevel family behind the registry's protocol."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ...errors import CalibrationError, ParameterError
from ...family import AlgorithmFamily, CalibrationQuery, Card, PrivacyQuery
from ...params import ParamsModel, resolve_noise_multiplier
from ...plans import MechanismPlan
from ...registry import register
from ...reports import Accounted, CalibrationReport, PrivacyReport, UtilityReport, choose_accountant
from .paper import paper_chain, safe_split
from .params import ALGORITHM_ID, SOURCE, BilevelParams
from .plan import inner_multiplier, mechanisms
from .privacy import (
    calibration_results,
    choose_calibration,
    paper_calibration,
    privacy_results,
    rdp_event,
    refuse_small_batches,
    split_warnings,
    stated_notes,
)
from .text import stated_conventions, stated_noise, stated_releases
from .utility import utility_report

# -- the family ------------------------------------------------------------------------------------------------------


@register
class DpBilevel(AlgorithmFamily[BilevelParams]):
    id = ALGORITHM_ID
    card = Card.load(__file__, ALGORITHM_ID, SOURCE=SOURCE)
    params_model = BilevelParams
    accountants = ("rdp", "tight", "paper")

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan | None:
        """Per outer step 2K inner Gaussian steps and one outer release, T times, under replace-one; None for
        batches drawn with replacement (no event describes them)."""
        p = self.parse(params)
        if p.mini and p.batch_sampling == "with-replacement":
            return None
        z = resolve_noise_multiplier(p.noise_multiplier, None, 1.0)
        return MechanismPlan(rdp_event(p, z, inner_multiplier(p, z)), "replace-one")

    # -- privacy ---------------------------------------------------------------------------------------------------

    def _privacy(self, query: PrivacyQuery[BilevelParams]) -> PrivacyReport:
        p, d, grid, accountant, refine = query.params, query.delta, query.grid, query.accountant, query.refine
        z = resolve_noise_multiplier(p.noise_multiplier, None, 1.0)
        z_in = inner_multiplier(p, z)
        results, curve, conversion = privacy_results(p, z, z_in, d, grid, refine)
        chosen = choose_accountant(results, accountant)
        if chosen.epsilon is None or not math.isfinite(chosen.epsilon):
            raise ParameterError.single(
                "noise_multiplier", "is too small for a finite ε bound at this δ", "a larger value"
            )
        chain = paper_chain(p, z, z_in, d)
        warnings = list(conversion.warnings if conversion is not None else ()) + stated_notes(p)
        if not chain.valid:
            warnings.append("the paper's chain does not apply at this noise: " + "; ".join(chain.problems))
        accounted = Accounted(
            tuple(results), chosen, d, next((r.optimal_order for r in results if r.name == "rdp"), None), curve
        )
        return accounted.privacy(
            self.id,
            stated_noise(p, z, z_in),
            stated_conventions(p, z_in),
            warnings=tuple(warnings),
            releases=stated_releases(p, z, z_in, chain),
        )

    # -- calibration -----------------------------------------------------------------------------------------------

    def _calibrate(self, query: CalibrationQuery[BilevelParams]) -> CalibrationReport:
        p, target, d, grid, accountant = query.params, query.target_epsilon, query.delta, query.grid, query.accountant
        notes: list[str] = []
        if p.inner_noise_multiplier is not None:
            notes.append(
                f"inner_noise_multiplier = {p.inner_noise_multiplier:.6g} was kept fixed: only noise_multiplier "
                "(the outer release) was calibrated, against what the inner solves leave of the budget"
            )
        printed = safe_split(p, target, d, "printed")
        corrected = safe_split(p, target, d, "corrected")
        refuse_small_batches(p, corrected)

        results = calibration_results(p, target, d, grid, corrected)
        if not any(r.applicable for r in results):
            raise CalibrationError(
                f"no accountant can meet ε = {target:.6g} at δ = {d:.3g}: "
                + "; ".join(dict.fromkeys(f"{r.name}: {r.reason}" for r in results))
            )
        chosen = choose_calibration(results, accountant)
        z = chosen.noise_multiplier
        assert z is not None  # every applicable calibration result carries its multiplier
        z_in = corrected.inner_noise_multiplier if chosen.name == "paper" else inner_multiplier(p, z)
        update = {"noise_multiplier": z} | ({"inner_noise_multiplier": z_in} if chosen.name == "paper" else {})
        calibrated = p.model_copy(update=update)
        report = self.privacy(calibrated, d, "best" if chosen.name != "paper" else "paper", grid)
        if chosen.name == "paper" and p.inner_noise_multiplier is None:
            notes.append(
                f"the paper's split sets the inner noise too: pass inner_noise_multiplier = {z_in:.6g} with "
                f"noise_multiplier = {z:.6g} to reproduce this calibration"
            )
        paper = paper_calibration(p, target, d, printed, corrected)
        notes.extend(split_warnings(p, target, d, printed, corrected, paper))
        utility = self.utility(calibrated.model_copy(update={"epsilon": min(max(target, 1e-12), 1e4)}))
        accounted = Accounted(tuple(results), chosen, d, chosen.optimal_order, report.rdp)
        return accounted.calibration(
            self.id,
            report.noise,
            report.conventions,
            target,
            z,
            noise_std=z * mechanisms(p)[2].sensitivity,
            utility=utility,
            utility_reason=None if utility.bounds else utility.reason,
            paper=paper,
            recommended=utility.recommended,
            warnings=tuple(notes + [w for w in report.warnings if w not in notes]),
            releases=report.releases,
        )

    # -- utility ---------------------------------------------------------------------------------------------------

    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        p = self.parse(params)
        return utility_report(p)
