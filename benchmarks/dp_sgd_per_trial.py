"""The dp-sgd utility simulation as it was when issue 18 was filed (commit 11e0792): one trial at a time, each step's
batch drawn with ``rng.choice(n, k, replace=False)``. Kept here, frozen, as the baseline ``benchmarks/jobs.py``
measures the vectorised simulator against (same problem, same work, one process)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def train_one(
    rng: np.random.Generator, features: np.ndarray, labels: np.ndarray, p: Mapping[str, Any], problem: Mapping[str, Any]
) -> float:
    """One DP-SGD run (Poisson or fixed-size batches, per-example clipping, Gaussian noise) from θ = 0: its final
    empirical logistic loss."""
    n, d = features.shape
    q, steps, lr = problem["sampling_rate"], problem["steps"], problem["learning_rate"]
    clip, z = p["clip_norm"], p["noise_multiplier"]
    std = z * clip * (2.0 if p["neighbouring"] == "replace-one" else 1.0)
    expected = max(q * n, 1.0)
    batch = max(1, round(q * n))
    theta = np.zeros(d)
    for _ in range(steps):
        if p["sampling"] == "poisson":
            chosen = rng.choice(n, size=rng.binomial(n, q), replace=False)
        else:
            chosen = rng.choice(n, size=batch, replace=False)
        x, y = features[chosen], labels[chosen]
        grads = (-y * np.exp(-np.logaddexp(0.0, y * (x @ theta))))[:, None] * x
        norms = np.linalg.norm(grads, axis=1)
        grads *= np.minimum(1.0, clip / np.maximum(norms, 1e-300))[:, None]
        theta -= lr * (grads.sum(axis=0) + std * rng.standard_normal(d)) / expected
    return float(np.mean(np.logaddexp(0.0, -labels * (features @ theta))))
