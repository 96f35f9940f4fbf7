"""What the routes depend on: the app's compute and job manager (set up by :func:`app.main.create_app`), who is
asking (:mod:`app.auth`) and the location of the library's parameter errors in a request body."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from accountants.errors import ParameterError
from accountants.family import AlgorithmFamily

from . import observability
from .auth import ANONYMOUS, Principal, Scope, bearer_token, digest, unauthorized
from .compute import Compute
from .jobs.manager import JobManager
from .oidc import TokenVerifier
from .problems import params_location


async def compute(request: Request) -> Compute:
    """The app's :class:`Compute` (async: a sync dependency would cost a thread hop per request)."""
    answers: Compute = request.app.state.compute
    return answers


async def job_manager(request: Request) -> JobManager:
    """The job manager, started with the app (or on first use where the host skips lifespan events). Async: no
    thread hop, so /healthz does not queue behind the thread pool (the lock is only contended while the app starts or
    stops)."""
    state = request.app.state
    with state.jobs_lock:
        if getattr(state, "jobs", None) is None:
            state.jobs = JobManager(state.settings)
            if state.settings.api_runs_jobs:
                state.jobs.start()
        manager: JobManager = state.jobs
        return manager


async def principal(request: Request) -> Principal:
    """Who is asking (:mod:`app.auth`): anonymous under ``DPCAL_AUTH=none``, else the holder of the bearer key (401
    without a live one), or under ``DPCAL_AUTH=oidc`` the subject of the bearer token (:mod:`app.oidc`)."""
    mode = request.app.state.settings.auth
    if mode == "none":
        return ANONYMOUS
    token = bearer_token(request.headers.get("authorization"))
    if mode == "oidc":
        if token is None:
            raise unauthorized("no bearer token", how="an access token from the issuer")
        verifier: TokenVerifier = request.app.state.tokens
        found = await run_in_threadpool(verifier.principal, token)
    else:
        if token is None:
            raise unauthorized("no bearer token")
        manager = await job_manager(request)
        holder = await run_in_threadpool(manager.store.key_holder, digest(token))
        if holder is None:
            raise unauthorized("unknown or revoked key")
        found = Principal(holder[0], Scope(holder[1]))
    observability.note_principal(found.name)
    request.state.requester = f"principal {found.name!r}"  # for its request rate and its share of heavy work
    request.app.state.rates.take(request.state.requester)
    return found


async def accounting_principal(request: Request) -> None:
    """The accounting endpoints: open, or (``DPCAL_AUTH_ACCOUNTING=required``) for any principal with a key. Under
    ``DPCAL_AUTH`` other than none the requester (the key's principal, else the client's address) is noted for its
    share of the heavy computations (``request.state.requester``) and its request rate (:mod:`app.rates`)."""
    settings = request.app.state.settings
    if settings.auth == "none":
        return
    if settings.auth_accounting == "required" or request.headers.get("authorization"):
        await principal(request)  # notes request.state.requester
    else:
        request.state.requester = f"client {request.client.host if request.client else 'unknown'}"
        request.app.state.rates.take(request.state.requester)


ComputeDep = Annotated[Compute, Depends(compute)]
JobManagerDep = Annotated[JobManager, Depends(job_manager)]
PrincipalDep = Annotated[Principal, Depends(principal)]


@contextmanager
def in_params(family: AlgorithmFamily[Any]) -> Iterator[None]:
    """Errors the library raises about a hyperparameter name it by itself; in the request body it sits under
    ``params``."""
    try:
        yield
    except ParameterError as error:
        raise type(error)(params_location(error.issues, family.params_model.model_fields)) from None
