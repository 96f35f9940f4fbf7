"""What a family answers: immutable report objects (the HTTP layer serialises them, field for field).

Every privacy answer names the accountant that produced it, the neighbouring relation, the sensitivity, the noise
in both units, the step count used, and its warnings (spec README, "Responses name their conventions").
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RdpCurve:
    """ε(α) of the whole run at each order; where several bounds compete, the one that gives it at each order."""

    orders: tuple[float, ...]
    epsilons: tuple[float | None, ...]
    bounds: tuple[str, ...] | None = None


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


@dataclass(frozen=True)
class Noise:
    """The noise in both units, and the sensitivity it is relative to."""

    noise_multiplier: float
    noise_std: float | None
    sensitivity: float | None
    sensitivity_rule: str
    units: str


@dataclass(frozen=True)
class Conventions:
    """Conventions behind the number: neighbouring relation, steps, sampling, definition of the multiplier."""

    neighbouring: str
    steps: int
    step_rule: str
    sampling: str
    noise_multiplier_definition: str
    released: str
    """Which iterates the analysis assumes are released (all, or the last only)."""


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


@dataclass(frozen=True)
class UtilityReport:
    algorithm: str
    bounds: tuple[UtilityBound, ...]
    reason: str | None = None
    """Why there is no bound (when ``bounds`` is empty)."""


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


@dataclass(frozen=True)
class PrivacyReport:
    algorithm: str
    epsilon: float
    delta: float
    accountant: str
    optimal_order: float | None
    rdp: RdpCurve | None
    accountants: tuple[AccountantResult, ...]
    noise: Noise
    conventions: Conventions
    warnings: tuple[str, ...] = field(default=())
    bounds: tuple[BoundResult, ...] = field(default=())


@dataclass(frozen=True)
class CalibrationReport:
    algorithm: str
    target_epsilon: float
    delta: float
    noise_multiplier: float
    noise_std: float | None
    epsilon: float
    accountant: str
    optimal_order: float | None
    rdp: RdpCurve | None
    accountants: tuple[AccountantResult, ...]
    noise: Noise
    conventions: Conventions
    utility: UtilityReport | None
    utility_reason: str | None
    paper: PaperCalibration | None
    paper_reason: str | None
    calibrated_parameter: str
    calibrated_value: float
    warnings: tuple[str, ...] = field(default=())
    bounds: tuple[BoundResult, ...] = field(default=())
