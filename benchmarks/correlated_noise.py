"""Correlated noise: calibrating the matrix-factorisation mechanism (dp-mf) for T ∈ {100, 1000, 2000} steps, in one
process, beside what a jax_privacy user runs for the same question.

1. Amplified BandMF (4-band Toeplitz C, columns normalised to norm 1, cyclic-poisson participation, q = 0.04):
   dpcal's ``dp-mf`` tight calibration (the reduction to ⌈T/4⌉ Poisson-subsampled Gaussians, read by the certified
   PLD accountant) against dp_accounting 0.6.0's ``calibrate_dp_mechanism`` with its ``PLDAccountant`` (vdi 1e-4)
   on jax_privacy 2.0.0's ``amplified_bandmf_event`` — the route jax_privacy documents.
2. Tree aggregation (DP-FTRL), cyclic participation with one pass per 10 steps, no amplification: dpcal computes
   the tree's sensitivity under the min-separation pattern (arXiv 2306.08153, Alg. 4, bracketed) and calibrates the
   Gaussian exactly; beside it jax_privacy's own ``get_min_sep_sensitivity_upper_bound`` alone (the Gaussian
   calibration is then one closed form).

Every repetition starts cold (dp-mf's caches of Gram matrices, sensitivities and plans cleared) with a fresh target.
Medians of ``--repeat`` runs (the library runs: one each, they take longer). ε = 3, δ = 1e-6.

Run: ``.venv/bin/python benchmarks/correlated_noise.py`` (needs the ``test`` extra: dp-accounting, jax-privacy).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings
from collections.abc import Callable

import dp_accounting as dpa
import jax
from dp_accounting import mechanism_calibration
from dp_accounting.pld import pld_privacy_accountant
from jax_privacy.experimental import accounting as jp_accounting
from jax_privacy.matrix_factorization import sensitivity as jp_sensitivity

from accountants import registry
from accountants.families.dp_mf import privacy, strategies

DELTA = 1e-6
TARGET = 3.0
HALVING = [1.0, 0.5, 0.25, 0.125]
NORMALISED = [c / math.sqrt(sum(x * x for x in HALVING)) for c in HALVING]
STEPS = (100, 1000, 2000)
jax.config.update("jax_enable_x64", True)


def cold() -> None:
    for cached in (privacy._release, privacy.gram_matrix, privacy.encoder, strategies._one_tree_gram):
        cached.cache_clear()


def timed(fn: Callable[[], float], repeat: int) -> tuple[float, float]:
    times, value = [], 0.0
    for _ in range(repeat):
        cold()
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


def banded_dpcal(steps: int, target: float) -> float:
    params = {
        "dataset_size": 10000,
        "batch_size": 100,
        "steps": steps,
        "strategy": {"type": "toeplitz", "coefficients": NORMALISED},
        "participation": "cyclic-poisson",
    }
    return registry.get("dp-mf").calibrate(params, target, DELTA, accountant="tight").calibrated_value


def banded_dp_accounting(steps: int, target: float) -> float:
    def event(z: float) -> dpa.DpEvent:
        return jp_accounting.amplified_bandmf_event(z, steps, num_bands=4, sampling_prob=0.04)

    accountant = pld_privacy_accountant.PLDAccountant
    return float(mechanism_calibration.calibrate_dp_mechanism(accountant, event, target, DELTA, tol=1e-4 * 0.5))


def tree_dpcal(steps: int, target: float) -> float:
    params = {
        "dataset_size": 1000,
        "batch_size": 100,
        "steps": steps,
        "strategy": {"type": "tree"},
        "participation": "cyclic",
    }
    return registry.get("dp-mf").calibrate(params, target, DELTA, accountant="tight").calibrated_value


def tree_jax_sensitivity(steps: int) -> float:
    gram = strategies.tree_gram(steps, False, None)  # jax_privacy has no tree encoder of this shape: same X
    return float(jp_sensitivity.get_min_sep_sensitivity_upper_bound_for_X(gram, 10, -(-steps // 10)))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"calibration at ε = {TARGET:g}, δ = {DELTA:g}: median seconds (cold caches)")
    print(
        f"{'T':>5}   {'banded: dpcal tight':>24}   {'dp_accounting PLD':>26}   {'tree: dpcal':>20}   {'jax Alg. 4':>10}"
    )
    for steps in STEPS:
        ours_s, ours = timed(lambda s=steps: banded_dpcal(s, TARGET), args.repeat)
        theirs_s, theirs = timed(lambda s=steps: banded_dp_accounting(s, TARGET), 1)
        tree_s, _ = timed(lambda s=steps: tree_dpcal(s, TARGET), args.repeat)
        jax_s, _ = timed(lambda s=steps: tree_jax_sensitivity(s), 1)
        print(
            f"{steps:5d}   σ {ours:.5f} {ours_s * 1e3:7.0f} ms   σ {theirs:.5f} {theirs_s * 1e3:7.0f} ms "
            f"({theirs_s / ours_s:3.0f}x)   {tree_s * 1e3:12.0f} ms   {jax_s * 1e3:7.0f} ms"
        )


if __name__ == "__main__":
    main()
