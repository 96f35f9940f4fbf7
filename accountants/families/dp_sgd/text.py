"""How DP-SGD's answers are worded: noise in both units, conventions and notes."""

from __future__ import annotations

import math

from ...params import resolve_noise_multiplier
from ...reports import Conventions, Noise
from .params import (
    SAMPLING_TEXT,
    SENSITIVITY_RULE,
    WITHOUT_AMPLIFICATION,
    DpSgdParams,
    allocated,
    batches_per_epoch,
    participations,
    without_amplification,
)

# -- presentation ----------------------------------------------------------------------------------------------------


def noise_multiplier(p: DpSgdParams) -> float:
    return resolve_noise_multiplier(p.noise_multiplier, p.noise_std, p.sensitivity)


def noise(p: DpSgdParams, z: float) -> Noise:
    return Noise.scaled(
        z,
        p.sensitivity,
        SENSITIVITY_RULE[p.neighbouring],
        "noise_std is in the units of the summed clipped gradients (the same units as clip_norm)",
    )


def conventions(p: DpSgdParams, steps: int, rule: str) -> Conventions:
    if p.sampling in WITHOUT_AMPLIFICATION:
        epochs = participations(p, steps)
        cap = f", at most ⌈epochs⌉ = {math.ceil(p.epochs)}" if p.epochs is not None else ""
        begun = f"epochs begun = ⌈steps/⌊n/b⌋⌉ = ⌈{steps}/{batches_per_epoch(p)}⌉{cap}: {epochs}"
        if allocated(p):
            rule += (
                f"; {begun}, each a random allocation of every example to {p.num_selected} of {batches_per_epoch(p)} "
                + (
                    "batches (fresh bins: composed over the epochs)"
                    if p.bins == "fresh"
                    else f"batches (persistent bins: one allocation of the {epochs} releases at z/√{epochs})"
                )
            )
        else:
            rule += f"; releases per example = {begun}"
    return Conventions(
        neighbouring=p.neighbouring,
        steps=steps,
        step_rule=rule,
        sampling=SAMPLING_TEXT[p.sampling] + _sampled(p),
        noise_multiplier_definition=(
            "noise_multiplier = noise std / sensitivity; "
            + SENSITIVITY_RULE[p.neighbouring]
            + (
                "; opacus/TF-Privacy's noise_multiplier (std/clip_norm) is twice this value"
                if p.neighbouring == "replace-one"
                else ""
            )
        ),
        released="every iterate",
    )


def _sampled(p: DpSgdParams) -> str:
    """The sampling's numbers: the rate (batches drawn with one) or the batch of the dataset."""
    if p.framework == "opacus":
        return f" (opacus: q = 1/len(data_loader) = 1/⌈{p.dataset_size}/{p.batch_size}⌉ = {p.sampling_rate:.6g})"
    if p.sampling in ("poisson", "truncated-poisson"):
        return f" (q = {p.batch_size}/{p.dataset_size} = {p.sampling_rate:.6g})"
    return f" (batch_size = {p.batch_size} of dataset_size = {p.dataset_size})"


_NO_AMPLIFICATION = (
    "no amplification by the {sampler} loader's randomness is claimed: each example is in exactly one batch per epoch, "
    "so each epoch releases it once through a Gaussian at the relation's sensitivity (the record's neighbour is read "
    "as the same position of the permutation or allocation, as in Chua et al. 2024); a tight analysis of shuffled "
    "batches is not known and amplification by random allocation (Feldman & Shenfeld 2025) is not applied here, so "
    "this ε is an upper bound that may be far from tight; the Poisson answer shown beside it (poisson-assumed) does "
    "not hold for this loader"
)


_ALLOCATION = (
    "balls-in-bins batches are accounted by random allocation (Feldman & Shenfeld 2025, arXiv 2502.08202): the tight "
    "accountant brackets the exact ε (epsilon_lower); the Rényi accountant's certified curve is looser; the Poisson "
    "answer shown beside it (poisson-assumed) is not this loader's"
)


def notes(p: DpSgdParams) -> list[str]:
    notes = []
    if without_amplification(p):
        notes.append(_NO_AMPLIFICATION.format(sampler=p.sampling))
    if allocated(p):
        notes.append(_ALLOCATION)
    if p.data_loader is not None and p.data_loader != p.sampling:
        notes.append(
            f"this ε assumes {p.sampling} batches, but your data loader is declared as {p.data_loader}: it does not "
            f"hold for that loader; ask again with sampling='{p.data_loader}' for the ε that does"
        )
    if p.sampling == "poisson" and p.neighbouring == "replace-one" and p.batch_size < p.dataset_size:
        notes.append(
            "replace-one under Poisson sampling is accounted through the dataset without the record (weak triangle "
            "inequality), which is conservative; add-remove accounting is tighter where it applies"
        )
    return notes
