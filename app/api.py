"""The v1 endpoints. They validate (through the request models), call the registry, and shape the answer."""

import functools
import json
from pathlib import Path as FilePath
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Path, Query, Request, Response

from accountants import registry
from accountants.family import AlgorithmFamily, Operation

from . import schemas
from .compute import Compute
from .jobs.store import IdempotencyConflict, Job, QueueFull, iso
from .problems import PROBLEM_MEDIA_TYPE, ApiProblem

PROBLEM_CONTENT = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"content": PROBLEM_CONTENT, "description": "Malformed JSON."},
    404: {"content": PROBLEM_CONTENT, "description": "Unknown algorithm (the problem lists the valid ids)."},
    413: {"content": PROBLEM_CONTENT, "description": "Request body too large."},
    415: {"content": PROBLEM_CONTENT, "description": "The body is not sent as application/json."},
    422: {"content": PROBLEM_CONTENT, "description": "Invalid input: each offending field with what is allowed."},
    503: {
        "content": PROBLEM_CONTENT,
        "description": "Every heavy-computation slot of the host is busy (DPCAL_MAX_HEAVY); retry after Retry-After "
        "seconds, or ask for the rdp accountant.",
    },
    504: {
        "content": PROBLEM_CONTENT,
        "description": "The computation exceeded the request budget (DPCAL_REQUEST_TIMEOUT) and was stopped.",
    },
}
POST_ERRORS = {k: ERRORS[k] for k in (400, 404, 413, 415, 422, 503, 504)}
RESPONSE_EXAMPLES_FILE = FilePath(__file__).with_name("openapi_examples.json")
"""Answers of the service to its own request examples (written by ``dpcal openapi``; a test compares them to live
answers), shown as the response examples of the POST endpoints."""


def _families_dp_sgd_first() -> list[AlgorithmFamily[Any]]:
    """The families in the order the docs show them: the baseline first (ReDoc opens on the first example)."""
    return sorted(registry.families(), key=lambda f: (f.id != "dp-sgd", f.id))


def request_examples(operation: Operation) -> dict[str, dict[str, Any]]:
    """One request example per algorithm for ``operation`` (from each family's own example hyperparameters)."""
    out = {}
    for family in _families_dp_sgd_first():
        if operation is Operation.PRIVACY:
            value = {"algorithm": family.id, "params": dict(family.example), "delta": 1e-5}
            summary = f"{family.id}: ε at δ = 1e-5"
        elif operation is Operation.CALIBRATE:
            target = 3.0 if family.id == "dp-sgd" else 1.0
            value = {
                "algorithm": family.id,
                "params": family.calibration_example(),
                "target_epsilon": target,
                "delta": 1e-5,
            }
            summary = f"{family.id}: {family.calibrated_parameter} for (ε, δ) = ({target:g}, 1e-5)"
        else:
            value = {"algorithm": family.id, "params": {**family.example, **family.utility_example_extra}}
            summary = f"{family.id}: predicted utility"
        out[family.id] = {"summary": summary, "value": value}
    return out


def job_examples() -> dict[str, dict[str, Any]]:
    return {
        family.id: {
            "summary": f"{family.id}: a small verification job",
            "value": {"algorithm": family.id, **family.job_example},
        }
        for family in _families_dp_sgd_first()
        if family.job_example is not None
    }


@functools.cache
def recorded_answers() -> dict[str, dict[str, Any]]:
    """The recorded answers, by path and algorithm (read once; empty before ``dpcal openapi --record-examples``)."""
    if not RESPONSE_EXAMPLES_FILE.exists():
        return {}
    answers: dict[str, dict[str, Any]] = json.loads(RESPONSE_EXAMPLES_FILE.read_text(encoding="utf-8"))
    return answers


def response_examples(path: str) -> dict[int | str, dict[str, Any]]:
    """The 200 response's examples for ``path`` (the service's recorded answers to the request examples)."""
    answers = recorded_answers().get(path, {})
    examples = {
        family.id: {"summary": f"{family.id}: the answer to its request example", "value": answers[family.id]}
        for family in _families_dp_sgd_first()
        if family.id in answers
    }
    return {200: {"content": {"application/json": {"examples": examples}}}} if examples else {}


def request_bodies() -> dict[str, schemas.RequestBody]:
    """The request body of each POST endpoint, by path (built once from the registry)."""
    return {
        "/v1/privacy": schemas.RequestBody("Privacy", schemas.PRIVACY_FIELDS),
        "/v1/calibrate": schemas.RequestBody("Calibrate", schemas.CALIBRATE_FIELDS),
        "/v1/utility": schemas.RequestBody("Utility", schemas.UTILITY_FIELDS),
        "/v1/jobs": schemas.RequestBody("Job", schemas.job_fields),
    }


def build_router(bodies: dict[str, schemas.RequestBody], compute_of: Any) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["v1"])
    PrivacyRequest = bodies["/v1/privacy"].annotation
    CalibrateRequest = bodies["/v1/calibrate"].annotation
    UtilityRequest = bodies["/v1/utility"].annotation
    ComputeDep = Annotated[Compute, Depends(compute_of)]

    def family_for(request: Request, algorithm: str) -> AlgorithmFamily[Any]:
        family = registry.get(algorithm)
        request.state.params_fields = tuple(family.params_model.model_fields)
        return family

    @router.get("/algorithms", response_model=list[schemas.AlgorithmSummary], summary="List the algorithms")
    def list_algorithms() -> list[dict[str, Any]]:
        """Every registered algorithm: id, title, source papers and theorems, accountants offered."""
        return [family.describe() for family in registry.families()]

    @router.get(
        "/algorithms/{algorithm_id}",
        response_model=schemas.AlgorithmDetail,
        responses={404: ERRORS[404], 422: ERRORS[422]},
        summary="Describe one algorithm",
    )
    def describe_algorithm(
        algorithm_id: Annotated[str, Path(description="Algorithm id.", examples=["dp-sgd"])],
    ) -> dict[str, Any]:
        """Parameter schema (description, unit and paper symbol per field), assumptions, and every bound with its
        source and conditions."""
        return registry.get(algorithm_id).describe()

    @router.post(
        "/privacy",
        response_model=schemas.PrivacyResponse,
        responses=POST_ERRORS | response_examples("/v1/privacy"),
        summary="ε at δ for given hyperparameters and noise",
    )
    async def privacy(
        request: Request,
        compute: ComputeDep,
        body: Annotated[PrivacyRequest, Body(openapi_examples=request_examples(Operation.PRIVACY))],  # type: ignore[valid-type]
    ) -> schemas.PrivacyResponse:
        """The certified ε at δ from every applicable accountant (the minimum, or the one requested), the Rényi
        curve, the noise in both units, and the conventions behind the number. Heavy accountants (a PLD) have a
        time budget; `accountant: "rdp"` is always answered at once."""
        family = family_for(request, body.algorithm)
        args = (body.params, body.delta, body.accountant, body.orders, body.refine_order)
        report = await compute.answer(request, family, Operation.PRIVACY, body, args)
        return schemas.PrivacyResponse.model_validate(report)

    @router.post(
        "/calibrate",
        response_model=schemas.CalibrationResponse,
        responses=POST_ERRORS | response_examples("/v1/calibrate"),
        summary="Smallest noise meeting (ε, δ)",
    )
    async def calibrate(
        request: Request,
        compute: ComputeDep,
        body: Annotated[CalibrateRequest, Body(openapi_examples=request_examples(Operation.CALIBRATE))],  # type: ignore[valid-type]
    ) -> schemas.CalibrationResponse:
        """The smallest noise (or other privacy knob, named in `calibrated_parameter`) whose ε at δ is at most the
        target, with the achieved ε, the Rényi curve, predicted utility and the paper's own calibration."""
        family = family_for(request, body.algorithm)
        args = (body.params, body.target_epsilon, body.delta, body.accountant, body.orders)
        report = await compute.answer(request, family, Operation.CALIBRATE, body, args)
        return schemas.CalibrationResponse.model_validate(report)

    @router.post(
        "/utility",
        response_model=schemas.UtilityResponse,
        responses={k: ERRORS[k] for k in (400, 404, 413, 415, 422)} | response_examples("/v1/utility"),
        summary="Predicted utility bounds",
    )
    async def utility(
        request: Request,
        compute: ComputeDep,
        body: Annotated[UtilityRequest, Body(openapi_examples=request_examples(Operation.UTILITY))],  # type: ignore[valid-type]
    ) -> schemas.UtilityResponse:
        """Each predicted utility bound: value, measure, the theorem it comes from, its assumptions and whether they
        hold (empty with a reason where the algorithm has none)."""
        family = family_for(request, body.algorithm)
        report = await compute.answer(request, family, Operation.UTILITY, body, (body.params,))
        return schemas.UtilityResponse.model_validate(report)

    return router


# -- verification jobs ----------------------------------------------------------------------------------------------

RETRY_AFTER_SECONDS = 10


def job_out(job: Job) -> schemas.JobOut:
    plan = job.plan
    return schemas.JobOut(
        id=job.id,
        status=job.status,
        progress=schemas.Progress(completed=job.completed, total=job.total),
        created_at=iso(job.created_at),
        started_at=iso(job.started_at),
        updated_at=iso(job.updated_at),
        finished_at=iso(job.finished_at),
        attempts=job.attempts,
        cancel_requested=job.cancel_requested,
        request=job.request,
        accounting=schemas.JobAccounting(
            noise_multiplier=plan["params"].get("noise_multiplier"),
            epsilon_accounted=plan["epsilon_accounted"],
            accountant=plan["accountant"],
            epsilon_exact=plan["epsilon_exact"],
            predicted_bound=plan["predicted_bound"],
            problem=plan["problem"],
        ),
        result=job.result,
        error=job.error,
    )


def build_jobs_router(body: schemas.RequestBody, manager_of: Any) -> APIRouter:
    router = APIRouter(prefix="/v1/jobs", tags=["jobs"])
    JobRequest = body.annotation
    Manager = Annotated[Any, Depends(manager_of)]
    job_errors = {k: ERRORS[k] for k in (400, 404, 413, 415, 422)} | {
        409: {"content": PROBLEM_CONTENT, "description": "Idempotency key reused with another body."},
        429: {"content": PROBLEM_CONTENT, "description": "The queue is full; retry after Retry-After seconds."},
    }
    unknown_job = {"content": PROBLEM_CONTENT, "description": "Unknown job id."}

    def missing(job_id: str) -> ApiProblem:
        return ApiProblem(404, "unknown-job", "Unknown job", f"no job {job_id!r}")

    @router.post(
        "", status_code=202, response_model=schemas.JobOut, responses=job_errors, summary="Submit a verification job"
    )
    def submit(
        request: Request,
        response: Response,
        manager: Manager,
        job: Annotated[JobRequest, Body(openapi_examples=job_examples())],  # type: ignore[valid-type]
        idempotency_key: Annotated[
            str | None,
            Header(
                alias="Idempotency-Key",
                max_length=255,
                description="Retry safely: the same key and body return the same job; another body is a 409.",
            ),
        ] = None,
    ) -> schemas.JobOut:
        """Run the algorithm many times on a synthetic problem (after calibrating the noise, if a target ε is
        given) and measure utility and an empirical lower bound on ε. Answers 202 with the queued job; poll the
        Location."""
        family = registry.get(job.algorithm)
        request.state.params_fields = tuple(family.params_model.model_fields)
        try:
            stored, created = manager.submit(job.model_dump(mode="json"), idempotency_key)
        except IdempotencyConflict as conflict:
            raise ApiProblem(
                409,
                "idempotency-conflict",
                "Idempotency key reused",
                f"Idempotency-Key {idempotency_key!r} was used for job {conflict.job.id} with another request body",
                job=conflict.job.id,
            ) from None
        except QueueFull as full:
            raise ApiProblem(
                429,
                "queue-full",
                "Too many queued jobs",
                f"{full.queued} jobs are already queued (DPCAL_JOB_MAX_QUEUED); retry later",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            ) from None
        response.headers["Location"] = f"/v1/jobs/{stored.id}"
        if not created:
            response.headers["Idempotent-Replayed"] = "true"
        return job_out(stored)

    @router.get("", response_model=schemas.JobList, responses={422: ERRORS[422]}, summary="List jobs")
    def list_jobs(
        manager: Manager,
        status: Annotated[schemas.JobStatus | None, Query(description="Only jobs with this status.")] = None,
        limit: Annotated[int, Query(ge=1, le=200, description="Jobs per page.")] = 50,
        cursor: Annotated[str | None, Query(max_length=64, description="next_cursor of the previous page.")] = None,
    ) -> schemas.JobList:
        """Jobs, newest first, optionally filtered by status; pages are chained by next_cursor."""
        after = 2**62
        if cursor is not None:
            seq = manager.store.seq(cursor)
            if seq is None:
                raise ApiProblem(
                    422,
                    "invalid-request",
                    "Invalid request",
                    f"unknown cursor {cursor!r}",
                    errors=[
                        {
                            "loc": ["query", "cursor"],
                            "message": "unknown cursor",
                            "allowed": "a next_cursor returned by this endpoint",
                        }
                    ],
                )
            after = seq
        jobs = manager.store.list(status, limit + 1, after)
        page = jobs[:limit]
        return schemas.JobList(jobs=[job_out(j) for j in page], next_cursor=page[-1].id if len(jobs) > limit else None)

    @router.get(
        "/{job_id}", response_model=schemas.JobOut, responses={404: unknown_job, 422: ERRORS[422]}, summary="A job"
    )
    def get_job(manager: Manager, job_id: Annotated[str, Path(max_length=64, description="Job id.")]) -> schemas.JobOut:
        """Status, progress, timestamps, the request, and the result or the error."""
        job = manager.store.get(job_id)
        if job is None:
            raise missing(job_id)
        return job_out(job)

    @router.delete(
        "/{job_id}",
        response_model=schemas.JobOut,
        responses={
            404: unknown_job,
            422: ERRORS[422],
            409: {"content": PROBLEM_CONTENT, "description": "The job has already finished."},
        },
        summary="Cancel a job",
    )
    def cancel_job(
        manager: Manager, response: Response, job_id: Annotated[str, Path(max_length=64, description="Job id.")]
    ) -> schemas.JobOut:
        """Cancel a queued job (at once) or a running one (it stops after the chunk in progress: 202 until then);
        a finished job is a 409."""
        before = manager.store.get(job_id)
        if before is None:
            raise missing(job_id)
        if before.finished:
            raise ApiProblem(409, "job-finished", "Job already finished", f"job {job_id} is {before.status}")
        job = manager.cancel(job_id)
        if job.status == "running":
            response.status_code = 202
        return job_out(job)

    return router
