"""How DP bilevel optimization's answers are worded: noise, conventions and releases."""

from __future__ import annotations

from ...reports import Conventions, Noise, Release
from .paper import PaperChain
from .params import BilevelParams
from .plan import mechanisms, sampling_rates

_SAMPLING_TEXT = {
    "full-batch": "full batch: every step uses all n records (no sampling)",
    "without-replacement": "without replacement: every inner step draws b_in distinct records and every outer step "
    "b_out, uniformly at random and independently (the paper draws with replacement; Remark 5.2)",
    "with-replacement": "with replacement: b i.i.d. uniform draws per step (Algorithms 3/4 as printed, Lemma 2.3)",
}


def _sampling_key(p: BilevelParams) -> str:
    return p.batch_sampling if p.mini else "full-batch"


def stated_noise(p: BilevelParams, z: float, z_in: float) -> Noise:
    inner_g, inner_l, outer = mechanisms(p)
    return Noise.scaled(
        z,
        outer.sensitivity,
        f"noise_multiplier z is the outer release's std over its replace-one sensitivity 2G/{outer.records} = "
        f"{outer.sensitivity:.6g} (G = {p.clip:.6g}); every inner step has multiplier z_in = {z_in:.6g} over its "
        f"own sensitivity: 2L₀^g/{inner_g.records} = {inner_g.sensitivity:.6g} (ỹ problem), "
        f"2(L₀^f + λL₀^g)/{inner_l.records} = {inner_l.sensitivity:.6g} (ỹ^λ problem); see releases",
        "noise_std is the per-coordinate std of N(0, σ²I_{d_x}) added to the penalty hypergradient "
        "(hypergradient units)",
    )


def stated_conventions(p: BilevelParams, z_in: float) -> Conventions:
    k = p.inner_total
    rule = (
        "given"
        if p.inner_noise_multiplier is not None
        else f"z·√K = z·√{k} (each inner solve's Rényi budget equals the outer release's: the paper's equal split)"
    )
    return Conventions(
        neighbouring="replace-one",
        steps=p.steps,
        step_rule=f"T = {p.steps} outer steps as given; each makes 2 inner solves of K = M·T_GD = {p.inner_rounds}·"
        f"{p.inner_steps} = {k} noisy gradient steps and 1 outer release: {p.steps}·(2·{k} + 1) Gaussian releases",
        sampling=_SAMPLING_TEXT[_sampling_key(p)],
        noise_multiplier_definition=(
            "noise_multiplier z = std/sensitivity of the outer release (σ = z·2G/n, z·2G/b_out); inner_noise_multiplier"
            " "
            f"z_in = std/sensitivity of every inner gradient step, here {rule}"
        ),
        released="every iterate (x_t, the inner iterates and the penalty hypergradients; the output "
        "argmin_t ‖x_{t+1} − x_t‖ is post-processing)",
    )


def stated_releases(p: BilevelParams, z: float, z_in: float, chain: PaperChain) -> tuple[Release, ...]:
    inner_g, inner_l, outer = mechanisms(p)
    q_in, q_out = sampling_rates(p)
    composition = "sequential and adaptive: per outer step 2 inner solves then 1 outer release, T times"
    out = []
    for mechanism, mu in ((inner_g, p.strong_convexity), (inner_l, p.regularization * p.strong_convexity / 2.0)):
        out.append(
            Release(
                name=mechanism.name,
                count=p.steps * mechanism.releases_per_step,
                sensitivity=mechanism.sensitivity,
                noise_std=z_in * mechanism.sensitivity,
                noise_multiplier=z_in,
                composition=composition,
                details={
                    "algorithm": "DP-Loc-SGD (Algorithm 4)" if p.mini else "DP-Loc-GD (Algorithm 2)",
                    "per_sample_bound": mechanism.per_sample_bound,
                    "strong_convexity": mu,
                    "dimension": mechanism.dimension,
                    "rounds": p.inner_rounds,
                    "steps_per_round": p.inner_steps,
                    "steps_per_solve": mechanism.releases_per_step,
                    "batch": mechanism.records,
                    "sampling_rate": q_in,
                    "paper_chain_gaussian_epsilon": chain.inner_gaussian,
                    "paper_chain_solve_epsilon": chain.inner_solve,
                },
            )
        )
    out.append(
        Release(
            name=outer.name,
            count=p.steps,
            sensitivity=outer.sensitivity,
            noise_std=z * outer.sensitivity,
            noise_multiplier=z,
            composition=composition,
            details={
                "per_sample_bound": outer.per_sample_bound,
                "dimension": outer.dimension,
                "batch": outer.records,
                "sampling_rate": q_out,
                "paper_chain_gaussian_epsilon": chain.outer_gaussian,
                "paper_chain_release_epsilon": chain.outer,
            },
        )
    )
    return tuple(out)
