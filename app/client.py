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
from typing import Any

import httpx
from pydantic import TypeAdapter

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


class DpcalProblem(Exception):
    """The service answered with problem details (4xx/5xx)."""

    def __init__(self, status: int, problem: Problem) -> None:
        self.status = status
        self.problem = problem
        self.errors: list[ProblemField] = problem.errors or []
        lines = [f"{status} {problem.title}" + ("" if self.errors else f": {problem.detail}")]
        lines += [
            f"  {'.'.join(map(str, e.loc))}: {e.message}" + (f" (allowed: {e.allowed})" if e.allowed else "")
            for e in self.errors
        ]
        super().__init__("\n".join(lines))


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


def _body(algorithm: str, params: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    body = {"algorithm": algorithm, "params": dict(params)}
    body.update(
        {
            k: (list(v) if isinstance(v, Sequence) and not isinstance(v, str) else v)
            for k, v in fields.items()
            if v is not None
        }
    )
    return body


class DpcalClient:
    """Synchronous client. ``transport`` lets tests or embedders pass any httpx transport."""

    def __init__(
        self, base_url: str = DEFAULT_URL, *, timeout: float = 60.0, transport: httpx.BaseTransport | None = None
    ) -> None:
        self._http = httpx.Client(base_url=base_url, timeout=timeout, transport=transport)

    def __enter__(self) -> DpcalClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def health(self) -> Health:
        return _decode(self._http.get("/healthz"), Health)

    def algorithms(self) -> list[AlgorithmSummary]:
        return _decode(self._http.get("/v1/algorithms"), list[AlgorithmSummary])

    def algorithm(self, algorithm_id: str) -> AlgorithmDetail:
        return _decode(self._http.get(f"/v1/algorithms/{algorithm_id}"), AlgorithmDetail)

    def privacy(
        self,
        algorithm: str,
        params: Mapping[str, Any],
        delta: float,
        *,
        accountant: str = "best",
        orders: Sequence[float] | None = None,
        refine_order: bool = True,
    ) -> PrivacyResponse:
        body = _body(algorithm, params, delta=delta, accountant=accountant, orders=orders, refine_order=refine_order)
        return _decode(self._http.post("/v1/privacy", json=body), PrivacyResponse)

    def calibrate(
        self,
        algorithm: str,
        params: Mapping[str, Any],
        target_epsilon: float,
        delta: float,
        *,
        accountant: str = "best",
        orders: Sequence[float] | None = None,
    ) -> CalibrationResponse:
        body = _body(
            algorithm, params, target_epsilon=target_epsilon, delta=delta, accountant=accountant, orders=orders
        )
        return _decode(self._http.post("/v1/calibrate", json=body), CalibrationResponse)

    def utility(self, algorithm: str, params: Mapping[str, Any]) -> UtilityResponse:
        return _decode(self._http.post("/v1/utility", json=_body(algorithm, params)), UtilityResponse)

    def submit_job(
        self,
        algorithm: str,
        params: Mapping[str, Any],
        delta: float,
        *,
        idempotency_key: str | None = None,
        **fields: Any,
    ) -> JobOut:
        """POST /v1/jobs; ``fields``: target_epsilon, checks, trials, seed, problem."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return _decode(
            self._http.post("/v1/jobs", json=_body(algorithm, params, delta=delta, **fields), headers=headers), JobOut
        )

    def job(self, job_id: str) -> JobOut:
        return _decode(self._http.get(f"/v1/jobs/{job_id}"), JobOut)

    def cancel_job(self, job_id: str) -> JobOut:
        return _decode(self._http.delete(f"/v1/jobs/{job_id}"), JobOut)

    def wait_job(
        self,
        job_id: str,
        *,
        interval: float = 0.5,
        timeout: float = 3600.0,
        progress: Callable[[JobOut], None] | None = None,
    ) -> JobOut:
        """Poll until the job finishes (``progress`` sees each state); TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.job(job_id)
            if progress is not None:
                progress(state)
            if state.status in FINISHED:
                return state
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {state.status} after {timeout:g} s")
            time.sleep(interval)


class AsyncDpcalClient:
    """Asynchronous client, same methods as :class:`DpcalClient`, awaitable."""

    def __init__(
        self, base_url: str = DEFAULT_URL, *, timeout: float = 60.0, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._http = httpx.AsyncClient(base_url=base_url, timeout=timeout, transport=transport)

    async def __aenter__(self) -> AsyncDpcalClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def health(self) -> Health:
        return _decode(await self._http.get("/healthz"), Health)

    async def algorithms(self) -> list[AlgorithmSummary]:
        return _decode(await self._http.get("/v1/algorithms"), list[AlgorithmSummary])

    async def algorithm(self, algorithm_id: str) -> AlgorithmDetail:
        return _decode(await self._http.get(f"/v1/algorithms/{algorithm_id}"), AlgorithmDetail)

    async def privacy(
        self,
        algorithm: str,
        params: Mapping[str, Any],
        delta: float,
        *,
        accountant: str = "best",
        orders: Sequence[float] | None = None,
        refine_order: bool = True,
    ) -> PrivacyResponse:
        body = _body(algorithm, params, delta=delta, accountant=accountant, orders=orders, refine_order=refine_order)
        return _decode(await self._http.post("/v1/privacy", json=body), PrivacyResponse)

    async def calibrate(
        self,
        algorithm: str,
        params: Mapping[str, Any],
        target_epsilon: float,
        delta: float,
        *,
        accountant: str = "best",
        orders: Sequence[float] | None = None,
    ) -> CalibrationResponse:
        body = _body(
            algorithm, params, target_epsilon=target_epsilon, delta=delta, accountant=accountant, orders=orders
        )
        return _decode(await self._http.post("/v1/calibrate", json=body), CalibrationResponse)

    async def utility(self, algorithm: str, params: Mapping[str, Any]) -> UtilityResponse:
        return _decode(await self._http.post("/v1/utility", json=_body(algorithm, params)), UtilityResponse)

    async def submit_job(
        self,
        algorithm: str,
        params: Mapping[str, Any],
        delta: float,
        *,
        idempotency_key: str | None = None,
        **fields: Any,
    ) -> JobOut:
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return _decode(
            await self._http.post("/v1/jobs", json=_body(algorithm, params, delta=delta, **fields), headers=headers),
            JobOut,
        )

    async def job(self, job_id: str) -> JobOut:
        return _decode(await self._http.get(f"/v1/jobs/{job_id}"), JobOut)

    async def cancel_job(self, job_id: str) -> JobOut:
        return _decode(await self._http.delete(f"/v1/jobs/{job_id}"), JobOut)

    async def wait_job(
        self,
        job_id: str,
        *,
        interval: float = 0.5,
        timeout: float = 3600.0,
        progress: Callable[[JobOut], None] | None = None,
    ) -> JobOut:
        deadline = time.monotonic() + timeout
        while True:
            state = await self.job(job_id)
            if progress is not None:
                progress(state)
            if state.status in FINISHED:
                return state
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {state.status} after {timeout:g} s")
            await asyncio.sleep(interval)


__all__ = ["DEFAULT_URL", "AsyncDpcalClient", "DpcalClient", "DpcalProblem"]
