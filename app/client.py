"""Python client for the dpcal service (httpx; sync and async).

    from app.client import DpcalClient
    with DpcalClient("http://127.0.0.1:8000") as client:
        answer = client.calibrate("dp-sgd", {"dataset_size": 60000, "batch_size": 256, "epochs": 60},
                                  target_epsilon=3.0, delta=1e-5)
        answer.noise_multiplier, answer.epsilon, answer.conventions.steps

Every method returns the typed response model of :mod:`app.schemas`. An error answer raises :class:`DpcalProblem`,
which carries the RFC 9457 problem details, including each offending field.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypedDict, TypeVar, Unpack

import httpx
from pydantic import TypeAdapter

from . import remote
from .remote import Refused
from .schemas import (
    AlgorithmDetail,
    AlgorithmSummary,
    CalibrationResponse,
    Health,
    JobOut,
    PrivacyResponse,
    Problem,
    ProblemField,
    UtilityResponse,
)

DEFAULT_URL = "http://127.0.0.1:8000"


class DpcalProblem(Refused):
    """The service answered with problem details (4xx/5xx): ``problem`` typed, ``errors`` its fields."""

    def __init__(self, status: int, problem: Problem) -> None:
        errors: list[ProblemField] = problem.errors or []
        super().__init__(status, problem.title, problem.detail, [e.model_dump() for e in errors])
        self.problem = problem
        self.errors = errors


def _decode(response: httpx.Response, kind: Any) -> Any:
    if response.is_success:
        return TypeAdapter(kind).validate_python(response.json())
    try:
        problem = Problem.model_validate(response.json())
    except ValueError:
        problem = Problem(
            type="about:blank", title=response.reason_phrase, status=response.status_code, detail=response.text[:500]
        )
    raise DpcalProblem(response.status_code, problem)


FINISHED = ("succeeded", "failed", "cancelled")

T = TypeVar("T")
Params = Mapping[str, Any]
"""An algorithm's hyperparameters, as JSON."""
OnProgress = Callable[[JobOut], None]
"""Called with every state a polled job goes through."""


class PrivacyOptions(TypedDict, total=False):
    """Optional fields of a privacy request."""

    accountant: str
    orders: Sequence[float] | None
    refine_order: bool
    checkpoints: Sequence[int] | Mapping[str, int] | str | None
    statement: bool


class CalibrationOptions(TypedDict, total=False):
    """Optional fields of a calibration request (``calibrate``: an integer knob such as ``epochs`` instead of the
    noise, left out of params)."""

    accountant: str
    orders: Sequence[float] | None
    calibrate: str | None
    statement: bool


class ComposeOptions(PrivacyOptions, total=False):
    """Optional fields of a composition request (``/v1/compose``; with ``bounds`` for ``/v1/compose/calibrate``)."""

    neighbouring: str


class ComposeCalibrationOptions(ComposeOptions, total=False):
    bounds: Sequence[float] | None


class JobOptions(TypedDict, total=False):
    """Optional fields of a verification job, and its idempotency key (sent as the Idempotency-Key header)."""

    target_epsilon: float | None
    checks: Sequence[str]
    trials: int
    target_power: float | None
    seed: int
    problem: Mapping[str, Any] | None
    idempotency_key: str | None


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request of the API and the response model it answers with (both clients send the same calls)."""

    method: str
    path: str
    answer: Any
    """The response model, e.g. ``PrivacyResponse`` or ``list[AlgorithmSummary]``."""
    json: dict[str, Any] | None = None
    headers: dict[str, str] | None = None

    def decode(self, response: httpx.Response) -> T:
        result: T = _decode(response, self.answer)
        return result


class Calls:
    """The requests of the API, as :class:`Call` values."""

    @staticmethod
    def health() -> Call[Health]:
        return Call("GET", "/healthz", Health)

    @staticmethod
    def algorithms() -> Call[list[AlgorithmSummary]]:
        return Call("GET", "/v1/algorithms", list[AlgorithmSummary])

    @staticmethod
    def algorithm(algorithm_id: str) -> Call[AlgorithmDetail]:
        return Call("GET", f"/v1/algorithms/{algorithm_id}", AlgorithmDetail)

    @staticmethod
    def privacy(algorithm: str, params: Params, delta: float, options: PrivacyOptions) -> Call[PrivacyResponse]:
        return Call("POST", "/v1/privacy", PrivacyResponse, remote.body(algorithm, params, delta=delta, **options))

    @staticmethod
    def calibrate(
        algorithm: str, params: Params, target_epsilon: float, delta: float, options: CalibrationOptions
    ) -> Call[CalibrationResponse]:
        body = remote.body(algorithm, params, target_epsilon=target_epsilon, delta=delta, **options)
        return Call("POST", "/v1/calibrate", CalibrationResponse, body)

    @staticmethod
    def compose(mechanism: Mapping[str, Any], delta: float, options: ComposeOptions) -> Call[PrivacyResponse]:
        return Call(
            "POST", "/v1/compose", PrivacyResponse, remote.fields(mechanism=dict(mechanism), delta=delta, **options)
        )

    @staticmethod
    def compose_calibrate(
        mechanism: Mapping[str, Any],
        pointer: str,
        target_epsilon: float,
        delta: float,
        options: ComposeCalibrationOptions,
    ) -> Call[CalibrationResponse]:
        body = remote.fields(
            mechanism=dict(mechanism), calibrate=pointer, target_epsilon=target_epsilon, delta=delta, **options
        )
        return Call("POST", "/v1/compose/calibrate", CalibrationResponse, body)

    @staticmethod
    def utility(algorithm: str, params: Params) -> Call[UtilityResponse]:
        return Call("POST", "/v1/utility", UtilityResponse, remote.body(algorithm, params))

    @staticmethod
    def submit_job(algorithm: str, params: Params, delta: float, options: JobOptions) -> Call[JobOut]:
        fields: dict[str, Any] = dict(options)
        key = fields.pop("idempotency_key", None)
        headers = {"Idempotency-Key": str(key)} if key else None
        return Call("POST", "/v1/jobs", JobOut, remote.body(algorithm, params, delta=delta, **fields), headers)

    @staticmethod
    def job(job_id: str) -> Call[JobOut]:
        return Call("GET", f"/v1/jobs/{job_id}", JobOut)

    @staticmethod
    def cancel_job(job_id: str) -> Call[JobOut]:
        return Call("DELETE", f"/v1/jobs/{job_id}", JobOut)


def _finished(state: JobOut, job_id: str, deadline: float, timeout: float) -> bool:
    """Whether polling stops at ``state`` (TimeoutError past the deadline)."""
    if state.status in FINISHED:
        return True
    if time.monotonic() > deadline:
        raise TimeoutError(f"job {job_id} still {state.status} after {timeout:g} s")
    return False


class DpcalClient:
    """Synchronous client. ``transport`` lets tests or embedders pass any httpx transport."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        api_key: str | None = None,
    ) -> None:
        """``api_key``: sent as ``Authorization: Bearer`` (default: ``DPCAL_API_KEY`` where it is set)."""
        self._http = httpx.Client(
            base_url=base_url, timeout=timeout, transport=transport, headers=remote.auth_headers(api_key)
        )

    def __enter__(self) -> DpcalClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(self, call: Call[T]) -> T:
        """Send ``call``; its typed answer, or :class:`DpcalProblem`."""
        return call.decode(self._http.request(call.method, call.path, json=call.json, headers=call.headers))

    def health(self) -> Health:
        return self.send(Calls.health())

    def algorithms(self) -> list[AlgorithmSummary]:
        return self.send(Calls.algorithms())

    def algorithm(self, algorithm_id: str) -> AlgorithmDetail:
        return self.send(Calls.algorithm(algorithm_id))

    def privacy(
        self, algorithm: str, params: Params, delta: float, **options: Unpack[PrivacyOptions]
    ) -> PrivacyResponse:
        """POST /v1/privacy; ``options``: accountant, orders, refine_order."""
        return self.send(Calls.privacy(algorithm, params, delta, options))

    def calibrate(
        self, algorithm: str, params: Params, target_epsilon: float, delta: float, **options: Unpack[CalibrationOptions]
    ) -> CalibrationResponse:
        """POST /v1/calibrate; ``options``: accountant, orders, calibrate (a knob other than the noise, e.g.
        ``"epochs"``, left out of params), statement."""
        return self.send(Calls.calibrate(algorithm, params, target_epsilon, delta, options))

    def compose(self, mechanism: Mapping[str, Any], delta: float, **options: Unpack[ComposeOptions]) -> PrivacyResponse:
        """POST /v1/compose: the privacy of an event tree (``{"type": "gaussian", ...}``); ``options``: accountant,
        neighbouring, orders, refine_order, checkpoints, statement."""
        return self.send(Calls.compose(mechanism, delta, options))

    def compose_calibrate(
        self,
        mechanism: Mapping[str, Any],
        pointer: str,
        target_epsilon: float,
        delta: float,
        **options: Unpack[ComposeCalibrationOptions],
    ) -> CalibrationResponse:
        """POST /v1/compose/calibrate: the number at the JSON Pointer ``pointer`` into ``mechanism`` (e.g.
        ``/mechanism/noise_multiplier``) that meets ``target_epsilon``; ``options`` as :meth:`compose`, and bounds."""
        return self.send(Calls.compose_calibrate(mechanism, pointer, target_epsilon, delta, options))

    def utility(self, algorithm: str, params: Params) -> UtilityResponse:
        return self.send(Calls.utility(algorithm, params))

    def submit_job(self, algorithm: str, params: Params, delta: float, **options: Unpack[JobOptions]) -> JobOut:
        """POST /v1/jobs; ``options``: target_epsilon, checks, trials, target_power, seed, problem,
        idempotency_key."""
        return self.send(Calls.submit_job(algorithm, params, delta, options))

    def job(self, job_id: str) -> JobOut:
        return self.send(Calls.job(job_id))

    def cancel_job(self, job_id: str) -> JobOut:
        return self.send(Calls.cancel_job(job_id))

    def wait_job(
        self, job_id: str, *, interval: float = 0.5, timeout: float = 3600.0, progress: OnProgress | None = None
    ) -> JobOut:
        """Poll until the job finishes (``progress`` sees each state); TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.job(job_id)
            if progress is not None:
                progress(state)
            if _finished(state, job_id, deadline, timeout):
                return state
            time.sleep(interval)


class AsyncDpcalClient:
    """Asynchronous client, same methods as :class:`DpcalClient`, awaitable."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        timeout: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
        api_key: str | None = None,
    ) -> None:
        """``api_key``: sent as ``Authorization: Bearer`` (default: ``DPCAL_API_KEY`` where it is set)."""
        self._http = httpx.AsyncClient(
            base_url=base_url, timeout=timeout, transport=transport, headers=remote.auth_headers(api_key)
        )

    async def __aenter__(self) -> AsyncDpcalClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def send(self, call: Call[T]) -> T:
        """Send ``call``; its typed answer, or :class:`DpcalProblem`."""
        return call.decode(await self._http.request(call.method, call.path, json=call.json, headers=call.headers))

    async def health(self) -> Health:
        return await self.send(Calls.health())

    async def algorithms(self) -> list[AlgorithmSummary]:
        return await self.send(Calls.algorithms())

    async def algorithm(self, algorithm_id: str) -> AlgorithmDetail:
        return await self.send(Calls.algorithm(algorithm_id))

    async def privacy(
        self, algorithm: str, params: Params, delta: float, **options: Unpack[PrivacyOptions]
    ) -> PrivacyResponse:
        return await self.send(Calls.privacy(algorithm, params, delta, options))

    async def calibrate(
        self, algorithm: str, params: Params, target_epsilon: float, delta: float, **options: Unpack[CalibrationOptions]
    ) -> CalibrationResponse:
        return await self.send(Calls.calibrate(algorithm, params, target_epsilon, delta, options))

    async def compose(
        self, mechanism: Mapping[str, Any], delta: float, **options: Unpack[ComposeOptions]
    ) -> PrivacyResponse:
        return await self.send(Calls.compose(mechanism, delta, options))

    async def compose_calibrate(
        self,
        mechanism: Mapping[str, Any],
        pointer: str,
        target_epsilon: float,
        delta: float,
        **options: Unpack[ComposeCalibrationOptions],
    ) -> CalibrationResponse:
        return await self.send(Calls.compose_calibrate(mechanism, pointer, target_epsilon, delta, options))

    async def utility(self, algorithm: str, params: Params) -> UtilityResponse:
        return await self.send(Calls.utility(algorithm, params))

    async def submit_job(self, algorithm: str, params: Params, delta: float, **options: Unpack[JobOptions]) -> JobOut:
        return await self.send(Calls.submit_job(algorithm, params, delta, options))

    async def job(self, job_id: str) -> JobOut:
        return await self.send(Calls.job(job_id))

    async def cancel_job(self, job_id: str) -> JobOut:
        return await self.send(Calls.cancel_job(job_id))

    async def wait_job(
        self, job_id: str, *, interval: float = 0.5, timeout: float = 3600.0, progress: OnProgress | None = None
    ) -> JobOut:
        deadline = time.monotonic() + timeout
        while True:
            state = await self.job(job_id)
            if progress is not None:
                progress(state)
            if _finished(state, job_id, deadline, timeout):
                return state
            await asyncio.sleep(interval)


__all__ = [
    "DEFAULT_URL",
    "AsyncDpcalClient",
    "CalibrationOptions",
    "Call",
    "Calls",
    "ComposeCalibrationOptions",
    "ComposeOptions",
    "DpcalClient",
    "DpcalProblem",
    "JobOptions",
    "PrivacyOptions",
]
