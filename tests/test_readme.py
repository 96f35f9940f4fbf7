"""The README's examples run: its curl command (through curl when present, and always re-issued with httpx) and
its Python client example, against a live server; and it starts with the two commands."""

import json
import re
import shlex
import shutil
import subprocess

import httpx
import pytest

from .conftest import ROOT

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


def test_curl_example(live_server):
    argv = curl_example()
    url = argv[argv.index("-X") + 2].replace("http://127.0.0.1:8000", live_server)
    body = json.loads(argv[argv.index("-d") + 1])
    answer = httpx.post(url, json=body, timeout=60).json()
    assert answer["epsilon"] <= body["target_epsilon"]
    shown = json.loads(next(code for language, code in BLOCKS if language == "json"))
    assert answer["accountant"] == shown["accountant"]
    for key in ("noise_multiplier", "epsilon", "optimal_order"):
        assert answer[key] == pytest.approx(shown[key], rel=1e-9), key  # the README shows the current answer
    assert answer["conventions"] == shown["conventions"]
    if shutil.which("curl"):
        argv[argv.index("-X") + 2] = url
        output = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
        assert json.loads(output)["noise_multiplier"] == answer["noise_multiplier"]


def test_python_example(live_server, capsys):
    code = next(code for language, code in BLOCKS if language == "python")
    exec(compile(code.replace("http://127.0.0.1:8000", live_server), "README.md", "exec"), {})
    noise, epsilon, steps = capsys.readouterr().out.split()
    shown = json.loads(next(code for language, code in BLOCKS if language == "json"))
    assert float(epsilon) <= 3.0 and int(steps) == 14063
    assert float(noise) == pytest.approx(shown["noise_multiplier"], rel=1e-9)
