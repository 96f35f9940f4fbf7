"""``POST /v1/privacy``, ``/v1/calibrate`` and ``/v1/utility``: one route per operation of a family, its body the
union of every family's request (generated from the registry when the app is built)."""

# no `from __future__ import annotations`: FastAPI reads the body type of the endpoints built here at run time
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request

from accountants import registry
from accountants.family import Operation

from ..deps import ComputeDep, in_params
from ..schemas import CalibrationResponse, Out, PrivacyResponse, RequestBody, UtilityResponse
from .examples import request_examples, response_examples
from .responses import POST_ERRORS, errors


@dataclass(frozen=True)
class Endpoint:
    """One accounting endpoint: the family operation it answers, with which arguments, in which response model."""

    operation: Operation
    response: type[Out]
    summary: str
    description: str
    arguments: Callable[[Any], tuple[Any, ...]]
    """The family method's arguments, from the validated body."""
    errors: dict[int | str, dict[str, Any]]

    @property
    def path(self) -> str:
        return f"/{self.operation.value}"


ENDPOINTS = (
    Endpoint(
        Operation.PRIVACY,
        PrivacyResponse,
        "ε at δ for given hyperparameters and noise",
        """The certified ε at δ from every applicable accountant (the minimum, or the one requested), the Rényi
        curve, the noise in both units, and the conventions behind the number. Heavy accountants (a PLD) have a
        time budget; `accountant: "rdp"` is always answered at once.""",
        lambda body: (
            body.params,
            body.delta,
            body.accountant,
            body.orders,
            body.refine_order,
            body.checkpoints,
            body.statement,
        ),
        POST_ERRORS,
    ),
    Endpoint(
        Operation.CALIBRATE,
        CalibrationResponse,
        "Smallest noise meeting (ε, δ)",
        """The smallest noise (or other privacy knob, named in `calibrated_parameter`) whose ε at δ is at most the
        target, with the achieved ε, the Rényi curve, predicted utility and the paper's own calibration.""",
        lambda body: (
            body.params,
            body.target_epsilon,
            body.delta,
            body.accountant,
            body.orders,
            body.calibrate,
            body.statement,
        ),
        POST_ERRORS,
    ),
    Endpoint(
        Operation.UTILITY,
        UtilityResponse,
        "Predicted utility bounds",
        """Each predicted utility bound: value, measure, the theorem it comes from, its assumptions and whether they
        hold (empty with a reason where the algorithm has none).""",
        lambda body: (body.params,),
        errors(400, 404, 413, 415, 422),
    ),
)


def build_router(bodies: dict[str, RequestBody]) -> APIRouter:
    """The accounting routes for the request bodies of the registered families (by path)."""
    router = APIRouter(prefix="/v1", tags=["v1"])
    for endpoint in ENDPOINTS:
        path = f"/v1{endpoint.path}"
        router.add_api_route(
            endpoint.path,
            _answer(endpoint, bodies[path].annotation),
            methods=["POST"],
            name=endpoint.operation.value,
            response_model=endpoint.response,
            responses=endpoint.errors | response_examples(path),
            summary=endpoint.summary,
            description=inspect.cleandoc(endpoint.description),
        )
    return router


def _answer(endpoint: Endpoint, body_type: Any) -> Callable[..., Any]:
    examples = request_examples(endpoint.operation)

    async def answer(
        request: Request,
        compute: ComputeDep,
        body: Annotated[body_type, Body(openapi_examples=examples)],
    ) -> Any:
        family = registry.get(body.algorithm)
        with in_params(family):
            report = await compute.answer(request, family, endpoint.operation, body, endpoint.arguments(body))
        return endpoint.response.model_validate(report)

    return answer
