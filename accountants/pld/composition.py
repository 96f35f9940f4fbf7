"""Composition of discrete privacy losses by one exponentially tilted, circular FFT, with every error bounded.

The composed loss S = Σ_i Σ_{k ≤ c_i} L_{i,k} (independent copies, c_i of leaf i) has the law of the convolution of the
leaves' discrete laws p_i. For a tilt θ ≥ 0, the tilted laws x_i = p_i e^{θL}/M_i(θ) are probability vectors and

    p_S(L) = e^{K − θL}·(x_1^{*c_1} * x_2^{*c_2} * …)(L),   K = Σ_i c_i log M_i(θ),

so the convolution can be computed on the x_i, where the tail that decides δ(ε) (L > ε) is not swamped by the bulk:
an FFT's rounding error is absolute, ≈ u‖x‖, and it reaches δ(ε) multiplied by e^{K−θε}, the Chernoff bound at ε,
instead of by 1 (Koskela, Jälkö & Honkela 2020 and dp_accounting add it untilted, which makes small δ uncertifiable).

The convolution powers are taken in the frequency domain, once: each x_i is placed on a circle of n points by loss
index mod n, transformed (real FFT), raised to c_i as |φ|^c e^{icarg φ}, multiplied, and transformed back; the circle
is read as the window of loss indices [B, B + n). Nothing on the way moves mass down, or its amount is added to δ:

1. *Wrap-around.* True mass below the window lands c·n indices higher (its tilted value, read at a higher loss, is
   worth less untilted: it under-counts only losses below B, which never enter δ(ε) for ε ≥ B, and over-counts
   above: queries below B are refused). Where it lands above the largest finite loss Σ c_i·(top knot of leaf i),
   the circle is set to 0: the true law is 0 there, so nothing true is lost. True mass at or above the top lands
   lower: its untilted P-mass is bounded by the Chernoff bound min_θ′ e^{K(θ′) − θ′·top} and added to δ (its copy
   inside the window only over-counts).
2. *FFT rounding.* Each forward transform errs by ‖e_i‖₂ ≤ η√n‖x_i‖₂ with η = 10u⌈log₂ n⌉ (Higham 2002,
   Thm. 24.2, constant rounded up); raised to c_i it errs by ≤ c_i(1 + ‖e_i‖)^{c_i}|e_i| since |φ| ≤ ‖x‖₁ = 1; the
   polar power is rounded to 4u(Σ c_i(|log|φ_i|| + |arg φ_i| + 1) + 2) relative, bin by bin; bins whose modulus is
   below e^{−60} are dropped (each costs ≤ e^{−60}); the inverse transform errs by η‖t‖₂. With ‖F⁻¹v‖₂ = ‖v‖₂/√n
   the result t errs by E₁ = ‖ΔΦ‖₂ + η√n‖t‖₂ in L1; negative values are clipped (towards the truth). The error
   reaches δ(ε) as at most E₁·sup_{L>ε} e^{K−θL}(1 − e^{ε−L}) = E₁·e^{K−θε}·θ^θ/(θ + 1)^{θ+1}, which is added.
3. *Tilting.* Each x_i and each weight e^{K−θL} carries a relative rounding bounded from its exponent's magnitude;
   the main sum is multiplied by the product of (1 + bound) over all factors.
4. *Atoms at +∞.* A composition is at +∞ if any release is: its mass is at most Σ c_i·(atom of leaf i).

δ(ε) is the sum of the main term and 1., 2., 4.; ε(δ) is the smallest ε ≥ max(B, 0) with δ(ε) ≤ δ, located on the
knots from suffix sums and solved between two knots, then checked by a direct (pairwise-summed) evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from scipy import fft, optimize

from .discrete import LeafPld, U

DROPPED_LOG_MODULUS = -60.0
"""Frequency bins whose composed modulus is below e^{−60} are set to 0 (their error is counted)."""
SUM_MARGIN = 1e-12
"""Relative allowance for the rounding of a (pairwise) sum of non-negative terms."""
EXPONENT_CAP = 600.0
"""Exponents of the suffix sums that locate ε(δ) are capped here (e^600·2^21 < the largest double)."""
DIRECT_EXPONENT = 700.0
"""The main sum multiplies its factors where no weight e^{K − θL} exceeds e^700 (< the largest double)."""
_CHERNOFF_TILTS = np.array([0.8, 1.0, 1.25])


@dataclass(frozen=True)
class Window:
    """Loss indices [bottom, bottom + size) read from the circle of ``size`` points."""

    bottom: int
    size: int
    tail_tilt: float = 1.0
    """A tilt θ′ > 0 near the one whose Chernoff bound on the mass above the window is smallest."""
    extended: bool = False
    """Forward transforms and powers in extended precision (x87 long double): their rounding bound, which the
    powers multiply by the count, shrinks by u_ext/u ≈ 1/2048; the inverse transform stays in double."""


EXTENDED_U = float(np.finfo(np.longdouble).eps) / 2.0
"""Unit roundoff of the extended type (= U where long double is plain double: then nothing is gained, nor lost)."""


def fft_rtol(size: int, unit: float = U) -> float:
    """η: relative L2 error of one (real) FFT of this length (Higham 2002, Thm. 24.2, constant rounded up)."""
    return 10.0 * unit * math.ceil(math.log2(max(size, 2)))


def _full_norm(half: np.ndarray, order: int) -> float:
    """The L1 or L2 norm over the full spectrum of a real signal, from its half spectrum (bins 1… counted twice)."""
    values = np.abs(half) ** order
    return float((2.0 * np.sum(values) - values[0]) ** (1.0 / order))


def _tilt_factor(theta: float) -> float:
    """sup_{y>0} e^{−θy}(1 − e^{−y}) = θ^θ/(θ + 1)^{θ+1} (1 at θ = 0)."""
    if theta <= 0.0:
        return 1.0
    return math.exp(theta * math.log(theta / (theta + 1.0)) - math.log(theta + 1.0))


class TiltedComposition:
    """The composed loss of ``leaves`` (count, leaf) on ``window``, computed with tilt ``theta`` (module docstring)."""

    def __init__(self, leaves: Sequence[tuple[int, LeafPld]], theta: float, window: Window) -> None:
        self.grid = leaves[0][1].grid
        self.theta = float(theta)
        self.window = window
        n = window.size
        spectrum, bound, rounding = self._composed_spectrum(leaves, n)
        eta = fft_rtol(n)
        t = fft.irfft(spectrum, n)
        # |Δt_j| ≤ ‖ΔΦ‖₁/n per output, and ‖Δt‖₂ = ‖ΔΦ‖₂/√n: L1 ≤ min(‖ΔΦ‖₁, ‖ΔΦ‖₂); the inverse's own rounding
        # is ≤ η‖Φ̂‖₁/n per output
        self.fft_l1 = min(_full_norm(bound, 1), _full_norm(bound, 2)) + 1.01 * eta * _full_norm(np.abs(spectrum), 1)
        np.maximum(t, 0.0, out=t)
        self.tilted = np.roll(t, -(window.bottom % n))
        # above the largest finite loss the true law is 0: what the circle holds there wrapped in from below the
        # window (or is rounding), so it is set to 0 (term 1)
        largest = sum(count * (leaf.offset + leaf.size - 1) for count, leaf in leaves)
        self.tilted[max(largest - window.bottom + 1, 0) :] = 0.0
        self.losses = (window.bottom + np.arange(n)) * self.grid
        self.infinity = min(1.0, sum(count * leaf.infinity for count, leaf in leaves) * (1.0 + SUM_MARGIN))
        max_loss = float(np.max(np.abs(self.losses)))
        weight_rounding = 4.0 * U * (abs(self.log_scale) + self.theta * max_loss + 2.0)
        self.rounding = math.exp(1.01 * (rounding + weight_rounding)) * (1.0 + SUM_MARGIN)
        self.lost = self._mass_above(leaves, (window.bottom + n) * self.grid)

    def _composed_spectrum(self, leaves: Sequence[tuple[int, LeafPld]], n: int) -> tuple[np.ndarray, np.ndarray, float]:
        """Φ̂ = Π φ̂_i^{c_i} on the half spectrum, a bound on |Φ̂_k − Φ_k| bin by bin, and the tilting's rounding.

        In the window's precision (double, or extended: u below is then the extended unit roundoff), except the last
        step: the modulus rounded to double, the phase reduced mod 2π and rounded to double, e^{iθ} as cos + i·sin in
        double — together ≤ 14u_double relative per bin, added.

        A real FFT of a non-negative x errs by at most η‖x‖₁ in every bin (each output sums the inputs with unit
        twiddles through ⌈log₂ n⌉ stages). With a_ik = |φ̂_ik| + η‖x_i‖₁ ≥ |φ_ik|, the mean-value theorem gives
        |Φ̂_k − Φ_k| ≤ A_k Σ_i c_i η‖x_i‖₁ / a_ik, A_k = Π a_ik^{c_i}; the polar power adds its rounding, and a bin
        dropped for A_k < e^{−60} errs by at most A_k. Which bins are dropped is decided from an upper bound on log A_k
        computed in double (|φ̂| rounded to double within 4u, raised); only the kept bins are powered."""
        half = n // 2 + 1
        real: type[np.floating[Any]] = np.longdouble if self.window.extended else np.float64
        unit = EXTENDED_U if self.window.extended else U
        eta = fft_rtol(n, unit)
        self.log_scale, rounding = 0.0, 0.0  # K, and the tilting's rounding
        transforms: list[tuple[int, np.ndarray, float]] = []
        screen = np.zeros(half)  # ≥ log A_k, in double: which bins can matter at all
        for count, leaf in leaves:
            if leaf.size > n:
                raise ValueError("a leaf is wider than the window")
            x, log_norm, rnd = leaf.tilted(self.theta)
            circle = np.zeros(n, dtype=real)
            circle[(leaf.offset + np.arange(leaf.size)) % n] = x
            transform = fft.rfft(circle)
            error = eta * float(np.sum(x))
            with np.errstate(divide="ignore"):
                screen += count * np.log(np.abs(transform.astype(complex)) * (1.0 + 4.0 * U) + error)
            transforms.append((count, transform, error))
            self.log_scale += count * log_norm
            rounding += count * rnd
        keep = np.flatnonzero(screen > DROPPED_LOG_MODULUS)
        with np.errstate(under="ignore"):
            bound = np.exp(screen) * 1.01  # a dropped bin errs by at most A_k
        spectrum = np.zeros(half, dtype=complex)
        spectrum[keep], bound[keep] = self._kept_bins(transforms, keep, real, unit)
        return spectrum, bound, rounding

    @staticmethod
    def _kept_bins(
        transforms: Sequence[tuple[int, np.ndarray, float]], keep: np.ndarray, real: type[Any], unit: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Φ̂ and its error bound on the kept bins, in the working precision (class docstring of the spectrum)."""
        log_modulus = np.zeros(keep.size, dtype=real)
        log_bound = np.zeros(keep.size, dtype=real)
        phase = np.zeros(keep.size, dtype=real)
        spread, rel = np.zeros(keep.size), np.zeros(keep.size)
        for count, transform, error in transforms:
            values = transform[keep]
            modulus = np.abs(values)
            with np.errstate(divide="ignore"):
                log_mod = np.log(modulus)
            angle = np.angle(values)
            log_modulus += count * log_mod
            log_bound += count * np.log(modulus + error)
            spread += np.asarray(count * error / (modulus + error), dtype=float)
            phase += count * angle
            finite_log = np.where(np.isfinite(log_mod), log_mod, 0.0)
            rel += np.asarray(count * (np.abs(finite_log) + np.abs(angle) + 1.0), dtype=float)
        with np.errstate(under="ignore"):
            modulus_d = np.asarray(np.exp(log_modulus), dtype=float)
            # the phase reduced mod 2π in the working precision, then e^{iθ} in double: ≤ 14u relative (below)
            angle_d = np.asarray(np.fmod(phase, 2.0 * math.pi), dtype=float)
            values_d = modulus_d * (np.cos(angle_d) + 1j * np.sin(angle_d))
            bound = np.asarray(np.exp(log_bound), dtype=float) * spread * 1.01
        bound += (4.0 * unit * (rel + 2.0) + 14.0 * U) * modulus_d
        return values_d, bound

    # -- the bound, term by term -------------------------------------------------------------------------------

    def _mass_above(self, leaves: Sequence[tuple[int, LeafPld]], top: float) -> float:
        """Chernoff bound on the P-mass of the composed finite part at or above ``top`` (term 1); 0 when ``top`` is
        above the composition's largest finite loss Σ c_i·(largest loss of leaf i)."""
        largest = sum(count * (leaf.offset + leaf.size - 1) for count, leaf in leaves) * self.grid
        if top > largest:
            return 0.0
        thetas = self.window.tail_tilt * _CHERNOFF_TILTS
        log_mgf = sum(count * leaf.log_mgf(thetas) for count, leaf in leaves)
        bound = float(np.min(np.asarray(log_mgf) * (1.0 + 1e-12) + 1e-12 - thetas * top))
        return min(1.0, math.exp(min(bound, 0.0)))

    @property
    def bottom(self) -> float:
        """The smallest ε a query may ask for."""
        return float(self.losses[0])

    def fft_term(self, epsilon: float, capped: bool = True) -> float:
        """Term 2 of the module docstring at ε: the FFTs' and powers' rounding, as it can reach δ(ε) — at most e
        where ``capped`` (an upper bound on δ needs no more), else up to e^700 (what a lower bound subtracts)."""
        if self.fft_l1 <= 0.0:
            return 0.0
        log_term = math.log(self.fft_l1 * _tilt_factor(self.theta) * self.rounding)
        return math.exp(min(log_term + self.log_scale - self.theta * epsilon, 1.0 if capped else 700.0))

    def error_terms(self, epsilon: float) -> float:
        """Terms 1, 2 and 4 of the module docstring at ε (everything but the main sum; at most 1, like δ)."""
        return min(self.fft_term(epsilon) + self.lost + self.infinity, 1.0)

    @cached_property
    def log_weights(self) -> np.ndarray:
        """K − θL at each knot of the window: log of the factor that turns the tilted law back into P-mass."""
        return np.asarray(self.log_scale - self.theta * self.losses)

    def main_sum(self, epsilon: float) -> float:
        """Σ_{L > ε} t(L)·e^{K − θL}·(1 − e^{ε−L}) as computed: within the factor :attr:`rounding` of its exact value
        on the computed circle (term 3), either way. Each term is the product of its three factors, each within a
        few units of rounding of its value (e^{K − θL} within 2u(|K| + θ|L|) + u: the budget of term 3), where no
        weight exceeds e^{:data:`DIRECT_EXPONENT`} (θ ≥ 0: the first is the largest); else the sum of the factors'
        logarithms, exponentiated."""
        first = int(np.searchsorted(self.losses, epsilon, side="right"))  # the losses are increasing
        losses, tilted, log_weights = self.losses[first:], self.tilted[first:], self.log_weights[first:]
        if not losses.size:
            return 0.0
        with np.errstate(divide="ignore", over="ignore", under="ignore"):
            if log_weights[0] <= DIRECT_EXPONENT:
                terms = tilted * np.exp(log_weights) * -np.expm1(epsilon - losses)
            else:
                terms = np.exp(np.log(tilted) + log_weights + np.log(-np.expm1(epsilon - losses)))
        return float(np.sum(terms))

    def delta(self, epsilon: float) -> float:
        """Upper bound on δ(ε) of the composition; 1 for ε below the window (nothing is certified there)."""
        if epsilon < self.bottom:
            return 1.0
        return min(1.0, self.main_sum(epsilon) * self.rounding + self.error_terms(epsilon))

    def epsilon(self, delta: float) -> float | None:
        """Smallest ε ≥ max(bottom, 0) with :meth:`delta` ≤ ``delta``; ``math.inf`` if none in the window, None if
        the answer may lie below the window (the caller moves it down)."""
        start = max(self.bottom, 0.0)
        if self.error_terms(float(self.losses[-1])) >= delta:
            return math.inf
        estimate = self._solve(delta, start)
        if estimate <= start:  # the answer is at the window's bottom or below: certify 0, or move the window
            if start == 0.0 and self.delta(0.0) <= delta:
                return 0.0
            if start > 0.0:
                return None
        return self._verified(delta, estimate)

    def suffix_sums(self, start: float) -> tuple[np.ndarray, np.ndarray]:
        """A_j = Σ_{i≥j} a_i and log B_j = log Σ_{i≥j} a_i·e^{−L_i}, a_i = t_i·e^{K − θL_i} as computed (no rounding
        factor): the main sum at ε between knots j − 1 and j is A_j − e^ε·B_j. B is summed linearly under a shift
        when the window's losses above ``start`` span less than :data:`EXPONENT_CAP` (each factor's exponent capped
        there, so no sum of at most 2^21 terms overflows), in log space otherwise. A locator only (cumulative sums
        and a difference): answers are checked by :meth:`main_sum`."""
        log_w = self.log_weights
        a = self.tilted * np.exp(np.minimum(log_w, EXPONENT_CAP))
        suffix_a = np.cumsum(a[::-1])[::-1]
        shift = float(self.losses[-1])
        with np.errstate(divide="ignore"):
            if shift - start <= EXPONENT_CAP:
                b = self.tilted * np.exp(np.minimum(log_w + shift - self.losses, EXPONENT_CAP))
                log_suffix_b = np.log(np.cumsum(b[::-1])[::-1]) - shift
            else:
                log_suffix_b = np.logaddexp.accumulate((np.log(a) - self.losses)[::-1])[::-1]
        return np.asarray(suffix_a), np.asarray(log_suffix_b)

    def _solve(self, delta: float, start: float) -> float:
        """Locate the answer on the knots with suffix sums (:meth:`suffix_sums`), then solve between two knots (not
        yet verified: the answer is certified by :meth:`_verified`)."""
        suffix_a, log_suffix_b = self.suffix_sums(start)
        suffix_a, log_suffix_b = suffix_a * self.rounding, log_suffix_b + math.log(self.rounding)
        first = int(np.searchsorted(self.losses, start, side="right"))
        n = self.losses.size

        def value(eps: float, j: int) -> float:  # terms with index ≥ j, i.e. losses ≥ losses[j]
            main = suffix_a[j] - math.exp(min(eps + float(log_suffix_b[j]), EXPONENT_CAP)) if j < n else 0.0
            return main + self.error_terms(eps)

        lo, hi = first - 1, n - 1  # value(losses[hi]) ≤ δ (checked by the caller); δ(start) > δ
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if value(float(self.losses[mid]), mid + 1) <= delta:
                hi = mid
            else:
                lo = mid
        left = start if lo < first else float(self.losses[lo])
        right = float(self.losses[hi])
        if lo < first and value(start, first) <= delta:
            return start
        if value(left, hi) - delta <= 0.0:
            return left
        if value(right, hi) - delta > 0.0:  # rounding of the suffix sums: the direct check steps up from here
            return right
        return float(optimize.brentq(lambda e: value(e, hi) - delta, left, right, xtol=1e-14, rtol=1e-14))

    def _verified(self, delta: float, estimate: float) -> float:
        eps, step = estimate, 1e-12 * max(1.0, abs(estimate))
        top = float(self.losses[-1])
        while self.delta(eps) > delta:
            if eps >= top:
                return math.inf
            eps, step = min(eps + step, top), step * 2.0
        return eps
