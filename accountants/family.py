"""The one protocol every algorithm family implements (opacus' lesson: a small ABC and an explicit registry).

A family declares what it is (id, title, source, parameter model, accountants, privacy knob, bounds) and supplies
its answers to validated queries: :meth:`AlgorithmFamily._privacy` gets a :class:`PrivacyQuery` and
:meth:`AlgorithmFamily._calibrate` a :class:`CalibrationQuery`. What every family needs is written once here:
parsing the hyperparameters (:class:`~accountants.errors.ParameterError` naming each field), checking the accountant,
δ, the target and the Rényi orders, removing a knob given to a calibration (with a warning that names it), and the
δ ≥ 1/n warning. A family whose privacy is that of its mechanism plan needs even less:
:class:`~accountants.planned.PlannedFamily` answers both queries from :meth:`AlgorithmFamily.plan`.
"""

from __future__ import annotations

import dataclasses
import enum
import tomllib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import numpy as np

from . import validation as check
from .checkpoints import CurveAnswer
from .conversions import DEFAULT_ORDERS, Conversion, order_grid
from .errors import ParameterError, UnsupportedAccountantError
from .knobs import KNOBS, calibrate_integer
from .params import ParamsModel, parse_params
from .plan_accounting import accountant_names
from .plans import MechanismPlan
from .reports import AccountantResult, CalibrationReport, PrivacyReport, UtilityReport, calibration_of
from .statement import privacy_statement
from .verification import simulator_for

if TYPE_CHECKING:
    from .verification import Simulator

P = TypeVar("P", bound=ParamsModel)
"""A family's parameter model."""


class Operation(enum.Enum):
    """What a request asks of a family."""

    PRIVACY = "privacy"
    CALIBRATE = "calibrate"
    UTILITY = "utility"


class Cost(enum.Enum):
    """How much computation an answer needs, so a service can keep cheap answers away from heavy ones."""

    CHEAP = "cheap"
    """Closed forms and Rényi curves: milliseconds, whatever the parameters."""
    HEAVY = "heavy"
    """Numerical privacy-loss distributions, optimal compositions and searches over them: up to seconds."""


@dataclass(frozen=True)
class BoundInfo:
    """A privacy or utility bound an algorithm offers, where it comes from, and what it needs."""

    name: str
    kind: str
    """"privacy" or "utility"."""
    source: str
    conditions: tuple[str, ...] = ()
    accountant: str | None = None


@dataclass(frozen=True)
class Examples:
    """A family's documentation examples: the HTTP layer shows them as request examples and a test answers each."""

    params: Mapping[str, Any]
    """Valid hyperparameters, the privacy knob included."""
    utility_extra: Mapping[str, Any] = field(default_factory=dict)
    """What a utility request adds to :attr:`params` (e.g. the δ its theorems depend on)."""
    job: Mapping[str, Any] | None = None
    """A small verification-job request (every field but ``algorithm``), where the family has a simulator."""


@dataclass(frozen=True)
class Card:
    """What a family says about itself, kept as data in the ``card.toml`` beside its module (one table per algorithm
    id): title, summary, sources, assumptions, the bounds it offers with their conditions, and its examples."""

    title: str
    summary: str
    source: str
    examples: Examples
    assumptions: tuple[str, ...] = ()
    bounds: tuple[BoundInfo, ...] = ()

    @classmethod
    def load(cls, module_file: str, algorithm: str, **values: object) -> Card:
        """The card of ``algorithm`` in the ``card.toml`` beside ``module_file``; its texts are format strings over
        ``values`` (e.g. ``{SOURCE}``, the paper the family implements)."""
        with Path(module_file).with_name("card.toml").open("rb") as file:
            data = tomllib.load(file)[algorithm]

        def text(template: str) -> str:
            return template.format_map(values)

        bounds = tuple(
            BoundInfo(
                text(b["name"]),
                b["kind"],
                text(b["source"]),
                tuple(text(c) for c in b.get("conditions", ())),
                b.get("accountant"),
            )
            for b in data.get("bounds", ())
        )
        examples = data["examples"]
        return cls(
            title=text(data["title"]),
            summary=text(data["summary"]),
            source=text(data["source"]),
            assumptions=tuple(text(a) for a in data.get("assumptions", ())),
            bounds=bounds,
            examples=Examples(
                MappingProxyType(examples["params"]),
                MappingProxyType(examples.get("utility_extra", {})),
                examples.get("job"),
            ),
        )


@dataclass(frozen=True)
class PrivacyQuery(Generic[P]):
    """A validated privacy request: ε at ``delta`` for ``params`` (the privacy knob included)."""

    params: P
    delta: float
    accountant: str
    orders: np.ndarray | None
    """The requested Rényi orders (sorted, unique), or None for the family's default grid."""
    refine: bool = True
    """Also optimise the order continuously near the best grid order."""
    known_rdp: Mapping[int, Conversion] = field(default_factory=dict)
    """Rényi conversions this request already made, by step count (ε over training makes one at each checkpoint,
    the whole run's among them): a family uses the one at its own step count instead of converting again."""
    known_others: Mapping[str, Mapping[int, AccountantResult]] = field(default_factory=dict)
    """Likewise the other accountants' answers, by name and step count (:attr:`CurveAnswer.others`)."""

    @property
    def grid(self) -> np.ndarray:
        """The requested orders, or :data:`~accountants.conversions.DEFAULT_ORDERS`."""
        return DEFAULT_ORDERS if self.orders is None else self.orders


@dataclass(frozen=True)
class CalibrationQuery(Generic[P]):
    """A validated calibration request: the knob for ``target_epsilon`` at ``delta`` (``params`` without the knob)."""

    params: P
    target_epsilon: float
    delta: float
    accountant: str
    orders: np.ndarray | None
    """The requested Rényi orders (sorted, unique), or None for the family's default grid."""

    @property
    def grid(self) -> np.ndarray:
        return DEFAULT_ORDERS if self.orders is None else self.orders


class AlgorithmFamily(ABC, Generic[P]):
    """One algorithm: its parameter model, privacy accounting, calibration and utility bounds."""

    id: ClassVar[str]
    card: ClassVar[Card]
    """Title, summary, sources, assumptions, bounds and examples (:meth:`Card.load`)."""
    params_model: type[P]
    accountants: ClassVar[tuple[str, ...]]
    """Concrete accountants this family implements (``best`` is always offered on top)."""
    accountant_notes: ClassVar[Mapping[str, str]] = {}
    """Why an accountant the family does not implement does not apply to it."""
    calibrated_parameter: ClassVar[str] = "noise_multiplier"
    noise_fields: ClassVar[tuple[str, ...]] = ("noise_multiplier",)
    """Fields that carry the privacy knob: required by :meth:`privacy`; :meth:`calibrate` removes them from the
    parameters (with a warning naming them) before the family's :meth:`_calibrate` sees them."""
    example_target_epsilon: ClassVar[float] = 1.0
    """The target ε of the card's calibration example."""
    integer_knobs: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    """Integer hyperparameters :meth:`calibrate` can calibrate besides the privacy knob (e.g. ``epochs``), each with
    the fields it excludes (``steps`` for ``epochs``): the largest value meeting the target at the given noise."""

    @property
    def simulator(self) -> Simulator[Any, Any] | None:
        """Runs the algorithm on synthetic problems for verification jobs: the one registered for this id
        (:func:`accountants.verification.register_simulator`), or None."""
        return simulator_for(self.id)

    @property
    def title(self) -> str:
        return self.card.title

    @property
    def summary(self) -> str:
        return self.card.summary

    @property
    def source(self) -> str:
        return self.card.source

    @property
    def assumptions(self) -> tuple[str, ...]:
        return self.card.assumptions

    @property
    def bounds(self) -> tuple[BoundInfo, ...]:
        return self.card.bounds

    @property
    def example(self) -> Mapping[str, Any]:
        """Valid hyperparameters, the privacy knob included (:attr:`Examples.params`)."""
        return self.card.examples.params

    @property
    def utility_example_extra(self) -> Mapping[str, Any]:
        return self.card.examples.utility_extra

    @property
    def job_example(self) -> Mapping[str, Any] | None:
        return self.card.examples.job

    def parse(self, params: Mapping[str, Any] | ParamsModel) -> P:
        """Validate hyperparameters (raises :class:`ParameterError` naming each field and its allowed range)."""
        return parse_params(self.params_model, params)

    def calibration_example(self) -> dict[str, Any]:
        """:attr:`example` without the privacy knob (what a calibration request sends)."""
        knobs = {*self.noise_fields, self.calibrated_parameter}
        return {name: value for name, value in self.example.items() if name not in knobs}

    def supported_accountants(self) -> tuple[str, ...]:
        return ("best", *self.accountants)

    def check_accountant(self, accountant: str) -> str:
        names = accountant_names()
        if accountant not in names:
            raise ParameterError.single("accountant", "unknown accountant", "one of: " + ", ".join(names), accountant)
        if accountant not in self.supported_accountants():
            reason = self.accountant_notes.get(accountant, f"{self.id} does not implement it")
            raise UnsupportedAccountantError(accountant, list(self.supported_accountants()), reason)
        return accountant

    def plan(self, params: Mapping[str, Any] | ParamsModel, delta: float) -> MechanismPlan | None:
        """The releases about one record as an event tree the generic accountants interpret, at these
        hyperparameters (the privacy knob included) and δ (which may set δ spent outside the tree, e.g. a
        solver's failure probability); None where the family's accounting is not a composition of releases (e.g.
        a last-iterate theorem) or this configuration has no event that describes it."""
        self.parse(params)
        return None

    def cost(self, operation: Operation, params: Mapping[str, Any] | ParamsModel, accountant: str = "best") -> Cost:
        """What answering ``operation`` with ``accountant`` costs for these hyperparameters (validated here, so
        invalid input raises :class:`ParameterError` before any work). Default: cheap; families with numerical
        accountants say where those run."""
        self.parse(params)
        return Cost.CHEAP

    def privacy(
        self,
        params: Mapping[str, Any] | ParamsModel,
        delta: float,
        accountant: str = "best",
        orders: Sequence[float] | np.ndarray | None = None,
        refine: bool = True,
        checkpoints: object = None,
        statement: bool = False,
    ) -> PrivacyReport:
        """ε at ``delta`` for these hyperparameters (noise included), from every applicable accountant; with
        ``checkpoints`` (:func:`~accountants.checkpoints.checkpoint_steps`) also ε after each, and with
        ``statement`` the privacy statement."""
        p = self.parse(params)
        self.check_accountant(accountant)
        query = PrivacyQuery(p, check.delta("delta", delta), accountant, order_grid(orders, default=None), refine)
        curve: CurveAnswer | None = None
        if checkpoints is not None:
            try:
                curve = self._curve(query, checkpoints)
            except ParameterError:
                self._privacy(query)  # the whole run's own error first, where it has one
                raise
            query = dataclasses.replace(query, known_rdp=curve.rdp, known_others=curve.others)
        report = self._privacy(query)
        if curve is not None:
            report = dataclasses.replace(report, curve=curve.points)
        report = _with_warnings(report, (), self._delta_warnings(report.delta, p))
        return self._stated(report, statement)

    def calibrate(
        self,
        params: Mapping[str, Any] | ParamsModel,
        target_epsilon: float,
        delta: float,
        accountant: str = "best",
        orders: Sequence[float] | np.ndarray | None = None,
        calibrate: str | None = None,
        statement: bool = False,
    ) -> CalibrationReport:
        """The smallest noise (or other privacy knob) meeting (target_epsilon, delta); a knob given in ``params``
        is ignored, with a warning. ``calibrate`` names another knob (:attr:`integer_knobs`, e.g. ``epochs``): its
        largest value meeting the target at the noise given in ``params``."""
        if calibrate is not None and calibrate != self.calibrated_parameter:
            return self._stated(
                self._calibrate_integer(params, calibrate, target_epsilon, delta, accountant, orders), statement
            )
        p = self.parse(params)
        given = [name for name in self.noise_fields if getattr(p, name, None) is not None]
        if given:
            p = p.model_copy(update=dict.fromkeys(given))
        self.check_accountant(accountant)
        target = check.positive("target_epsilon", target_epsilon)
        query = CalibrationQuery(p, target, check.delta("delta", delta), accountant, order_grid(orders, default=None))
        report = self._calibrate(query)
        names = " and ".join(given)
        ignored = f"the {names} given in params was ignored: calibration computes {self.calibrated_parameter}"
        report = _with_warnings(report, (ignored,) if given else (), self._delta_warnings(report.delta, p))
        return self._stated(report, statement)

    def _stated(self, report: Report, statement: bool) -> Report:
        if not statement:
            return report
        return dataclasses.replace(report, statement=privacy_statement(report, f"{self.id} with these hyperparameters"))

    def _calibrate_integer(
        self,
        params: Mapping[str, Any] | ParamsModel,
        field: str,
        target_epsilon: float,
        delta: float,
        accountant: str,
        orders: Sequence[float] | np.ndarray | None,
    ) -> CalibrationReport:
        """The largest value of the integer knob ``field`` whose ε ≤ target at the given noise; the value one beyond
        is shown to exceed it (:func:`~accountants.knobs.calibrate_integer`: from the rdp answer where a tighter
        accountant is asked for)."""
        if field not in self.integer_knobs:
            allowed = "one of: " + ", ".join((self.calibrated_parameter, *self.integer_knobs))
            raise ParameterError.single("calibrate", f"{self.id} cannot calibrate {field!r}", allowed, field)
        given = self.knob_placeholder(params.model_dump() if isinstance(params, ParamsModel) else params, field)
        base = self.parse(given).model_dump()
        target = check.positive("target_epsilon", target_epsilon)
        self.check_accountant(accountant)
        self.privacy(base, delta, "rdp", orders)  # the noise and every other field are checked before the search

        def at(value: int) -> dict[str, Any]:
            return base | dict.fromkeys(self.integer_knobs[field]) | {field: value}

        def epsilon_at(name: str, value: int) -> float:
            return self.privacy(at(value), delta, name, orders).epsilon

        rule = KNOBS[field]
        found = calibrate_integer(epsilon_at, target, 1, int(rule.maximum), rule, accountant, field)
        report = self.privacy(at(found.value), delta, accountant, orders)
        beyond = found.shown_beyond(report.accountant)
        reason = f"the calibration of {field} reports the privacy answer at it (utility: POST /v1/utility)"
        return calibration_of(report, target, field, found.value, beyond=beyond, reason=reason)

    def knob_placeholder(self, params: Mapping[str, Any], field: str) -> dict[str, Any]:
        """``params`` as a calibration of the integer knob ``field`` reads them: where the knob is left out (it is
        what is asked for), a placeholder 1 with the fields it excludes cleared (e.g. ``steps`` for ``epochs``); the
        search replaces it. Unchanged for any other field."""
        given = dict(params)
        if field in self.integer_knobs and given.get(field) is None:
            given = given | dict.fromkeys(self.integer_knobs[field]) | {field: 1}
        return given

    @property
    def offers_checkpoints(self) -> bool:
        """Whether ``privacy(..., checkpoints=...)`` is offered (the family implements :meth:`_curve`)."""
        return type(self)._curve is not AlgorithmFamily._curve

    def _curve(self, query: PrivacyQuery[P], checkpoints: object) -> CurveAnswer:
        """ε after each checkpoint (ε over training), where the family offers it."""
        raise ParameterError.single(
            "checkpoints", f"ε over training is not offered for {self.id} (it is for dp-sgd and /v1/compose)", None
        )

    def _delta_warnings(self, delta: float, params: ParamsModel) -> tuple[str, ...]:
        """δ ≥ 1/n permits a mechanism that publishes a random record in the clear: say so."""
        dataset_size = getattr(params, "dataset_size", None)
        if not isinstance(dataset_size, int) or delta * dataset_size < 1.0:
            return ()
        return (
            f"delta = {delta:g} is at least 1/dataset_size = 1/{dataset_size}: an (ε, δ) guarantee this weak allows "
            "releasing a random record in the clear; δ should be much smaller than 1/n (e.g. below 1/n²)",
        )

    @abstractmethod
    def _privacy(self, query: PrivacyQuery[P]) -> PrivacyReport:
        """The family's answer to :meth:`privacy`."""

    @abstractmethod
    def _calibrate(self, query: CalibrationQuery[P]) -> CalibrationReport:
        """The family's answer to :meth:`calibrate`."""

    @abstractmethod
    def utility(self, params: Mapping[str, Any] | ParamsModel) -> UtilityReport:
        """Predicted utility bounds with their theorems and assumptions (empty with a reason if none)."""


Report = TypeVar("Report", PrivacyReport, CalibrationReport)


def _with_warnings(report: Report, first: tuple[str, ...], last: tuple[str, ...]) -> Report:
    """The report with ``first`` before its warnings and ``last`` after them."""
    if not first and not last:
        return report
    return dataclasses.replace(report, warnings=(*first, *report.warnings, *last))
