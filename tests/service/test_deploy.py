"""deploy/compose.yaml stays a working description of the multi-host deployment: the services it promises, the API
replicas accept-only, the workers on Dask, one PostgreSQL for all, and the image built with the extras they need."""

from __future__ import annotations

from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")  # PyYAML comes with the test extra (through dask)

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_compose_file_describes_apis_workers_postgres_and_dask():
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "api-1", "api-2", "worker-1", "worker-2", "dask-scheduler", "dask-worker"} <= set(services)
    for name in ("api-1", "api-2"):
        assert services[name]["environment"]["DPCAL_EMBEDDED_WORKERS"] == "0"
        assert services[name]["command"] == ["dpcal", "serve"]
    for name in ("worker-1", "worker-2"):
        assert services[name]["command"] == ["dpcal", "worker"]
        assert services[name]["environment"]["DPCAL_JOB_BACKEND"] == "dask"
    databases = {services[n]["environment"]["DPCAL_JOBS_DB"] for n in ("api-1", "api-2", "worker-1", "worker-2")}
    assert len(databases) == 1 and databases.pop().startswith("postgresql://")
    assert services["api-1"]["build"]["args"]["EXTRAS"] == "postgres,dask"
    assert "ARG EXTRAS" in (ROOT / "Dockerfile").read_text()
