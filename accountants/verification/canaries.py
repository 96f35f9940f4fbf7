"""Audit scores of canaries: the log-likelihood ratio of a transcript along a distinguishing record's direction (the
most powerful test, Neyman–Pearson), for Poisson or deterministic batches and for shuffling / balls-in-bins loaders."""

from __future__ import annotations

import math

import numpy as np
from scipy import special


def canary_llr_scores(
    rng: np.random.Generator,
    trials: int,
    releases: int,
    sampling_rate: float,
    noise: float,
    replace: bool,
    inside: bool,
) -> np.ndarray:
    """Audit scores of a *canary*: the log-likelihood ratio (D vs D′) of a transcript along the canary's direction.

    Each of ``releases`` noisy releases includes the canary with probability ``sampling_rate`` (independently; 1 for
    a deterministic batch) and then shows, along its direction, +1 (the canary, on D) or −1 (the opposite canary,
    on D′ under replace-one; 0 under add/remove) plus N(0, noise²). Units: the canary's own contribution, so
    ``noise`` is the noise std over that contribution. The score is the log-likelihood ratio of the whole
    transcript, the most powerful test (Neyman–Pearson); one score per trial, drawn on D (``inside``) or on D′.
    """
    score = np.zeros(trials)
    for start in range(0, releases, 4096):
        n = min(4096, releases - start)
        included = rng.random((trials, n)) < sampling_rate
        signal = np.where(included, 1.0 if inside else (-1.0 if replace else 0.0), 0.0)
        x = signal + noise * rng.standard_normal((trials, n))
        without = _log_mixture(x, sampling_rate, noise, -1.0) if replace else -0.5 * (x / noise) ** 2
        score += np.sum(_log_mixture(x, sampling_rate, noise, 1.0) - without, axis=1)
    return score


def allocation_canary_scores(
    rng: np.random.Generator,
    trials: int,
    epoch_lengths: list[int],
    slots: int,
    noise: float,
    replace: bool,
    inside: bool,
    persistent: bool = False,
) -> np.ndarray:
    """Audit scores of a canary under a shuffling or balls-in-bins loader: each epoch puts the canary in one of
    ``slots`` batches uniformly at random (its position in a random permutation, or its bin; ``persistent``: the same
    bin every epoch), of which the epoch runs the first ``epoch_lengths[e]``. Along the canary's direction a run shows
    +1 in the canary's batch (−1 for the opposite canary on D′ under replace-one; nothing under add/remove) plus
    N(0, noise²) at every step. The score is the log-likelihood ratio of the whole transcript, the most powerful test:
    per epoch log[(t − L)/t + (1/t)Σ_s e^{(x_s − ½)/σ²}] for fresh positions, and with persistent bins
    log[(1/t)Σ_s e^{Σ_e (x_{e,s} − ½)/σ²}] over the epochs that ran slot s (over the same for the opposite canary under
    replace-one)."""
    var = noise * noise
    shift = 1.0 if inside else (-1.0 if replace else 0.0)
    score = np.zeros(trials)
    kept = rng.integers(slots, size=trials) if persistent else None  # the canary's bin for all epochs
    width = slots if persistent else 0
    plus, minus = np.zeros((trials, width)), np.zeros((trials, width))
    for length in epoch_lengths:
        position = rng.integers(slots, size=trials) if kept is None else kept
        x = noise * rng.standard_normal((trials, length))
        hit = position < length
        x[hit, position[hit]] += shift
        if not persistent:  # a fresh position: this epoch's own likelihood ratio
            absent = math.log(slots - length) if slots > length else -math.inf
            score += _log_allocation(x, var, absent, slots, 1.0)
            if replace:
                score -= _log_allocation(x, var, absent, slots, -1.0)
        else:  # the same bin every epoch: each slot's exponents add up over the epochs that ran it
            plus[:, :length] += (x - 0.5) / var
            minus[:, :length] += (-x - 0.5) / var
    if persistent:
        score = special.logsumexp(plus, axis=1) - math.log(slots)
        if replace:
            score -= special.logsumexp(minus, axis=1) - math.log(slots)
    return np.asarray(score)


def _log_allocation(x: np.ndarray, var: float, log_absent: float, slots: int, sign: float) -> np.ndarray:
    """log[(t − L)/t + (1/t)Σ_s e^{(sign·x_s − ½)/σ²}] per row (``log_absent`` = log(t − L))."""
    terms = special.logsumexp((sign * x - 0.5) / var, axis=1)
    return np.asarray(np.logaddexp(log_absent, terms) - math.log(slots))


def _log_mixture(x: np.ndarray, q: float, sigma: float, shift: float) -> np.ndarray:
    """log[(1 − q)·φ(x/σ) + q·φ((x − shift)/σ)] up to the shared constant."""
    if q >= 1.0:
        return -0.5 * ((x - shift) / sigma) ** 2
    return np.asarray(
        np.logaddexp(np.log1p(-q) - 0.5 * (x / sigma) ** 2, math.log(q) - 0.5 * ((x - shift) / sigma) ** 2)
    )
