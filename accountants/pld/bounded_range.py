"""Bounded-range releases (exponential mechanisms and their kin) as dominating pairs of blocks of adaptive steps.

A pair (P, Q) is η-bounded-range (η-BR; Durfee & Rogers 2019) when its privacy loss L = log dP/dQ takes values in an
interval of width η; since E_P[e^{−L}] = 1 the interval is [−tη, (1 − t)η] for some t ∈ [0, 1]. A
:class:`~accountants.events.BoundedRangeEvent` (η, ε) is a release that is both η-BR and ε-DP (ε ≤ η; an exponential
mechanism whose score has sensitivity Δ is 2Δ-BR and 2Δ-DP, a mixture of softmaxes can be ε-DP with range 2ε). The
class C(η, ε) of such pairs is what a run composes adaptively; no single pair of one release dominates its adaptive
composition as tightly as the recursion below, which is why a block of r steps is the unit:

1. *Extreme pairs.* Let W be convex on (0, ∞). Under E_P[e^{−L}] = 1, E_P[W(s e^{−L})] over laws of L on an
   interval [−a, b] is largest at the two-point law on its ends (a convex function of e^{−L} under one linear
   constraint), and a wider interval allows more. In C(η, ε) the widest intervals have b ≤ ε, a ≤ ε, a + b = w with
   w = min(η, 2ε): the generalised randomised responses GRR_t of width w, P(L = (1 − t)w) = p_t = (1 − e^{−tw})/
   (1 − e^{−w}), P(L = −tw) = 1 − p_t, with t ∈ [1 − ε/w, ε/w] (all of [0, 1] for pure bounded range, ε ≥ η; only
   t = ½, randomised response with ε, when 2ε ≤ η: then the range adds nothing to ε-DP). Dong, Durfee & Rogers 2020
   reduce bounded range to GRR_t the same way.
2. *Bellman recursion.* With V_0(x) = (1 − e^x)₊ and V_j(x) = sup_t E_{GRR_t}[V_{j−1}(x − L)], the hockey-stick
   divergence of any j-fold adaptive composition of C(η, ε) pairs at e^x is ≤ V_j(x) (condition on the first output;
   the adversary's later choices depend on it, the value function covers every choice). x ↦ V_j(x) is convex in
   s = e^x by induction (a sup of expectations of convex functions), which is what step 1 needs at every stage.
   The class is closed under swapping P and Q (t ↦ 1 − t), so one direction covers both.
3. *Lattice, pessimistically.* V_j is computed at the nodes x = iΔ, Δ = w/m (m = ``subdivisions``), and between
   nodes replaced by its chord in s (above a convex function: an upper bound). On the cell t ∈ [i/m, (i+1)/m] both
   points x − (1 − t)w and x + tw stay inside one node interval, and with ξ = e^{tw − iΔ} the objective is
   α₀ + α₁ξ + α₂/ξ, whose supremum is at an end of the cell or at ξ* = √(α₂/α₁): the sup over *every* t is taken
   in closed form (no grid over t). The t-range is widened outward to whole cells (a larger class: still an upper
   bound). The chord costs a relative O(1/m²) in the variance of the loss per step. Outside the nodes
   [−(r + 1)m, (r + 1)m] the values are exact (1 − e^x below −rw, 0 above rw).
4. *Blocks.* The profile of the r-step supremum, H_r(s) = chord of V_r at the nodes, is convex, non-increasing,
   1 − s at the left and 0 at the right: the profile of a pair (P_r, Q_r) with atoms of loss iΔ and masses
   P_r(iΔ) = e^{iΔ}·(jump of the slope of H_r at e^{iΔ}) — :func:`block_pair` returns it as a
   :class:`~accountants.pld.pairs.FinitePair`. It dominates every r-step adaptive composition of C(η, ε) pairs, so
   k = br + c steps are dominated by b copies of it and one c-step block (composition of dominating pairs, Zhu, Dong
   & Wang 2022), which the PLD accountant composes with the tree's other releases. The blocks lose against the exact
   recursion only the adaptivity *across* blocks, a few per cent of the variance at r = 64.
5. *Interleaving.* Where other releases, dominated by fixed pairs, come between the bounded-range ones, composing
   the blocks and those pairs still bounds the run: a fixed pair's step is a positive linear operator on the value
   function (an expectation over its loss, commuting with shifts) and the Bellman step is a supremum of such
   operators, so a Bellman step after a pair's step is at most the pair's step after the Bellman step; moving every
   pair's step to the end leaves the bounded-range steps consecutive.
6. *Rounding.* The recursion runs in ``longdouble`` and tracks a relative error allowance per step (see
   :func:`worst_case_profiles`; empirical, checked against a 40-digit reference in the tests). The masses are
   second differences; below the origin they are taken from the excess E = V − (1 − e^x) = e^x·V(−x) (swap
   symmetry), which is small there, so there is no cancellation against 1. Each mass is rounded up by the
   propagated value error and its own rounding and negative values are set to 0, so the masses used are ≥ those
   of the exact lattice pair entry by entry, which bounds δ from above.

Cost: O(r²m²) per block, once per (w, t-range, r) (remembered); the composition is the PLD accountant's.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .pairs import FinitePair, pure_pair

SUBDIVISIONS = 8
"""m: the lattice step is w/m (even, so that t = ½ is a node)."""
BLOCK = 64
"""r: steps composed exactly (adaptively) in one block."""
MAX_NODE_LOSS = 600.0
"""Largest |x| at a node (e^x must stay finite)."""
_REAL = np.longdouble
"""The recursion runs in extended precision where the platform has it (x86: 64-bit mantissa); every error bound
below uses this type's own unit roundoff, so it stays valid where ``longdouble`` is plain double."""
_UNIT = float(np.finfo(_REAL).eps) / 2.0

Cells = tuple[int, int]
"""The t-range [lo/m, hi/m] of the class on the lattice (0 ≤ lo ≤ hi ≤ m)."""


def _bellman_step(
    values: np.ndarray, m: int, cells: Cells, p_nodes: np.ndarray, cell: tuple[np.ndarray, ...]
) -> np.ndarray:
    """One step of the recursion on a padded array (m exact entries on each side); returns the interior."""
    n = values.size - 2 * m
    lo, hi = cells
    windows = sliding_window_view(values, n)  # row i is values[i : i + n], i.e. the node shifted by i − m
    best = windows[m].copy()  # t ∈ {0, 1}, or a mechanism that ignores the data: the loss is 0
    # cell ends t = i/m, 0 < i < m: loss (1 − t)w = (m − i)Δ w.p. p_i, −tw = −iΔ otherwise
    e0, e1 = max(lo, 1), min(hi, m - 1) + 1
    if e1 > e0:
        ends = p_nodes[e0:e1, None] * windows[e0:e1] + (1.0 - p_nodes[e0:e1, None]) * windows[m + e0 : m + e1]
        np.maximum(best, ends.max(axis=0), out=best)
    if hi <= lo:
        return np.asarray(best)
    c, kappa, beta, xi_hi = cell
    a_lo, a_hi = windows[lo:hi], windows[lo + 1 : hi + 1]  # x − (1 − t)w lies between these nodes
    b_lo, b_hi = windows[m + lo : m + hi], windows[m + lo + 1 : m + hi + 1]  # x + tw lies between these
    beta = beta[lo:hi]
    da, db = a_hi - a_lo, b_hi - b_lo
    d1 = c * (da - db)
    d0 = (a_lo - b_lo) - d1
    alpha1 = c * db + d1 / kappa
    alpha2 = -beta[:, None] * d0 / kappa
    interior = (alpha1 < 0.0) & (alpha2 < 0.0)  # concave in ξ: the maximum may be inside the cell
    if interior.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            xi = np.sqrt(np.where(interior, alpha2 / np.where(interior, alpha1, -1.0), 1.0))
        inside = interior & (xi > 1.0) & (xi < xi_hi)
        if inside.any():
            lam = np.clip(c * (xi - 1.0), 0.0, 1.0)
            p = np.clip((1.0 - beta[:, None] / xi) / kappa, 0.0, 1.0)
            value = p * ((1.0 - lam) * a_lo + lam * a_hi) + (1.0 - p) * ((1.0 - lam) * b_lo + lam * b_hi)
            np.maximum(best, np.where(inside, value, 0.0).max(axis=0), out=best)
    return np.asarray(best)


def _cell_constants(width: float, m: int) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    step = width / m
    w, h = _REAL(width), _REAL(step)
    kappa = -np.expm1(-w)
    t = np.arange(m + 1, dtype=_REAL) / m
    p_nodes = -np.expm1(-t * w) / kappa
    c = 1 / np.expm1(h)
    beta = np.exp(-np.arange(m, dtype=_REAL) * h)
    return p_nodes, (c, kappa, beta, np.exp(h))


Profile = tuple[np.ndarray, np.ndarray, float]
"""V_j and E_j at the nodes, and the relative rounding error they carry."""


def class_cells(width: float, epsilon: float, m: int) -> Cells:
    """The lattice t-range of C(η, ε) at width w = min(η, 2ε) (step 1), widened outward to whole cells."""
    top = min(epsilon / width, 1.0)
    lo, hi = math.floor(m * (1.0 - top) + 1e-9), math.ceil(m * top - 1e-9)
    return max(lo, 0), min(max(hi, lo), m)


def worst_case_profiles(
    width: float, steps: int, subdivisions: int, stages: tuple[int, ...], cells: Cells | None = None
) -> dict[int, Profile]:
    """V_j and E_j = V_j − (1 − e^x) at the nodes iΔ, |i| ≤ (steps + 1)·m, for each j in ``stages`` (≤ steps);
    ``cells`` the class's t-range on the lattice (default: all of [0, 1], pure bounded range).

    Only V is iterated: the class is closed under swapping P and Q, and the lattice recursion commutes with the
    perspective map (chords in s are carried to chords in 1/s), so E_j(x) = e^x·V_j(−x), a product (no cancellation).
    Returns {j: (V, E, relative_error)}: relative_error bounds the relative distance of both to the exact-arithmetic
    lattice values, (1 + ρ)^j − 1 with ρ = 64u·(2m + 16 + m/w) per step (u of ``longdouble``): the end points lose
    up to m ulps in 1 − p_i, and inside a cell ξ − 1 and 1 − β/ξ are differences of size ~Δ, which costs u/Δ
    (an empirical allowance, not a proof: ``tests/unit/test_pld_bounded_range.py`` checks it against an
    independent 40-digit recursion)."""
    m = subdivisions
    allowed = (0, m) if cells is None else cells
    half = (steps + 1) * m
    x = np.arange(-half - m, half + m + 1, dtype=_REAL) * (_REAL(width) / m)
    v = np.maximum(-np.expm1(x), 0)
    p_nodes, cell = _cell_constants(width, m)
    out: dict[int, Profile] = {}
    wanted = set(stages)
    step_error = 64.0 * _UNIT * (2 * m + 16 + m / width)
    scale = np.exp(x[m:-m])
    centre = half + m  # index of the node x = 0
    for j in range(1, steps + 1):
        # V_j is exact (1 − e^x, or 0) beyond ±jw, and the lattice keeps it so: update only |i| ≤ (j + 1)m
        reach = min(half, (j + 1) * m)
        lo, hi = centre - reach, centre + reach + 1
        v[lo:hi] = _bellman_step(v[lo - m : hi + m], m, allowed, p_nodes, cell)
        if j in wanted:
            values = v[m:-m].copy()
            rel = math.expm1(j * math.log1p(step_error))
            out[j] = (values, scale * values[::-1], rel + 2.0 * _UNIT)
    return out


def profile_masses(width: float, subdivisions: int, profile: Profile) -> tuple[np.ndarray, np.ndarray]:
    """The losses iΔ and the P-masses of the pair whose profile is the chord (in s = e^x) of the node values (steps
    4 and 6): e^{x_i}·(jump of the slope at s_i), rounded up entry by entry and clipped at 0."""
    values, excess, rel = profile
    half = (values.size - 1) // 2
    step = width / subdivisions
    idx = np.arange(-half, half + 1)
    s = np.exp(idx * _REAL(step))
    ds = s[:-1] * np.expm1(_REAL(step))  # s_{i+1} − s_i without cancellation
    err_v = (rel + 4 * _UNIT) * values
    err_e = (rel + 4 * _UNIT) * excess
    # slope of the chord on [s_i, s_{i+1}]: of E left of the origin, of V right of it (each where it is small);
    # the two differ by 1 (E = V − (1 − s)), which enters only at the origin
    left = idx[:-1] < 0
    slope = np.where(left, np.diff(excess), np.diff(values)) / ds
    slope_err = np.where(left, err_e[1:] + err_e[:-1], err_v[1:] + err_v[:-1]) / ds
    slope = np.concatenate(([0.0], slope, [0.0]))  # below the nodes E = 0; above them V = 0
    slope_err = np.concatenate(([0.0], slope_err, [0.0]))
    jump = np.diff(slope)
    jump[half] += 1.0  # at the origin: V-slope − (E-slope − 1)
    rounding = 4 * _UNIT * (np.abs(slope[1:]) + np.abs(slope[:-1]))
    rounding[half] += 4 * _UNIT
    jump += slope_err[1:] + slope_err[:-1] + rounding
    masses = (np.maximum(jump, 0) * s * (1 + 4 * _UNIT)).astype(float) * (1.0 + 2.0 * float(np.finfo(float).eps))
    return (idx * step).astype(float), masses


@lru_cache(maxsize=32)
def block_pair(width: float, epsilon: float, steps: int) -> FinitePair:
    """The pair dominating ``steps`` adaptive releases of C(η = width, ε) (module docstring, step 4); the losses of
    its atoms are iΔ exactly, the Q-masses P·e^{−iΔ}. Atoms of zero mass are left out."""
    w = min(width, 2.0 * epsilon)
    cells = class_cells(w, epsilon, SUBDIVISIONS)
    profile = worst_case_profiles(w, steps, SUBDIVISIONS, (steps,), cells)[steps]
    losses, masses = profile_masses(w, SUBDIVISIONS, profile)
    kept = masses > 0.0
    losses, masses = losses[kept], masses[kept]
    return FinitePair(tuple(losses.tolist()), tuple(masses.tolist()), tuple((masses * np.exp(-losses)).tolist()))


def bounded_range_leaves(width: float, epsilon: float, count: int) -> list[tuple[int, FinitePair]]:
    """``count`` adaptive releases of C(η = width, ε) as (count, pair) leaves: ⌊count/r⌋ blocks of r steps and one
    block of the rest (steps 4–5); randomised response with ε where the width leaves no room for a block (w near
    :data:`MAX_NODE_LOSS`: ε-DP alone, still a dominating pair) or ε = 0 (nothing is released about the record)."""
    w = min(width, 2.0 * epsilon)
    r = min(BLOCK, count, math.floor(MAX_NODE_LOSS / w) - 2) if w > 0.0 else 0
    if r < 1:
        return [(count, pure_pair(epsilon))]
    blocks, rest = divmod(count, r)
    out = [(blocks, block_pair(width, epsilon, r))]
    if rest:
        out.append((1, block_pair(width, epsilon, rest)))
    return out
