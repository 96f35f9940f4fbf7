"""``/v1/jobs``: verification jobs — submitted (idempotently), listed, polled and cancelled; the job manager stores,
leases and runs them."""

# no `from __future__ import annotations`: FastAPI reads the body type of the endpoints built here at run time
from collections.abc import Callable
from typing import Annotated, Any, Literal, cast

from fastapi import APIRouter, Body, Header, Path, Query, Response

from accountants import registry

from .. import observability
from ..auth import ANONYMOUS, Principal, forbidden
from ..deps import JobManagerDep, PrincipalDep, in_params
from ..jobs.manager import IDLE, Outlook
from ..jobs.store import IdempotencyConflict, Job, QueueFull, iso
from ..problems import ApiProblem
from ..schemas import JobAccounting, JobList, JobOut, JobStatus, JobSummary, JobSummaryList, Progress, RequestBody
from .examples import job_examples
from .responses import PROBLEM_CONTENT, errors

RETRY_AFTER_SECONDS = 10
SUBMIT_ERRORS: dict[int | str, dict[str, Any]] = errors(400, 401, 403, 404, 408, 413, 415, 422) | {
    409: {"content": PROBLEM_CONTENT, "description": "Idempotency key reused with another body."},
    429: {
        "content": PROBLEM_CONTENT,
        "description": "The queue is full (DPCAL_JOB_MAX_QUEUED, or the principal's DPCAL_PRINCIPAL_MAX_QUEUED), "
        "or the requester's request rate is spent; retry after Retry-After seconds.",
    },
}
UNKNOWN_JOB: dict[int | str, dict[str, Any]] = {404: {"content": PROBLEM_CONTENT, "description": "Unknown job id."}}
JobId = Annotated[str, Path(max_length=64, description="Job id.")]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        max_length=255,
        description="Retry safely: the same key and body return the same job; another body is a 409.",
    ),
]


def build_router(body: RequestBody) -> APIRouter:
    """The job routes, the submission's body being the union of every family's job request."""
    router = APIRouter(prefix="/v1/jobs", tags=["jobs"])
    router.add_api_route(
        "",
        _submit(body.annotation),
        methods=["POST"],
        name="submit",
        status_code=202,
        response_model=JobOut,
        responses=SUBMIT_ERRORS,
        summary="Submit a verification job",
    )
    router.add_api_route(
        "",
        list_jobs,
        methods=["GET"],
        response_model=JobList | JobSummaryList,
        responses=errors(401, 422, 429),
        summary="List jobs",
    )
    router.add_api_route(
        "/{job_id}",
        get_job,
        methods=["GET"],
        response_model=JobOut,
        responses=errors(401, 422, 429) | UNKNOWN_JOB,
        summary="A job",
    )
    finished = {"content": PROBLEM_CONTENT, "description": "The job has already finished."}
    router.add_api_route(
        "/{job_id}",
        cancel_job,
        methods=["DELETE"],
        response_model=JobOut,
        responses=errors(401, 403, 422, 429)
        | UNKNOWN_JOB
        | {
            409: finished,
            202: {
                "model": JobOut,
                "description": "Cancellation requested: a running job stops after its chunk in progress.",
            },
        },
        summary="Cancel a job",
    )
    return router


def _submit(job_type: Any) -> Callable[..., JobOut]:
    def submit(
        response: Response,
        manager: JobManagerDep,
        principal: PrincipalDep,
        job: Annotated[job_type, Body(openapi_examples=job_examples())],
        idempotency_key: IdempotencyKey = None,
    ) -> JobOut:
        """Run the algorithm many times on a synthetic problem (after calibrating the noise, if a target ε is
        given) and measure utility and an empirical lower bound on ε. Answers 202 with the queued job; poll the
        Location."""
        if not principal.submits:
            raise forbidden(principal, "it may read jobs, not submit them")
        try:
            with in_params(registry.get(job.algorithm)):
                body, submitter = job.model_dump(mode="json"), _submitter(principal)
                stored, created = manager.submit(body, idempotency_key, submitter, observability.current_id())
        except IdempotencyConflict as conflict:
            raise ApiProblem(
                409,
                "idempotency-conflict",
                "Idempotency key reused",
                f"Idempotency-Key {idempotency_key!r} was used for job {conflict.job.id} with another request body",
                job=conflict.job.id,
            ) from None
        except QueueFull as full:
            whose = "are already queued (DPCAL_JOB_MAX_QUEUED)"
            if full.principal is not None:
                whose = f"of {full.principal!r} are already queued (DPCAL_PRINCIPAL_MAX_QUEUED)"
            raise ApiProblem(
                429,
                "queue-full",
                "Too many queued jobs",
                f"{full.queued} jobs {whose}; retry later",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            ) from None
        response.headers["Location"] = f"/v1/jobs/{stored.id}"
        if not created:
            response.headers["Idempotent-Replayed"] = "true"
        return job_out(stored, manager.outlook())

    return submit


def list_jobs(
    manager: JobManagerDep,
    principal: PrincipalDep,
    status: Annotated[JobStatus | None, Query(description="Only jobs with this status.")] = None,
    limit: Annotated[int, Query(ge=1, le=200, description="Jobs per page.")] = 50,
    cursor: Annotated[str | None, Query(max_length=64, description="next_cursor of the previous page.")] = None,
    view: Annotated[
        Literal["full", "summary"],
        Query(description="full: every job in full; summary: id, algorithm, status, progress and timestamps only."),
    ] = "full",
) -> JobList | JobSummaryList:
    """Jobs, newest first, optionally filtered by status; pages are chained by next_cursor."""
    after = None
    if cursor is not None:
        seq = manager.store.seq(cursor)
        if seq is None or not principal.owns(_stored(manager, cursor).principal):
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
    jobs = manager.store.page(status, limit + 1, after, None if principal.sees_all else principal.name)
    page = jobs[:limit]
    following = page[-1].id if len(jobs) > limit else None
    outlook = manager.outlook()
    if view == "summary":
        return JobSummaryList(jobs=[job_summary(j, outlook) for j in page], next_cursor=following)
    return JobList(jobs=[job_out(j, outlook) for j in page], next_cursor=following)


def get_job(manager: JobManagerDep, principal: PrincipalDep, job_id: JobId) -> JobOut:
    """Status, progress, timestamps, the request, and the result or the error."""
    return job_out(_stored(manager, job_id, principal), manager.outlook())


def cancel_job(manager: JobManagerDep, principal: PrincipalDep, response: Response, job_id: JobId) -> JobOut:
    """Cancel a queued job (at once) or a running one (it stops after the chunk in progress: 202 until then);
    a finished job is a 409."""
    before = _stored(manager, job_id, principal)
    if not principal.submits:
        raise forbidden(principal, "it may read jobs, not cancel them")
    if before.finished:
        raise ApiProblem(409, "job-finished", "Job already finished", f"job {job_id} is {before.status}")
    job = manager.cancel(job_id)
    if job is None:
        raise _missing(job_id)
    if job.status == "running":  # shown as cancelling until the chunk in progress ends
        response.status_code = 202
    return job_out(job, manager.outlook())


def _stored(manager: Any, job_id: str, principal: Principal = ANONYMOUS) -> Job:
    """The job, where this principal may see it (another principal's job is missing: a 404, not a 403)."""
    job: Job | None = manager.store.get(job_id)
    if job is None or not principal.owns(job.principal):
        raise _missing(job_id)
    return job


def _submitter(principal: Principal) -> str | None:
    """The principal a job records (None without authentication: jobs stored before it existed look the same)."""
    return None if principal is ANONYMOUS else principal.name


def _missing(job_id: str) -> ApiProblem:
    return ApiProblem(404, "unknown-job", "Unknown job", f"no job {job_id!r}")


def progress(job: Job, outlook: Outlook = IDLE) -> Progress:
    """Trials done, the rate over the running time so far, and the time left. Before any trial is measured: the
    plan's estimate for the trials left, stretched by the host's contention, plus the time before the job starts
    (the job manager's :class:`~app.jobs.manager.Outlook`). Then the time left at the measured rate, weighed against
    the (stretched) plan's estimate by the share of trials done (the first chunks' rate carries the fixed cost of a
    first round trip: alone it made the time left jump tenfold and back)."""
    left = job.total - job.completed
    rate = job.completed / job.runtime if job.completed and job.runtime > 0 else None
    estimate = job.plan.get("estimated_seconds")
    planned = outlook.stretch * estimate * left / job.total if estimate else None
    eta: float | None
    if job.finished:
        eta = 0.0
    elif rate and planned is not None:
        done = job.completed / job.total
        eta = done * left / rate + (1.0 - done) * planned
    elif rate:
        eta = left / rate
    else:  # nothing measured yet
        eta = None if planned is None else outlook.start_seconds + planned
    return Progress(completed=job.completed, total=job.total, trials_per_second=rate, eta_seconds=eta)


def shown_status(job: Job) -> JobStatus:
    """The stored status, or ``cancelling`` for a running job asked to stop (never a cancelled job shown running)."""
    shown = "cancelling" if job.status == "running" and job.cancel_requested else job.status
    return cast(JobStatus, shown)  # the store keeps JobStatus values


def job_summary(job: Job, outlook: Outlook = IDLE) -> JobSummary:
    return JobSummary(
        id=job.id,
        algorithm=job.algorithm,
        status=shown_status(job),
        progress=progress(job, outlook),
        created_at=iso(job.created_at) or "",
        started_at=iso(job.started_at),
        updated_at=iso(job.updated_at) or "",
        finished_at=iso(job.finished_at),
    )


def job_out(job: Job, outlook: Outlook = IDLE) -> JobOut:
    """A stored job as the API shows it."""
    plan = job.plan
    accounting = JobAccounting(
        noise_multiplier=plan["params"].get("noise_multiplier"),
        epsilon_accounted=plan["epsilon_accounted"],
        accountant=plan["accountant"],
        epsilon_exact=plan["epsilon_exact"],
        predicted_bound=plan["predicted_bound"],
        estimated_seconds=plan.get("estimated_seconds"),
        problem=plan["problem"],
    )
    return JobOut(
        id=job.id,
        status=shown_status(job),
        progress=progress(job, outlook),
        created_at=iso(job.created_at),
        started_at=iso(job.started_at),
        updated_at=iso(job.updated_at),
        finished_at=iso(job.finished_at),
        attempts=job.attempts,
        cancel_requested=job.cancel_requested,
        request=job.request,
        accounting=accounting,
        result=job.result,
        error=job.error,
    )
