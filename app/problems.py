"""RFC 9457 problem details for every error response (``application/problem+json``).

Each 4xx names every offending field: its location in the request body, what is wrong, and what is allowed.
Unknown algorithm: 404 listing the valid ids. Unsupported accountant: 422 naming the supported ones.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy.exc
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from accountants import registry
from accountants.errors import (
    MAX_ISSUES,
    CalibrationError,
    FieldIssue,
    ParameterError,
    UnknownAlgorithmError,
    UnsupportedAccountantError,
    more_issues,
)
from accountants.params import did_you_mean, field_issues
from accountants.rdp import UnsupportedEventError

PROBLEM_MEDIA_TYPE = "application/problem+json"
_log = logging.getLogger("dpcal")


def problem_type(slug: str) -> str:
    return f"urn:dpcal:problem:{slug}"


class ApiProblem(Exception):
    """An error to answer with problem details."""

    def __init__(
        self,
        status: int,
        slug: str,
        title: str,
        detail: str,
        headers: Mapping[str, str] | None = None,
        **extensions: Any,
    ) -> None:
        super().__init__(detail)
        self.status, self.slug, self.title, self.detail, self.extensions = status, slug, title, detail, extensions
        self.headers = dict(headers or {})


def problem_response(request: Request, problem: ApiProblem, headers: Mapping[str, str] | None = None) -> JSONResponse:
    body: dict[str, Any] = {
        "type": problem_type(problem.slug),
        "title": problem.title,
        "status": problem.status,
        "detail": problem.detail,
        "instance": request.url.path,
    }
    body.update({k: v for k, v in problem.extensions.items() if v is not None})
    headers = problem.headers if headers is None else headers
    return JSONResponse(body, status_code=problem.status, media_type=PROBLEM_MEDIA_TYPE, headers=headers)


def invalid(issues: Sequence[FieldIssue], status: int = 422) -> ApiProblem:
    return ApiProblem(
        status,
        "invalid-request",
        "Invalid request",
        "; ".join(
            f"{issue.field}: {issue.message}" + (f" (allowed: {issue.allowed})" if issue.allowed else "")
            for issue in issues
        ),
        errors=[{"loc": list(issue.loc), "message": issue.message, "allowed": issue.allowed} for issue in issues],
    )


def unknown_algorithm(algorithm: object) -> ApiProblem:
    known = registry.ids()
    hint = did_you_mean(algorithm, known) if isinstance(algorithm, str) else ""
    return ApiProblem(
        404,
        "unknown-algorithm",
        "Unknown algorithm",
        f"no algorithm {algorithm!r}{hint}; valid ids: {', '.join(known)}",
        algorithms=known,
        errors=[
            {"loc": ["algorithm"], "message": "unknown algorithm" + hint, "allowed": "one of: " + ", ".join(known)}
        ],
    )


def unsupported_accountant(exc: UnsupportedAccountantError) -> ApiProblem:
    """The accountant asked for does not apply here: the ones that do, and its reason."""
    allowed = "one of: " + ", ".join(exc.supported)
    return ApiProblem(
        422,
        "unsupported-accountant",
        "Accountant not available",
        str(exc),
        supported=list(exc.supported),
        errors=[{"loc": ["accountant"], "message": exc.reason, "allowed": allowed}],
    )


def unsupported_event(path: str, exc: UnsupportedEventError) -> ApiProblem:
    """An accountant asked for cannot read a release of the mechanism (every accountant that can answers in the
    report; this is for one that was required)."""
    where = "mechanism" if path.startswith("/v1/compose") else "params"
    return ApiProblem(
        422,
        "unsupported-mechanism",
        "Mechanism not supported by the accountant",
        str(exc),
        errors=[{"loc": [where], "message": str(exc), "allowed": "a release the accountant reads"}],
    )


def params_location(issues: Iterable[FieldIssue], params_fields: Iterable[str]) -> list[FieldIssue]:
    """Library issues name a hyperparameter by itself; in the request body it sits under ``params``."""
    fields = set(params_fields)
    return [
        FieldIssue(("params", *issue.loc), issue.message, issue.allowed, issue.value)
        if issue.loc and issue.loc[0] in fields
        else issue
        for issue in issues
    ]


async def _store_unreachable(request: Request, exc: sqlalchemy.exc.OperationalError) -> JSONResponse:
    """The job database does not answer: 503 with Retry-After (jobs are accepted again once it does)."""
    detail = f"the job store does not answer ({type(exc.orig).__name__}); try again later"
    problem = ApiProblem(503, "store-unreachable", "Job store unreachable", detail)
    return problem_response(request, problem, headers={"Retry-After": "5"})


def install(app: FastAPI, request_models: Mapping[str, Mapping[str, type[BaseModel]]]) -> None:
    """Register the handlers; ``request_models[endpoint path][algorithm]`` resolves allowed ranges of body fields."""

    @app.exception_handler(ApiProblem)
    async def _api_problem(request: Request, exc: ApiProblem) -> JSONResponse:
        return problem_response(request, exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return problem_response(request, _from_validation(exc.errors(), request_models.get(request.url.path, {})))

    @app.exception_handler(ParameterError)
    async def _parameter(request: Request, exc: ParameterError) -> JSONResponse:
        return problem_response(request, invalid(exc.issues))

    @app.exception_handler(UnknownAlgorithmError)
    async def _unknown(request: Request, exc: UnknownAlgorithmError) -> JSONResponse:
        return problem_response(request, unknown_algorithm(exc.algorithm))

    @app.exception_handler(UnsupportedAccountantError)
    async def _accountant(request: Request, exc: UnsupportedAccountantError) -> JSONResponse:
        return problem_response(request, unsupported_accountant(exc))

    @app.exception_handler(UnsupportedEventError)
    async def _unsupported_event(request: Request, exc: UnsupportedEventError) -> JSONResponse:
        return problem_response(request, unsupported_event(request.url.path, exc))

    @app.exception_handler(CalibrationError)
    async def _calibration(request: Request, exc: CalibrationError) -> JSONResponse:
        return problem_response(request, calibration_infeasible(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        titles = {404: "Not found", 405: "Method not allowed", 413: "Request body too large"}
        slug = {404: "not-found", 405: "method-not-allowed", 413: "too-large"}.get(exc.status_code, "http-error")
        problem = ApiProblem(exc.status_code, slug, titles.get(exc.status_code, "HTTP error"), str(exc.detail))
        return problem_response(request, problem, headers=getattr(exc, "headers", None))

    app.add_exception_handler(sqlalchemy.exc.OperationalError, _store_unreachable)  # type: ignore[arg-type]  # Starlette types handlers for Exception

    @app.exception_handler(ArithmeticError)
    async def _arithmetic(request: Request, exc: ArithmeticError) -> JSONResponse:
        # A safety net: the families refuse values outside double precision by name; anything that still divides by
        # an underflowed zero or overflows is answered as a 422 (never a 500) and logged so the rule can be added.
        _log.warning("arithmetic error on %s: %r", request.url.path, exc, exc_info=exc)
        return problem_response(request, numerical_range(exc))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:  # pragma: no cover - a bug if reached
        _log.exception("unhandled error on %s", request.url.path)
        problem = ApiProblem(500, "internal-error", "Internal error", "an unexpected error occurred; it was logged")
        return problem_response(request, problem)


def calibration_infeasible(exc: CalibrationError) -> ApiProblem:
    """No value of the calibrated knob meets the target (the message names the reachable targets)."""
    return ApiProblem(
        422,
        "calibration-infeasible",
        "Calibration target cannot be met",
        str(exc),
        errors=[{"loc": ["target_epsilon"], "message": str(exc), "allowed": None}],
    )


def numerical_range(exc: ArithmeticError) -> ApiProblem:
    """The parameters' products or quotients left double precision (a 422, never a 500)."""
    message = (
        f"cannot be evaluated in double precision ({type(exc).__name__}: {exc}); rescale the parameters so their "
        "products and quotients stay between 1e-300 and 1e300 (if your values are ordinary, please report this)"
    )
    return ApiProblem(
        422,
        "numerical-range",
        "Parameters outside the numerical range",
        "the combination of parameters " + message,
        errors=[{"loc": ["params"], "message": message, "allowed": "values within double-precision range"}],
    )


def _from_validation(errors: Sequence[Mapping[str, Any]], models: Mapping[str, type[BaseModel]]) -> ApiProblem:
    """FastAPI's request errors as problem details, with locations relative to the body and allowed ranges."""
    issues: list[FieldIssue] = []
    for error in errors:
        if len(issues) == MAX_ISSUES:  # the rest counted, not described (each costs a schema lookup)
            issues.append(more_issues(len(errors) - MAX_ISSUES, ("body",)))
            break
        loc = list(error.get("loc", ()))
        if loc[:1] == ["body"]:
            loc = loc[1:]
        if error.get("type") == "json_invalid":
            return invalid(
                [FieldIssue(("body",), "is not valid JSON: " + str(error.get("msg", "")), "a JSON object")], status=400
            )
        if loc and loc[0] in models:  # discriminated union: the first element is the algorithm tag
            algorithm, loc = loc[0], loc[1:]
        else:
            algorithm = None
        kind = error.get("type")
        if kind == "union_tag_invalid" or (kind == "literal_error" and loc == ["algorithm"]):
            given = error.get("input")
            return unknown_algorithm(given.get("algorithm") if isinstance(given, dict) else given)
        if kind in ("union_tag_not_found", "model_attributes_type") and not loc:
            allowed = "one of: " + ", ".join(registry.ids())
            message = "is required" if kind == "union_tag_not_found" else "the body must be a JSON object"
            issues.append(FieldIssue(("algorithm",) if kind == "union_tag_not_found" else ("body",), message, allowed))
            continue
        if loc == ["algorithm"]:
            issues.append(
                FieldIssue(("algorithm",), str(error.get("msg", "")).lower(), "one of: " + ", ".join(registry.ids()))
            )
            continue
        issues.append(_issue(error, loc, models.get(algorithm) if algorithm else next(iter(models.values()), None)))
    return invalid(issues)


def _issue(error: Mapping[str, Any], loc: list[Any], model: type[BaseModel] | None) -> FieldIssue:
    relative = {**error, "loc": tuple(loc)}
    if model is not None and loc[:1] == ["params"] and len(loc) > 1:
        params_model: type[BaseModel] = model.model_fields["params"].annotation  # type: ignore[assignment]  # params is a model
        issue = field_issues(params_model, [{**relative, "loc": tuple(loc[1:])}])[0]
        return FieldIssue(("params", *issue.loc), issue.message, issue.allowed, issue.value)
    known_field = loc and isinstance(loc[0], str) and loc[0] in (model.model_fields if model else {})
    if model is not None and (known_field or (error.get("type") == "extra_forbidden" and len(loc) == 1)):
        return field_issues(model, [relative])[0]
    return FieldIssue(tuple(loc) or ("body",), str(error.get("msg", "invalid")).lower(), _allowed_from(error))


def _allowed_from(error: Mapping[str, Any]) -> str | None:
    """Allowed values from a pydantic error's context (gt, ge, lt, le, expected)."""
    ctx = error.get("ctx") or {}
    words = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    parts = [f"{symbol} {ctx[key]}" for key, symbol in words.items() if key in ctx]
    if "expected" in ctx:
        parts.append(f"one of: {ctx['expected']}")
    return " and ".join(parts) or None
