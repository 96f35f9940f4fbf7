"""Compositions never fall over (issue 29): 640 seeded random event trees — every node type, nested, with valid and
invalid values, under both relations and every accountant — sent to ``/v1/compose`` and ``/v1/compose/calibrate`` of
the service (in-process, heavy answers in their own processes as in production): none answers 5xx, and most answer
200 (so the trees are not merely rejected). With the Schemathesis cases of ``test_api_fuzz.py`` (about 400 requests),
over 1,000 requests in all (issue 31)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections import Counter
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings

TREES = 640
pytestmark = pytest.mark.slow


def _number(rng: np.random.Generator, low: float, high: float, bad: float = 0.04) -> Any:
    """Log-uniform in [low, high], or now and then a value outside any range (or not a number)."""
    if rng.random() < bad:
        return [0.0, -1.0, 1e308, "two", None][int(rng.integers(5))]
    return float(10 ** rng.uniform(np.log10(low), np.log10(high)))


def _leaf(rng: np.random.Generator) -> dict[str, Any]:
    kind = ["gaussian", "laplace", "randomized-response", "pure", "zcdp"][int(rng.integers(5))]
    if kind == "gaussian":
        return {"type": kind, "noise_multiplier": _number(rng, 0.3, 50.0)}
    if kind == "laplace":
        return {"type": kind, "noise_multiplier": _number(rng, 0.2, 50.0)}
    if kind == "randomized-response":
        return {"type": kind, "noise_parameter": _number(rng, 0.05, 1.0), "num_buckets": int(rng.integers(1, 200))}
    if kind == "pure":
        return {"type": kind, "epsilon": _number(rng, 1e-4, 3.0)}
    return {"type": kind, "rho": _number(rng, 1e-5, 1.0)}


def _tree(rng: np.random.Generator, depth: int = 0) -> dict[str, Any]:
    roll = rng.random()
    if depth >= 3 or roll < 0.3:
        return _leaf(rng)
    if roll < 0.5:
        return {"type": "repeated", "count": int(rng.integers(1, 300)), "mechanism": _tree(rng, depth + 1)}
    if roll < 0.65:
        return {"type": "sequence", "mechanisms": [_tree(rng, depth + 1) for _ in range(int(rng.integers(1, 4)))]}
    if roll < 0.82:
        inner = _leaf(rng) if rng.random() < 0.8 else _tree(rng, depth + 1)
        return {"type": "poisson-sampled", "sampling_rate": _number(rng, 1e-3, 1.0), "mechanism": inner}
    if roll < 0.92:
        n = int(rng.integers(10, 10_000))
        return {
            "type": "sampled-without-replacement",
            "dataset_size": n,
            "sample_size": int(rng.integers(1, n + 2)),
            "mechanism": _leaf(rng),
        }
    algorithm = {"algorithm": "dp-sgd", "params": {"dataset_size": 1000, "batch_size": int(rng.integers(1, 200)),
                 "steps": int(rng.integers(1, 100)), "noise_multiplier": _number(rng, 0.5, 5.0)}}  # fmt: skip
    return {"type": "algorithm", **algorithm}


def _pointers(tree: Any, path: str = "") -> list[str]:
    """JSON Pointers to the numbers a calibration may move."""
    out = []
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key in ("noise_multiplier", "count", "sampling_rate", "epsilon", "rho") and isinstance(
                value, float | int
            ):
                out.append(f"{path}/{key}")
            elif isinstance(value, dict | list):
                out.extend(_pointers(value, f"{path}/{key}"))
    elif isinstance(tree, list):
        for k, value in enumerate(tree):
            out.extend(_pointers(value, f"{path}/{k}"))
    return out


def _request(rng: np.random.Generator) -> tuple[str, dict[str, Any]]:
    tree = _tree(rng)
    body: dict[str, Any] = {
        "mechanism": tree,
        "delta": float(10 ** rng.uniform(-14, -1)),
        "accountant": ["best", "rdp", "tight"][int(rng.integers(3))],
        "neighbouring": ["add-remove", "replace-one"][int(rng.integers(2))],
    }
    pointers = _pointers(tree)
    if pointers and rng.random() < 0.3:
        body |= {
            "target_epsilon": float(10 ** rng.uniform(-1, 1)),
            "calibrate": pointers[int(rng.integers(len(pointers)))],
        }
        return "/v1/compose/calibrate", body
    return "/v1/compose", body


def test_no_tree_answers_5xx():
    folder = tempfile.mkdtemp(prefix="dpcal-fuzz-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    settings = Settings(jobs_db=f"{folder}/jobs.sqlite3", request_timeout=600)
    rng = np.random.default_rng(2029)
    statuses: Counter[int] = Counter()
    with TestClient(create_app(settings)) as client:
        for _ in range(TREES):
            path, body = _request(rng)
            response = client.post(path, json=body)
            statuses[response.status_code] += 1
            assert response.status_code < 500, (path, body, response.text[:2000])
            if response.status_code == 200:
                answer = response.json()
                assert answer["epsilon"] >= 0.0
                lowers = [a["epsilon_lower"] for a in answer["accountants"] if a.get("epsilon_lower") is not None]
                assert all(0.0 <= low <= answer["epsilon"] * (1 + 1e-9) or low <= a for low, a in
                           zip(lowers, [x["epsilon"] for x in answer["accountants"] if x.get("epsilon_lower") is not None], strict=True))  # fmt: skip
    assert sum(statuses.values()) == TREES
    assert statuses[200] >= TREES // 2, statuses
