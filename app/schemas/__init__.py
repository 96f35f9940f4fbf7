"""The HTTP contract as pydantic models, published as OpenAPI.

``requests`` (bodies generated from the registry), ``answers`` (privacy, calibration and utility answers, field for
field the library's reports), ``algorithms`` (what ``/v1/algorithms`` describes), ``jobs`` (verification jobs) and
``common`` (base models, health, problem details).
"""

from .algorithms import AlgorithmDetail, AlgorithmSummary, BoundOut, VerificationInfo
from .answers import (
    AccountantOut,
    AssumptionOut,
    BoundResultOut,
    CalibrationResponse,
    ConventionsOut,
    NoiseOut,
    PaperOut,
    PrivacyResponse,
    RdpCurveOut,
    RecommendationOut,
    ReleaseOut,
    UtilityBoundOut,
    UtilityResponse,
)
from .common import Health, Out, Problem, ProblemField, Strict
from .compose import ComposeCalibrateRequest, ComposeRequest
from .jobs import JobAccounting, JobList, JobOut, JobStatus, JobSummary, JobSummaryList, Progress
from .requests import (
    CALIBRATE_FIELDS,
    PRIVACY_FIELDS,
    UTILITY_FIELDS,
    AccountantName,
    JobCheck,
    RequestBody,
    job_fields,
)

__all__ = [
    "CALIBRATE_FIELDS",
    "PRIVACY_FIELDS",
    "UTILITY_FIELDS",
    "AccountantName",
    "AccountantOut",
    "AlgorithmDetail",
    "AlgorithmSummary",
    "AssumptionOut",
    "BoundOut",
    "BoundResultOut",
    "CalibrationResponse",
    "ComposeCalibrateRequest",
    "ComposeRequest",
    "ConventionsOut",
    "Health",
    "JobAccounting",
    "JobCheck",
    "JobList",
    "JobOut",
    "JobStatus",
    "JobSummary",
    "JobSummaryList",
    "NoiseOut",
    "Out",
    "PaperOut",
    "PrivacyResponse",
    "Problem",
    "ProblemField",
    "Progress",
    "RdpCurveOut",
    "RecommendationOut",
    "ReleaseOut",
    "RequestBody",
    "Strict",
    "UtilityBoundOut",
    "UtilityResponse",
    "VerificationInfo",
    "job_fields",
]
