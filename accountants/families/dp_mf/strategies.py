"""Encoders (strategy matrices C) of the matrix-factorisation mechanism and their Gram matrices X = CᵀC.

The mechanism releases C·G + Z for the T×d matrix G of the steps' clipped gradient sums; the training iterates are a
post-processing B·(C·G + Z) with A = B·C the workload (prefix sums for SGD with momentum 0). Privacy depends on C
only, through X (:mod:`.sensitivity`). The strategies:

* ``identity``: C = I (DP-SGD: independent noise per step);
* ``tree``: binary-tree aggregation (Dwork, Naor, Pitassi & Rothblum 2010; Chan, Shi & Song 2011; DP-FTRL, Kairouz
  et al. 2021, arXiv 2103.00039): one row per node of the dyadic tree over the steps, a 1 where the node's range
  holds the step. Without completion only the nodes whose range has ended by step T are released (the online tree:
  a step lies in ⌈log₂(T+1)⌉ of them at most, dp_accounting's depth); with completion the tree is completed to 2^L
  leaves and every node that holds a step is released (L + 1 per step). ``restart_every`` starts a new tree every so
  many steps (block-diagonal C);
* ``toeplitz``: the lower-triangular Toeplitz C with Cᵢⱼ = c_{i−j} for 0 ≤ i − j < m: banded with m bands (BandMF,
  Choquette-Choo et al. 2023, arXiv 2306.08153);
* ``matrix``: a dense lower-triangular T×T C given row by row.
"""

from __future__ import annotations

import functools
import math

import numpy as np

MAX_DENSE_STEPS = 2048
"""Most steps of a strategy other than the identity (its Gram matrix is dense: T² entries)."""


def tree_gram(steps: int, completion: bool, restart_every: int | None) -> np.ndarray:
    """X for binary-tree aggregation over ``steps`` steps, a new tree every ``restart_every`` steps."""
    block = restart_every or steps
    gram = np.zeros((steps, steps))
    for start in range(0, steps, block):
        size = min(block, steps - start)
        gram[start : start + size, start : start + size] = _one_tree_gram(size, completion)
    return gram


@functools.lru_cache(maxsize=8)
def _one_tree_gram(leaves: int, completion: bool) -> np.ndarray:
    """Xᵢⱼ = the number of released nodes whose dyadic range holds both steps i and j."""
    steps = np.arange(leaves)
    gram = np.zeros((leaves, leaves))
    for level in range(math.ceil(math.log2(leaves)) + 1 if leaves > 1 else 1):
        node = steps >> level
        released = np.ones(leaves, dtype=bool) if completion else (node + 1) << level <= leaves
        same = (node[:, None] == node[None, :]) & released[:, None]
        gram += same
    gram.flags.writeable = False
    return gram


def tree_encoder(steps: int, completion: bool, restart_every: int | None) -> np.ndarray:
    """C itself for binary-tree aggregation: one row per released node (level by level), a 1 at the steps its
    dyadic range holds (CᵀC is :func:`tree_gram`, built independently of it)."""
    block = restart_every or steps
    rows = []
    for start in range(0, steps, block):
        size = min(block, steps - start)
        for level in range(math.ceil(math.log2(size)) + 1 if size > 1 else 1):
            width = 1 << level
            for first in range(0, size, width):
                if completion or first + width <= size:
                    row = np.zeros(steps)
                    row[start + first : start + min(first + width, size)] = 1.0
                    rows.append(row)
    return np.array(rows)


def tree_depth(steps: int, completion: bool) -> int:
    """Nodes on a step's path: ⌈log₂(T+1)⌉ released online, ⌈log₂T⌉ + 1 with completion (T ≥ 1)."""
    return math.ceil(math.log2(steps)) + 1 if completion else math.ceil(math.log2(steps + 1))


def toeplitz_bands(coefficients: tuple[float, ...]) -> int:
    """m: the index of the last non-zero coefficient, plus one."""
    nonzero = np.flatnonzero(np.asarray(coefficients, dtype=float))
    return int(nonzero[-1]) + 1 if len(nonzero) else 1


def toeplitz_column_norms(coefficients: tuple[float, ...], steps: int, columns: np.ndarray) -> np.ndarray:
    """‖C[:, j]‖² = Σ_{d < min(m, T − j)} c_d² at the given columns j < T (non-increasing in j; no O(T) work)."""
    squares = np.cumsum(np.square(np.asarray(coefficients, dtype=float)))
    norms: np.ndarray = squares[np.minimum(len(squares), steps - np.asarray(columns, dtype=np.int64)) - 1]
    return norms


def toeplitz_cyclic_sum(coefficients: tuple[float, ...], steps: int, sep: int, k: int) -> float:
    """Σ_{i<k} ‖C[:, i·sep]‖² for k ≤ ⌈T/sep⌉ in O(m): columns up to T − m have the full norm ‖c‖², only the last
    m − 1 are shorter."""
    m = len(coefficients)
    full = float(np.sum(np.square(coefficients)))
    whole = min(k, (steps - m) // sep + 1) if steps >= m else 0
    tail = np.arange(whole, k, dtype=np.int64) * sep
    return whole * full + float(toeplitz_column_norms(coefficients, steps, tail).sum())


def toeplitz_encoder(coefficients: tuple[float, ...], steps: int) -> np.ndarray:
    """The T×T lower-triangular Toeplitz C with Cᵢⱼ = c_{i−j} (0 ≤ i − j < m), zero elsewhere."""
    encoder = np.zeros((steps, steps))
    for lag, c in enumerate(coefficients[:steps]):
        encoder += np.diag(np.full(steps - lag, float(c)), -lag)
    return encoder


def gram_of(encoder: np.ndarray) -> np.ndarray:
    """CᵀC."""
    gram: np.ndarray = encoder.T @ encoder
    return gram


def bands(encoder: np.ndarray) -> int:
    """How many diagonals of a lower-triangular C hold non-zeros (1: diagonal)."""
    rows, cols = np.nonzero(encoder)
    return int((rows - cols).max()) + 1 if len(rows) else 1


def orthogonal_within_residues(gram: np.ndarray, groups: int) -> bool:
    """Whether columns i ≠ j with i ≡ j (mod ``groups``) are orthogonal: a record of one group (steps g, g + b, …)
    then meets independent noise at each of its steps."""
    return not any(np.any(np.diagonal(gram, offset=lag)) for lag in range(groups, gram.shape[0], groups))


OPERATOR_NORM_ITERATIONS = 500
"""Most power iterations behind a dense C's operator-norm bound (it stops once the bound is within 1e-9 of the
iterate's Rayleigh quotient, a few dozen for the strategies seen)."""


def toeplitz_operator_norm(coefficients: tuple[float, ...]) -> float:
    """An upper bound on ‖C‖₂ for a Toeplitz C at any T: Σ|c_d| (C·x is the convolution c ∗ x truncated, and
    ‖c ∗ x‖₂ ≤ ‖c‖₁‖x‖₂ by Young's inequality); the limit of ‖C‖₂ as T grows, equal to it for non-negative c."""
    return math.fsum(abs(float(c)) for c in coefficients)


def gram_operator_norm(gram: np.ndarray) -> float:
    """A certified upper bound on ‖C‖₂ = λ_max(CᵀC)^½ from X = CᵀC (diagonal positive).

    λ_max(X) ≤ λ_max(|X|) (|X| entrywise: |vᵀXv| ≤ |v|ᵀ|X||v|), and for the non-negative |X| and any positive v,
    λ_max(|X|) ≤ maxᵢ (|X|v)ᵢ/vᵢ (Collatz–Wielandt). v is a power iterate of |X| from the ones (positive: the
    diagonal is), so the bound closes on λ_max(|X|) — which equals λ_max(X) for a non-negative C. The floating-point
    products are within T·u relative of the exact ones; the bound is raised by 4·T·u to cover them."""
    absolute = np.abs(gram)
    v = np.ones(absolute.shape[0])
    bound = math.inf
    for _ in range(OPERATOR_NORM_ITERATIONS):
        w = absolute @ v
        bound = min(bound, float(np.max(w / v)))
        rayleigh = float(v @ w) / float(v @ v)
        if bound <= rayleigh * (1.0 + 1e-9):
            break
        v = w / np.max(w)
    slack = 1.0 + 4.0 * absolute.shape[0] * float(np.finfo(float).eps)
    return math.sqrt(bound * slack)
