"""Bilinear saddle-point problems on a product of Euclidean balls, with closed-form gaps (our test problems for Boob &
Guzmán 2023).

f_β(x, y) = xᵀAy + b_xᵀx − b_yᵀy on X = B(0, R) ⊂ R^{d₁}, Y = B(0, R) ⊂ R^{d₂}; the monotone operator is
F_β(w) = Jw + β with J = [[0, A], [−Aᵀ, 0]] skew and β = (b_x, b_y). The data are β = μ + (r/√d)·ρ with ρ Rademacher,
so E β = μ exactly and ‖β‖ ≤ ‖μ‖ + r = b_max (‖μ‖ = r = b_max/2). Constants of the operator class 𝓜¹(L, M):
L = ‖A‖₂, M = √2·L·R + b_max, diameter D = 2√2·R.

For the mean operator F(w) = Jw + b the strong VI gap and the SP gap coincide and are closed-form:
sup_{v∈W} ⟨F(v), w − v⟩ = ⟨b, w⟩ + R‖Ay + b_x‖ + R‖Aᵀx − b_y‖ (⟨Jv, v⟩ = 0). Everything is vectorised over a
leading axis of independent runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BilinearProblem:
    """One bilinear instance: coupling A, data mean μ and spread r, ball radius R."""

    coupling: np.ndarray
    mean: np.ndarray
    spread: float
    radius: float

    @classmethod
    def for_constants(
        cls, seed: int, dimension: int, lipschitz: float, smoothness: float, diameter: float
    ) -> BilinearProblem:
        """The instance whose class constants are exactly (M, L, D) = (lipschitz, smoothness, diameter) in R^d.

        R = D/(2√2), ‖A‖₂ = L, b_max = M − √2·L·R = M − L·D/2 (must be positive); d₁ = ⌊d/2⌋, d₂ = d − d₁.
        The random parts (A's singular vectors, μ's direction) come from ``seed``.
        """
        radius = diameter / (2.0 * math.sqrt(2.0))
        data_bound = lipschitz - math.sqrt(2.0) * smoothness * radius
        if data_bound <= 0.0 or dimension < 2:
            raise ValueError("the bilinear instance needs lipschitz > smoothness·diameter/2 and dimension ≥ 2")
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2**32 + 1,)))
        d1 = dimension // 2
        coupling = rng.standard_normal((d1, dimension - d1))
        norm = np.linalg.norm(coupling, 2)
        coupling = coupling * (smoothness / norm) if norm > 0 else coupling
        direction = rng.standard_normal(dimension)
        mean = direction * (0.5 * data_bound / np.linalg.norm(direction))
        return cls(coupling=coupling, mean=mean, spread=0.5 * data_bound, radius=radius)

    @property
    def d1(self) -> int:
        return int(self.coupling.shape[0])

    @property
    def dimension(self) -> int:
        return int(self.coupling.shape[0] + self.coupling.shape[1])

    @property
    def data_bound(self) -> float:
        """b_max ≥ ‖β‖ for every record."""
        return float(np.linalg.norm(self.mean) + self.spread)

    def skew(self, w: np.ndarray) -> np.ndarray:
        """Jw = (Ay, −Aᵀx) for each row w = (x, y)."""
        x, y = w[..., : self.d1], w[..., self.d1 :]
        return np.concatenate((y @ self.coupling.T, -(x @ self.coupling)), axis=-1)

    def batch_means(self, rng: np.random.Generator, runs: int, batch: int) -> np.ndarray:
        """Means of ``batch`` fresh records for each run: μ + (r/√d)·(mean of ``batch`` Rademacher vectors).

        The mean of B Rademacher signs is (2·Binomial(B, ½) − B)/B, drawn directly (same distribution)."""
        d = self.dimension
        signs = (2.0 * rng.binomial(batch, 0.5, size=(runs, d)) - batch) / batch
        return self.mean + (self.spread / math.sqrt(d)) * signs

    def project(self, w: np.ndarray) -> np.ndarray:
        """Blockwise projection onto B(0, R) × B(0, R)."""
        x, y = w[..., : self.d1], w[..., self.d1 :]
        return np.concatenate((_ball(x, self.radius), _ball(y, self.radius)), axis=-1)

    def gap(self, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
        """Strong VI gap (= SP gap) of each row w for the mean operator Jw + b (default b = μ, the population)."""
        b = self.mean if b is None else b
        x, y = w[..., : self.d1], w[..., self.d1 :]
        bx, by = b[..., : self.d1], b[..., self.d1 :]
        return np.asarray(
            np.sum(b * w, axis=-1)
            + self.radius * np.linalg.norm(y @ self.coupling.T + bx, axis=-1)
            + self.radius * np.linalg.norm(x @ self.coupling - by, axis=-1)
        )

    def subproblem_gap(self, u: np.ndarray, operator_value: np.ndarray) -> np.ndarray:
        """sup_{w∈W} ⟨G, u − w⟩ = ⟨G, u⟩ + R‖G_x‖ + R‖G_y‖: the certificate of a ν-approximate strong VI solution."""
        gx, gy = operator_value[..., : self.d1], operator_value[..., self.d1 :]
        return np.asarray(
            np.sum(operator_value * u, axis=-1)
            + self.radius * np.linalg.norm(gx, axis=-1)
            + self.radius * np.linalg.norm(gy, axis=-1)
        )


def _ball(v: np.ndarray, radius: float) -> np.ndarray:
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.asarray(v * np.minimum(1.0, radius / np.maximum(norms, 1e-300)))
