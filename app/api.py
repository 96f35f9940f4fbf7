"""The v1 endpoints. They validate (through the request models), call the registry, and shape the answer."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Path, Query, Request, Response

from accountants import registry

from . import schemas
from .jobs.store import IdempotencyConflict, Job, QueueFull, iso
from .problems import PROBLEM_MEDIA_TYPE, ApiProblem

PROBLEM = {"model": schemas.Problem, "content": {PROBLEM_MEDIA_TYPE: {}}}
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {**PROBLEM, "description": "Malformed JSON."},
    404: {**PROBLEM, "description": "Unknown algorithm (the problem lists the valid ids)."},
    413: {**PROBLEM, "description": "Request body too large."},
    422: {**PROBLEM, "description": "Invalid input: each offending field with what is allowed."},
}

MNIST = {"dataset_size": 60000, "batch_size": 256, "epochs": 60}
EXAMPLES = {
    "privacy": {
        "dp-sgd": {
            "summary": "DP-SGD, MNIST-like: ε at δ = 1e-5",
            "value": {"algorithm": "dp-sgd", "params": {**MNIST, "noise_multiplier": 1.1}, "delta": 1e-5},
        }
    },
    "calibrate": {
        "dp-sgd": {
            "summary": "DP-SGD, MNIST-like: noise for (3, 1e-5)",
            "value": {"algorithm": "dp-sgd", "params": MNIST, "target_epsilon": 3.0, "delta": 1e-5},
        }
    },
    "utility": {"dp-sgd": {"summary": "DP-SGD", "value": {"algorithm": "dp-sgd", "params": MNIST}}},
}


def request_bodies() -> dict[str, schemas.RequestBody]:
    """The request body of each POST endpoint, by path (built once from the registry)."""
    return {
        "/v1/privacy": schemas.RequestBody("Privacy", schemas.PRIVACY_FIELDS),
        "/v1/calibrate": schemas.RequestBody("Calibrate", schemas.CALIBRATE_FIELDS),
        "/v1/utility": schemas.RequestBody("Utility", schemas.UTILITY_FIELDS),
        "/v1/jobs": schemas.RequestBody("Job", schemas.job_fields),
    }


def build_router(bodies: dict[str, schemas.RequestBody]) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["v1"])
    PrivacyRequest = bodies["/v1/privacy"].annotation
    CalibrateRequest = bodies["/v1/calibrate"].annotation
    UtilityRequest = bodies["/v1/utility"].annotation

    def family_for(request: Request, algorithm: str) -> registry.AlgorithmFamily:
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
        responses={404: ERRORS[404]},
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
        responses={k: ERRORS[k] for k in (400, 404, 413, 422)},
        summary="ε at δ for given hyperparameters and noise",
    )
    def privacy(
        request: Request,
        body: Annotated[PrivacyRequest, Body(openapi_examples=EXAMPLES["privacy"])],  # type: ignore[valid-type]
    ) -> schemas.PrivacyResponse:
        """The certified ε at δ from every applicable accountant (the minimum, or the one requested), the Rényi
        curve, the noise in both units, and the conventions behind the number."""
        family = family_for(request, body.algorithm)
        report = family.privacy(body.params, body.delta, body.accountant, body.orders, body.refine_order)
        return schemas.PrivacyResponse.model_validate(report)

    @router.post(
        "/calibrate",
        response_model=schemas.CalibrationResponse,
        responses={k: ERRORS[k] for k in (400, 404, 413, 422)},
        summary="Smallest noise meeting (ε, δ)",
    )
    def calibrate(
        request: Request,
        body: Annotated[CalibrateRequest, Body(openapi_examples=EXAMPLES["calibrate"])],  # type: ignore[valid-type]
    ) -> schemas.CalibrationResponse:
        """The smallest noise (or other privacy knob, named in `calibrated_parameter`) whose ε at δ is at most the
        target, with the achieved ε, the Rényi curve, predicted utility and the paper's own calibration."""
        family = family_for(request, body.algorithm)
        report = family.calibrate(body.params, body.target_epsilon, body.delta, body.accountant, body.orders)
        return schemas.CalibrationResponse.model_validate(report)

    @router.post(
        "/utility",
        response_model=schemas.UtilityResponse,
        responses={k: ERRORS[k] for k in (400, 404, 413, 422)},
        summary="Predicted utility bounds",
    )
    def utility(
        request: Request,
        body: Annotated[UtilityRequest, Body(openapi_examples=EXAMPLES["utility"])],  # type: ignore[valid-type]
    ) -> schemas.UtilityResponse:
        """Each predicted utility bound: value, measure, the theorem it comes from, its assumptions and whether they
        hold (empty with a reason where the algorithm has none)."""
        family = family_for(request, body.algorithm)
        return schemas.UtilityResponse.model_validate(family.utility(body.params))

    return router


# -- verification jobs ----------------------------------------------------------------------------------------------

JOB_EXAMPLES = {
    "last-iterate": {
        "summary": "dp-sgd-last-iterate on the linear-Gaussian instance: utility and audit",
        "value": {
            "algorithm": "dp-sgd-last-iterate",
            "params": {
                "dataset_size": 20,
                "batch_size": 2,
                "steps": 50,
                "stepsize": 0.1,
                "clip_norm": 1.0,
                "smoothness": 1.0,
                "weak_convexity": 0.0,
                "clipping": "inactive",
                "noise_multiplier": 2.0,
            },
            "delta": 1e-5,
            "checks": ["utility", "privacy-audit"],
            "trials": 2000,
            "seed": 7,
        },
    },
    "dp-sgd": {
        "summary": "dp-sgd, calibrated to ε = 3 first, audited",
        "value": {
            "algorithm": "dp-sgd",
            "params": {"dataset_size": 1000, "batch_size": 1000, "steps": 10},
            "delta": 1e-5,
            "target_epsilon": 3.0,
            "checks": ["privacy-audit"],
            "trials": 20000,
            "seed": 1,
        },
    },
}


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
    job_errors = {k: ERRORS[k] for k in (400, 404, 413, 422)} | {
        409: {**PROBLEM, "description": "Idempotency key reused with another body."},
        429: {**PROBLEM, "description": "The queue is full; retry after Retry-After seconds."},
    }

    def missing(job_id: str) -> ApiProblem:
        return ApiProblem(404, "unknown-job", "Unknown job", f"no job {job_id!r}")

    @router.post(
        "", status_code=202, response_model=schemas.JobOut, responses=job_errors, summary="Submit a verification job"
    )
    def submit(
        request: Request,
        response: Response,
        manager: Manager,
        job: Annotated[JobRequest, Body(openapi_examples=JOB_EXAMPLES)],  # type: ignore[valid-type]
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
        "/{job_id}", response_model=schemas.JobOut, responses={404: ERRORS[404], 422: ERRORS[422]}, summary="A job"
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
            404: ERRORS[404],
            422: ERRORS[422],
            409: {**PROBLEM, "description": "The job has already finished."},
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
