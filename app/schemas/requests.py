"""Request bodies, generated from the registry: for every algorithm family a model whose ``params`` is that family's
parameter model, joined into a union discriminated by ``algorithm``. A new family appears in the documented request
schema with no edit here."""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce
from operator import or_
from typing import Annotated, Any, Literal

from pydantic import Field, create_model, model_validator

from accountants import registry
from accountants.family import AlgorithmFamily
from accountants.plan_accounting import ACCOUNTANT_NAMES

from .common import Strict

AccountantName: Any = Literal[ACCOUNTANT_NAMES]
"""The accountant a request names: the library's one list (:data:`accountants.plan_accounting.ACCOUNTANT_NAMES`)."""

_ACCOUNTANT_DOC = (
    "Which accountant answers: best (the minimum over every valid accountant; default), rdp (Rényi curve with the "
    "improved conversion), tight (exact Gaussian DP for trees of Gaussian releases; otherwise the certified "
    "privacy-loss-distribution accountant: pessimistic discretisation, an exponentially tilted FFT composition whose "
    "rounding, wrap-around and lost tail are bounded and added to δ, within ~1e-4 relative of the exact ε; it covers "
    "Gaussian, Laplace and pure-DP releases, Poisson sampling under either relation and fixed-size batches under "
    "replace-one), paper (the paper's own statement, reported together with what the rigorous accountant "
    "certifies)."
)
_DELTA_DOC = "Target δ of the (ε, δ) guarantee, in the open interval (0, 1)."
MAX_ORDERS = 200
MAX_ORDER_VALUE = 1e4


Orders = Annotated[
    list[Annotated[float, Field(gt=1, le=MAX_ORDER_VALUE)]] | None,
    Field(
        min_length=1,
        max_length=MAX_ORDERS,
        description=(
            f"Rényi orders α at which to report the curve and search for ε (at most {MAX_ORDERS}, each in "
            f"(1, {MAX_ORDER_VALUE:g}]). Default: a superset of dp_accounting's 156 orders."
        ),
        examples=[[1.5, 2, 4, 8, 16, 32, 64]],
    ),
]


def _title(family: AlgorithmFamily[Any]) -> str:
    return "".join(part.capitalize() for part in family.id.split("-"))


def _knob_placeholder(family: AlgorithmFamily[Any]) -> Any:
    """Before a calibration request is validated: its params as the library reads them when ``calibrate`` names an
    integer knob left out of them (:meth:`AlgorithmFamily.knob_placeholder`), so the natural request needs no dummy."""

    def fill(cls: type[Strict], data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("params"), dict) and isinstance(data.get("calibrate"), str):
            return data | {"params": family.knob_placeholder(data["params"], data["calibrate"])}
        return data

    return model_validator(mode="before")(fill)


def _variant(family: AlgorithmFamily[Any], kind: str, fields: dict[str, Any]) -> type[Strict]:
    algorithm: Any = Literal[family.id]  # one literal per registered family
    validators = {"knob_placeholder": _knob_placeholder(family)} if "calibrate" in fields else {}
    return create_model(
        f"{_title(family)}{kind}Request",
        __base__=Strict,
        __doc__=f"{kind} request for `{family.id}`: {family.title}.",
        __validators__=validators,
        algorithm=(
            algorithm,
            Field(description="Algorithm id (see GET /v1/algorithms).", examples=[family.id]),
        ),
        params=(family.params_model, Field(description=f"Hyperparameters of {family.id}.")),
        **fields,
    )


class RequestBody:
    """One endpoint's request body: a model per algorithm, joined into a union discriminated by ``algorithm``.

    ``fields`` are the fields besides algorithm and params, or a function giving them for a family."""

    def __init__(self, kind: str, fields: dict[str, Any] | Callable[[AlgorithmFamily[Any]], dict[str, Any]]) -> None:
        self.variants: dict[str, type[Strict]] = {
            f.id: _variant(f, kind, fields(f) if callable(fields) else fields) for f in registry.families()
        }
        models = list(self.variants.values())
        self.annotation: Any = (
            models[0] if len(models) == 1 else Annotated[reduce(or_, models), Field(discriminator="algorithm")]
        )


Checkpoints = Annotated[
    list[Annotated[int, Field(ge=1)]] | dict[Literal["every"], Annotated[int, Field(ge=1)]] | Literal["epochs"] | None,
    Field(
        description='ε over training: a list of step counts, {"every": k} (every k steps and the last), or '
        "\"epochs\" (each epoch's end, for algorithms with epochs); at most 1000. The answer's `curve` gives ε after "
        "each, computed in one pass (each Rényi curve evaluated once; the tight accountant at each checkpoint).",
        examples=["epochs", {"every": 1000}, [1000, 5000, 14063]],
    ),
]
STATEMENT_FIELD: Any = (
    bool,
    Field(
        False,
        description="Add `statement`: the answer in plain language (what is protected, the relation, the checkpoints "
        "covered, the sampling assumed and what a loader that samples otherwise means, ε and δ with the accountant, "
        "the conventions, a paper's claim beside the certified value).",
        examples=[False],
    ),
)

PRIVACY_FIELDS: dict[str, Any] = {
    "delta": (float, Field(gt=0, lt=1, description=_DELTA_DOC, examples=[1e-5])),
    "accountant": (AccountantName, Field("best", description=_ACCOUNTANT_DOC, examples=["best"])),
    "orders": (Orders, None),
    "refine_order": (
        bool,
        Field(
            True,
            description="Also optimise the Rényi order continuously near the best grid order (never increases ε). "
            "Set false to reproduce a grid-only accountant such as dp_accounting's.",
            examples=[True],
        ),
    ),
    "checkpoints": (Checkpoints, None),
    "statement": STATEMENT_FIELD,
}
CALIBRATE_FIELDS: dict[str, Any] = {
    "target_epsilon": (
        float,
        Field(
            gt=0,
            le=1e4,
            description="Target ε: the answer is the smallest noise whose ε is at most this.",
            examples=[3.0],
        ),
    ),
    "delta": PRIVACY_FIELDS["delta"],
    "accountant": PRIVACY_FIELDS["accountant"],
    "orders": (Orders, None),
    "calibrate": (
        str | None,
        Field(
            None,
            description="Which knob to calibrate: the algorithm's privacy knob (default; `calibrated_parameter`), or "
            "an integer hyperparameter the algorithm offers (dp-sgd: steps, epochs, batch_size): its largest value "
            "meeting the target at the noise given in params, with the value one beyond shown to exceed it "
            '(`beyond`). Leave the calibrated knob out of params (dp-sgd: `"calibrate": "epochs"` with neither '
            "steps nor epochs); a value given is replaced by the search.",
            examples=["noise_multiplier"],
        ),
    ),
    "statement": STATEMENT_FIELD,
}
UTILITY_FIELDS: dict[str, Any] = {}

JobCheck = Literal["utility", "privacy-audit"]


JOB_RUN_FIELDS: dict[str, Any] = {
    "target_epsilon": (
        float | None,
        Field(
            None,
            gt=0,
            le=1e4,
            examples=[1.0],
            description="Calibrate the noise for this ε at δ first (the noise in params is then ignored); "
            "without it, params must carry the noise.",
        ),
    ),
    "checks": (
        list[JobCheck],
        Field(
            ["utility", "privacy-audit"],
            min_length=1,
            max_length=2,
            examples=[["utility", "privacy-audit"]],
            description="utility: measured against the predicted bound; privacy-audit: an empirical lower "
            "bound on ε from a membership test on neighbouring datasets.",
        ),
    ),
    "trials": (
        int,
        Field(
            1000,
            ge=2,
            examples=[1000],
            description="Trials; each runs the algorithm once on D and once on its neighbour D′. At most "
            "DPCAL_JOB_MAX_TRIALS (default 200000), and the estimated running time at most DPCAL_JOB_MAX_SECONDS.",
        ),
    ),
    "target_power": (
        float | None,
        Field(
            None,
            gt=0,
            le=1,
            examples=[None],
            description="Size the audit instead of giving trials: the trials with which the audit is expected to "
            "certify ε ≥ target_power × the accounted ε (trials is then ignored; the answer's progress.total says "
            "how many). Refused (422) where that is beyond DPCAL_JOB_MAX_TRIALS even for a perfect test, or "
            "where the audit's power is not known before running (it is for an exact Gaussian transcript: dp-sgd "
            "with full batches): then the refusal says how many trials a perfect test would need (a lower bound).",
        ),
    ),
    "seed": (
        int,
        Field(
            0,
            ge=0,
            le=2**63 - 1,
            examples=[0],
            description="Seed of every random stream: the result depends on it and the request only.",
        ),
    ),
}
"""The fields of a verification-job request that every family shares (besides ``delta`` and ``problem``)."""


def job_fields(family: AlgorithmFamily[Any]) -> dict[str, Any]:
    """Fields of a verification-job request; ``problem`` is the family simulator's problem model."""
    problem_model: Any = family.simulator.problem_model if family.simulator is not None else dict[str, Any]
    return {
        "delta": PRIVACY_FIELDS["delta"],
        **JOB_RUN_FIELDS,
        "problem": (
            problem_model | None,
            Field(None, description="Settings of the synthetic problem (defaults for every one).", examples=[{}]),
        ),
    }
