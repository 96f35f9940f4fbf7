"""Schema-driven fuzzing of the service with schemathesis, against its own OpenAPI document.

Positive cases (valid per the schema) and negative ones (invalid per the schema) for every operation: no 5xx, every
answer conforms to the documented schema, status and content type, and schema-invalid input is rejected with 4xx.
"""

import atexit
import shutil
import tempfile

import pytest
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

from app.main import create_app
from app.settings import Settings

# jobs submitted by the fuzzer run for real: a private database and small limits keep them short
FOLDER = tempfile.mkdtemp(prefix="dpcal-fuzz-")
atexit.register(shutil.rmtree, FOLDER, ignore_errors=True)
app = create_app(
    Settings(
        jobs_db=f"{FOLDER}/jobs.sqlite3",
        job_workers=1,
        job_max_trials=512,
        job_max_seconds=0.05,
        job_max_queued=1000,
        request_timeout=600,  # a loaded machine must not turn a slow answer into a 504 (a 5xx for the checks)
    )
)
schema = schemathesis.openapi.from_asgi("/openapi.json", app)
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])

CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
    negative_data_rejection,
]


pytestmark = pytest.mark.slow


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_server_errors_and_documented_answers(case):
    case.call_and_validate(checks=CHECKS, timeout=600)  # generous: answers near δ = 1 take seconds
