"""Project plumbing: settings from the environment, lint, the CI entry point, the Makefile and the Dockerfile."""

import subprocess
import sys
from pathlib import Path

import pytest

from app.settings import Settings, SettingsError

from ..support.server import ROOT, start_server


def test_settings_defaults_and_environment():
    assert Settings.from_env({}) == Settings()
    s = Settings.from_env(
        {"DPCAL_HOST": "0.0.0.0", "DPCAL_PORT": "9000", "DPCAL_LOG_LEVEL": "DEBUG", "DPCAL_MAX_BODY_BYTES": "2048"}
    )
    assert (s.host, s.port, s.log_level, s.max_body_bytes) == ("0.0.0.0", 9000, "debug", 2048)


@pytest.mark.parametrize(
    ("name", "value"), [("PORT", "0"), ("PORT", "http"), ("LOG_LEVEL", "loud"), ("MAX_BODY_BYTES", "1")]
)
def test_settings_reject_bad_values_naming_the_variable(name, value):
    with pytest.raises(SettingsError, match=f"DPCAL_{name}"):
        Settings.from_env({f"DPCAL_{name}": value})


def test_a_replaced_setting_stops_the_service_naming_its_successor():
    with pytest.raises(SettingsError, match="DPCAL_JOB_MAX_WORK is no longer read: set DPCAL_JOB_MAX_SECONDS"):
        Settings.from_env({"DPCAL_JOB_MAX_WORK": "2e8"})
    assert Settings.from_env({"DPCAL_JOB_MAX_SECONDS": "30"}).job_max_seconds == 30.0


@pytest.mark.parametrize("command", [["serve"], ["worker"], ["jobs", "list"]])
def test_commands_refuse_an_invalid_setting_naming_it(command):
    import os
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "app.cli", *command],
        env=os.environ | {"DPCAL_PORT": "0"},
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert run.returncode == 2 and run.stderr.startswith("dpcal: DPCAL_PORT must be an integer")
    assert "Traceback" not in run.stderr


def test_body_limit_setting_is_applied():
    import httpx

    process, url = start_server({"DPCAL_MAX_BODY_BYTES": "2048"})
    try:
        response = httpx.post(f"{url}/v1/utility", json={"algorithm": "dp-sgd", "params": {}, "x": "y" * 3000})
        assert response.status_code == 413 and "DPCAL_MAX_BODY_BYTES" in response.json()["detail"]
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_ruff_clean():
    for command in (["check", "."], ["format", "--check", "."]):
        result = subprocess.run([sys.executable, "-m", "ruff", *command], cwd=ROOT, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_clean():
    """mypy, as configured in pyproject.toml: strict on the library, normal on the service."""
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_type_ignores_give_their_reason():
    """Every `# type: ignore[code]` says on its line why the checker is wrong there."""
    import re

    for path in [*ROOT.glob("accountants/**/*.py"), *ROOT.glob("app/**/*.py")]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "type: ignore" in line:
                assert re.search(r"type: ignore\[[^\]]+\]\s+#\s*\S", line), f"{path.relative_to(ROOT)}:{number}"


def test_modules_stay_small_and_the_library_has_no_web_imports():
    """The design card's limits: modules under ~700 lines (functions are bounded by ruff's C901/PLR0915); the
    library imports nothing from the service or the web stack."""
    for path in [*ROOT.glob("accountants/**/*.py"), *ROOT.glob("app/**/*.py")]:
        lines = path.read_text(encoding="utf-8").count("\n")
        assert lines <= 700, f"{path.relative_to(ROOT)} has {lines} lines"
    for path in ROOT.glob("accountants/**/*.py"):
        text = path.read_text(encoding="utf-8")
        for web in ("import fastapi", "from fastapi", "import starlette", "from starlette", "from app", "import httpx"):
            assert web not in text, f"{path.relative_to(ROOT)}: {web}"


def test_functions_stay_short():
    """The design card's limits: functions under ~80 lines, and at most 60 in the algorithm families (ruff's
    statement and branch limits do not count lines)."""
    import ast

    for path in [*ROOT.glob("accountants/**/*.py"), *ROOT.glob("app/**/*.py")]:
        limit = 60 if "families" in path.relative_to(ROOT).parts else 80
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                assert length <= limit, f"{path.relative_to(ROOT)}:{node.lineno} {node.name} has {length} lines"


def test_every_family_stands_on_the_spine():
    """Each registered family is a PlannedFamily (its privacy and calibration are the spine's on its plan) and none
    writes its own privacy or calibration."""
    from accountants import registry
    from accountants.planned import PlannedFamily

    for family in registry.families():
        assert isinstance(family, PlannedFamily), family.id
    for path in ROOT.glob("accountants/families/**/*.py"):
        source = path.read_text()
        assert "def _privacy(" not in source and "def _calibrate(" not in source, path


def test_families_import_no_private_name_across_modules():
    """What one module of a family uses from another is public there (no underscore), so the seams stay visible."""
    import ast

    for path in ROOT.glob("accountants/families/**/*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                assert not private, f"{path.relative_to(ROOT)}: imports {private} from {node.module}"


def test_citations_name_papers_not_documents_outside_the_repository():
    """Code and docs cite the papers (authors, year, arXiv id, theorem), never the working notes they were built
    from (numbered seeds, sections of the spec, the shared folder), which a maintainer cannot open."""
    import re

    outside = re.compile(r"seed[ -]?00\d|spec §|shared/spec|accounting-anchors|errat(?:um|a) §", re.IGNORECASE)
    paths = [
        *ROOT.glob("accountants/**/*"),
        *ROOT.glob("app/**/*"),
        *ROOT.glob("tests/**/*.py"),
        *ROOT.glob("benchmarks/**/*.py"),
        *ROOT.glob("docs/**/*.md"),
        *ROOT.glob("openapi/*.json"),
        ROOT / "README.md",
    ]
    for path in paths:
        if (
            path.is_file()
            and path != Path(__file__).resolve()
            and path.suffix in (".py", ".md", ".toml", ".json", ".html", ".js")
        ):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                assert not outside.search(line), f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}"


def test_ci_runs_the_readme_test_command():
    script = (ROOT / ".ci" / "run").read_text()
    assert script.strip().splitlines()[-1] == "make test"
    assert (ROOT / ".ci" / "run").stat().st_mode & 0o111


def test_makefile_targets():
    makefile = (ROOT / "Makefile").read_text()
    assert "\nserve: " in makefile and "dpcal serve" in makefile
    assert "\ntest: " in makefile and "pytest" in makefile and ".[test]" in makefile
    assert "-m venv" in makefile


def test_dockerfile_essentials():
    # no Docker engine runs here: check what the image must have (the build itself is not exercised by CI)
    docker = (ROOT / "Dockerfile").read_text()
    assert docker.startswith("#") and "python:3.11-slim@sha256:" in docker  # pinning: tests/service/test_deploy.py
    assert "\nUSER dpcal" in docker and "useradd" in docker
    assert "EXPOSE 8000" in docker and "HEALTHCHECK" in docker and "/healthz" in docker
    assert 'CMD ["dpcal", "serve"]' in docker and "pip install --no-deps --no-build-isolation ." in docker
    for path in ("pyproject.toml", "README.md", "accountants", "app"):
        assert path in docker
