"""What a family answers: immutable report objects (the HTTP layer serialises them, field for field).

Every privacy answer names the accountant that produced it, the neighbouring relation, the sensitivity, the noise
in both units, the step count used, and its warnings (every answer names its conventions).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from .errors import UnsupportedAccountantError

if TYPE_CHECKING:
    from .rdp import StatedNeighbouring


@dataclass(frozen=True)
class RdpCurve:
    """ε(α) of the whole run at each order; where several bounds compete, the one that gives it at each order."""

    orders: tuple[float, ...]
    epsilons: tuple[float | None, ...]
    bounds: tuple[str, ...] | None = None


class Guarantee(enum.Enum):
    """What an accountant's number is, as data (the ``guarantee`` sentence says it in words)."""

    EXACT = "exact"
    CERTIFIED = "certified"
    """A proven upper bound."""
    PAPER_VALID = "paper-valid"
    """A paper's statement that dpcal's own accountants confirm (an upper bound)."""
    PAPER_AS_PRINTED = "paper-as-printed"
    """A paper's statement that is not certified: shown, never chosen by ``best``."""
    NOT_VALID = "not-valid"
    """A number shown for comparison that does not hold for this configuration (e.g. the Poisson ε of a shuffling
    loader): never chosen."""


@dataclass(frozen=True)
class AccountantResult:
    """One accountant's answer for this configuration, or why it does not apply."""

    name: str
    applicable: bool
    epsilon: float | None = None
    guarantee: str | None = None
    """What the number is: a certified upper bound, an exact value, or a paper's statement."""
    method: str | None = None
    reason: str | None = None
    """Why the accountant does not apply (when ``applicable`` is false)."""
    optimal_order: float | None = None
    noise_multiplier: float | None = None
    """For calibration: the noise this accountant needs for the target."""
    calibrated_value: float | None = None
    """For calibration: the value of the calibrated parameter this accountant needs (its noise multiplier for the
    noise-calibrated families; e.g. the stepsize for private mirror descent). Defaults to ``noise_multiplier``."""
    kind: Guarantee = Guarantee.CERTIFIED
    """The guarantee as data: ``best`` never chooses :attr:`Guarantee.PAPER_AS_PRINTED`."""
    epsilon_lower: float | None = None
    """For the tight accountant: a certified lower bound on the exact ε of what it accounts (its dominating pairs;
    the mechanism's own ε wherever those are attained), so that [epsilon_lower, epsilon] brackets it."""

    @classmethod
    def certified(cls, name: str, epsilon: float, method: str, **details: Any) -> AccountantResult:
        """A proven upper bound from accountant ``name`` (``details``: optimal order, calibrated values, kind)."""
        return cls(name, True, epsilon, "certified upper bound", method, **details)

    @classmethod
    def not_applicable(cls, name: str, reason: str) -> AccountantResult:
        """Accountant ``name`` does not apply here, and why."""
        return cls(name, False, reason=reason)

    @property
    def counts_for_best(self) -> bool:
        return self.applicable and self.kind not in (Guarantee.PAPER_AS_PRINTED, Guarantee.NOT_VALID)

    def __post_init__(self) -> None:
        if self.calibrated_value is None and self.noise_multiplier is not None:
            object.__setattr__(self, "calibrated_value", self.noise_multiplier)


NOT_ASKED_REASON = "not computed: the request asked for the rdp accountant"
"""Why an accountant that was not asked for has no value: heavy accountants (PLDs, optimal compositions) run only
where their answer is used."""


def not_asked(name: str = "tight") -> AccountantResult:
    """The place of accountant ``name`` in an answer that asked for ``rdp``."""
    return AccountantResult(name, False, reason=NOT_ASKED_REASON)


def choose_accountant(
    results: Sequence[AccountantResult],
    accountant: str,
    *,
    key: str = "epsilon",
    largest: bool = False,
    supported: Sequence[str] | None = None,
) -> AccountantResult:
    """The result answering a request for ``accountant``.

    ``best``: among the applicable results that are not a paper's uncertified statement (:attr:`counts_for_best`),
    the one with the smallest ``key`` (ε, or a calibrated noise multiplier), or the largest with ``largest`` (a
    calibrated stepsize). A named accountant must be applicable, else :class:`UnsupportedAccountantError` naming the
    usable ones and the reason; an unknown name lists ``supported`` (default: ``best`` and the applicable ones)."""
    applicable = [r for r in results if r.applicable]
    candidates = [r for r in results if r.counts_for_best]
    if accountant == "best":
        if not candidates:
            reasons = "; ".join(
                f"{r.name}: {r.reason if not r.applicable else 'not certified (' + str(r.guarantee) + ')'}"
                for r in results
            )
            usable = [r.name for r in applicable]
            raise UnsupportedAccountantError(accountant, usable, f"no certified accountant applies ({reasons})")
        pick = max if largest else min
        return pick(candidates, key=lambda r: getattr(r, key))
    unasked = [r.name for r in results if r.reason == NOT_ASKED_REASON]  # not computed here: may well apply
    usable = (["best"] if candidates or unasked else []) + [r.name for r in applicable] + unasked
    for r in results:
        if r.name == accountant:
            if not r.applicable:
                raise UnsupportedAccountantError(accountant, usable, r.reason or "not applicable")
            return r
    raise UnsupportedAccountantError(
        accountant, usable if supported is None else list(supported), "unknown for this algorithm"
    )


@dataclass(frozen=True)
class Noise:
    """The noise in both units, and the sensitivity it is relative to."""

    noise_multiplier: float
    noise_std: float | None
    sensitivity: float | None
    sensitivity_rule: str
    units: str
    sensitivity_exact: bool = True
    """Whether ``sensitivity`` is exact; False: a certified upper bound (e.g. a strategy's under a pattern)."""
    sensitivity_attained: float | None = None
    """Where the sensitivity is a maximum over patterns: what the worst pattern found attains (= sensitivity when
    exact), in the same units."""
    worst_pattern: tuple[int, ...] | None = None
    """The steps (0-based) of that pattern."""

    @classmethod
    def scaled(cls, noise_multiplier: float, sensitivity: float, sensitivity_rule: str, units: str) -> Noise:
        """Noise of std z·Δ for multiplier z over sensitivity Δ."""
        return cls(noise_multiplier, noise_multiplier * sensitivity, sensitivity, sensitivity_rule, units)


@dataclass(frozen=True)
class Conventions:
    """Conventions behind the number: neighbouring relation, steps, sampling, definition of the multiplier."""

    neighbouring: StatedNeighbouring
    steps: int
    step_rule: str
    sampling: str
    noise_multiplier_definition: str
    released: str
    """Which iterates the analysis assumes are released (all, or the last only)."""
    protects: Literal["example", "user"] = "example"
    """The unit of privacy: one example (a record), or one user (a record that is a user, or a user's examples)."""
    examples_per_user: int = 1
    """Under user-level privacy, the most examples of one user the guarantee covers (1: each record is the user)."""
    sampling_rate: float | None = None
    """The sampling rate q of an optimizer step (from the effective batch), where the sampling has one."""


@dataclass(frozen=True)
class Assumption:
    """A condition a bound needs, and whether it holds for these parameters (None: cannot be checked)."""

    statement: str
    holds: bool | None
    detail: str | None = None


@dataclass(frozen=True)
class BoundResult:
    """One privacy bound for this configuration: whether it applies (and why not), its Rényi curve at the reported
    orders, its own (ε, δ), and whether it is the one the answer uses."""

    name: str
    source: str
    applicable: bool
    reason: str | None
    conditions: tuple[Assumption, ...]
    rdp: tuple[float, ...] | None
    epsilon: float | None
    selected: bool
    releases: str
    """Which iterates the bound covers: "last iterate" or "every iterate"."""


@dataclass(frozen=True)
class UtilityBound:
    """A predicted utility bound with its provenance."""

    measure: str
    value: float
    kind: str
    """"explicit bound" or "rate with unit constants"."""
    source: str
    assumptions: tuple[Assumption, ...] = ()
    applicable: bool = True

    @classmethod
    def explicit(
        cls, measure: str, value: float, source: str, assumptions: tuple[Assumption, ...] = (), applicable: bool = True
    ) -> UtilityBound:
        """A bound with every constant of its proof."""
        return cls(measure, value, "explicit bound", source, assumptions, applicable)

    @classmethod
    def rate(
        cls, measure: str, value: float, source: str, assumptions: tuple[Assumption, ...] = (), applicable: bool = True
    ) -> UtilityBound:
        """A theorem's O-rate evaluated with every hidden constant set to 1 (an order of magnitude, not a bound)."""
        return cls(measure, value, "rate with unit constants", source, assumptions, applicable)


@dataclass(frozen=True)
class UtilityReport:
    algorithm: str
    bounds: tuple[UtilityBound, ...]
    reason: str | None = None
    """Why there is no bound (when ``bounds`` is empty)."""
    recommended: tuple[Recommendation, ...] = ()
    """Hyperparameters the bounds were evaluated at that the user left to their defaults, and advised values."""


@dataclass(frozen=True)
class Recommendation:
    """A hyperparameter value a paper (or dpcal) recommends for this configuration, and the rule behind it."""

    name: str
    """The parameter, named as in the family's ``params``."""
    value: float | int | str
    rule: str
    """Formula and source, e.g. "γ = min(D/(M√(7T(1+dσ²/M²))), 1/(√3L)) (Boob & Guzmán 2023, Corollary 1)"."""
    applied: bool
    """Whether the answer used this value (the parameter was omitted), or it is advice only."""


@dataclass(frozen=True)
class Release:
    """One kind of noisy release the algorithm makes: how often, its sensitivity and its noise.

    The plan of a budget-splitting algorithm (phases, x/y blocks, the mechanisms of an outer step) is a list of these.
    """

    name: str
    count: int
    """How many such releases the run makes."""
    sensitivity: float | None
    noise_std: float | None
    noise_multiplier: float | None
    composition: str
    """How these releases compose with the others (e.g. "parallel: disjoint records", "sequential")."""
    details: Mapping[str, float | int | str] = field(default_factory=dict)
    """Further named quantities of the release (block of samples, strong convexity of the phase, solver accuracy)."""


@dataclass(frozen=True)
class PaperCalibration:
    """A paper's own calibration, as printed, and what our rigorous accountant certifies for it."""

    source: str
    noise_multiplier: float | None
    epsilon_claimed: float | None
    epsilon_certified: float | None
    certified_by: str | None
    valid: bool | None
    note: str | None = None

    @classmethod
    def not_applicable(cls, source: str, reason: str, epsilon_claimed: float | None = None) -> PaperCalibration:
        """The paper's calibration where it prescribes no noise for these parameters, and why."""
        return cls(source, None, epsilon_claimed, None, None, False, reason)


@dataclass(frozen=True)
class CurvePoint:
    """ε after ``steps`` steps (a checkpoint of the run), from ``accountant``."""

    steps: int
    epochs: float | None
    epsilon: float
    accountant: str


@dataclass(frozen=True)
class Beyond:
    """For a calibrated integer (steps, epochs, a count): the value one step beyond the answer and its ε, which
    exceeds the target (smallest noise-like values: one step below)."""

    value: float
    epsilon: float
    accountant: str


@dataclass(frozen=True, kw_only=True)
class Answer:
    """What every privacy answer holds: ε at δ from the chosen accountant, every accountant's answer, the Rényi
    curve, the noise in both units and the conventions behind the number."""

    algorithm: str
    epsilon: float
    delta: float
    accountant: str
    optimal_order: float | None
    rdp: RdpCurve | None
    accountants: tuple[AccountantResult, ...]
    noise: Noise | None
    """None where the privacy knob is not a noise scale (the conventions say what it is)."""
    conventions: Conventions
    warnings: tuple[str, ...] = ()
    bounds: tuple[BoundResult, ...] = ()
    releases: tuple[Release, ...] = ()
    """The noisy releases of the run (the mechanism plan), where the algorithm makes several kinds."""
    curve: tuple[CurvePoint, ...] = ()
    """ε at each requested checkpoint (ε over training), where asked for."""
    statement: str | None = None
    """The privacy statement in plain language, where asked for."""

    @property
    def required_noise(self) -> Noise:
        """The noise of a family whose knob is a noise scale (ValueError for one whose knob is not)."""
        if self.noise is None:
            raise ValueError(f"{self.algorithm}: the privacy knob is not a noise scale")
        return self.noise


@dataclass(frozen=True, kw_only=True)
class PrivacyReport(Answer):
    """ε at δ for given hyperparameters, the privacy knob included."""


@dataclass(frozen=True, kw_only=True)
class CalibrationReport(Answer):
    """The privacy knob that meets a target ε at δ, and the answer at it."""

    target_epsilon: float
    noise_multiplier: float | None
    """None where the calibrated parameter is not a noise scale (see ``calibrated_parameter``)."""
    noise_std: float | None
    utility: UtilityReport | None
    utility_reason: str | None
    paper: PaperCalibration | None
    paper_reason: str | None
    calibrated_parameter: str
    calibrated_value: float
    recommended: tuple[Recommendation, ...] = ()
    """Hyperparameters recommended for this target (by the paper or dpcal), with their rules."""
    beyond: Beyond | None = None
    """For an integer calibrated parameter: the next value and its ε (above the target)."""


@dataclass(frozen=True)
class Accounted:
    """Every accountant's answer for one configuration at δ, the one that answers the request, and the Rényi curve
    shown with it: what a :class:`PrivacyReport` or :class:`CalibrationReport` is assembled from."""

    results: tuple[AccountantResult, ...]
    chosen: AccountantResult
    delta: float
    optimal_order: float | None
    rdp: RdpCurve | None

    @property
    def epsilon(self) -> float:
        epsilon = self.chosen.epsilon
        if epsilon is None:
            raise ValueError(f"accountant {self.chosen.name} was chosen but has no ε")
        return epsilon

    def privacy(
        self,
        algorithm: str,
        noise: Noise | None,
        conventions: Conventions,
        *,
        warnings: Sequence[str] = (),
        bounds: Sequence[BoundResult] = (),
        releases: Sequence[Release] = (),
    ) -> PrivacyReport:
        """The privacy answer of ``algorithm``."""
        return PrivacyReport(
            algorithm=algorithm,
            epsilon=self.epsilon,
            delta=self.delta,
            accountant=self.chosen.name,
            optimal_order=self.optimal_order,
            rdp=self.rdp,
            accountants=self.results,
            noise=noise,
            conventions=conventions,
            warnings=tuple(warnings),
            bounds=tuple(bounds),
            releases=tuple(releases),
        )

    def calibration(
        self,
        algorithm: str,
        noise: Noise | None,
        conventions: Conventions,
        target_epsilon: float,
        calibrated_value: float,
        *,
        calibrated_parameter: str = "noise_multiplier",
        noise_std: float | None = None,
        warnings: Sequence[str] = (),
        bounds: Sequence[BoundResult] = (),
        releases: Sequence[Release] = (),
        utility: UtilityReport | None = None,
        utility_reason: str | None = None,
        paper: PaperCalibration | None = None,
        paper_reason: str | None = None,
        recommended: Sequence[Recommendation] = (),
    ) -> CalibrationReport:
        """The calibration answer of ``algorithm``: the knob's value for the target and what the calibration adds
        (utility at the knob, the paper's own calibration, advice). ``noise_std`` defaults to ``noise``'s."""
        answer = self.privacy(algorithm, noise, conventions, warnings=warnings, bounds=bounds, releases=releases)
        return CalibrationReport(
            **{f.name: getattr(answer, f.name) for f in fields(Answer)},
            target_epsilon=target_epsilon,
            noise_multiplier=calibrated_value if calibrated_parameter == "noise_multiplier" else None,
            noise_std=noise_std if noise_std is not None or noise is None else noise.noise_std,
            utility=utility,
            utility_reason=utility_reason,
            paper=paper,
            paper_reason=paper_reason,
            calibrated_parameter=calibrated_parameter,
            calibrated_value=calibrated_value,
            recommended=tuple(recommended),
        )


def calibration_of(
    answer: PrivacyReport,
    target_epsilon: float,
    parameter: str,
    value: float,
    *,
    chosen: AccountantResult | None = None,
    accountants: Sequence[AccountantResult] | None = None,
    beyond: Beyond | None = None,
    reason: str,
) -> CalibrationReport:
    """The calibration answer made of the privacy answer at the calibrated ``value`` of ``parameter`` (a knob other
    than a family's own, or a composition's field): ``chosen`` and ``accountants`` replace the answer's where the
    calibration has its own (each accountant's calibrated value); ``reason`` says why there is no utility or paper
    calibration."""
    values = {f.name: getattr(answer, f.name) for f in fields(Answer)}
    if accountants is not None:
        values["accountants"] = tuple(accountants)
    if chosen is not None and chosen.epsilon is not None:
        values["epsilon"], values["accountant"] = chosen.epsilon, chosen.name
    noise = answer.noise
    return CalibrationReport(
        **values,
        target_epsilon=target_epsilon,
        noise_multiplier=value if parameter == "noise_multiplier" else (noise.noise_multiplier if noise else None),
        noise_std=noise.noise_std if noise is not None else None,
        utility=None,
        utility_reason=reason,
        paper=None,
        paper_reason=reason,
        calibrated_parameter=parameter,
        calibrated_value=value,
        beyond=beyond,
    )
