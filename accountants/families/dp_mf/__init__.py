"""``dp-mf``: the matrix-factorisation mechanism (DP-FTRL, BandMF): correlated noise C·G + Z released about the
steps' clipped gradient sums G, the iterates its post-processing.

Modules: ``strategies`` (the encoders C and their Gram matrices), ``sensitivity`` (Δ under a participation pattern:
exact or a certified bracket), ``params``, ``privacy`` (the event tree: DP-SGD's for C = I, the amplified banded
reduction, or one Gaussian), ``text`` (wording), ``family``, ``simulate`` (prefix-sum error and a canary
audit), ``card.toml``.
"""

from __future__ import annotations

from .family import DpMf
from .params import DpMfParams
from .simulate import DpMfProblem, DpMfSimulator

__all__ = ["DpMf", "DpMfParams", "DpMfProblem", "DpMfSimulator"]
