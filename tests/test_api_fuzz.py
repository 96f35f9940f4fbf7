"""Schema-driven fuzzing of the service with schemathesis, against its own OpenAPI document.

Positive cases (valid per the schema) and negative ones (invalid per the schema) for every operation: no 5xx, every
answer conforms to the documented schema, status and content type, and schema-invalid input is rejected with 4xx.
"""

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from app.main import app

schema = schemathesis.openapi.from_asgi("/openapi.json", app)
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])

CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
    negative_data_rejection,
]


@schema.parametrize()
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_server_errors_and_documented_answers(case):
    case.call_and_validate(checks=CHECKS)
