"""``GET /v1/algorithms`` and ``GET /v1/algorithms/{id}``: what is supported, each algorithm described."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from accountants import registry

from ..schemas import AlgorithmDetail, AlgorithmSummary
from .responses import errors

router = APIRouter(prefix="/v1", tags=["v1"])


@router.get("/algorithms", response_model=list[AlgorithmSummary], summary="List the algorithms")
def list_algorithms() -> list[AlgorithmSummary]:
    """Every registered algorithm: id, title, source papers and theorems, accountants offered."""
    return [AlgorithmSummary.from_family(family) for family in registry.families()]


@router.get(
    "/algorithms/{algorithm_id}",
    response_model=AlgorithmDetail,
    responses=errors(404, 422),
    summary="Describe one algorithm",
)
def describe_algorithm(
    algorithm_id: Annotated[str, Path(description="Algorithm id.", examples=["dp-sgd"])],
) -> AlgorithmDetail:
    """Parameter schema (description, unit and paper symbol per field), assumptions, and every bound with its
    source and conditions."""
    return AlgorithmDetail.from_family(registry.get(algorithm_id))
