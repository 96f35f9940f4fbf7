"""A PLD build does not depend on BLAS threads: the same build with OPENBLAS_NUM_THREADS unset (numpy's default,
one thread per core) and set to 1, on an idle and on a busy host (two CPU hogs beside it), medians of 5.

Before dpcal's PLD code stopped calling BLAS level-1 routines, one `np.dot` of 70k doubles took 11.7 ms instead of
11 µs on a busy host and a 0.12 s build took 0.9–1.4 s.

    .venv/bin/python benchmarks/blas.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = """
import json, statistics, time
from accountants.events import GaussianEvent, PoissonSampledEvent, SelfComposedEvent
from accountants.pld import PldAccountant
event = SelfComposedEvent(PoissonSampledEvent(256 / 60000, GaussianEvent(1.1)), 14062)
times = []
for _ in range(5):
    start = time.perf_counter()
    PldAccountant().epsilon(event, 1e-5)
    times.append(time.perf_counter() - start)
print(json.dumps(statistics.median(times)))
"""
BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def build_seconds(threads: str | None) -> float:
    env = {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES}
    if threads is not None:
        env |= {name: threads for name in BLAS_VARIABLES}
    output = subprocess.run(
        [sys.executable, "-c", BUILD], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    return float(json.loads(output))


def main() -> None:
    print(f"{'host':6} {'BLAS threads':14} {'PLD build + query (a1)':>24}")
    for host in ("idle", "busy"):
        hogs = [] if host == "idle" else [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
        try:
            unset, one = build_seconds(None), build_seconds("1")
        finally:
            for hog in hogs:
                hog.kill()
        print(f"{host:6} {'default':14} {1000 * unset:21.0f} ms")
        print(f"{host:6} {'1':14} {1000 * one:21.0f} ms   ratio default/1: {unset / one:.2f}")


if __name__ == "__main__":
    main()
