"""Service settings, read in one place from environment variables prefixed ``DPCAL_``.

=========================  ============  =====================================================
variable                   default       meaning
=========================  ============  =====================================================
``DPCAL_HOST``             127.0.0.1     interface ``dpcal serve`` binds to
``DPCAL_PORT``             8000          port ``dpcal serve`` listens on
``DPCAL_LOG_LEVEL``        info          uvicorn log level (critical, error, warning, info, debug)
``DPCAL_MAX_BODY_BYTES``   1000000       larger request bodies get 413
=========================  ============  =====================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

PREFIX = "DPCAL_"
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


class SettingsError(ValueError):
    """An environment variable has a value outside its allowed range."""


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "info"
    max_body_bytes: int = 1_000_000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        if f"{PREFIX}HOST" in env:
            values["host"] = env[f"{PREFIX}HOST"]
        if f"{PREFIX}PORT" in env:
            values["port"] = _integer(env, "PORT", 1, 65535)
        if f"{PREFIX}LOG_LEVEL" in env:
            level = env[f"{PREFIX}LOG_LEVEL"].lower()
            if level not in LOG_LEVELS:
                raise SettingsError(f"{PREFIX}LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {level!r}")
            values["log_level"] = level
        if f"{PREFIX}MAX_BODY_BYTES" in env:
            values["max_body_bytes"] = _integer(env, "MAX_BODY_BYTES", 1024, 100_000_000)
        return cls(**values)  # type: ignore[arg-type]


def _integer(env: Mapping[str, str], name: str, lo: int, hi: int) -> int:
    raw = env[f"{PREFIX}{name}"]
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{PREFIX}{name} must be an integer in [{lo}, {hi}], got {raw!r}") from None
    if not lo <= value <= hi:
        raise SettingsError(f"{PREFIX}{name} must be an integer in [{lo}, {hi}], got {value}")
    return value
