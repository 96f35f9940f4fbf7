"""The README works as written: it starts with the two commands, and every other shell and Python block runs as
shown against a fresh live server (its address put in place of http://127.0.0.1:8000); the answers shown are the
service's current ones."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import httpx
import pytest

from ..support.server import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, re.DOTALL)


def test_readme_starts_with_the_two_commands():
    _, first = BLOCKS[0]
    assert README.startswith("# dpcal\n\n```bash\nmake serve")
    commands = [line.split("#")[0].strip() for line in first.strip().splitlines()]
    assert commands == ["make serve", "make test"]


def curl_example() -> list[str]:
    block = next(code for language, code in BLOCKS if language == "bash" and "curl" in code)
    return shlex.split(block.replace("\\\n", " "))


PLD_REL = 1e-7
"""Relative agreement of a PLD answer across machines (the FFT's rounding depends on the CPU's SIMD kernels)."""


def test_curl_example(live_server):
    argv = curl_example()
    url = argv[argv.index("-X") + 2].replace("http://127.0.0.1:8000", live_server)
    body = json.loads(argv[argv.index("-d") + 1])
    answer = httpx.post(url, json=body, timeout=60).json()
    assert answer["epsilon"] <= body["target_epsilon"]
    shown = json.loads(next(code for language, code in BLOCKS if language == "json"))
    assert answer["accountant"] == shown["accountant"]
    for key in ("noise_multiplier", "epsilon", "optimal_order"):
        # the README shows the current answer; PLD values move by up to ~1e-8 relative across CPUs (FFT and summation
        # rounding follow the SIMD kernels numpy picks), far inside the PLD's own certified rounding margin
        assert answer[key] == pytest.approx(shown[key], rel=PLD_REL), key
    assert answer["conventions"] == shown["conventions"]
    if shutil.which("curl"):
        argv[argv.index("-X") + 2] = url
        output = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
        assert json.loads(output)["noise_multiplier"] == answer["noise_multiplier"]


def test_python_example(live_server, capsys):
    code = next(code for language, code in BLOCKS if language == "python")
    exec(compile(code.replace("http://127.0.0.1:8000", live_server), "README.md", "exec"), {})
    first, curve = capsys.readouterr().out.splitlines()
    noise, epsilon, steps = first.split()
    assert "steps=10" in curve and "steps=50" in curve  # the composed pipeline's ε after 10 and 50 releases
    shown = json.loads(next(code for language, code in BLOCKS if language == "json"))
    assert float(epsilon) <= 3.0 and int(steps) == 14063
    assert float(noise) == pytest.approx(shown["noise_multiplier"], rel=PLD_REL)


def runnable_blocks() -> list[tuple[str, str]]:
    """Every bash and python block but the first (`make serve` serves forever; `make test` is this suite)."""
    return [(language, code) for language, code in BLOCKS[1:] if language in ("bash", "python")]


def as_run_here(code: str, url: str) -> str:
    code = code.replace("http://127.0.0.1:8000", url)
    if not (ROOT / ".venv" / "bin" / "dpcal").exists():  # a suite run from another environment
        code = code.replace(".venv/bin/dpcal", f"{sys.executable} -m app.cli").replace(
            ".venv/bin/python", sys.executable
        )
    return code


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(runnable_blocks())))
def test_every_block_runs_as_written(live_server, index):
    language, code = runnable_blocks()[index]
    code = as_run_here(code, live_server)
    venv_python = ROOT / ".venv" / "bin" / "python"
    python = str(venv_python) if venv_python.exists() else sys.executable
    argv = ["bash", "-euo", "pipefail", "-c", code] if language == "bash" else [python, "-c", code]
    result = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=600, check=False, env=os.environ)
    assert result.returncode == 0, f"{code}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr
    if "dpcal verify" in code:  # the output shown after it is what it prints, but for the job id
        shown = next(c for lang, c in BLOCKS if lang == "text" and c.startswith("job "))
        printed = re.sub(r"^job \w+:", "job …:", result.stdout)
        assert printed.strip() == shown.strip()


def test_the_blocks_cover_the_cli_and_the_client():
    code = "\n".join(c for _, c in runnable_blocks())
    for needle in ("curl ", ".venv/bin/dpcal calibrate", ".venv/bin/dpcal verify", "DpcalClient", "DPCAL_URL="):
        assert needle in code, needle
