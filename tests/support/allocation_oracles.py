"""Random allocation's seeded configurations and the authors' own bounds for them (pld-accounting 2.0).

Configurations (issue 32): σ ∈ [0.5, 5] and t ∈ [10, 10⁴] log-uniform, k ∈ {1, 2, 10}, E ∈ {1, 10} epochs (a fresh
allocation each), δ ∈ [1e-10, 1e-4] log-uniform. For each, pld-accounting 2.0 (the implementation of "Efficient
privacy loss accounting for subsampling and random allocation", arXiv 2602.17284, by its authors) gives an upper and
a lower bound on the exact ε at its default accuracy (``gaussian_allocation_epsilon_range``). It needs numba, which
the project does not install: the suite reads the values from ``tests/data/allocation_oracles.json``; regenerate
them (about a minute) in an environment with the library::

    pip install pld-accounting==2.0
    python -m tests.support.allocation_oracles
"""

from __future__ import annotations

import json
import math
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, TimeoutError
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "data" / "allocation_oracles.json"
SEED = 32
COUNT = 14

ANCHOR = {"sigma": 2.0, "t": 100, "k": 10, "E": 1, "delta": 1e-6}
"""dp_accounting's random-allocation test anchor (google/differential-privacy PR #414): ε = 2.4265 at its grid."""
ANCHOR_REFERENCE = 2.4265
ANCHOR_ACCURACY = 1e-2
"""The anchor is also recorded at this ``epsilon_accuracy`` (a bracket ~1e-3 wide, about 6 minutes)."""


def configurations() -> list[dict[str, Any]]:
    """The seeded configurations (the anchor not among them)."""
    rng = np.random.default_rng(SEED)
    out = []
    for i in range(COUNT):
        sigma = float(math.exp(rng.uniform(math.log(0.5), math.log(5.0))))
        t = round(math.exp(rng.uniform(math.log(10), math.log(1e4))))
        k = int(rng.choice([1, 2, 10]))
        epochs = int(rng.choice([1, 10]))
        delta = float(10 ** rng.uniform(-10, -4))
        out.append({"i": i, "sigma": sigma, "t": max(t, k), "k": k, "E": epochs, "delta": delta})
    return out


def _oracle(config: dict[str, Any], accuracy: float = -1.0) -> dict[str, Any]:
    """pld-accounting's (upper, lower) for a configuration, at its default accuracy (-1) or the one given."""
    from PLD_accounting import gaussian_allocation_epsilon_range  # type: ignore[import-not-found]

    start = time.perf_counter()
    upper, lower = gaussian_allocation_epsilon_range(
        delta=config["delta"],
        sigma=config["sigma"],
        num_steps=config["t"],
        num_selected=config["k"],
        num_epochs=config["E"],
        epsilon_accuracy=accuracy,
    )
    return config | {"pld_upper": float(upper), "pld_lower": float(lower), "seconds": time.perf_counter() - start}


LIMIT_SECONDS = 150.0
"""A configuration pld-accounting has not answered within this time is recorded as skipped (it grows with t·E)."""


def _bounded(config: dict[str, Any]) -> dict[str, Any]:
    """:func:`_oracle` in a process of its own, or the configuration marked skipped after :data:`LIMIT_SECONDS`."""
    with ProcessPoolExecutor(1) as pool:
        future = pool.submit(_oracle, config)
        try:
            return future.result(timeout=LIMIT_SECONDS)
        except TimeoutError:
            for process in pool._processes.values():  # numba code cannot be interrupted: end its process
                process.kill()
            return config | {"pld_upper": None, "pld_lower": None, "skipped": f"took over {LIMIT_SECONDS:g} s"}


def main() -> None:
    with ThreadPoolExecutor(2) as threads:
        rows = list(threads.map(_bounded, configurations()))
    anchor = _bounded({"i": "anchor", **ANCHOR})
    fine = _oracle({"i": "anchor", **ANCHOR}, accuracy=ANCHOR_ACCURACY)  # about 6 minutes
    document = {
        "seed": SEED,
        "versions": {"pld-accounting": metadata.version("pld-accounting")},
        "anchor": anchor,
        "anchor_fine": fine | {"epsilon_accuracy": ANCHOR_ACCURACY},
        "configurations": rows,
    }
    DATA.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {len(rows)} configurations to {DATA}")


if __name__ == "__main__":
    main()
