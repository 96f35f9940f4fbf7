"""The dpcal service: ``app.main:app``."""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from . import __version__, docs, metrics, problems, routes, ui
from .compute import Compute
from .gate import RequestGate
from .host import exit_with_parent
from .jobs.manager import JobManager
from .oidc import TokenVerifier
from .rates import RateLimiter
from .settings import Settings
from .worker import pin_blas_threads

SUPERVISOR_VARIABLE = "DPCAL_SUPERVISOR_PID"
"""Set by ``dpcal serve --workers N`` for its server processes: they exit when that supervisor is gone."""

DESCRIPTION = """\
Privacy accounting and noise calibration for differentially private machine learning.

* `POST /v1/calibrate` — the smallest noise for a target (ε, δ), with the achieved ε, the Rényi curve and what it
  rests on;
* `POST /v1/privacy` — ε at δ for given hyperparameters and noise, from every applicable accountant;
* `POST /v1/utility` — predicted utility bounds with their theorems;
* `POST /v1/compose` — ε at δ of any composition of mechanisms, given as an event tree (Gaussian, Laplace, randomized
  response, pure, zCDP, sampled, repeated, sequences and any algorithm's mechanism), with ε over training;
* `POST /v1/compose/calibrate` — the number at a JSON Pointer in such a tree (a noise, count, rate or ε) meeting a
  target;
* `GET /v1/algorithms` — what is supported, with each algorithm's parameters documented;
* `POST /v1/jobs` — a verification job: the algorithm simulated on a synthetic problem, its utility measured and its
  privacy audited (an empirical lower bound on ε) against the predictions; `GET /v1/jobs` lists the jobs, and
  `/v1/jobs/{job_id}` reads one (its progress and result) or cancels it.

Every answer names its conventions: the accountant, the neighbouring relation, the sensitivity, the noise in both units
and the step count. Errors are RFC 9457 problem details naming each offending field.
"""


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.from_env()
    pin_blas_threads()
    compute = Compute(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        _exit_with_supervisor()
        compute.warm()
        with app.state.jobs_lock:
            app.state.jobs = JobManager(settings)
            metrics.count_jobs_with(app.state.jobs.store.count)
            if settings.api_runs_jobs:  # else `dpcal worker` processes run the jobs this process accepts
                app.state.jobs.start()
        yield
        compute.processes.close()
        with app.state.jobs_lock:
            app.state.jobs.stop()
            app.state.jobs = None

    app = FastAPI(
        lifespan=lifespan,
        title="dpcal",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
        license_info={"name": "Apache-2.0"},
    )
    app.state.settings = settings
    app.state.tokens = TokenVerifier(settings) if settings.auth == "oidc" else None
    app.state.rates = RateLimiter(settings.principal_rate, settings.principal_burst)
    app.state.compute = compute
    app.state.jobs_lock = threading.Lock()
    bodies = routes.request_bodies()
    problems.install(app, {path: body.variants for path, body in bodies.items()})
    docs.install(app)
    ui.install(app)
    routes.include(app, bodies)
    app.add_middleware(
        RequestGate, max_body_bytes=settings.max_body_bytes, documented=lambda: app.openapi().get("paths", {})
    )
    return app


def _exit_with_supervisor() -> None:
    """Under ``dpcal serve --workers N``: end this server process when the supervisor is gone (killed with SIGKILL,
    it cannot stop its workers; they would keep the port and the job lease)."""
    supervisor = os.environ.get(SUPERVISOR_VARIABLE)
    if supervisor and supervisor.isdigit() and int(supervisor) != os.getpid():
        exit_with_parent(int(supervisor))


app = create_app()
