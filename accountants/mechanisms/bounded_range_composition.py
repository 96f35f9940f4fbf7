"""Adaptive composition of k ε-bounded-range mechanisms (e.g. exponential mechanisms): a sound numerical accountant
that is nearly optimal for this class, unlike optimal *pure-DP* composition (Kairouz–Oh–Viswanath), which is optimal
for the larger class of ε-DP mechanisms, and unlike the ε²/8-zCDP bound (Cesar & Rogers 2021), which is an RDP bound.

A pair (P, Q) is ε-bounded-range (ε-BR; Durfee & Rogers 2019) when its privacy loss L = log dP/dQ takes values in an
interval of width ε; since E_P[e^{−L}] = 1 the interval is [−tε, (1 − t)ε] for some t ∈ [0, 1]. The argument:

1. *Extreme pairs.* Let W be convex on (0, ∞). Under E_P[e^{−L}] = 1, E_P[W(s e^{−L})] over laws of L on
   [−tε, (1 − t)ε] is largest at the two-point law on the end points (maximising a convex function of e^{−L} under
   one linear constraint): the generalised randomised response GRR_t, P(L = (1 − t)ε) = p_t =
   (1 − e^{−tε})/(1 − e^{−ε}), P(L = −tε) = 1 − p_t (Dong, Durfee & Rogers 2020 reduce BR to GRR_t the same way).
2. *Bellman recursion.* With V_0(x) = (1 − e^x)₊ and V_j(x) = sup_t E_{GRR_t}[V_{j−1}(x − L)], the hockey-stick
   divergence of any j-fold adaptive composition of ε-BR pairs at e^x is ≤ V_j(x) (condition on the first output;
   the adversary's later choices depend on it, the value function covers every choice). x ↦ V_j(x) is convex in
   s = e^x by induction (a sup of expectations of convex functions), which is what step 1 needs at every stage.
   The class is closed under swapping P and Q (t ↦ 1 − t), so one direction covers both.
3. *Lattice, pessimistically.* V_j is computed at the nodes x = iΔ, Δ = ε/m (m = ``subdivisions``), and between
   nodes replaced by its chord in s (above a convex function: an upper bound). On the cell t ∈ [i/m, (i+1)/m] both
   points x − (1 − t)ε and x + tε stay inside one node interval, and with ξ = e^{tε − iΔ} the objective is
   α₀ + α₁ξ + α₂/ξ, whose supremum is at an end of the cell or at ξ* = √(α₂/α₁): the sup over *every* t is taken
   in closed form (no grid over t). The chord costs a relative O(1/m²) in the variance of the loss per step.
   Outside the nodes [−(r + 1)m, (r + 1)m] the values are exact (1 − e^x below −rε, 0 above rε).
4. *Blocks of r steps, composed by FFT.* The profile of the r-step supremum, H_r(s) = chord of V_r at the nodes, is
   convex, non-increasing, 1 − s at the left and 0 at the right: the profile of a pair (P_r, Q_r) with atoms of loss
   iΔ and masses P_r(iΔ) = e^{iΔ}·(jump of the slope of H_r at e^{iΔ}). It dominates every r-step adaptive
   composition of ε-BR pairs, so k = br + c steps are dominated by P_r^{⊗b} ⊗ P_c (composition of dominating pairs,
   Zhu, Dong & Wang 2022), composed with :mod:`accountants.mechanisms.discrete_pld` (pessimistic truncation, FFT
   rounding added to the atom at ∞). The blocks lose against the exact recursion only the adaptivity *across*
   blocks, a few per cent of the variance at r = 64.
5. *Rounding.* The recursion runs in ``longdouble`` and tracks a relative error allowance per step (see
   :func:`worst_case_profiles`; empirical, checked against a 40-digit reference in the tests). The masses are
   second differences; below the origin they are taken from the excess E = V − (1 − e^x) = e^x·V(−x) (swap
   symmetry), which is small there, so there is no cancellation against 1. Each mass is rounded up by the
   propagated value error and its own rounding and negative values are set to 0, so the masses used are ≥ those
   of the exact lattice pair entry by entry, which bounds δ from above. Small convolutions are summed directly
   (relative error only); the FFT's absolute error goes to the atom at ∞, which grows about linearly in k/64 and
   sets the smallest certifiable δ (about 2e-11 at k = 10⁶).

Every δ is therefore an upper bound, and every ε one-sided. Cost: O(r²m²) for the block and O(N log N log(k/r))
for the composition, for any k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import validation as check
from ..errors import ParameterError
from . import discrete_pld as pld_ops

DEFAULT_SUBDIVISIONS = 8
"""m: the lattice step is width/m."""
DEFAULT_BLOCK = 64
"""r: steps composed exactly (adaptively) before the blocks are composed by FFT."""
DEFAULT_TAIL_MASS = 1e-15
DEFAULT_MAX_POINTS = 1 << 20
_DIRECT_LIMIT = 1 << 28
"""Convolutions up to this many products are summed directly (no absolute FFT error, see discrete_pld.convolve)."""
_MAX_NODE_LOSS = 600.0
"""Largest |x| at a node (e^x must stay finite)."""
_REAL = np.longdouble
"""The recursion runs in extended precision where the platform has it (x86: 64-bit mantissa); every error bound
below uses this type's own unit roundoff, so it stays valid where ``longdouble`` is plain double."""
_UNIT = float(np.finfo(_REAL).eps) / 2.0


def _bellman_step(values: np.ndarray, m: int, p_nodes: np.ndarray, cell: tuple[np.ndarray, ...]) -> np.ndarray:
    """One step of the recursion on a padded array (m exact entries on each side); returns the interior."""
    n = values.size - 2 * m
    windows = sliding_window_view(values, n)  # row i is values[i : i + n], i.e. the node shifted by i − m
    best = windows[m].copy()  # t ∈ {0, 1}: the loss is 0
    # cell ends t = i/m, 0 < i < m: loss (1 − t)ε = (m − i)Δ w.p. p_i, −tε = −iΔ otherwise
    ends = p_nodes[1:m, None] * windows[1:m] + (1.0 - p_nodes[1:m, None]) * windows[m + 1 : 2 * m]
    np.maximum(best, ends.max(axis=0), out=best)
    c, kappa, beta, xi_hi = cell
    a_lo, a_hi = windows[0:m], windows[1 : m + 1]  # x − (1 − t)ε lies between these nodes
    b_lo, b_hi = windows[m : 2 * m], windows[m + 1 : 2 * m + 1]  # x + tε lies between these
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


def worst_case_profiles(width: float, steps: int, subdivisions: int, stages: tuple[int, ...]) -> dict[int, Profile]:
    """V_j and E_j = V_j − (1 − e^x) at the nodes iΔ, |i| ≤ (steps + 1)·m, for each j in ``stages`` (≤ steps).

    Only V is iterated: the class is closed under swapping P and Q, and the lattice recursion commutes with the
    perspective map (chords in s are carried to chords in 1/s), so E_j(x) = e^x·V_j(−x), a product (no cancellation).
    Returns {j: (V, E, relative_error)}: relative_error bounds the relative distance of both to the exact-arithmetic
    lattice values, (1 + ρ)^j − 1 with ρ = 64u·(2m + 16 + m/ε) per step (u of ``longdouble``): the end points lose
    up to m ulps in 1 − p_i, and inside a cell ξ − 1 and 1 − β/ξ are differences of size ~Δ, which costs u/Δ
    (an empirical allowance, not a proof: ``tests/unit/test_bounded_range_composition.py`` checks it against an
    independent 40-digit recursion)."""
    m = subdivisions
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
        # V_j is exact (1 − e^x, or 0) beyond ±jε, and the lattice keeps it so: update only |i| ≤ (j + 1)m
        reach = min(half, (j + 1) * m)
        lo, hi = centre - reach, centre + reach + 1
        v[lo:hi] = _bellman_step(v[lo - m : hi + m], m, p_nodes, cell)
        if j in wanted:
            values = v[m:-m].copy()
            rel = math.expm1(j * math.log1p(step_error))
            out[j] = (values, scale * values[::-1], rel + 2.0 * _UNIT)
    return out


def dominating_pld(width: float, subdivisions: int, profile: Profile) -> pld_ops.DiscretePld:
    """The pair whose profile is the chord (in s = e^x) of the node values (module docstring, steps 4–5): a mass
    e^{x_i}·(jump of the slope at s_i) at loss x_i = iΔ, rounded up entry by entry and clipped at 0."""
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
    masses = (np.maximum(jump, 0) * s * (1 + 4 * _UNIT)).astype(float) * (1.0 + 2.0 * pld_ops.U)  # rounded up
    return pld_ops.DiscretePld(-half, masses, 0.0)


@dataclass(frozen=True)
class BoundedRangeComposition:
    """The dominating PLD of k adaptively composed ε-BR mechanisms; query :meth:`delta` / :meth:`epsilon`."""

    width: float
    count: int
    subdivisions: int
    block: int
    grid: float
    """The loss grid actually used (width/m, times 2 per pessimistic coarsening)."""
    pld: pld_ops.DiscretePld

    @classmethod
    def build(
        cls,
        width: float,
        count: int,
        *,
        subdivisions: int = DEFAULT_SUBDIVISIONS,
        block: int = DEFAULT_BLOCK,
        tail_mass: float = DEFAULT_TAIL_MASS,
        max_points: int = DEFAULT_MAX_POINTS,
    ) -> BoundedRangeComposition:
        w = check.positive("width", width)
        k = check.positive_int("count", count)
        m = check.positive_int("subdivisions", subdivisions)
        r = check.positive_int("block", block)
        points = check.positive_int("max_points", max_points)
        tail = check.positive("tail_mass", tail_mass)
        if m < 2:
            raise ParameterError.single("subdivisions", "must be >= 2", ">= 2", subdivisions)
        # the padded nodes reach ±(r + 2)ε: keep e^x (and sums of a few such values) finite
        r = min(r, k, math.floor(_MAX_NODE_LOSS / w) - 2)
        if r < 1:
            raise ParameterError.single(
                "width", f"must be < {_MAX_NODE_LOSS / 2:g} for this accountant", f"< {_MAX_NODE_LOSS / 2:g}", width
            )
        blocks, rest = divmod(k, r)
        profiles = worst_case_profiles(w, r, m, (r, rest) if rest else (r,))
        single = dominating_pld(w, m, profiles[r])
        composed, factor = pld_ops.compose(single, blocks, tail, points, _DIRECT_LIMIT)
        if rest:
            extra = dominating_pld(w, m, profiles[rest])
            if factor > 1:
                extra = pld_ops.coarsen(extra, factor)
            product, noise = pld_ops.convolve(composed, extra, _DIRECT_LIMIT)
            composed = pld_ops.truncate(product, max(tail, noise), tail)
        return cls(w, k, m, r, (w / m) * factor, composed)

    @property
    def infinity_mass(self) -> float:
        return self.pld.infinity

    def delta(self, epsilon: float) -> float:
        """Upper bound on δ(ε) of the k-fold adaptive composition."""
        e = check.non_negative("epsilon", epsilon)
        return min(1.0, pld_ops.delta_at(self.pld, self.grid, e))

    def epsilon(self, delta: float) -> float:
        """Upper bound on the smallest ε with δ(ε) ≤ ``delta``; ParameterError on ``delta`` if none is certified."""
        d = check.delta("delta", delta)
        eps = pld_ops.epsilon_at(self.pld, self.grid, d)
        if not math.isfinite(eps):
            raise pld_ops.uncertified(self.pld.infinity, delta)
        return eps
