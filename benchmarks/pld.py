"""Tight ε of the Poisson-subsampled Gaussian: dpcal's PLD vs dp_accounting's PLD vs prv-accountant, in one process.

Configurations: accounting-anchors §2.0 (a1 = MNIST-like q = 256/60000, σ = 1.1, 60 epochs; a2; a3; a4 ≡ b1 with
q = 1) at δ = 1e-5. Each accountant runs ``--repeat`` times (default 3), alternating; we print the median wall time
(build + one ε query), the ratio to dpcal, and the ε values side by side with the anchors' tight value.

* dpcal: :class:`PoissonGaussianPld` at Δ = 1e-4 (pessimistic connect-the-dots, rigorous rounding margins);
* dp_accounting 0.6.0: ``PLDAccountant(value_discretization_interval=1e-4)`` (pessimistic, the library default);
* prv-accountant 0.2.0: ``PRVAccountant(eps_error=0.01, delta_error=δ/1000)``, printed as the estimate and its
  certified upper bound.

Run: ``python benchmarks/pld.py`` (needs the ``test`` extra: dp-accounting, prv-accountant).
"""

from __future__ import annotations

import argparse
import statistics
import time

import dp_accounting as dpa
from prv_accountant import PRVAccountant
from prv_accountant.privacy_random_variables import GaussianMechanism, PoissonSubsampledGaussianMechanism

from accountants.mechanisms.poisson_gaussian_pld import PoissonGaussianPld

DELTA = 1e-5
Q_MNIST = 256 / 60000
CONFIGS = [
    ("a1 mnist q=256/6e4 s=1.1", Q_MNIST, 1.1, int(60 / Q_MNIST), 2.3815978094),
    ("a2 q=.01 s=1 T=1e3", 0.01, 1.0, 1000, 1.8282367367),
    ("a3 q=.001 s=.8 T=1e4", 0.001, 0.8, 10000, 0.7823891428),
    ("a4 q=1 s=10 T=100", 1.0, 10.0, 100, 4.377178096),
]


def dpcal_eps(q: float, z: float, steps: int) -> float:
    return PoissonGaussianPld.build(q, z, steps, value_discretization=1e-4).epsilon(DELTA)


def dpa_eps(q: float, z: float, steps: int) -> float:
    event = dpa.GaussianDpEvent(z) if q == 1.0 else dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z))
    accountant = dpa.pld.PLDAccountant(value_discretization_interval=1e-4)
    return accountant.compose(dpa.SelfComposedDpEvent(event, steps)).get_epsilon(DELTA)


def prv_eps(q: float, z: float, steps: int) -> tuple[float, float, float]:
    prv = GaussianMechanism(z) if q == 1.0 else PoissonSubsampledGaussianMechanism(q, z)
    accountant = PRVAccountant(prvs=[prv], max_self_compositions=[steps], eps_error=0.01, delta_error=DELTA / 1000)
    return accountant.compute_epsilon(delta=DELTA, num_self_compositions=[steps])


def timed(fn, *args) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{'configuration':26} {'dpcal':>9} {'dpa PLD':>9} {'ratio':>6} {'prv':>9} {'ratio':>6}   "
        "eps: tight / dpcal / dpa PLD / prv est. (prv upper)"
    )
    for name, q, z, steps, tight in CONFIGS:
        times: dict[str, list[float]] = {"dpcal": [], "dpa": [], "prv": []}
        values: dict[str, object] = {}
        for _ in range(args.repeat):
            for key, fn in (("dpcal", dpcal_eps), ("dpa", dpa_eps), ("prv", prv_eps)):
                t, v = timed(fn, q, z, steps)
                times[key].append(t)
                values[key] = v
        med = {k: statistics.median(v) for k, v in times.items()}
        _, prv_est, prv_up = values["prv"]
        print(
            f"{name:26} {med['dpcal'] * 1e3:6.0f} ms {med['dpa'] * 1e3:6.0f} ms {med['dpa'] / med['dpcal']:5.1f}x "
            f"{med['prv'] * 1e3:6.0f} ms {med['prv'] / med['dpcal']:5.1f}x   "
            f"{tight:.7f} / {values['dpcal']:.7f} / {values['dpa']:.7f} / {prv_est:.7f} ({prv_up:.7f})"
        )


if __name__ == "__main__":
    main()
