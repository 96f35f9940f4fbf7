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
    assert services["api-1"]["build"]["dockerfile"] == "Dockerfile"


def test_no_secret_in_the_compose_file_and_the_scheduler_is_not_published():
    """The PostgreSQL password comes from the environment (compose refuses to start without it); the Dask scheduler
    (it runs pickled code) publishes no port; the APIs publish on loopback only and authenticate by default."""
    text = (ROOT / "deploy" / "compose.yaml").read_text()
    services = yaml.safe_load(text)["services"]
    assert (
        services["postgres"]["environment"]["POSTGRES_PASSWORD"]
        == "${DPCAL_POSTGRES_PASSWORD:?set DPCAL_POSTGRES_PASSWORD}"
    )
    database = services["api-1"]["environment"]["DPCAL_JOBS_DB"]
    assert "${DPCAL_POSTGRES_PASSWORD:?" in database and "dpcal:dpcal@" not in text
    assert "ports" not in services["dask-scheduler"] and "ports" not in services["dask-worker"]
    assert all(port.startswith("127.0.0.1:") for name in ("api-1", "api-2") for port in services[name]["ports"])
    assert services["api-1"]["environment"]["DPCAL_AUTH"] == "${DPCAL_AUTH:-api-key}"


def test_the_proxy_bounds_every_phase_of_a_request_around_the_services_own_limits():
    """deploy/nginx.conf: headers and bodies no slower than the service allows, bodies at least as large (so the
    service's own 413 problem is what a client sees), answers waited for longer than the request budget (so an answer
    over budget is the service's 504 naming it), and the proxy published on loopback in front of both APIs."""
    import re

    from app.gate import BODY_SECONDS
    from app.settings import Settings

    conf = (ROOT / "deploy" / "nginx.conf").read_text()

    def seconds(name: str) -> float:
        return float(re.search(rf"^\s*{name}\s+(\d+)s;", conf, re.M).group(1))

    defaults = Settings()
    assert seconds("client_header_timeout") <= defaults.header_timeout
    assert seconds("client_body_timeout") <= BODY_SECONDS
    assert seconds("proxy_read_timeout") > defaults.request_timeout
    size = re.search(r"client_max_body_size\s+(\d+)m;", conf)
    assert size and int(size.group(1)) * 2**20 >= defaults.max_body_bytes
    assert "server api-1:8000" in conf and "server api-2:8000" in conf and "proxy_next_upstream off" in conf
    services = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())["services"]
    assert services["proxy"]["ports"] == ["127.0.0.1:8000:8000"]
    assert "./nginx.conf:/etc/nginx/nginx.conf:ro" in services["proxy"]["volumes"]


def test_the_image_installs_only_from_the_lock_file_and_a_pinned_base():
    """The Dockerfile's base image is pinned by digest; it installs deploy/requirements.lock with --require-hashes
    (every line one exact version with its hashes) before dpcal itself with --no-deps; and the lock satisfies every
    runtime requirement of pyproject.toml with the extras the image serves (a lock left behind a new dependency, or
    a pin outside a new bound, fails here)."""
    import re
    import tomllib

    from packaging.requirements import Requirement

    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim@sha256:[0-9a-f]{64}$", dockerfile, re.M)
    assert re.search(r"^FROM \$\{PYTHON_IMAGE\}$", dockerfile, re.M)
    assert "pip install --require-hashes --no-deps -r requirements.lock" in dockerfile
    assert "pip install --no-deps --no-build-isolation ." in dockerfile and "pip check" in dockerfile
    lock = (ROOT / "deploy" / "requirements.lock").read_text()
    entries = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+) \\\n((?:\s+--hash=sha256:[0-9a-f]{64}(?: \\)?\n)+)", lock, re.M)
    pins = {name.lower().replace("_", "-"): version for name, version, _ in entries}
    assert len(pins) == len(re.findall(r"^\S+==", lock, re.M)) > 20  # every pin carries hashes
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["postgres"],
              *project["optional-dependencies"]["dask"], "setuptools>=77"]  # fmt: skip
    for line in wanted:
        requirement = Requirement(line)
        name = requirement.name.lower().replace("_", "-")
        assert name in pins, f"{name} is not in deploy/requirements.lock: run make lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (name, pins[name], str(requirement))
