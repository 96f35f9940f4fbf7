"""The dp-sgd family behind the registry's protocol."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import numpy as np

from ...calibration import calibrate_rdp
from ...checkpoints import CurveAnswer, CurveQuery, checkpoint_steps, epsilon_curve
from ...events import DpEvent, prefix
from ...family import AlgorithmFamily, CalibrationQuery, Card, Cost, Operation, PrivacyQuery
from ...mechanisms.gaussian import gaussian_noise_multiplier
from ...params import ParamsModel
from ...plans import MechanismPlan
from ...registry import register
from ...reports import (
    PLAN_ACCOUNTANTS,
    AccountantResult,
    Accounted,
    CalibrationReport,
    PrivacyReport,
    UtilityReport,
    choose_accountant,
)
from .params import ALGORITHM_ID, WITHOUT_AMPLIFICATION, DpSgdParams, steps_and_rule
from .privacy import (
    _NOT_ASKED,
    _PAPER_REASON,
    _UTILITY_REASON,
    _event,
    _poisson_beside,
    _rdp_accountant,
    _rdp_method,
    _rdp_result,
    _tight_calibration,
    _tight_result,
)
from .text import _conventions, _curve, _noise, _noise_multiplier, _notes, _require_finite


@register
class DpSgd(AlgorithmFamily[DpSgdParams]):
    id = ALGORITHM_ID
    card = Card.load(__file__, ALGORITHM_ID)
    params_model = DpSgdParams
    accountants = PLAN_ACCOUNTANTS
    noise_fields = ("noise_multiplier", "noise_std")
    example_target_epsilon = 3.0  # MNIST at ε = 3, the figure dp_accounting's and opacus' users compare with
    integer_knobs = MappingProxyType({"steps": ("epochs",), "epochs": ("steps",), "batch_size": ()})

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan:
        """T subsampled Gaussian releases (Poisson or fixed-size batches) under the chosen neighbouring relation."""
        p = self.parse(params)
        steps, _ = steps_and_rule(p)
        return MechanismPlan(_event(p, _noise_multiplier(p), steps), p.neighbouring, description=_rdp_method(p))

    def cost(self, operation: Operation, params: Mapping[str, Any] | ParamsModel, accountant: str = "best") -> Cost:
        """Heavy exactly where a privacy-loss distribution is built: batches below the full dataset, when the tight
        accountant is asked for (``tight``, or ``best``, which needs its value)."""
        p = self.parse(params)
        builds_pld = not p.full_batch and p.sampling not in WITHOUT_AMPLIFICATION
        asks_tight = operation is not Operation.UTILITY and accountant in ("best", "tight")
        return Cost.HEAVY if builds_pld and asks_tight else Cost.CHEAP

    # -- privacy ---------------------------------------------------------------------------------------------------

    def _privacy(self, query: PrivacyQuery[DpSgdParams]) -> PrivacyReport:
        p, d, accountant = query.params, query.delta, query.accountant
        z = _noise_multiplier(p)
        steps, rule = steps_and_rule(p)
        warnings: list[str] = []

        conversion = query.known_rdp.get(steps) or _rdp_accountant(p).epsilon(
            _event(p, z, steps), d, query.orders, query.refine
        )
        _require_finite(conversion.value, "noise_multiplier")
        warnings += conversion.warnings
        tight = _NOT_ASKED if accountant == "rdp" else query.known_tight.get(steps) or _tight_result(p, z, d, steps)
        results = [_rdp_result(p, conversion), tight]
        results.append(AccountantResult.not_applicable("paper", _PAPER_REASON))
        if p.sampling in WITHOUT_AMPLIFICATION:
            results.append(_poisson_beside(p, z, d, steps))

        chosen = choose_accountant(results, accountant, supported=self.supported_accountants())
        accounted = Accounted(tuple(results), chosen, d, conversion.optimal_order, _curve(conversion))
        return accounted.privacy(
            self.id, _noise(p, z), _conventions(p, steps, rule), warnings=tuple(warnings + _notes(p))
        )

    def _curve(self, query: PrivacyQuery[DpSgdParams], checkpoints: object) -> CurveAnswer:
        """ε after each checkpoint: the run stopped after t steps is T = t (the same leaves; tight at each t)."""
        p, d = query.params, query.delta
        z = _noise_multiplier(p)
        steps, _ = steps_and_rule(p)
        per_epoch = p.dataset_size / p.batch_size

        def epoch_steps() -> list[int]:
            rounding = math.floor if p.epoch_rounding == "floor" else math.ceil
            ends = [rounding(e * per_epoch) for e in range(1, math.ceil(steps / per_epoch) + 1)]
            return [t for t in ends if 1 <= t < steps] + [steps]

        whole = _event(p, z, steps)

        def prefix_at(t: int) -> DpEvent:
            # without amplification the release is per epoch begun, not per step: not a prefix of the step tree
            event = _event(p, z, t) if p.sampling in WITHOUT_AMPLIFICATION else prefix(whole, t)
            assert event is not None  # checkpoints are >= 1
            return event

        curve = CurveQuery(
            prefix_at,
            p.neighbouring,
            d,
            query.accountant,
            query.orders,
            query.refine,
            epochs_at=lambda t: t / per_epoch,
            tight_along=(lambda ts: [_tight_result(p, z, d, t) for t in ts]) if p.full_batch else None,
        )
        return epsilon_curve(curve, checkpoint_steps(checkpoints, steps, epoch_steps))

    # -- calibration -----------------------------------------------------------------------------------------------

    def _calibrate(self, query: CalibrationQuery[DpSgdParams]) -> CalibrationReport:
        grid = None if query.orders is None else tuple(query.orders)
        return _calibrate_cached(self, query.params, query.target_epsilon, query.delta, query.accountant, grid)

    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        self.parse(params)
        return UtilityReport(self.id, (), _UTILITY_REASON)


@lru_cache(maxsize=512)
def _calibrate_cached(
    family: DpSgd,
    p: DpSgdParams,
    target: float,
    d: float,
    accountant: str,
    grid: tuple[float, ...] | None,
) -> CalibrationReport:
    steps, rule = steps_and_rule(p)
    orders = None if grid is None else np.array(grid)
    rdp = _rdp_accountant(p)
    results: list[AccountantResult] = []

    full_batch = p.full_batch
    z_gaussian = gaussian_noise_multiplier(target, d, steps) if full_batch else None

    def curve_of(z: float) -> Callable[[np.ndarray], np.ndarray]:
        return rdp.curve(_event(p, z, steps))

    calibration = calibrate_rdp(curve_of, d, target, orders=orders, initial=z_gaussian or 1.0)
    results.append(_rdp_result(p, calibration.conversion, calibration.noise))
    if accountant == "rdp" and not full_batch:
        results.append(_NOT_ASKED)  # the PLD calibration costs ~10 PLD builds: only where its answer is asked for
    else:
        results.append(_tight_calibration(p, target, d, steps, z_gaussian, calibration.noise))
    results.append(AccountantResult.not_applicable("paper", _PAPER_REASON))

    chosen = choose_accountant(results, accountant, key="noise_multiplier", supported=family.supported_accountants())
    z = chosen.noise_multiplier
    assert z is not None  # every applicable calibration result carries its multiplier
    conversion = calibration.conversion if chosen.name == "rdp" else rdp.epsilon(_event(p, z, steps), d, orders)
    accounted = Accounted(tuple(results), chosen, d, conversion.optimal_order, _curve(conversion))
    return accounted.calibration(
        family.id,
        _noise(p, z),
        _conventions(p, steps, rule),
        target,
        z,
        noise_std=z * p.sensitivity,
        utility_reason=_UTILITY_REASON,
        paper_reason=_PAPER_REASON,
        warnings=conversion.warnings + tuple(_notes(p)),
    )
