"""How DP-SGD's answers are worded: noise in both units, conventions and notes."""

from __future__ import annotations

import math

from ...conversions import Conversion
from ...errors import ParameterError
from ...params import resolve_noise_multiplier
from ...reports import Conventions, Noise, RdpCurve
from .params import _SAMPLING_TEXT, _SENSITIVITY_RULE, DpSgdParams

# -- presentation ----------------------------------------------------------------------------------------------------


def _noise_multiplier(p: DpSgdParams) -> float:
    return resolve_noise_multiplier(p.noise_multiplier, p.noise_std, p.sensitivity)


def _require_finite(value: float, field: str) -> None:
    if not math.isfinite(value):
        raise ParameterError.single(field, "is too small for a finite ε bound at this δ", "a larger value")


def _curve(conversion: Conversion) -> RdpCurve:
    eps: list[float | None] = [float(e) if math.isfinite(e) else None for e in conversion.rdp]
    return RdpCurve(tuple(float(a) for a in conversion.orders), tuple(eps))


def _noise(p: DpSgdParams, z: float) -> Noise:
    return Noise.scaled(
        z,
        p.sensitivity,
        _SENSITIVITY_RULE[p.neighbouring],
        "noise_std is in the units of the summed clipped gradients (the same units as clip_norm)",
    )


def _conventions(p: DpSgdParams, steps: int, rule: str) -> Conventions:
    return Conventions(
        neighbouring=p.neighbouring,
        steps=steps,
        step_rule=rule,
        sampling=_SAMPLING_TEXT[p.sampling],
        noise_multiplier_definition=(
            "noise_multiplier = noise std / sensitivity; "
            + _SENSITIVITY_RULE[p.neighbouring]
            + (
                "; opacus/TF-Privacy's noise_multiplier (std/clip_norm) is twice this value"
                if p.neighbouring == "replace-one"
                else ""
            )
        ),
        released="every iterate",
    )


def _notes(p: DpSgdParams) -> list[str]:
    notes = []
    if p.sampling == "poisson" and p.neighbouring == "replace-one" and p.batch_size < p.dataset_size:
        notes.append(
            "replace-one under Poisson sampling is accounted through the dataset without the record (weak triangle "
            "inequality), which is conservative; add-remove accounting is tighter where it applies"
        )
    return notes
