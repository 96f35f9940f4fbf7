"""Exceptions raised by the accounting library.

Every error caused by the caller's input is a :class:`ValueError` subclass, so plain
``except ValueError`` keeps working, and carries structured ``issues`` (field, message,
allowed range) that the HTTP layer turns into RFC 9457 problem details.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldIssue:
    """One offending input field: where it is, what is wrong, what is allowed."""

    loc: tuple[str | int, ...]
    message: str
    allowed: str | None = None
    value: object = None

    @property
    def field(self) -> str:
        return ".".join(str(part) for part in self.loc)


MAX_ISSUES = 50
"""Issues an error names one by one; one more issue counts the rest (:func:`more_issues`). A request with 10⁴
unknown fields is then refused in milliseconds with a bounded body."""


def more_issues(count: int, loc: tuple[str | int, ...] = ()) -> FieldIssue:
    """The issue standing for ``count`` issues beyond the first :data:`MAX_ISSUES`."""
    return FieldIssue(loc, f"{count} more issue{'s' if count != 1 else ''} not listed (the first {MAX_ISSUES} are)")


class DpcalError(Exception):
    """Base class of every error raised by :mod:`accountants`."""


class ParameterError(DpcalError, ValueError):
    """One or more inputs are outside their allowed range.

    The message names each parameter and the rule it breaks, e.g.
    ``noise_multiplier: must be > 0 and finite (got -1.0)``.
    """

    def __init__(self, issues: list[FieldIssue] | FieldIssue) -> None:
        self.issues: tuple[FieldIssue, ...] = (issues,) if isinstance(issues, FieldIssue) else tuple(issues)
        super().__init__("; ".join(_describe(issue) for issue in self.issues))

    def __reduce__(self) -> tuple[type[ParameterError], tuple[tuple[FieldIssue, ...]]]:
        # picklable with its issues (the service computes heavy answers in worker processes)
        return type(self), (self.issues,)

    @classmethod
    def single(cls, field: str, message: str, allowed: str | None = None, value: object = None) -> ParameterError:
        return cls(FieldIssue(loc=tuple(field.split(".")), message=message, allowed=allowed, value=value))


class CalibrationError(DpcalError, ValueError):
    """The calibration target cannot be met (or is met without any noise)."""


class UnsupportedAccountantError(DpcalError, ValueError):
    """The requested accountant does not apply to this algorithm or configuration."""

    def __init__(self, accountant: str, supported: list[str], reason: str) -> None:
        self.accountant = accountant
        self.supported = tuple(supported)
        self.reason = reason
        super().__init__(
            f"accountant {accountant!r} is not available here: {reason}; use one of: {', '.join(supported)}"
        )

    def __reduce__(self) -> tuple[type[UnsupportedAccountantError], tuple[str, list[str], str]]:
        return type(self), (self.accountant, list(self.supported), self.reason)


class UnknownAlgorithmError(DpcalError, KeyError):
    """No algorithm family is registered under this id."""

    def __init__(self, algorithm: str, known: list[str]) -> None:
        self.algorithm = algorithm
        self.known = tuple(known)
        super().__init__(f"unknown algorithm {algorithm!r}; registered: {', '.join(known)}")

    def __reduce__(self) -> tuple[type[UnknownAlgorithmError], tuple[str, list[str]]]:
        return type(self), (self.algorithm, list(self.known))

    def __str__(self) -> str:  # KeyError quotes its argument; keep the sentence readable
        return str(self.args[0])


def _describe(issue: FieldIssue) -> str:
    text = f"{issue.field}: {issue.message}"
    if issue.allowed and issue.allowed not in issue.message:
        text += f"; allowed: {issue.allowed}"
    if issue.value is not None:
        text += f" (got {issue.value!r})"
    return text
