"""dpcal's accounting library: mechanisms, conversions, calibration and algorithm families (no web imports).

Typical use::

    from accountants import RdpAccountant, GaussianEvent, PoissonSampledEvent, SelfComposedEvent
    event = SelfComposedEvent(PoissonSampledEvent(256 / 60000, GaussianEvent(1.1)), 14062)
    RdpAccountant().epsilon(event, delta=1e-5).value      # 2.59654…, refined optimal order 8.12

or, for a registered algorithm family, ``accountants.registry.get("dp-sgd")``.
"""

import importlib

from .calibration import Calibration, RdpCalibration, calibrate, calibrate_rdp
from .conversions import DEFAULT_ORDERS, Conversion, delta_from_rdp, epsilon_from_rdp
from .errors import CalibrationError, DpcalError, FieldIssue, ParameterError, UnsupportedAccountantError
from .events import (
    ComposedEvent,
    DpEvent,
    GaussianEvent,
    PoissonSampledEvent,
    PureDpEvent,
    SampledWithoutReplacementEvent,
    SelfComposedEvent,
    ZCdpEvent,
)
from .rdp import RdpAccountant, UnsupportedEventError


def __getattr__(name: str) -> object:
    """``accountants.registry`` (the registered algorithm families) without an import of its own: loaded when first
    used, since it imports every family."""
    if name == "registry":
        return importlib.import_module(f"{__name__}.registry")  # (not `from . import`: that asks this hook again)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_ORDERS",
    "Calibration",
    "CalibrationError",
    "ComposedEvent",
    "Conversion",
    "DpEvent",
    "DpcalError",
    "FieldIssue",
    "GaussianEvent",
    "ParameterError",
    "PoissonSampledEvent",
    "PureDpEvent",
    "RdpAccountant",
    "RdpCalibration",
    "SampledWithoutReplacementEvent",
    "SelfComposedEvent",
    "UnsupportedAccountantError",
    "UnsupportedEventError",
    "ZCdpEvent",
    "calibrate",
    "calibrate_rdp",
    "delta_from_rdp",
    "epsilon_from_rdp",
]
