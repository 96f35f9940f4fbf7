"""Calibration speed: dpcal vs dp_accounting's ``calibrate_dp_mechanism`` (RDP), in one process.

Configurations: MNIST-style DP-SGD (q = 256/60000, 60 epochs, T = floor(60/q) = 14062, δ = 1e-5, ε ∈ {1, 3, 8})
and the DP-SGD configurations a2 (q = 0.01, z = 1, T = 1000), a3 calibrated to ε ∈ {1, 3}. For each, dp_accounting and
dpcal run alternately ``--repeat`` times (default 5); we print the median wall times, their ratio, and the σ each
returns.

dpcal is timed twice:
* ``grid``: on dp_accounting's own 156 orders without continuous refinement (the same RDP curve where the two agree, so
  the σ must be equal to the 1e-6 tolerance of both calibrators);
* ``default``: dpcal's default (its superset grid, optimal order refined continuously), which returns a slightly
  smaller σ because it optimises the order over the reals (every order gives a valid bound).

Where the optimal order is fractional, dp_accounting 0.6.0 overstates the RDP (it drops the sign of the generalised
binomial coefficients), so its σ is then slightly larger than ours even on its grid.

Run: ``python benchmarks/calibration.py`` (needs the ``test`` extra: dp-accounting).
"""

from __future__ import annotations

import argparse
import statistics
import time

import dp_accounting as dpa
import numpy as np
from dp_accounting import mechanism_calibration
from dp_accounting.rdp import rdp_privacy_accountant

from accountants.calibration import calibrate_rdp
from accountants.events import GaussianEvent, PoissonSampledEvent, SelfComposedEvent
from accountants.rdp import RdpAccountant

DELTA = 1e-5
Q_MNIST = 256 / 60000
CONFIGS = [
    ("mnist-60ep eps=1", Q_MNIST, int(60 / Q_MNIST), 1.0),
    ("mnist-60ep eps=3", Q_MNIST, int(60 / Q_MNIST), 3.0),
    ("mnist-60ep eps=8", Q_MNIST, int(60 / Q_MNIST), 8.0),
    ("a2 q=.01 T=1000 eps=1", 0.01, 1000, 1.0),
    ("a3 q=.001 T=1e4 eps=3", 0.001, 10000, 3.0),
]
DPA_ORDERS = np.array(rdp_privacy_accountant.DEFAULT_RDP_ORDERS, dtype=float)


def dp_accounting_sigma(q: float, steps: int, target: float) -> float:
    return mechanism_calibration.calibrate_dp_mechanism(
        rdp_privacy_accountant.RdpAccountant,
        lambda z: dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps),
        target,
        DELTA,
    )


def dpcal_sigma(q: float, steps: int, target: float, default: bool) -> float:
    accountant = RdpAccountant("add-remove")

    def curve_of(z: float):
        return accountant.curve(SelfComposedEvent(PoissonSampledEvent(q, GaussianEvent(z)), steps))

    if default:
        return calibrate_rdp(curve_of, DELTA, target).noise
    return calibrate_rdp(curve_of, DELTA, target, orders=DPA_ORDERS, refine=False).noise


def timed(fn, *args) -> tuple[float, float]:
    start = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    dpcal_sigma(Q_MNIST, 100, 1.0, True)  # warm the caches of σ-independent tables, as a running service has them
    print(
        f"{'configuration':24} {'dp_accounting':>14} {'dpcal grid':>11} {'ratio':>6} {'dpcal default':>14} "
        f"{'ratio':>6}   sigma dpa / grid / default"
    )
    ratios_grid, ratios_default = [], []
    for name, q, steps, target in CONFIGS:
        times: dict[str, list[float]] = {"dpa": [], "grid": [], "default": []}
        sigmas: dict[str, float] = {}
        for _ in range(args.repeat):
            for key in times:
                if key == "dpa":
                    t, s = timed(dp_accounting_sigma, q, steps, target)
                else:
                    t, s = timed(dpcal_sigma, q, steps, target, key == "default")
                times[key].append(t)
                sigmas[key] = s
        med = {k: statistics.median(v) for k, v in times.items()}
        r_grid, r_default = med["dpa"] / med["grid"], med["dpa"] / med["default"]
        ratios_grid.append(r_grid)
        ratios_default.append(r_default)
        print(
            f"{name:24} {med['dpa'] * 1e3:11.1f} ms {med['grid'] * 1e3:8.2f} ms {r_grid:5.0f}x "
            f"{med['default'] * 1e3:11.2f} ms {r_default:5.0f}x   "
            f"{sigmas['dpa']:.7f} / {sigmas['grid']:.7f} / {sigmas['default']:.7f}  "
            f"(grid vs dpa {sigmas['grid'] / sigmas['dpa'] - 1:+.1e})"
        )
    print(f"min ratio: grid {min(ratios_grid):.0f}x, default {min(ratios_default):.0f}x")


if __name__ == "__main__":
    main()
