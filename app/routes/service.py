"""``GET /healthz``: the service is up."""

from __future__ import annotations

from fastapi import APIRouter

from .. import __version__
from ..schemas import Health

router = APIRouter(tags=["service"])


@router.get("/healthz", response_model=Health, summary="Liveness")
def healthz() -> Health:
    """The service is up; its version."""
    return Health(status="ok", version=__version__)
