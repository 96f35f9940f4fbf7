"""Verification jobs: what a job is, its progress and its result."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from accountants.verification import VerificationResult

from .common import Problem

JobStatus = Literal["queued", "running", "cancelling", "succeeded", "failed", "cancelled"]
"""A job's status as shown: ``cancelling`` is a running job asked to stop (it stops after the chunk in progress)."""
STATUS_DESCRIPTION = "queued, running, cancelling (running, asked to stop), succeeded, failed or cancelled."


class Progress(BaseModel):
    completed: int = Field(description="Trials finished.", examples=[512])
    total: int = Field(description="Trials in the job.", examples=[1000])
    trials_per_second: float | None = Field(
        None,
        description="Trials finished per second of running time so far (all attempts; null before the first chunk).",
        examples=[850.0],
    )
    eta_seconds: float | None = Field(
        None,
        description="Estimated seconds left: before the first chunk, the plan's estimated_seconds for the trials left "
        "plus the job's start (the worker processes' start while they start, and a job's fixed cost); then the time "
        "left at the measured rate weighed against that estimate by the share of trials done; 0 once finished; null "
        "while unknown.",
        examples=[0.6],
    )


class JobAccounting(BaseModel):
    """What the job simulates and what was predicted before the first trial."""

    noise_multiplier: float | None = Field(
        description="Noise multiplier simulated (calibrated first when the job gave a target ε).", examples=[2.0]
    )
    epsilon_accounted: float = Field(description="ε the accountant certifies at δ.", examples=[9.01])
    accountant: str = Field(description="The accountant that certified it.", examples=["rdp"])
    epsilon_exact: float | None = Field(
        description="Exact ε of the simulated mechanism, where closed-form.", examples=[2.75]
    )
    predicted_bound: float | None = Field(description="Predicted utility (null where none).", examples=[0.0264])
    estimated_seconds: float | None = Field(
        None,
        description="Estimated running time on one worker process before the first trial: each part of the "
        "simulation's operations at the rate measured for this family and check (benchmarks/jobs.py --calibrate, "
        "a 2-core reference machine); the job is refused above DPCAL_JOB_MAX_SECONDS.",
        examples=[0.8],
    )
    problem: dict[str, Any] = Field(
        description="The synthetic problem, every setting resolved.", examples=[{"kind": "linear-gaussian"}]
    )


class JobOut(BaseModel):
    id: str = Field(description="Job id.", examples=["3f9c2e54a1b84d9f8f5a2c1e0b7d6a43"])
    status: JobStatus = Field(
        description=STATUS_DESCRIPTION,
        examples=["queued"],
    )
    progress: Progress = Field(description="Trials finished so far (written after every chunk).")
    created_at: str = Field(
        description="When the job was accepted (UTC, ISO 8601).", examples=["2026-11-22T10:00:00.000000Z"]
    )
    started_at: str | None = Field(description="When it first started running.", examples=[None])
    updated_at: str = Field(description="Last change.", examples=["2026-11-22T10:00:00.000000Z"])
    finished_at: str | None = Field(description="When it reached a final status.", examples=[None])
    attempts: int = Field(description="How many times it was started (a crashed run is restarted).", examples=[1])
    cancel_requested: bool = Field(
        description="Cancellation was requested (a running job stops between chunks).", examples=[False]
    )
    request: dict[str, Any] = Field(description="The request, as validated.", examples=[{"algorithm": "dp-sgd"}])
    accounting: JobAccounting = Field(description="Accounted and exact ε, predicted utility, the problem.")
    result: VerificationResult | None = Field(description="The result, once succeeded.")
    error: Problem | None = Field(description="Problem details, once failed.")


class JobList(BaseModel):
    jobs: list[JobOut] = Field(description="Jobs, newest first.")
    next_cursor: str | None = Field(
        description="Pass as cursor for the next page (null on the last page).", examples=[None]
    )


class JobSummary(BaseModel):
    """A job in a summary listing (``view=summary``): no request, plan or result."""

    id: str = Field(description="Job id.", examples=["3f9c2e54a1b84d9f8f5a2c1e0b7d6a43"])
    algorithm: str = Field(description="The algorithm simulated.", examples=["dp-sgd"])
    status: JobStatus = Field(
        description=STATUS_DESCRIPTION,
        examples=["running"],
    )
    progress: Progress = Field(description="Trials finished, rate and time left.")
    created_at: str = Field(description="When the job was accepted (UTC).", examples=["2026-11-22T10:00:00.000000Z"])
    started_at: str | None = Field(description="When it first started running.", examples=[None])
    updated_at: str = Field(description="Last change.", examples=["2026-11-22T10:00:00.000000Z"])
    finished_at: str | None = Field(description="When it reached a final status.", examples=[None])


class JobSummaryList(BaseModel):
    jobs: list[JobSummary] = Field(description="Jobs, newest first, summarised.")
    next_cursor: str | None = Field(
        description="Pass as cursor for the next page (null on the last page).", examples=[None]
    )
