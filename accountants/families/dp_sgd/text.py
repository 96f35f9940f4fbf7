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


def sensitivity_rule(p: DpSgdParams) -> str:
    """How one record's sensitivity follows from clip_norm (microbatches double it under add-remove)."""
    if p.microbatched:
        return (
            f"sensitivity = 2·clip_norm (microbatches of {p.microbatch_size}: adding or removing a record changes its "
            "microbatch's clipped mean by up to 2·clip_norm)"
        )
    return SENSITIVITY_RULE[p.neighbouring]


def noise(p: DpSgdParams, z: float) -> Noise:
    return Noise.scaled(
        z,
        p.sensitivity,
        sensitivity_rule(p),
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
    if p.gradient_accumulation_steps > 1:
        rule += (
            f"; optimizer steps: each accumulates {p.gradient_accumulation_steps} physical batches of {p.batch_size}, "
            f"an effective batch of {p.effective_batch_size}"
        )
    return Conventions(
        neighbouring=p.neighbouring,
        steps=steps,
        step_rule=rule,
        sampling=SAMPLING_TEXT[p.sampling] + _sampled(p) + _users(p),
        noise_multiplier_definition=(
            "noise_multiplier = noise std / sensitivity; "
            + sensitivity_rule(p)
            + (
                "; opacus/TF-Privacy's noise_multiplier (std/clip_norm) is twice this value"
                if p.sensitivity == 2.0 * p.clip_norm
                else ""
            )
        ),
        released="every iterate",
        protects="user" if p.per_user else "example",
        examples_per_user=p.examples_per_user,
        sampling_rate=p.sampling_rate if p.sampling in ("poisson", "truncated-poisson") else None,
    )


def _users(p: DpSgdParams) -> str:
    """What a record is, where the privacy is per user."""
    if p.sampling_unit == "user":
        return (
            "; records are users: dataset_size counts users, batch_size users per batch, each user's contribution "
            "clipped as one"
        )
    if p.examples_per_user > 1:
        return (
            f"; user-level: each user has at most {p.examples_per_user} examples, each clipped on its own, so a batch "
            f"holding k of them moves the sum by up to k times the sensitivity"
        )
    return ""


def _sampled(p: DpSgdParams) -> str:
    """The sampling's numbers: the rate (batches drawn with one) or the batch of the dataset."""
    b = p.effective_batch_size
    if p.framework == "opacus":
        return f" (opacus: q = 1/len(data_loader) = 1/⌈{p.dataset_size}/{b}⌉ = {p.sampling_rate:.6g})"
    if p.sampling in ("poisson", "truncated-poisson"):
        effective = f"effective batch {p.gradient_accumulation_steps}·{p.batch_size} = " if b != p.batch_size else ""
        return f" (q = {effective}{b}/{p.dataset_size} = {p.sampling_rate:.6g})"
    name = "effective batch" if b != p.batch_size else "batch_size"
    return f" ({name} = {b} of dataset_size = {p.dataset_size})"


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
    notes += _batch_notes(p)
    if p.sampling == "poisson" and p.neighbouring == "replace-one" and p.effective_batch_size < p.dataset_size:
        notes.append(
            "replace-one under Poisson sampling is accounted through the dataset without the record (weak triangle "
            "inequality), which is conservative; add-remove accounting is tighter where it applies"
        )
    return notes


PHYSICAL_BATCH = 64
"""A batch_size at or below this, without gradient_accumulation_steps, looks like the batch of one device pass."""


def _batch_notes(p: DpSgdParams) -> list[str]:
    """Warnings on how batches are built: a physical batch given as the optimizer's, microbatches, user-level."""
    notes = []
    if p.gradient_accumulation_steps == 1 and p.batch_size <= PHYSICAL_BATCH < p.dataset_size:
        notes.append(
            f"batch_size = {p.batch_size} is small for DP-SGD: if it is the physical batch of one forward/backward "
            "pass and the optimizer steps after accumulating several of them, give gradient_accumulation_steps: "
            "the sampling rate is then that many times larger and steps count optimizer steps, so ε is larger "
            "(accounting the physical batch as the optimizer's under-reported ε 8× in jax_privacy PR #287)"
        )
    if p.microbatched:
        notes.append(
            "microbatches: each record's microbatch is assumed fixed by the record alone (removing it changes one "
            "microbatch's clipped mean, by up to 2·clip_norm); splitting a batch by position moves other records "
            "between microbatches and is not covered"
        )
    if p.examples_per_user > 1 and p.sampling == "fixed-size":
        notes.append(
            "user-level with fixed-size batches: no amplification by sampling is claimed (a batch holds at most "
            "min(K, b) of the user's examples); Poisson sampling is accounted tightly as a mixture of Gaussians"
        )
    return notes
