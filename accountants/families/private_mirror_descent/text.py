"""How private mirror descent's answers are worded: accountant results, conventions, releases, warnings, bounds."""

from __future__ import annotations

import math

import numpy as np

from ...conversions import epsilon_for_linear_rdp, epsilon_from_rdp
from ...mechanisms.pure_composition import (
    advanced_composition_epsilon,
    bounded_range_rdp,
    drv_epsilon,
    pure_dp_rdp,
)
from ...reports import Assumption, BoundResult, Conventions, Release
from .params import SOURCE, PrivateMirrorDescentParams
from .plan import Schedule
from .privacy import (
    BR_NAME,
    PURE_RDP_NAME,
    RDP_METHOD,
    Reading,
    paper_condition,
)

# -- presentation -----------------------------------------------------------------------------------------------------


def stated_conventions(sched: Schedule) -> Conventions:
    released = {
        "first-order": "the average (x̂, ŷ) of the private iterates x̃_t, ỹ_t; every vertex sample is accounted",
        "second-order": "the average (x̂, ŷ) of the private iterates x̃_t, ỹ_t; every vertex sample is accounted",
        "bias-reduced": "the average of the output samples x̂_t, ŷ_t; every vertex sample (gradient and output) is "
        "accounted",
        "sco": "the final sparsification x̂ (K' samples of x_T); every vertex sample is accounted",
    }[sched.variant]
    return Conventions(
        neighbouring="replace-one",
        steps=sched.steps,
        step_rule=f"{sched.step_rule}; {sched.count_rule}",
        sampling="disjoint batches in one pass (each record enters one gradient); vertex sampling from the iterates "
        "(no subsampling amplification is used)",
        noise_multiplier_definition=(
            "no noise is added: the privacy knob is the stepsize η. Each vertex sample is an exponential mechanism; "
            f"{sched.epsilon0_rule}; k = number of samples composed ({sched.count_rule})"
        ),
        released=released,
    )


def stated_releases(sched: Schedule, eta: float) -> list[Release]:
    e0 = sched.epsilon0(eta)
    details: dict[str, float | int | str] = {
        "epsilon0": e0,
        "bounded_range": sched.range_ratio * e0,
        "stepsize": eta,
    }
    composition = "sequential, adaptive: each sample is ε₀-DP conditionally on the previous ones"
    if sched.variant in ("first-order", "second-order"):
        per_player = (sched.steps - 1) * sched.samples_per_step
        return [
            Release(
                f"{player}-player vertex samples ~ P({player}_t), K = {sched.samples_per_step} per step",
                per_player,
                None,
                None,
                None,
                composition,
                details | {"score_sensitivity": e0 / 2.0, "data_independent_samples": sched.samples_per_step},
            )
            for player in ("x", "y")
        ]
    if sched.variant == "bias-reduced":
        return [
            Release(
                "vertex samples of Algorithm 3 (2^{N_t} per player for the multilevel gradient, 1 per player for "
                "the output), at most 3M in total",
                sched.count,
                None,
                None,
                None,
                composition,
                details | {"score_sensitivity": e0 / 2.0, "max_level": sched.max_level or 1},
            )
        ]
    return [
        Release(
            "vertex samples of Algorithm 5 (K per refresh of x̃, K' for the final sparsification)",
            sched.count,
            None,
            None,
            None,
            composition,
            details | {"log_probability_sensitivity": e0},
        )
    ]


def stated_warnings(p: PrivateMirrorDescentParams, sched: Schedule, acc: Reading, delta: float) -> list[str]:
    notes = [
        "constants are reconstructed from the paper's proofs (the text we worked from lost its formulas): "
        + sched.epsilon0_rule
        + "; "
        + sched.count_rule,
        "the sensitivity assumes ‖∇f(·; ξ)‖∞ ≤ lipschitz for every record (clip gradient coordinates if not)",
    ]
    if not acc.paper_valid:
        notes.append(paper_condition(acc.paper, delta))
    if acc.tight is not None and acc.tight > acc.rdp_epsilon:
        notes.append(
            "the tight accountant exceeds the rdp bound here: its lattice and blocks of 64 samples cost more than the "
            "rdp bound's slack at this budget"
        )
    if sched.variant == "sco":
        notes.append(
            "Algorithm 5 samples from a mixture of softmaxes: pure ε₀ = Δ' and bounded range 2Δ' (both give the "
            "same zCDP, Δ'²/2)"
        )
    return notes


_OPTIMUM_NAME = (
    "Optimal adaptive composition of the vertex samples (ε₀-DP, bounded range (range ratio)·ε₀; the tight accountant)"
)


def _linear_epsilon(rho: float, delta: float) -> float:
    """ε of the curve ρα at δ, converted exactly over real α."""
    return epsilon_for_linear_rdp(rho, delta)[0] if rho > 0.0 else 0.0


def bound_results(sched: Schedule, eta: float, delta: float, acc: Reading, chosen: str) -> list[BoundResult]:
    """Every privacy bound of the run: the Rényi ones, then the optimal and advanced compositions and the paper's."""
    return [*_renyi_bounds(sched, eta, delta, acc, chosen), *_composition_bounds(sched, eta, delta, acc, chosen)]


def _renyi_bounds(sched: Schedule, eta: float, delta: float, acc: Reading, chosen: str) -> list[BoundResult]:
    """The rdp accountant's curve and its two parts (bounded-range zCDP, exact pure-DP RDP), each converted."""
    e0 = sched.epsilon0(eta)
    k = sched.count
    orders = np.asarray(acc.orders, dtype=float)
    always = (Assumption("none (adaptive composition of the vertex samples)", True),)
    br = k * bounded_range_rdp(sched.range_ratio * e0, orders)
    pure = k * pure_dp_rdp(e0, orders)
    return [
        BoundResult(
            "RDP: per-order minimum of bounded-range zCDP and exact pure-DP RDP",
            RDP_METHOD,
            True,
            None,
            always,
            tuple(float(v) for v in acc.curve),
            acc.rdp_epsilon,
            chosen == "rdp",
            "every vertex sample",
        ),
        BoundResult(
            BR_NAME,
            "Cesar & Rogers 2021, Lemma 3.2; composition of zCDP",
            True,
            None,
            always,
            tuple(float(v) for v in br),
            _linear_epsilon(k * (sched.range_ratio * e0) ** 2 / 8.0, delta),
            False,
            "every vertex sample",
        ),
        BoundResult(
            PURE_RDP_NAME,
            "Kairouz, Oh & Viswanath 2015 (randomized response dominates ε₀-DP); Mironov 2017 (composition)",
            True,
            None,
            always,
            tuple(float(v) for v in pure),
            epsilon_from_rdp(lambda a: k * pure_dp_rdp(e0, a), delta, orders, True).value if k else 0.0,
            False,
            "every vertex sample",
        ),
    ]


def _composition_bounds(sched: Schedule, eta: float, delta: float, acc: Reading, chosen: str) -> list[BoundResult]:
    """The optimal adaptive composition (the tight accountant), the advanced-composition bounds and Corollary 3.6 as
    printed."""
    e0 = sched.epsilon0(eta)
    k = sched.count
    always = (Assumption("none (adaptive composition of the vertex samples)", True),)
    return [
        BoundResult(
            _OPTIMUM_NAME,
            "Bellman recursion over generalised randomised responses (Dong, Durfee & Rogers 2020 reduce bounded range "
            "to them) on blocks of 64 samples, composed by the PLD accountant (accountants/pld/bounded_range.py)",
            acc.tight is not None,
            acc.tight_row.reason,
            always,
            None,
            acc.tight,
            chosen == "tight",
            "every vertex sample",
        ),
        BoundResult(
            "Fully adaptive advanced composition √(2k log(1/δ))·ε₀ + kε₀²/2 (Theorem 3.5)",
            "Whitehouse, Ramdas, Rogers & Wu 2023 (González, Guzmán & Paquette 2024, Theorem 3.5) with the rigorous "
            "count",
            True,
            None,
            always,
            None,
            advanced_composition_epsilon(k, e0, delta),
            False,
            "every vertex sample",
        ),
        BoundResult(
            "Advanced composition min{kε₀, √(2k log(1/δ))·ε₀ + kε₀(e^{ε₀} − 1)}",
            "Dwork, Rothblum & Vadhan 2010, Thm. III.3, with the rigorous count",
            True,
            None,
            always,
            None,
            drv_epsilon(k, e0, delta),
            False,
            "every vertex sample",
        ),
        BoundResult(
            "Corollary 3.6 as printed (the paper accountant)",
            f"{SOURCE}: {sched.paper_rule}",
            acc.paper_valid,
            None if acc.paper_valid else paper_condition(acc.paper, delta),
            (
                Assumption(
                    f"ε ≤ 8 log(1/δ) = {8.0 * (-math.log(delta)):.6g}",
                    acc.paper_valid,
                    f"ε = {acc.paper:.6g}",
                ),
            ),
            None,
            acc.paper if acc.paper_valid else None,
            chosen == "paper",
            "every vertex sample",
        ),
    ]
