"""The job manager: accepts jobs, runs them one at a time on a :class:`~app.jobs.runner.Runner`, survives crashes.

* Accepting: the request is validated, the noise calibrated when a target ε is given, and the simulation planned
  (accounted ε, exact ε, predicted utility, estimated running time: refused above DPCAL_JOB_MAX_SECONDS, naming what
  to change) before the job is stored, so errors come back as 4xx at once.
* Running: a dispatcher thread claims the oldest queued job and submits its blocks in chunks (at most two per worker
  in flight; a chunk starts at one block and grows to about :data:`CHUNK_SECONDS`). Each finished chunk is stored
  with the progress; cancellation and the time limit are checked between chunks. When every block is in, the
  statistics are computed and the job succeeds.
* One runner per host: every server process accepts jobs, but only the one holding the host's runner lock (a
  ``flock`` beside the database, released by the kernel when its holder dies) runs them, on one worker pool; the
  others try to take the lock every second, so a dead runner is replaced.
* Crashes: a running job carries a lease renewed with each chunk and the owner's host and PID. A job whose owner is
  gone (a dead PID on this host, or an expired lease) goes back to the queue and resumes from its stored chunks; after
  ``job_max_attempts`` attempts it fails with the reason. A graceful shutdown puts the running job back unpenalised.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, NamedTuple

import numpy as np
import sqlalchemy.exc

from accountants import registry
from accountants.errors import FieldIssue, ParameterError
from accountants.planning import plan_job
from accountants.verification import BlockResult, JobPlan, block_sizes, sized_for_power, summarize

from .. import metrics, observability
from ..host import contention, try_lock
from ..settings import Settings
from .runner import DaskRunner, ProcessPoolRunner, Runner, RunnerLost
from .store import IdempotencyConflict, Job, JobStore

_log = logging.getLogger("dpcal.jobs")
_RECOVERY_INTERVAL = 5.0
_RUNNER_RETRY_SECONDS = 1.0
_STORE_RETRY_SECONDS = 2.0
JOB_OVERHEAD = 0.25
"""Seconds a job takes beyond its trials' estimate on a started worker pool: claiming it, the first chunk's round trip
to a worker, storing the chunks and the summary (0.2–0.35 s measured for every family's example job, warm)."""
CHUNK_SECONDS = 1.0
"""A chunk takes about this long (its blocks then report progress at least about every second, and a job spreads over
as many workers as it has blocks)."""


def too_long(plan: JobPlan, limit: float) -> FieldIssue:
    """Why a plan is refused for its estimated time, naming what this request can change: fewer trials (how many
    fit), fewer steps, or dropping the check that costs most where it asked for more than one."""
    total = plan.estimated_seconds
    advice = "reduce trials or steps"
    parts = {k: v for k, v in plan.seconds_by_check.items() if k in plan.checks}  # not a shared "simulation"
    if len(parts) > 1:
        costly = max(parts, key=lambda k: parts[k])
        share = parts[costly] / sum(parts.values())
        advice += f", or drop the {costly} check (about {share:.0%} of the time)"
    return FieldIssue(
        ("trials",),
        f"the job is estimated to take about {total:.3g} s of one worker process (calibrated for "
        f"{plan.algorithm}), above the limit of {limit:g} s (DPCAL_JOB_MAX_SECONDS): {advice}",
        f"trials ≤ {max(2, int(plan.trials * limit / total))} here",
        plan.trials,
    )


class Outlook(NamedTuple):
    """What a job not yet measured should expect (:meth:`JobManager.outlook`)."""

    start_seconds: float = 0.0
    """Seconds before it produces trials, over its plan's estimate."""
    stretch: float = 1.0
    """How many times its plan's estimate (made on an idle core) it should take on this host now."""


IDLE = Outlook()
"""No start pending, an idle host."""


class JobRejected(ParameterError):
    """The job request breaks a service limit or asks for something the algorithm cannot simulate."""


class JobManager:
    def __init__(self, settings: Settings, runner_factory: Callable[[], Runner] | None = None) -> None:
        self.settings = settings
        self.store = JobStore(settings.jobs_db)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._runner_factory = runner_factory or (lambda: default_runner(settings))
        self._runner: Runner | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._current: str | None = None
        self._last_recovery = 0.0
        self._runner_lock = settings.host_directory / "job-runner.lock"
        self._runner_lock_fd: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------------------

    def start(self) -> None:
        self._become_runner()
        self._thread = threading.Thread(target=self._loop, name="dpcal-jobs", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._runner is not None:
            self._runner.shutdown()
        if self._current is not None:
            self.store.requeue(self._current, self.owner, count_attempt=False)
        if self._runner_lock_fd is not None:
            os.close(self._runner_lock_fd)
            self._runner_lock_fd = None
        self.store.close()

    def _become_runner(self) -> bool:
        """Take the host's runner lock if it is free: then recover orphaned jobs and start the worker pool."""
        if self._runner is not None:
            return True
        fd = try_lock(self._runner_lock)
        if fd is None:
            return False
        self._runner_lock_fd = fd
        self.recover()
        self._runner = self._runner_factory()
        return True

    # -- the API side ------------------------------------------------------------------------------------------------

    def prepare(self, body: dict[str, Any]) -> JobPlan:
        """Validate and plan a job request (raises ParameterError with field locations on bad input): the service's
        limits here, the rest in :func:`accountants.planning.plan_job`."""
        s = self.settings
        trials = body["trials"]
        if trials > s.job_max_trials:
            raise JobRejected(
                FieldIssue(
                    ("trials",),
                    f"exceeds the limit of {s.job_max_trials} (DPCAL_JOB_MAX_TRIALS)",
                    f"an integer in [2, {s.job_max_trials}]",
                    trials,
                )
            )
        plan = plan_job(
            registry.get(body["algorithm"]),
            body["params"],
            body["delta"],
            tuple(body["checks"]),
            trials,
            body["seed"],
            body.get("problem"),
            body.get("target_epsilon"),
        )
        if body.get("target_power") is not None:
            try:
                plan = sized_for_power(plan, float(body["target_power"]), s.job_max_trials)
            except ParameterError as error:
                raise JobRejected(list(error.issues)) from None
        if plan.estimated_seconds > s.job_max_seconds:
            raise JobRejected(too_long(plan, s.job_max_seconds))
        return plan

    def submit(
        self,
        body: dict[str, Any],
        idempotency_key: str | None,
        principal: str | None = None,
        request_id: str | None = None,
    ) -> tuple[Job, bool]:
        """Store a job for ``principal`` (None: no authentication), or return the one already stored under
        ``idempotency_key`` for the same body; keys are per principal (stored as ``principal`` + newline + key).
        ``request_id``: the submitting request's, which the job's runs log with."""
        request_hash = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        if idempotency_key is not None and principal is not None:
            idempotency_key = f"{principal}\n{idempotency_key}"
        if idempotency_key is not None:
            known = self._known(idempotency_key, request_hash)
            if known is not None:
                return known, False
        plan = self.prepare(body)
        job, created = self.store.create(
            body["algorithm"],
            body,
            request_hash,
            plan.to_json(),
            plan.trials,
            idempotency_key,
            self.settings.job_max_queued,
            principal,
            self.settings.principal_max_queued,
            request_id,
        )
        self._wake.set()
        return job, created

    def _known(self, key: str, request_hash: str) -> Job | None:
        """The job stored under this key (replayed without planning again), or None; a different body conflicts."""
        job = self.store.by_idempotency_key(key)
        if job is not None and job.request_hash != request_hash:
            raise IdempotencyConflict(job)
        return job

    def outlook(self) -> Outlook:
        """What a job submitted now should expect: seconds before it starts producing trials, over its own estimate
        (the workers' start where this process runs them and they are still starting, and a job's fixed cost,
        :data:`JOB_OVERHEAD`), and how much longer than its plan's estimate (made on an idle core) the host's present
        :func:`~app.host.contention` makes it."""
        starting = self._runner.startup_left() if self._runner is not None else 0.0
        return Outlook(start_seconds=starting + JOB_OVERHEAD, stretch=contention())

    def cancel(self, job_id: str) -> Job | None:
        job = self.store.request_cancel(job_id)
        self._wake.set()
        return job

    # -- the runner side ---------------------------------------------------------------------------------------------

    def recover(self) -> None:
        """Requeue (or fail, after too many attempts) running jobs whose owner is gone."""
        now = time.time()
        for job in self.store.running():
            if job.owner == self.owner:
                continue
            dead = job.lease_expires is None or job.lease_expires < now or _owner_dead(job.owner)
            if dead:
                outcome = self.store.recover(
                    job.id,
                    job.owner,
                    self.settings.job_max_attempts,
                    "the process running the job stopped before it finished",
                )
                _log.warning("job %s of %s: %s", job.id, job.owner, outcome)

    def _loop(self) -> None:
        self._last_recovery = time.monotonic()
        while not self._stop.is_set():
            try:
                self._step()
            except sqlalchemy.exc.OperationalError as error:  # the store is down: its leases will tell what ran
                _log.warning("job store unreachable (%s); retrying", type(error.orig).__name__)
                self._current = None
                self._stop.wait(_STORE_RETRY_SECONDS)

    def _step(self) -> None:
        """Claim and run one job (or wait a little when there is none, or when another process runs the jobs)."""
        if not self._become_runner():  # another process on this host runs the jobs
            self._stop.wait(_RUNNER_RETRY_SECONDS)
            return
        if time.monotonic() - self._last_recovery > _RECOVERY_INTERVAL:
            self.recover()
            self._last_recovery = time.monotonic()
        assert self._runner is not None  # made by _become_runner
        if not self._runner.ready(timeout=0.5):  # jobs stay queued while the workers start
            return
        job = self.store.claim(self.owner, self.settings.job_lease_seconds)
        if job is None:
            self._wake.wait(0.5)
            self._wake.clear()
            return
        self._current = job.id
        with observability.working_for(job.request_id, job.principal):  # its log lines carry the submitter's id
            self._attempt(job)

    def _attempt(self, job: Job) -> None:
        """Run a claimed job; an unexpected error fails it (the store being unreachable is the caller's)."""
        try:
            _log.info("job %s: attempt %d", job.id, job.attempts)
            self._run(job)
        except sqlalchemy.exc.OperationalError:
            raise
        except Exception:
            _log.exception("job %s failed unexpectedly", job.id)
            self.store.finish(
                job.id,
                self.owner,
                "failed",
                error=_problem(500, "job-error", "Job failed", "an unexpected error occurred"),
            )
        finally:
            self._current = None
            self._count_finished(job.id)

    def _count_finished(self, job_id: str) -> None:
        """The job's duration and outcome in ``/metrics`` where this attempt ended it."""
        try:
            final = self.store.get(job_id)
        except sqlalchemy.exc.OperationalError:
            return
        if final is not None and final.finished:
            metrics.observe_job(final.algorithm, final.status, final.runtime)

    def _run(self, job: Job) -> None:
        """Run the job's remaining blocks in chunks on the runner, saving each chunk, until it finishes, fails, is
        cancelled or runs out of time; a dead worker process requeues it (another attempt)."""
        run = _JobRun(self, job)
        while run.remaining or run.in_flight:
            run.fill()
            finished, _ = wait(list(run.in_flight), timeout=1.0, return_when=FIRST_COMPLETED)
            for future in finished:
                if not run.save(future):
                    return
            if not run.still_wanted():
                return
            self.store.heartbeat(job.id, self.owner, self.settings.job_lease_seconds, run.elapsed())
        run.succeed()

    def _replace_runner(self) -> Runner:
        """A fresh runner after a worker process died (the pool is broken)."""
        if self._runner is not None:
            self._runner.shutdown()
        self._runner = self._runner_factory()
        return self._runner


def default_runner(settings: Settings) -> Runner:
    """The runner the settings name: the local worker pool, or the Dask cluster at ``DPCAL_DASK_ADDRESS``."""
    if settings.job_backend == "dask":
        assert settings.dask_address is not None  # checked with the settings
        return DaskRunner(settings.dask_address)
    return ProcessPoolRunner(settings.job_workers)


class _JobRun:
    """One attempt at a job: the chunks still to run, those running, and the time it has taken (over attempts)."""

    def __init__(self, manager: JobManager, job: Job) -> None:
        assert manager._runner is not None
        self.manager, self.job, self.runner = manager, job, manager._runner
        self.plan = JobPlan.from_json(job.plan)
        self.sizes = block_sizes(self.plan.trials)
        store = manager.store
        done = {b for first, last, _ in store.chunks(job.id) for b in range(first, last + 1)}
        self.remaining = [b for b in range(len(self.sizes)) if b not in done]
        self.chunk = 1  # blocks per chunk: grows until a chunk takes about CHUNK_SECONDS (progress stays fresh)
        self.in_flight: dict[Future[dict[str, np.ndarray]], tuple[int, int, float]] = {}
        self.started, self.base = time.monotonic(), job.runtime

    def elapsed(self) -> float:
        return self.base + time.monotonic() - self.started

    def fill(self) -> None:
        """Keep two chunks per worker in flight, each a run of consecutive blocks of the current chunk size."""
        while self.remaining and len(self.in_flight) < 2 * self.runner.workers:
            first, last = _ranges(self.remaining[: self.chunk], self.chunk)[0]
            del self.remaining[: last - first + 1]
            self.in_flight[self.runner.submit(self.plan, first, last)] = (first, last, time.monotonic())

    def _resize(self, blocks: int, seconds: float) -> None:
        """Chunks of about :data:`CHUNK_SECONDS` (a chunk waits behind another on its worker: half the time is its
        own), at most ``DPCAL_JOB_CHUNK_BLOCKS`` blocks."""
        per_block = max(seconds / 2.0 / blocks, 1e-6)
        self.chunk = max(1, min(self.manager.settings.job_chunk_blocks, int(CHUNK_SECONDS / per_block)))

    def stop(self) -> None:
        for future in self.in_flight:
            future.cancel()

    def save(self, future: Future[dict[str, np.ndarray]]) -> bool:
        """Store a finished chunk; False where the job ended (failed, requeued, no longer ours)."""
        manager, job = self.manager, self.job
        first, last, submitted = self.in_flight.pop(future)
        try:
            arrays = future.result()
        except (BrokenProcessPool, RunnerLost) as error:
            self.stop()
            manager._replace_runner()
            detail = f"the runner was lost while running the job ({error})"
            outcome = manager.store.recover(job.id, manager.owner, manager.settings.job_max_attempts, detail)
            _log.warning("job %s: worker died, %s", job.id, outcome)
            return False
        except Exception as error:
            self.fail("simulation-error", "Simulation failed", f"{type(error).__name__}: {error}")
            return False
        self._resize(last - first + 1, time.monotonic() - submitted)
        trials = sum(self.sizes[first : last + 1])
        lease = manager.settings.job_lease_seconds
        if not manager.store.save_chunk(job.id, manager.owner, first, last, trials, arrays, lease, self.elapsed()):
            self.stop()  # cancelled while queued-to-running, or taken over: no longer ours
            return False
        return True

    def still_wanted(self) -> bool:
        """False (the job stopped) where it was cancelled, the manager stops, or it ran over its time limit."""
        manager, job = self.manager, self.job
        current = manager.store.get(job.id)
        if current is None or current.cancel_requested or manager._stop.is_set():
            self.stop()
            if current is not None and current.cancel_requested:
                manager.store.finish(job.id, manager.owner, "cancelled", runtime=self.elapsed())
            return False
        limit = manager.settings.job_time_limit
        if self.elapsed() > limit:
            detail = f"timed out: ran {self.elapsed():.1f} s, over the limit of {limit:g} s (DPCAL_JOB_TIME_LIMIT)"
            self.fail("timed-out", "Job timed out", detail)
            return False
        return True

    def fail(self, slug: str, title: str, detail: str) -> None:
        self.stop()
        error = _problem(500, slug, title, detail)
        self.manager.store.finish(self.job.id, self.manager.owner, "failed", runtime=self.elapsed(), error=error)

    def succeed(self) -> None:
        """Summarise every stored chunk into the job's result."""
        store = self.manager.store
        arrays = [a for _, _, a in store.chunks(self.job.id)]
        combined = BlockResult(
            **{k: np.concatenate([a[k] for a in arrays]) for k in ("utility", "score_in", "score_out")}
        )
        result = summarize(self.plan, [combined]).model_dump(mode="json")
        store.finish(self.job.id, self.manager.owner, "succeeded", result=result, runtime=self.elapsed())


def _ranges(blocks: list[int], size: int) -> list[tuple[int, int]]:
    """Runs of consecutive block indices, each cut into chunks of at most ``size`` blocks: (first, last)."""
    out: list[tuple[int, int]] = []
    for block in blocks:
        if out and block == out[-1][1] + 1 and out[-1][1] - out[-1][0] + 1 < size:
            out[-1] = (out[-1][0], block)
        else:
            out.append((block, block))
    return out


def _owner_dead(owner: str | None) -> bool:
    """True if the owner ran on this host and its process is gone."""
    if not owner:
        return True
    host, _, rest = owner.partition(":")
    if host != socket.gethostname():
        return False
    try:
        pid = int(rest.split(":", 1)[0])
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (ValueError, PermissionError):
        return False
    return False


def _problem(status: int, slug: str, title: str, detail: str) -> dict[str, Any]:
    return {"type": f"urn:dpcal:problem:{slug}", "title": title, "status": status, "detail": detail}
