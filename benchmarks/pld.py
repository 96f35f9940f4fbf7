"""Tight ε and tight calibration: dpcal's PLD accountant beside dp_accounting and prv-accountant, in one process.

Part 1, ε at δ = 1e-5 on the consensus configurations a1 (MNIST: q = 256/60000, z = 1.1, 60 epochs), a2, a3 and a
million-step configuration. The reference is dp_accounting's pessimistic PLD at vdi 1e-5 (computed once; its time
is printed beside it); each contender runs ``--repeat`` times, or until 10 s are spent (median wall time, build and
query), and its relative error to the reference is printed:

* dpcal: ``PldAccountant().epsilon`` (certified; relative accuracy 1e-4 targeted);
* dp_accounting 0.6.0: ``PLDAccountant(value_discretization_interval=1e-4)`` (pessimistic, its default);
* prv-accountant 0.2.0: ``PRVAccountant(eps_error=1e-3, delta_error=δ/1000)``, its estimate.

Part 2, calibration of the MNIST configuration (60 epochs, δ = 1e-5) for ε ∈ {1, 3, 8}: dpcal's dp-sgd family with
``accountant="tight"`` (the RDP calibration, then the PLD search) against dp_accounting's ``calibrate_dp_mechanism``
with its ``PLDAccountant`` (vdi 1e-4), medians of ``--repeat`` runs (dp_accounting: one run, it takes seconds).

Run: ``.venv/bin/python benchmarks/pld.py`` (needs the ``test`` extra: dp-accounting, prv-accountant).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import dp_accounting as dpa
from dp_accounting import mechanism_calibration
from dp_accounting.pld import pld_privacy_accountant
from prv_accountant import PRVAccountant
from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

from accountants import registry
from accountants.events import GaussianEvent, PoissonSampledEvent, SelfComposedEvent
from accountants.family import AlgorithmFamily
from accountants.pld import PldAccountant

DELTA = 1e-5
Q_MNIST = 256 / 60000
CONFIGS = [
    ("a1 mnist q=256/6e4 z=1.1", Q_MNIST, 1.1, int(60 / Q_MNIST)),
    ("a2 q=.01 z=1 T=1e3", 0.01, 1.0, 1000),
    ("a3 q=.001 z=.8 T=1e4", 0.001, 0.8, 10000),
    ("T=1e6 q=1e-4 z=1", 1e-4, 1.0, 1_000_000),
]
MNIST = {"dataset_size": 60000, "batch_size": 256, "epochs": 60, "epoch_rounding": "floor"}


def dpcal_eps(q: float, z: float, steps: int) -> float:
    return PldAccountant().epsilon(SelfComposedEvent(PoissonSampledEvent(q, GaussianEvent(z)), steps), DELTA).value


def dpa_eps(q: float, z: float, steps: int, vdi: float = 1e-4) -> float:
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=vdi)
    event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps)
    return float(accountant.compose(event).get_epsilon(DELTA))


def prv_eps(q: float, z: float, steps: int) -> float:
    prv = PoissonSubsampledGaussianMechanism(q, z)
    accountant = PRVAccountant(prvs=[prv], max_self_compositions=[steps], eps_error=1e-3, delta_error=DELTA / 1000)
    return float(accountant.compute_epsilon(delta=DELTA, num_self_compositions=[steps])[1])


def median_time(fn: Callable[[], float], repeat: int, budget: float = 10.0) -> tuple[float, float]:
    """(median seconds, the value of the last run) over ``repeat`` runs, fewer once ``budget`` seconds are spent."""
    times, value = [], 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
        if sum(times) > budget:
            break
    return statistics.median(times), value


def epsilon_table(repeat: int) -> None:
    print("ε at δ = 1e-5; error relative to dp_accounting's pessimistic PLD at vdi 1e-5")
    print(
        f"{'configuration':26} {'reference (its time)':>21}   {'dpcal':>18}   {'dpa vdi 1e-4':>24}   {'prv 1e-3':>24}"
    )
    for name, q, z, steps in CONFIGS:
        start = time.perf_counter()
        reference = dpa_eps(q, z, steps, vdi=1e-5)
        reference_seconds = time.perf_counter() - start
        cells = []
        for fn in (dpcal_eps, dpa_eps, prv_eps):
            seconds, value = median_time(functools.partial(fn, q, z, steps), repeat)
            cells.append((seconds, (value - reference) / reference))
        base = cells[0][0]
        row = (
            f"{name:26} {reference:9.6f} ({reference_seconds:5.1f} s)   {cells[0][0] * 1e3:6.0f} ms {cells[0][1]:+.1e}"
        )
        for seconds, error in cells[1:]:
            row += f"   {seconds * 1e3:6.0f} ms {error:+.1e} ({seconds / base:4.1f}x)"
        print(row)


def dpa_calibration(target: float) -> float:
    steps = int(60 / Q_MNIST)

    def event(z: float) -> dpa.DpEvent:
        return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(Q_MNIST, dpa.GaussianDpEvent(z)), steps)

    return float(
        mechanism_calibration.calibrate_dp_mechanism(
            pld_privacy_accountant.PLDAccountant, event, target, DELTA, tol=1e-4 * 0.5
        )
    )


def calibration_table(repeat: int) -> None:
    family = registry.get("dp-sgd")
    print("\ncalibration of MNIST (60 epochs, δ = 1e-5): σ and median time")
    print(f"{'target ε':>8}   {'dpcal tight':>22}   {'dp_accounting PLD':>30}")
    for target in (1.0, 3.0, 8.0):
        ours_s, ours = median_time(functools.partial(_dpcal_calibration, family, target), repeat)
        theirs_s, theirs = median_time(functools.partial(dpa_calibration, target), 1)
        print(
            f"{target:8.0f}   σ {ours:.6f} {ours_s * 1e3:6.0f} ms   "
            f"σ {theirs:.6f} {theirs_s * 1e3:7.0f} ms ({theirs_s / ours_s:4.0f}x)"
        )


def _dpcal_calibration(family: AlgorithmFamily[Any], target: float) -> float:
    noise = family.calibrate(MNIST, target, DELTA, accountant="tight").noise_multiplier
    assert noise is not None
    return float(noise)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    epsilon_table(args.repeat)
    calibration_table(args.repeat)


if __name__ == "__main__":
    main()
