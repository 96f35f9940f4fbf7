"""The L2 sensitivity of a matrix-factorisation mechanism's encoder C under a participation pattern, bracketed.

Soundness. The mechanism releases C·G + Z, G the T×d matrix whose row t is step t's sum of clipped gradients (norm ≤ 1
per record: ``clip_norm`` scales everything) and Z Gaussian. One record with gradients gᵢ (‖gᵢ‖ ≤ 1) at the steps of a
pattern p moves C·G by Σ_{i∈p} C[:, i]·gᵢᵀ, whose squared Frobenius norm is Σ_{i,j∈p} Xᵢⱼ⟨gᵢ, gⱼ⟩ with X = CᵀC. The
sensitivity Δ is its maximum over the patterns the participation allows (at most k steps, any two at least ``b``
apart: the min-separation patterns of Choquette-Choo, McMahan, Rush & Thakurta 2023, arXiv 2211.06530, and of
Choquette-Choo et al. 2023, arXiv 2306.08153) and over the gradients. It is bracketed:

* from above by max_p Σ_{i,j∈p} |Xᵢⱼ| (|⟨gᵢ, gⱼ⟩| ≤ 1), relaxed to a computable bound as arXiv 2306.08153, Alg. 4:
  each row's best pattern, then the best pattern over those row maxima — a maximum over a superset of choices, so at
  least the quantity it bounds. Where that costs more than :data:`DP_BUDGET` operations, each row's best pattern is
  bounded by the sum of its k largest entries (separation ignored: a superset again);
* from below by 1ᵀX_pp1 for admissible patterns p (every gᵢ the same unit vector): the pattern the upper bound
  picked, the diagonal's best pattern, and the cyclic patterns s, s + b, s + 2b, ….

Equal brackets make the value exact. Two cases are exact by construction: a single participation (Δ² = max Xᵢᵢ, the
largest column norm) and X banded within the separation (Xᵢⱼ = 0 wherever |i − j| ≥ b: only diagonal terms of a
pattern count, and the dynamic program of arXiv 2306.08153, Alg. 3, maximises Σ_{i∈p} Xᵢᵢ exactly). The answer
reports the bracket, whether it is exact, and the pattern behind the lower end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DP_BUDGET = 2**27
"""Most element operations (T²·k) the row-wise dynamic program of the upper bound may take; above it each row is
bounded by its k largest entries (sound, looser)."""
EXACT_RTOL = 1e-12
"""Brackets this close (relative, in Δ²) count as equal: the gap is rounding in the sums."""


@dataclass(frozen=True)
class Pattern:
    """Which steps one record may join: at most ``max_participations``, any two at least ``min_separation`` apart."""

    min_separation: int
    max_participations: int

    def effective_participations(self, steps: int) -> int:
        """k, or fewer where T steps cannot hold k participations b apart: min(k, ⌈T/b⌉)."""
        return min(self.max_participations, -(-steps // self.min_separation))


@dataclass(frozen=True)
class Sensitivity:
    """Δ for a clip norm of 1: a certified upper bound (``value``), the value of a realised pattern (``lower``), the
    pattern (0-based steps) and whether the two agree (``exact``)."""

    value: float
    lower: float
    witness: tuple[int, ...]
    exact: bool
    method: str


ONE_PARTICIPATION = "one participation: the largest column norm of C"
"""The method of every single-participation sensitivity (the largest column norm of C, however it is computed)."""


def sensitivity(gram: np.ndarray, pattern: Pattern) -> Sensitivity:
    """Δ of an encoder with Gram matrix ``gram`` = CᵀC (T×T, symmetric, non-negative diagonal) under ``pattern``."""
    steps = gram.shape[0]
    k = pattern.effective_participations(steps)
    sep = pattern.min_separation
    diagonal = np.diag(gram).copy()
    if k == 1:
        best = int(np.argmax(diagonal))
        value = math.sqrt(diagonal[best])
        return Sensitivity(value, value, (best,), True, ONE_PARTICIPATION)
    if _banded_within(gram, sep):
        squared, witness = best_pattern(diagonal, sep, k)
        value = math.sqrt(squared)
        return Sensitivity(
            value,
            value,
            witness,
            True,
            f"columns of C at least {sep} steps apart are orthogonal: the best pattern of the diagonal of CᵀC "
            "(Choquette-Choo et al. 2023, arXiv 2306.08153, Alg. 3), exact",
        )
    upper_squared, rows_pattern, relaxed = _upper_bound(np.abs(gram), sep, k)
    candidates = [rows_pattern, best_pattern(diagonal, sep, k)[1], *_cyclic_patterns(steps, sep, k)]
    lower_squared, witness = max((_pattern_value(gram, p), p) for p in candidates)
    exact = lower_squared >= upper_squared * (1.0 - EXACT_RTOL)
    bound = (
        "each row of |CᵀC| bounded by its k largest entries, then the best pattern of those bounds"
        if relaxed
        else "each row's best pattern of |CᵀC|, then the best pattern of those maxima (arXiv 2306.08153, Alg. 4)"
    )
    return Sensitivity(
        math.sqrt(max(upper_squared, lower_squared)),
        math.sqrt(max(lower_squared, 0.0)),
        witness,
        exact,
        f"upper bound: {bound}; "
        + ("attained by the pattern shown, so exact" if exact else "a pattern attains the lower value"),
    )


def best_pattern(x: np.ndarray, sep: int, k: int) -> tuple[float, tuple[int, ...]]:
    """max Σ_{i∈p} xᵢ over patterns p of at most k indices, any two at least ``sep`` apart, and a maximising p
    (x ≥ 0; arXiv 2306.08153, Alg. 3, with the choices kept to recover the pattern)."""
    n = len(x)
    tables = [np.zeros(n + sep)]
    for _ in range(k):
        table = np.zeros(n + sep)
        table[:n] = x + tables[-1][sep : sep + n]
        tables.append(np.maximum.accumulate(table[::-1])[::-1])
    chosen: list[int] = []
    start = 0
    for level in range(k, 0, -1):
        if start >= n or tables[level][start] <= 0.0:
            break
        taken = x[start:] + tables[level - 1][start + sep : sep + n]
        index = start + int(np.argmax(taken))
        chosen.append(index)
        start = index + sep
    return float(tables[k][0]), tuple(chosen)


def _upper_bound(absolute: np.ndarray, sep: int, k: int) -> tuple[float, tuple[int, ...], bool]:
    """Alg. 4 of arXiv 2306.08153 on |X|: (Δ² bound, the pattern of its second stage, whether rows were relaxed)."""
    n = absolute.shape[0]
    relaxed = n * n * k > DP_BUDGET
    if relaxed:
        top = np.partition(absolute, n - k, axis=1)[:, n - k :] if k < n else absolute
        row_best = top.sum(axis=1)
    else:
        table = np.zeros((n, n + sep))
        for _ in range(k):
            table[:, :n] = absolute + table[:, sep : sep + n]
            table = np.maximum.accumulate(table[:, ::-1], axis=1)[:, ::-1]
        row_best = table[:, 0]
    value, pattern = best_pattern(row_best, sep, k)
    return value, pattern, relaxed


def _banded_within(gram: np.ndarray, sep: int) -> bool:
    """Whether Xᵢⱼ = 0 wherever |i − j| ≥ sep (columns of C that far apart are orthogonal)."""
    n = gram.shape[0]
    if sep >= n:
        return True
    return not np.any(np.triu(gram, k=sep))


def _cyclic_patterns(steps: int, sep: int, k: int) -> list[tuple[int, ...]]:
    """The patterns s, s + b, …, (k of them where they fit) for each offset s < b."""
    return [tuple(range(s, steps, sep))[:k] for s in range(min(sep, steps))]


def _pattern_value(gram: np.ndarray, pattern: tuple[int, ...]) -> float:
    """1ᵀX_pp1: the squared norm of the record's contribution with every gradient the same unit vector."""
    index = np.asarray(pattern, dtype=np.intp)
    return float(gram[np.ix_(index, index)].sum())
