"""Synthetic logistic regression for the DP-SGD simulators: labels drawn from a logistic model on Gaussian features,
the empirical loss and its optimum."""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize


def logistic_data(seed: int, records: int, dimension: int) -> tuple[np.ndarray, np.ndarray]:
    """The synthetic data set, a function of the job's seed (its own stream, apart from the trials')."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32,)))
    features = rng.standard_normal((records, dimension))
    truth = rng.standard_normal(dimension) * 2.0 / math.sqrt(dimension)
    labels = np.where(rng.random(records) < 1.0 / (1.0 + np.exp(-features @ truth)), 1.0, -1.0)
    return features, labels


def logistic_loss(theta: np.ndarray, features: np.ndarray, labels: np.ndarray) -> float:
    """The empirical logistic loss (1/n) Σ log(1 + exp(−y_i⟨x_i, θ⟩))."""
    return float(np.mean(np.logaddexp(0.0, -labels * (features @ theta))))


def logistic_optimum(features: np.ndarray, labels: np.ndarray) -> float:
    """The smallest empirical logistic loss (L-BFGS-B to a gradient norm of 1e-10)."""

    def loss_and_gradient(theta: np.ndarray) -> tuple[float, np.ndarray]:
        margins = labels * (features @ theta)
        weights = -labels * np.exp(-np.logaddexp(0.0, margins))
        return float(np.mean(np.logaddexp(0.0, -margins))), features.T @ weights / labels.size

    found = optimize.minimize(
        loss_and_gradient,
        np.zeros(features.shape[1]),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-10, "maxiter": 1000},
    )
    return float(found.fun)
