"""The v1 endpoints. They validate (through the request models), call the registry, and shape the answer."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Request

from accountants import registry

from . import schemas
from .problems import PROBLEM_MEDIA_TYPE

PROBLEM = {"model": schemas.Problem, "content": {PROBLEM_MEDIA_TYPE: {}}}
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {**PROBLEM, "description": "Malformed JSON."},
    404: {**PROBLEM, "description": "Unknown algorithm (the problem lists the valid ids)."},
    413: {**PROBLEM, "description": "Request body too large."},
    422: {**PROBLEM, "description": "Invalid input: each offending field with what is allowed."},
}

MNIST = {"dataset_size": 60000, "batch_size": 256, "epochs": 60}
EXAMPLES = {
    "privacy": {
        "dp-sgd": {
            "summary": "DP-SGD, MNIST-like: ε at δ = 1e-5",
            "value": {"algorithm": "dp-sgd", "params": {**MNIST, "noise_multiplier": 1.1}, "delta": 1e-5},
        }
    },
    "calibrate": {
        "dp-sgd": {
            "summary": "DP-SGD, MNIST-like: noise for (3, 1e-5)",
            "value": {"algorithm": "dp-sgd", "params": MNIST, "target_epsilon": 3.0, "delta": 1e-5},
        }
    },
    "utility": {"dp-sgd": {"summary": "DP-SGD", "value": {"algorithm": "dp-sgd", "params": MNIST}}},
}


def request_bodies() -> dict[str, schemas.RequestBody]:
    """The request body of each POST endpoint, by path (built once from the registry)."""
    return {
        "/v1/privacy": schemas.RequestBody("Privacy", schemas.PRIVACY_FIELDS),
        "/v1/calibrate": schemas.RequestBody("Calibrate", schemas.CALIBRATE_FIELDS),
        "/v1/utility": schemas.RequestBody("Utility", schemas.UTILITY_FIELDS),
    }


def build_router(bodies: dict[str, schemas.RequestBody]) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["v1"])
    PrivacyRequest = bodies["/v1/privacy"].annotation
    CalibrateRequest = bodies["/v1/calibrate"].annotation
    UtilityRequest = bodies["/v1/utility"].annotation

    def family_for(request: Request, algorithm: str) -> registry.AlgorithmFamily:
        family = registry.get(algorithm)
        request.state.params_fields = tuple(family.params_model.model_fields)
        return family

    @router.get("/algorithms", response_model=list[schemas.AlgorithmSummary], summary="List the algorithms")
    def list_algorithms() -> list[dict[str, Any]]:
        """Every registered algorithm: id, title, source papers and theorems, accountants offered."""
        return [family.describe() for family in registry.families()]

    @router.get(
        "/algorithms/{algorithm_id}",
        response_model=schemas.AlgorithmDetail,
        responses={404: ERRORS[404]},
        summary="Describe one algorithm",
    )
    def describe_algorithm(
        algorithm_id: Annotated[str, Path(description="Algorithm id.", examples=["dp-sgd"])],
    ) -> dict[str, Any]:
        """Parameter schema (description, unit and paper symbol per field), assumptions, and every bound with its
        source and conditions."""
        return registry.get(algorithm_id).describe()

    @router.post(
        "/privacy",
        response_model=schemas.PrivacyResponse,
        responses={k: ERRORS[k] for k in (400, 404, 413, 422)},
        summary="ε at δ for given hyperparameters and noise",
    )
    def privacy(
        request: Request,
        body: Annotated[PrivacyRequest, Body(openapi_examples=EXAMPLES["privacy"])],  # type: ignore[valid-type]
    ) -> schemas.PrivacyResponse:
        """The certified ε at δ from every applicable accountant (the minimum, or the one requested), the Rényi
        curve, the noise in both units, and the conventions behind the number."""
        family = family_for(request, body.algorithm)
        report = family.privacy(body.params, body.delta, body.accountant, body.orders, body.refine_order)
        return schemas.PrivacyResponse.model_validate(report)

    @router.post(
        "/calibrate",
        response_model=schemas.CalibrationResponse,
        responses={k: ERRORS[k] for k in (400, 404, 413, 422)},
        summary="Smallest noise meeting (ε, δ)",
    )
    def calibrate(
        request: Request,
        body: Annotated[CalibrateRequest, Body(openapi_examples=EXAMPLES["calibrate"])],  # type: ignore[valid-type]
    ) -> schemas.CalibrationResponse:
        """The smallest noise (or other privacy knob, named in `calibrated_parameter`) whose ε at δ is at most the
        target, with the achieved ε, the Rényi curve, predicted utility and the paper's own calibration."""
        family = family_for(request, body.algorithm)
        report = family.calibrate(body.params, body.target_epsilon, body.delta, body.accountant, body.orders)
        return schemas.CalibrationResponse.model_validate(report)

    @router.post(
        "/utility",
        response_model=schemas.UtilityResponse,
        responses={k: ERRORS[k] for k in (400, 404, 413, 422)},
        summary="Predicted utility bounds",
    )
    def utility(
        request: Request,
        body: Annotated[UtilityRequest, Body(openapi_examples=EXAMPLES["utility"])],  # type: ignore[valid-type]
    ) -> schemas.UtilityResponse:
        """Each predicted utility bound: value, measure, the theorem it comes from, its assumptions and whether they
        hold (empty with a reason where the algorithm has none)."""
        family = family_for(request, body.algorithm)
        return schemas.UtilityResponse.model_validate(family.utility(body.params))

    return router
