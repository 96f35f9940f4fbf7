"""Random allocation (balls in bins): dpcal's certified bracket beside the authors' implementation, in one process.

For σ = 1, one of t steps (k = 1), E fresh epochs, δ = 1e-6, t ∈ {10², 10³, 10⁴, 10⁵} and E ∈ {1, 10, 100}:

* dpcal ε: ``PldAccountant().epsilon`` (the certified upper bound), and with ``lower=True`` (the bracket), caches
  cleared before every repetition (``--repeat``, median);
* dpcal calibration: the noise multiplier for ε = 1 (``accountants.pld.calibration.calibrate_pld``, certified);
* pld-accounting 2.0 (arXiv 2602.17284, its authors' implementation; ``gaussian_allocation_epsilon_range`` at its
  default accuracy), where installed (``pip install pld-accounting==2.0``; it needs numba, which dpcal does not
  install) and for t·E ≤ ``--reference-limit`` (it grows with t·E: ~0.5 s at t·E = 100 and over 5 minutes at
  6000 on this VM). dp_accounting's own random-allocation code (google/differential-privacy PR #414) is not in a
  release.

Run: ``.venv/bin/python benchmarks/allocation.py``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from accountants.events import DpEvent, GaussianEvent, RandomAllocationEvent, SelfComposedEvent
from accountants.pld import PldAccountant, allocation_law
from accountants.pld import accountant as pld_accountant
from accountants.pld.calibration import calibrate_pld

SIGMA, DELTA, TARGET = 1.0, 1e-6, 1.0
STEPS = (100, 1000, 10_000, 100_000)
EPOCHS = (1, 10, 100)


def _event(sigma: float, steps: int, epochs: int) -> DpEvent:
    epoch = RandomAllocationEvent(steps, 1, GaussianEvent(sigma))
    return epoch if epochs == 1 else SelfComposedEvent(epoch, epochs)


def _cold() -> None:
    """Forget every cached law and leaf: each repetition computes from scratch."""
    allocation_law._upper_chain.cache_clear()
    allocation_law._lower_chain.cache_clear()
    pld_accountant._cached_leaf.cache_clear()


def _timed(function: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(repeat):
        _cold()
        start = time.perf_counter()
        value = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


def _reference() -> Callable[..., tuple[float, float]] | None:
    try:
        from PLD_accounting import gaussian_allocation_epsilon_range  # type: ignore[import-not-found]
    except ImportError:
        return None
    gaussian_allocation_epsilon_range(delta=DELTA, sigma=SIGMA, num_steps=10, num_selected=1, num_epochs=1)  # jit
    return gaussian_allocation_epsilon_range  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--reference-limit", type=int, default=1000, help="largest t·E run with pld-accounting")
    args = parser.parse_args()
    accountant = PldAccountant("add-remove")
    reference = _reference()
    print(f"σ = {SIGMA}, δ = {DELTA}, one of t steps, E fresh epochs; calibration to ε = {TARGET}")
    print("| t | E | dpcal ε (upper) | time | bracket | with lower | calibration σ | time | pld-accounting | time |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for steps in STEPS:
        for epochs in EPOCHS:
            event = _event(SIGMA, steps, epochs)
            upper_time, upper = _timed(lambda e=event: accountant.epsilon(e, DELTA), args.repeat)
            both_time, both = _timed(lambda e=event: accountant.epsilon(e, DELTA, lower=True), 1)
            width = (both.value - both.lower) / both.value
            calibration_time, found = _timed(
                lambda s=steps, n=epochs: calibrate_pld(
                    lambda z: _event(z, s, n), accountant, DELTA, TARGET, initial=1.0
                ),
                1,
            )
            row = (
                f"| {steps} | {epochs} | {upper.value:.5f} | {upper_time:.2f} s | {width:.1e} | {both_time:.2f} s "
                f"| {found.noise:.5f} | {calibration_time:.1f} s |"
            )
            if reference is not None and steps * epochs <= args.reference_limit:
                start = time.perf_counter()
                high, low = reference(delta=DELTA, sigma=SIGMA, num_steps=steps, num_selected=1, num_epochs=epochs)
                row += f" [{low:.5f}, {high:.5f}] | {time.perf_counter() - start:.1f} s |"
            else:
                row += " — | — |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
