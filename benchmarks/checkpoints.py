"""ε over training: one request with 100 checkpoints against one request without, and against dp_accounting asked
at each checkpoint, in one process.

MNIST DP-SGD (n = 60000, b = 256, 60 epochs, σ = 1.1, δ = 1e-5), checkpoints every 141 steps (100 of them). For
``rdp``, ``tight`` and ``best``: the median time of ``privacy(...)`` alone, with ``checkpoints``, their ratio, and the
time dp_accounting's RdpAccountant (and PLDAccountant at vdi 1e-4 for the tight curve) needs for the same 100 values.
Each repetition asks at another noise multiplier (1e-7 apart), as a new request would: what the accountants remember
of a release (its curve on the order grid, its discretised privacy loss) serves within a request, not the timing.

Run: ``python benchmarks/checkpoints.py`` (needs the ``test`` extra: dp-accounting).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import dp_accounting as dpa
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from accountants import registry

DELTA = 1e-5
PARAMS = {"dataset_size": 60000, "batch_size": 256, "epochs": 60, "noise_multiplier": 1.1}
EVERY = 141


def median_seconds(run: Callable[[int], object], repeat: int) -> float:
    times = []
    for k in range(repeat):
        start = time.perf_counter()
        run(k)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def params(k: int) -> dict[str, float]:
    """The benchmark's hyperparameters at the k-th noise multiplier (1.1 + k·1e-7: a new request each time)."""
    return PARAMS | {"noise_multiplier": 1.1 + k * 1e-7}


def main() -> None:
    family = registry.get("dp-sgd")
    steps = family.privacy(PARAMS, DELTA, "rdp").conventions.steps
    points = list(range(EVERY, steps + 1, EVERY))
    q = 256 / 60000
    print(f"dp-sgd MNIST, {len(points) + 1} checkpoints (every {EVERY} steps and the last)")
    family.privacy(params(-1), DELTA, "rdp", checkpoints={"every": EVERY})  # imports and order layouts
    for index, (accountant, repeat) in enumerate((("rdp", 21), ("tight", 11), ("best", 11))):
        base = 100 * index  # noise multipliers no other measurement has asked at
        one = median_seconds(lambda k, a=accountant, b=base: family.privacy(params(b + k), DELTA, a), repeat)
        curve = median_seconds(
            lambda k, a=accountant, b=base + repeat: family.privacy(
                params(b + k), DELTA, a, checkpoints={"every": EVERY}
            ),
            repeat,
        )
        print(
            f"  {accountant:5s} one answer {one * 1e3:8.1f} ms   with the curve {curve * 1e3:9.1f} ms   "
            f"ratio {curve / one:6.1f}×"
        )

    def dpa_rdp(_: int) -> None:
        for t in points:
            accountant = rdp_privacy_accountant.RdpAccountant()
            accountant.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(1.1)), t))
            accountant.get_epsilon(DELTA)

    def dpa_pld(_: int) -> None:
        accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
        event = dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(1.1))
        done = 0
        for t in points:
            accountant.compose(event, t - done)  # dp_accounting composes incrementally
            done = t
            accountant.get_epsilon(DELTA)

    print(f"  dp_accounting RdpAccountant, 100 separate values: {median_seconds(dpa_rdp, 1) * 1e3:9.1f} ms")
    print(
        f"  dp_accounting PLDAccountant (vdi 1e-4), composed incrementally: {median_seconds(dpa_pld, 1) * 1e3:9.1f} ms"
    )


if __name__ == "__main__":
    main()
