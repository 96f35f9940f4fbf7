"""Service settings, read in one place from environment variables prefixed ``DPCAL_``.

=========================  ============  =====================================================
variable                   default       meaning
=========================  ============  =====================================================
``DPCAL_HOST``             127.0.0.1     interface ``dpcal serve`` binds to
``DPCAL_PORT``             8000          port ``dpcal serve`` listens on
``DPCAL_LOG_LEVEL``        info          log level (critical, error, warning, info, debug)
``DPCAL_LOG_FORMAT``       text          text, or json: one JSON object per line with the request id
``DPCAL_AUTH``             none          none (one anonymous principal), api-key (``dpcal keys``; app/auth.py), or
                                        oidc (JWT bearer tokens from an OpenID Connect issuer; app/oidc.py)
``DPCAL_AUTH_ACCOUNTING``  open          open, or required: the accounting endpoints need a key too
``DPCAL_OIDC_ISSUER``      (none)        DPCAL_AUTH=oidc: the issuer (``iss``) whose tokens are accepted (required)
``DPCAL_OIDC_AUDIENCE``    (none)        DPCAL_AUTH=oidc: the audience (``aud``) the tokens must name (required)
``DPCAL_OIDC_JWKS_URL``    discovered    the issuer's signing keys (default: ``jwks_uri`` of its
                                        ``/.well-known/openid-configuration``)
``DPCAL_OIDC_SCOPE_CLAIM`` scope         the claim granting dpcal scopes (``dpcal:read``, ``dpcal:jobs``,
                                        ``dpcal:admin``; a space-separated string or a list)
``DPCAL_OIDC_ALGORITHMS``  RS256,ES256   signature algorithms accepted (asymmetric only: no HS*, never none)
``DPCAL_PRINCIPAL_MAX_QUEUED`` 8         queued jobs one principal may have (DPCAL_AUTH=api-key; more: 429)
``DPCAL_PRINCIPAL_MAX_HEAVY``  MAX_HEAVY−1 heavy computations one principal (or keyless client address) may run at
                                        once in a server process (DPCAL_AUTH=api-key; at least 1; more: 503)
``DPCAL_PRINCIPAL_RATE``   50            requests per second one principal (or keyless client address) may send per
                                        server process after its burst (DPCAL_AUTH other than none; more: 429)
``DPCAL_PRINCIPAL_BURST``  100           requests one principal may send at once
``DPCAL_MAX_BODY_BYTES``   1000000       larger request bodies get 413
``DPCAL_WORKERS``          1             server processes of ``dpcal serve`` (``--workers``)
``DPCAL_REQUEST_TIMEOUT``  30            seconds of computation a heavy request may use (then 504)
``DPCAL_MAX_HEAVY``        CPU count     heavy computations at once on this host (more: 503 with Retry-After)
``DPCAL_MAX_CHEAP``        2             cheap computations at once per server process (closed forms, Rényi curves); a
                                        further one waits, without a thread, for DPCAL_REQUEST_TIMEOUT at most
``DPCAL_MAX_CHEAP_WAITING`` 64           cheap computations waiting per server process (more: 503 with Retry-After)
``DPCAL_HEADER_TIMEOUT``   10            seconds a client has to send a request's headers (then 408 and the connection
                                        is closed: a slow-loris client holds nothing)
``DPCAL_CACHE_SIZE``       1024          answers kept per server process for identical requests (0: none)
``DPCAL_JOBS_DB``          dpcal-jobs.sqlite3  the job database: a SQLite file path, or ``postgresql://user@host/db``
                                        (needs the ``postgres`` extra) shared by API replicas and workers
``DPCAL_EMBEDDED_WORKERS``  1            0: this API process runs no jobs (``dpcal worker`` processes do)
``DPCAL_HOST_DIR``         beside the    where the processes of one service on one host share lock files
                           SQLite file
``DPCAL_JOB_BACKEND``      local         where a job's trials run: local (this host's worker pool) or dask
``DPCAL_DASK_ADDRESS``     (none)        the Dask scheduler (tcp://host:8786) for DPCAL_JOB_BACKEND=dask; only
                                        ``dpcal worker`` processes use it (needs the ``dask`` extra)
``DPCAL_JOB_WORKERS``      CPU count     worker processes running verification trials
``DPCAL_JOB_MAX_TRIALS``   200000        trials allowed per job (more: 422)
``DPCAL_JOB_MAX_SECONDS``  120           estimated seconds of one worker process allowed per job (more: 422)
``DPCAL_JOB_MAX_QUEUED``   32            queued jobs allowed (more: 429 with Retry-After)
``DPCAL_JOB_TIME_LIMIT``   900           seconds a job may run (then it fails: timed out)
``DPCAL_JOB_MAX_ATTEMPTS`` 3             starts of a job whose process dies before it fails
``DPCAL_JOB_CHUNK_BLOCKS`` 16            most blocks of 64 trials per chunk (chunks grow from 1 block to ~1 s each)
``DPCAL_JOB_LEASE_SECONDS`` 30           a running job not heard of for this long is recovered
=========================  ============  =====================================================
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PREFIX = "DPCAL_"
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
LOG_FORMATS = ("text", "json")
AUTH_MODES = ("none", "api-key", "oidc")
OIDC_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Signature algorithms a deployment may accept: public-key ones (a shared secret would let the service mint tokens)."""


class SettingsError(ValueError):
    """An environment variable has a value outside its allowed range."""


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "info"
    log_format: str = "text"
    auth: str = "none"
    auth_accounting: str = "open"
    oidc_issuer: str | None = None
    oidc_audience: str | None = None
    oidc_jwks_url: str | None = None
    oidc_scope_claim: str = "scope"
    oidc_algorithms: tuple[str, ...] = ("RS256", "ES256")
    principal_max_queued: int = 8
    principal_max_heavy: int | None = None
    principal_rate: float = 50.0
    principal_burst: int = 100
    max_body_bytes: int = 1_000_000
    workers: int = 1
    request_timeout: float = 30.0
    max_heavy: int = max(1, os.cpu_count() or 1)
    max_cheap: int = 2
    max_cheap_waiting: int = 64
    header_timeout: float = 10.0
    cache_size: int = 1024
    jobs_db: str = "dpcal-jobs.sqlite3"
    job_workers: int = max(1, os.cpu_count() or 1)
    job_max_trials: int = 200_000
    job_max_seconds: float = 120.0
    job_max_queued: int = 32
    job_time_limit: float = 900.0
    job_max_attempts: int = 3
    job_chunk_blocks: int = 16
    job_lease_seconds: float = 30.0
    embedded_workers: bool = True
    host_dir: str | None = None
    job_backend: str = "local"
    dask_address: str | None = None

    @property
    def api_runs_jobs(self) -> bool:
        """Whether an API process runs jobs itself: embedded workers on the local backend (Dask jobs are sent by
        ``dpcal worker`` processes only)."""
        return self.embedded_workers and self.job_backend == "local"

    @property
    def host_directory(self) -> Path:
        """Where the processes of one service share state on a host (lock files): ``DPCAL_HOST_DIR``, else beside a
        SQLite job database, else a directory of the temporary folder named after the database URL."""
        if self.host_dir is not None:
            return Path(self.host_dir)
        if "://" not in self.jobs_db:
            return Path(f"{self.jobs_db}.host")
        digest = hashlib.sha256(self.jobs_db.encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"dpcal-{digest}.host"

    @property
    def heavy_per_principal(self) -> int:
        """Heavy computations one principal may run at once in a server process: the setting, else all slots but
        one (so another principal always finds one), at least 1."""
        return self.principal_max_heavy or max(1, self.max_heavy - 1)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        _refuse_replaced(env)
        if f"{PREFIX}HOST" in env:
            values["host"] = env[f"{PREFIX}HOST"]
        choices_of = (
            ("LOG_LEVEL", LOG_LEVELS),
            ("LOG_FORMAT", LOG_FORMATS),
            ("AUTH", AUTH_MODES),
            ("AUTH_ACCOUNTING", ("open", "required")),
        )
        for name, choices in choices_of:
            if f"{PREFIX}{name}" in env:
                values[name.lower()] = _choice(env, name, choices)
        values.update(_oidc(env, values.get("auth") == "oidc"))
        if f"{PREFIX}JOBS_DB" in env:
            values["jobs_db"] = env[f"{PREFIX}JOBS_DB"]
        if f"{PREFIX}HOST_DIR" in env:
            values["host_dir"] = env[f"{PREFIX}HOST_DIR"]
        if f"{PREFIX}JOB_BACKEND" in env:
            backend = values["job_backend"] = _choice(env, "JOB_BACKEND", ("local", "dask"))
            if backend == "dask" and not env.get(f"{PREFIX}DASK_ADDRESS"):
                raise SettingsError(f"{PREFIX}JOB_BACKEND=dask needs {PREFIX}DASK_ADDRESS (tcp://host:port)")
        if env.get(f"{PREFIX}DASK_ADDRESS"):
            values["dask_address"] = env[f"{PREFIX}DASK_ADDRESS"]
        if f"{PREFIX}EMBEDDED_WORKERS" in env:
            flag = env[f"{PREFIX}EMBEDDED_WORKERS"].strip().lower()
            if flag not in ("0", "1", "true", "false"):
                raise SettingsError(f"{PREFIX}EMBEDDED_WORKERS must be 0 or 1, got {flag!r}")
            values["embedded_workers"] = flag in ("1", "true")
        for name, (kind, lo, hi) in NUMBERS.items():
            if f"{PREFIX}{name}" in env:
                values[name.lower()] = _number(env, name, kind, lo, hi)
        return cls(**values)  # type: ignore[arg-type]  # every value was parsed for its field above


REPLACED: Mapping[str, str] = {
    "JOB_MAX_WORK": "set DPCAL_JOB_MAX_SECONDS, the estimated seconds of one worker process a job may take (default "
    "120; estimates are calibrated per family and check)",
}
"""Settings that were replaced (``DPCAL_`` + name): setting one stops the service with what to set instead."""

NUMBERS: Mapping[str, tuple[type[int] | type[float], float, float]] = {
    "PORT": (int, 1, 65535),
    "MAX_BODY_BYTES": (int, 1024, 100_000_000),
    "WORKERS": (int, 1, 64),
    "MAX_HEAVY": (int, 1, 1024),
    "MAX_CHEAP": (int, 1, 1024),
    "MAX_CHEAP_WAITING": (int, 0, 10**6),
    "HEADER_TIMEOUT": (float, 0.1, 3600.0),
    "CACHE_SIZE": (int, 0, 10**6),
    "JOB_WORKERS": (int, 1, 256),
    "JOB_MAX_TRIALS": (int, 2, 10**7),
    "JOB_MAX_QUEUED": (int, 1, 10**6),
    "PRINCIPAL_MAX_QUEUED": (int, 1, 10**6),
    "PRINCIPAL_MAX_HEAVY": (int, 1, 1024),
    "PRINCIPAL_RATE": (float, 0.01, 1e6),
    "PRINCIPAL_BURST": (int, 1, 10**6),
    "JOB_MAX_ATTEMPTS": (int, 1, 100),
    "JOB_CHUNK_BLOCKS": (int, 1, 10**4),
    "REQUEST_TIMEOUT": (float, 0.1, 86400.0),
    "JOB_MAX_SECONDS": (float, 1e-3, 1e7),
    "JOB_TIME_LIMIT": (float, 0.1, 1e6),
    "JOB_LEASE_SECONDS": (float, 1.0, 1e5),
}
"""The numeric settings (``DPCAL_`` + name): their type and range."""


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    value = env[f"{PREFIX}{name}"].strip().lower()
    if value not in choices:
        raise SettingsError(f"{PREFIX}{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def _oidc(env: Mapping[str, str], required: bool) -> dict[str, object]:
    """The OIDC settings given (DPCAL_AUTH=oidc needs an issuer and an audience)."""
    values: dict[str, object] = {}
    for name in ("ISSUER", "AUDIENCE", "JWKS_URL", "SCOPE_CLAIM"):
        if env.get(f"{PREFIX}OIDC_{name}", "").strip():
            values[f"oidc_{name.lower()}"] = env[f"{PREFIX}OIDC_{name}"].strip()
    if f"{PREFIX}OIDC_ALGORITHMS" in env:
        algorithms = tuple(a.strip() for a in env[f"{PREFIX}OIDC_ALGORITHMS"].split(",") if a.strip())
        unknown = [a for a in algorithms if a not in OIDC_ALGORITHMS]
        if not algorithms or unknown:
            raise SettingsError(
                f"{PREFIX}OIDC_ALGORITHMS must list some of {', '.join(OIDC_ALGORITHMS)} (public-key signatures "
                f"only), got {env[f'{PREFIX}OIDC_ALGORITHMS']!r}"
            )
        values["oidc_algorithms"] = algorithms
    missing = [name for name in ("issuer", "audience") if f"oidc_{name}" not in values]
    if required and missing:
        raise SettingsError(f"{PREFIX}AUTH=oidc needs {' and '.join(f'{PREFIX}OIDC_{m.upper()}' for m in missing)}")
    return values


def _refuse_replaced(env: Mapping[str, str]) -> None:
    """A replaced setting stops the service with what to set instead (an old limit must not vanish silently)."""
    for old, new in REPLACED.items():
        if f"{PREFIX}{old}" in env:
            raise SettingsError(f"{PREFIX}{old} is no longer read: {new}")


def _number(env: Mapping[str, str], name: str, kind: type[int] | type[float], lo: float, hi: float) -> int | float:
    raw = env[f"{PREFIX}{name}"]
    what = "an integer" if kind is int else "a number"
    allowed = f"{what} in [{lo:g}, {hi:g}]" if kind is float else f"{what} in [{lo}, {hi}]"
    try:
        value = kind(raw)
    except ValueError:
        raise SettingsError(f"{PREFIX}{name} must be {allowed}, got {raw!r}") from None
    if not lo <= value <= hi:
        raise SettingsError(f"{PREFIX}{name} must be {allowed}, got {value}")
    return value
