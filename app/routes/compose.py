"""``POST /v1/compose`` and ``/v1/compose/calibrate``: any composition of mechanisms, as a JSON event tree."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from accountants.family import Operation
from accountants.pipeline import compose as composition

from ..deps import ComputeDep
from ..schemas import CalibrationResponse, ComposeCalibrateRequest, ComposeRequest, PrivacyResponse
from .responses import POST_ERRORS

router = APIRouter(prefix="/v1", tags=["v1"])


def _composition(body: ComposeRequest) -> composition.Composition:
    return composition.Composition(
        mechanism=body.mechanism,
        delta=body.delta,
        accountant=body.accountant,
        neighbouring=body.neighbouring,
        orders=None if body.orders is None else tuple(body.orders),
        refine=body.refine_order,
        checkpoints=body.checkpoints,
        statement=body.statement,
    )


@router.post(
    "/compose",
    response_model=PrivacyResponse,
    responses=POST_ERRORS,
    summary="ε at δ of any composition of mechanisms",
)
async def compose(request: Request, compute: ComputeDep, body: ComposeRequest) -> Any:
    """The certified ε at δ of a mechanism given as an event tree (Gaussian, Laplace, randomized response, pure,
    zCDP, Poisson-sampled, sampled without replacement, repeated, sequences, and any algorithm's mechanism plan),
    from every accountant that reads it (an accountant that cannot gives its reason; `best` uses the others), with
    the Rényi curve, the conventions, ε over training (`checkpoints`) and the statement. Heavy answers (a PLD) have
    the request's time budget; `accountant: "rdp"` is answered at once."""
    c = _composition(body)
    report = await compute.call(request, "compose", body, lambda: composition.cost(c), composition.privacy, (c,))
    return PrivacyResponse.model_validate(report)


@router.post(
    "/compose/calibrate",
    response_model=CalibrationResponse,
    responses=POST_ERRORS,
    summary="Calibrate one number of a composition for (ε, δ)",
)
async def compose_calibrate(request: Request, compute: ComputeDep, body: ComposeCalibrateRequest) -> Any:
    """The value at the JSON Pointer `calibrate` (into `mechanism`) that meets `target_epsilon` at δ: the smallest
    noise, or the largest count, sampling rate, size or ε; integers stay integers and the value one beyond is shown
    to exceed the target (`beyond`). The answer holds the full privacy answer at that value."""
    c = _composition(body)
    report = await compute.call(
        request,
        "compose/calibrate",
        body,
        lambda: composition.cost(c, Operation.CALIBRATE),
        composition.calibrate,
        (c, body.target_epsilon, body.calibrate, body.bounds),
    )
    return CalibrationResponse.model_validate(report)
