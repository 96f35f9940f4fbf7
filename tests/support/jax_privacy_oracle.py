"""jax_privacy 2.0.0 as a test-only oracle in a process of its own.

JAX starts threads once it computes, and the test workers fork (the service's heavy computations): importing it in a
worker would leave it multithreaded at the fork. So the oracle runs here, started by :class:`JaxPrivacy`, reading one
JSON call per line (``[function, args]``, arrays as nested lists) and answering one JSON value per line, in double
precision.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np


class JaxPrivacy:
    """A running oracle process: ``oracle(name, *args)`` calls jax_privacy's function ``name`` there."""

    def __init__(self) -> None:
        command = [sys.executable, "-P", __file__]  # -P: not this folder first on the path (its http.py)
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def __call__(self, name: str, *args: Any) -> Any:
        assert self._process.stdin is not None and self._process.stdout is not None
        plain = [a.tolist() if isinstance(a, np.ndarray) else a for a in args]
        self._process.stdin.write(json.dumps([name, plain]) + "\n")
        answer = json.loads(self._process.stdout.readline())
        if isinstance(answer, dict) and "error" in answer:
            raise RuntimeError(answer["error"])
        return answer

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=60)


def _serve() -> None:
    import jax

    jax.config.update("jax_enable_x64", True)
    from jax_privacy.experimental import accounting
    from jax_privacy.matrix_factorization import sensitivity

    def amplified_bandmf_event(z: float, steps: int, bands: int, q: float) -> dict[str, float]:
        event = accounting.amplified_bandmf_event(z, steps, num_bands=bands, sampling_prob=q)
        inner = event.event
        return {"count": event.count, "q": inner.sampling_probability, "z": inner.event.noise_multiplier}

    functions = {
        "amplified_bandmf_event": amplified_bandmf_event,
        **{
            name: getattr(sensitivity, name)
            for name in (
                "get_sensitivity_banded_for_X",
                "get_min_sep_sensitivity_upper_bound_for_X",
                "fixed_epoch_sensitivity_for_X",
                "single_participation_sensitivity",
                "max_participation_for_linear_fn",
            )
        },
    }
    for line in sys.stdin:
        name, args = json.loads(line)
        arrays = [np.asarray(a, dtype=float) if isinstance(a, list) else a for a in args]
        try:
            value = functions[name](*arrays)
            answer = value if isinstance(value, dict) else float(value)
        except ValueError as error:
            answer = {"error": str(error)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
