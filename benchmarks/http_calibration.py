"""A tight calibration over HTTP against the same calibration in process: what the service adds to heavy work.

The MNIST run (q = 256/60000, 60 epochs, δ = 1e-5) calibrated to ε ≈ 1, 3, 8 with ``accountant: "tight"``: each
repetition takes a fresh target (ε·(1 + 1e-6·i), so the service's answer cache does not help) and runs, alternating,
``POST /v1/calibrate`` on a one-worker server on loopback (computed by its warm heavy-computation process) and the
library's ``registry.get("dp-sgd").calibrate`` in this process. Both are warm: this process has run the calibration
once first, and the server has answered one heavy request. Medians of ``--repeat`` (default 15) and their ratio.

Run: ``.venv/bin/python benchmarks/http_calibration.py``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import httpx
from load import MNIST, served

from accountants import registry

DELTA = 1e-5
TARGETS = (1.0, 3.0, 8.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    family = registry.get("dp-sgd")
    family.calibrate(MNIST, 2.0, DELTA, accountant="tight")  # this process warm, as a running service is
    with served(workers=1, max_heavy=1) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:

        def over_http(target: float) -> float:
            body = {"algorithm": "dp-sgd", "params": MNIST, "target_epsilon": target, "delta": DELTA}
            answer = http.post("/v1/calibrate", json=body | {"accountant": "tight"})
            answer.raise_for_status()
            return float(answer.json()["noise_multiplier"])

        def in_process(target: float) -> float:
            return float(family.calibrate(MNIST, target, DELTA, accountant="tight").noise_multiplier or 0.0)

        over_http(2.0 * (1 + 1e-7))  # the server's first heavy request
        print("| target ε | in process | over HTTP | ratio | σ |")
        print("|---|---|---|---|---|")
        for target in TARGETS:
            times: dict[str, list[float]] = {"library": [], "http": []}
            sigma = 0.0
            for i in range(args.repeat):
                fresh = target * (1 + 1e-6 * (i + 1))
                for key, call in (("library", in_process), ("http", over_http)):
                    start = time.perf_counter()
                    sigma = call(fresh)
                    times[key].append(time.perf_counter() - start)
            library, http_time = statistics.median(times["library"]), statistics.median(times["http"])
            row = f"{library * 1e3:.0f} ms | {http_time * 1e3:.0f} ms | {http_time / library:.2f}"
            print(f"| {target:g} | {row} | {sigma:.5f} |")


if __name__ == "__main__":
    main()
