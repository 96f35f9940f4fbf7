"""What the utility theorems of NSEG and NISPP share (Boob & Guzmán 2023): the operator class they assume and the
multi-pass weak gaps, EmpGap + M·UAS (VI, Prop. 2) and EmpGap + √2·M·UAS (SP, Prop. 1 with δ_x + δ_y ≤ √2·δ)."""

from __future__ import annotations

import math

from ...reports import Assumption, UtilityBound
from .params import SOURCE

OPERATOR_CLASS = Assumption(
    "every F_β is monotone, L-Lipschitz and bounded by M on W (class 𝓜¹(L, M)); W convex with diameter D",
    None,
    "cannot be checked from the hyperparameters",
)
"""The class every NSEG and NISPP utility theorem assumes (not checkable from the hyperparameters)."""


def weak_gaps(
    empirical: tuple[float, str],
    stability: tuple[float, str],
    lipschitz: float,
    theorem: str,
    conditions: tuple[Assumption, ...],
    applicable: bool,
) -> list[UtilityBound]:
    """The multi-pass bounds of ``theorem``: the empirical strong gap and the uniform argument stability (each a value
    with its source), and the weak VI and SP gaps they give."""
    emp, emp_source = empirical
    uas, uas_source = stability
    return [
        UtilityBound.explicit(
            "expected empirical strong gap E[EmpGap] of the run on its own data",
            emp,
            emp_source,
            conditions,
            applicable,
        ),
        UtilityBound.explicit(
            "uniform argument stability sup E‖A(S) − A(S′)‖ (parameter units)", uas, uas_source, conditions, applicable
        ),
        UtilityBound.explicit(
            "expected weak VI gap",
            emp + lipschitz * uas,
            f"{SOURCE}, {theorem}: EmpGap + M·UAS (Prop. 2)",
            conditions,
            applicable,
        ),
        UtilityBound.explicit(
            "expected weak SP gap",
            emp + math.sqrt(2.0) * lipschitz * uas,
            f"{SOURCE}, {theorem}: EmpGap + √2·M·UAS (Prop. 1 with δ_x + δ_y ≤ √2·δ)",
            conditions,
            applicable,
        ),
    ]
