"""RDP ε and RDP calibration: dpcal's Rényi accountant beside dp_accounting's ``RdpAccountant``, in one process.

Part 1, ε of a Poisson-sampled Gaussian composed T times at δ, on three runs: MNIST (q = 256/60000, z = 1.1, 60
epochs, T = 14062, δ = 1e-5), long (q = 1e-4, z = 1, T = 1e6, δ = 1e-8) and short (q = 0.01, z = 1, T = 1000,
δ = 1e-6). Each repetition takes a fresh noise multiplier (z·(1 + 1e-7·i): nothing is reused from the last one) and
runs dp_accounting (its default orders, ``compose`` then ``get_epsilon``) and dpcal (``RdpAccountant().epsilon``: its
superset of orders with the optimal order refined continuously), alternating; medians of ``--repeat`` (default 15).

Part 2, calibration of the MNIST run to ε ∈ {1, 3, 8}: dp_accounting's ``calibrate_dp_mechanism(RdpAccountant)``
against dpcal's ``calibrate_rdp`` (both to their default tolerances), alternating, medians of ``--calibrations``
(default 15), each repetition a fresh target (ε·(1 + 1e-6·i)).

BLAS is pinned to one thread (set before numpy loads). Ratios are what to read: both run in this process, one after
the other, so a busy host slows both.

Run: ``.venv/bin/python benchmarks/rdp.py`` (needs the ``test`` extra: dp-accounting).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads

import argparse
import statistics
import time
from collections.abc import Callable

import dp_accounting as dpa
from dp_accounting import mechanism_calibration
from dp_accounting.rdp import rdp_privacy_accountant

from accountants.calibration import calibrate_rdp
from accountants.events import GaussianEvent, PoissonSampledEvent, SelfComposedEvent
from accountants.rdp import RdpAccountant

Q_MNIST = 256 / 60000
RUNS = [
    ("MNIST q=256/6e4 z=1.1 T=14062 δ=1e-5", Q_MNIST, 1.1, int(60 / Q_MNIST), 1e-5),
    ("long q=1e-4 z=1 T=1e6 δ=1e-8", 1e-4, 1.0, 1_000_000, 1e-8),
    ("short q=.01 z=1 T=1000 δ=1e-6", 0.01, 1.0, 1000, 1e-6),
]
TARGETS = (1.0, 3.0, 8.0)


def _dp_accounting_epsilon(q: float, z: float, steps: int, delta: float) -> float:
    accountant = rdp_privacy_accountant.RdpAccountant()
    accountant.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps))
    return float(accountant.get_epsilon(delta))


def _dpcal_epsilon(q: float, z: float, steps: int, delta: float) -> float:
    event = SelfComposedEvent(PoissonSampledEvent(q, GaussianEvent(z)), steps)
    return RdpAccountant().epsilon(event, delta).value


def _dp_accounting_sigma(q: float, steps: int, delta: float, target: float) -> float:
    return float(
        mechanism_calibration.calibrate_dp_mechanism(
            rdp_privacy_accountant.RdpAccountant,
            lambda z: dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps),
            target,
            delta,
        )
    )


def _dpcal_sigma(q: float, steps: int, delta: float, target: float) -> float:
    accountant = RdpAccountant()
    return calibrate_rdp(
        lambda z: accountant.curve(SelfComposedEvent(PoissonSampledEvent(q, GaussianEvent(z)), steps)), delta, target
    ).noise


def _alternating(contenders: list[Callable[[int], float]], repeat: int) -> list[tuple[float, float]]:
    """(median seconds, last value) of each contender, run in turn ``repeat`` times with the repetition's index."""
    times: list[list[float]] = [[] for _ in contenders]
    values = [0.0] * len(contenders)
    for i in range(repeat):
        for j, contender in enumerate(contenders):
            start = time.perf_counter()
            values[j] = contender(i)
            times[j].append(time.perf_counter() - start)
    return [(statistics.median(t), v) for t, v in zip(times, values, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--calibrations", type=int, default=15)
    args = parser.parse_args()
    print("| RDP ε | dp_accounting | dpcal | ratio | ε (dp_accounting, dpcal) |")
    print("|---|---|---|---|---|")
    for name, q, z, steps, delta in RUNS:
        (theirs, a), (ours, b) = _alternating(
            [
                lambda i, q=q, z=z, t=steps, d=delta: _dp_accounting_epsilon(q, z * (1 + 1e-7 * i), t, d),
                lambda i, q=q, z=z, t=steps, d=delta: _dpcal_epsilon(q, z * (1 + 1e-7 * i), t, d),
            ],
            args.repeat,
        )
        print(f"| {name} | {theirs * 1e3:.2f} ms | {ours * 1e3:.3f} ms | {theirs / ours:.1f}× | {a:.5f}, {b:.5f} |")
    print()
    print("| RDP calibration (MNIST) | dp_accounting | dpcal | ratio | σ (dp_accounting, dpcal) |")
    print("|---|---|---|---|---|")
    name, q, _, steps, delta = RUNS[0]
    for target in TARGETS:
        (theirs, a), (ours, b) = _alternating(
            [
                lambda i, e=target: _dp_accounting_sigma(q, steps, delta, e * (1 + 1e-6 * i)),
                lambda i, e=target: _dpcal_sigma(q, steps, delta, e * (1 + 1e-6 * i)),
            ],
            args.calibrations,
        )
        times = f"{theirs * 1e3:.1f} ms | {ours * 1e3:.2f} ms | {theirs / ours:.1f}×"
        print(f"| ε = {target:g} | {times} | {a:.5f}, {b:.5f} |")


if __name__ == "__main__":
    main()
