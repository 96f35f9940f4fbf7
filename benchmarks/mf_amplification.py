"""Amplification of a general C by sampling: dpcal's certified answers beside jax_privacy's Monte-Carlo estimates on
jax_privacy's own example (100 iterations, cycle 10, C's column ∝ [1, ½, ¼, ⅛] normalised, ε = 1, δ = 1e-2).

The samplings differ: jax_privacy's Monte-Carlo accountant reads *persistent* balls-in-bins (a record keeps one
residue of 10 for the whole run) and b-min-sep sampling (after a participation a record waits b − 1 steps, then
joins each step with probability p); dpcal's dp-mf reads Poisson (each step independently, q = 0.1), balls-in-bins
drawn afresh each epoch of 10 steps, and cyclic order. Every row participates once per 10 steps on average.

* dpcal: the noise std σ (clip norm 1) its ``tight`` calibration certifies — ``spectral`` and ``conditional``
  amplification under Poisson, ``spectral`` under fresh balls-in-bins, and the unamplified cyclic order;
* jax_privacy 2.0.0: the σ at which the Monte-Carlo estimate of δ(ε = 1) from ``--samples`` privacy-loss samples
  per direction crosses 1e-2 (log-linear between grid points) — an estimate of the exact σ of its sampling, not a
  certified calibration (its verified calibration needs about 1/δ·log terms more samples).

Run: ``.venv/bin/python -P benchmarks/mf_amplification.py`` (needs the ``test`` extra; ``-P``: JAX stays out of
forked workers, see tests/support/jax_privacy_oracle.py).
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np

from accountants import registry

EPSILON, DELTA, STEPS, CYCLE = 1.0, 1e-2, 100, 10
HALVING = np.array([1.0, 0.5, 0.25, 0.125])
COLUMN = HALVING / np.linalg.norm(HALVING)
GRID = (2.0, 2.5, 3.0, 3.5, 4.0, 5.0)


def dpcal_sigma(participation: str, **extra: object) -> float:
    params = {
        "dataset_size": 1000,
        "batch_size": 100,
        "steps": STEPS,
        "strategy": {"type": "toeplitz", "coefficients": COLUMN.tolist()},
        "participation": participation,
        **extra,
    }
    report = registry.get("dp-mf").calibrate(params, EPSILON, DELTA, accountant="tight")
    return float(report.required_noise.noise_std)


def jax_delta(strategy: object, sigma: float, samples: int, seed: int) -> float:
    from jax_privacy.experimental.monte_carlo import delta_calculation as dc
    from jax_privacy.experimental.monte_carlo import sample_generation as sg

    deltas = []
    for k, positive in enumerate((True, False)):
        drawn = sg.generate_sample(
            strategy, sigma, COLUMN, seed=seed + k, positive_sample=positive, num_samples=samples
        )
        losses = sg.compute_privacy_loss(strategy, drawn, sigma, COLUMN)
        deltas.append(dc.delta_from_epsilon_and_samples(EPSILON, losses if positive else -losses))
    return max(deltas)


def crossing(deltas: list[float]) -> float:
    """The σ where log δ̂(σ) crosses log δ, linearly between the grid's points (nan outside the grid)."""
    for (s0, d0), (s1, d1) in zip(zip(GRID, deltas, strict=True), zip(GRID[1:], deltas[1:], strict=True), strict=False):
        if d0 >= DELTA > d1 > 0.0:
            return s0 + (s1 - s0) * (math.log(d0) - math.log(DELTA)) / (math.log(d0) - math.log(d1))
    return math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=20_000)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from jax_privacy import batch_selection

    print(f"σ for ε = {EPSILON:g}, δ = {DELTA:g}: {STEPS} steps, C's column ∝ [1, 1/2, 1/4, 1/8]")
    print(f"  dpcal poisson q = 0.1, spectral (certified)     {dpcal_sigma('poisson'):.3f}")
    print(
        f"  dpcal poisson q = 0.1, conditional (certified)  {dpcal_sigma('poisson', amplification='conditional'):.3f}"
    )
    print(f"  dpcal fresh balls-in-bins, spectral (certified) {dpcal_sigma('balls-in-bins'):.3f}")
    print(f"  dpcal cyclic, no amplification (exact)          {dpcal_sigma('cyclic', min_separation=CYCLE):.3f}")
    persistent = batch_selection.BallsInBinsSampling(iterations=STEPS, cycle_length=CYCLE)
    min_sep = batch_selection.BMinSepSampling(sampling_prob=1 / 7, iterations=STEPS, min_sep=4)
    for name, strategy in (("persistent balls-in-bins", persistent), ("b-min-sep, b = 4, p = 1/7", min_sep)):
        deltas = [jax_delta(strategy, s, args.samples, seed=17) for s in GRID]
        shown = ", ".join(f"{d:.3g}" for d in deltas)
        print(f"  jax_privacy Monte Carlo, {name}: δ̂ = [{shown}] → σ ≈ {crossing(deltas):.3f}")


if __name__ == "__main__":
    main()
