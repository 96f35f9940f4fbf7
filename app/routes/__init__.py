"""The routes of the service, one module per resource: ``accounting`` (privacy, calibration, utility),
``compose`` (compositions), ``algorithms``, ``jobs`` and ``service`` (health); ``examples`` and ``responses`` hold
what the OpenAPI document shows of them.

Request bodies are unions over the registered families, so the routes that take one are built with the app
(:func:`include`), after every family is registered.
"""

from __future__ import annotations

from fastapi import Depends, FastAPI

from ..deps import accounting_principal
from ..schemas import CALIBRATE_FIELDS, PRIVACY_FIELDS, UTILITY_FIELDS, RequestBody, job_fields
from . import accounting, algorithms, compose, jobs, service


def request_bodies() -> dict[str, RequestBody]:
    """The request body of each POST endpoint, by path (built from the registry)."""
    return {
        "/v1/privacy": RequestBody("Privacy", PRIVACY_FIELDS),
        "/v1/calibrate": RequestBody("Calibrate", CALIBRATE_FIELDS),
        "/v1/utility": RequestBody("Utility", UTILITY_FIELDS),
        "/v1/jobs": RequestBody("Job", job_fields),
    }


def include(app: FastAPI, bodies: dict[str, RequestBody]) -> None:
    """Every route of the service, in the order the OpenAPI document lists them."""
    accounting_access = [Depends(accounting_principal)]  # open, or a key required (DPCAL_AUTH_ACCOUNTING)
    app.include_router(algorithms.router, dependencies=accounting_access)
    app.include_router(accounting.build_router(bodies), dependencies=accounting_access)
    app.include_router(compose.router, dependencies=accounting_access)
    app.include_router(jobs.build_router(bodies["/v1/jobs"]))
    app.include_router(service.router)
