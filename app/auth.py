"""Who is asking: principals, their API keys, and what each may see and do.

``DPCAL_AUTH=none`` (the default; the service binds to loopback) has one principal, ``anonymous``, who may do
everything, as before authentication existed. ``DPCAL_AUTH=api-key``: every job request needs
``Authorization: Bearer KEY`` with a live key (401 otherwise); keys are created with ``dpcal keys create NAME --scope
read|jobs|admin`` (the key is printed once: the store keeps its SHA-256 digest only), listed and revoked with ``dpcal
keys list|revoke``. A key's scope: ``read`` lists and reads its own jobs, ``jobs`` also submits and cancels them,
``admin`` sees and cancels everyone's. Another principal's job is a 404 (not a 403: its existence is not revealed),
and idempotency keys are per principal. The accounting endpoints stay open unless ``DPCAL_AUTH_ACCOUNTING=required``.
``DPCAL_AUTH=oidc``: the bearer token is a JWT from an OpenID Connect issuer instead (:mod:`app.oidc`), with the same
scopes and the same rules.
"""

from __future__ import annotations

import enum
import hashlib
import secrets
from dataclasses import dataclass

from .problems import ApiProblem

KEY_PREFIX = "dpcal_"


class Scope(enum.StrEnum):
    READ = "read"
    JOBS = "jobs"
    ADMIN = "admin"


@dataclass(frozen=True)
class Principal:
    name: str
    scope: Scope

    @property
    def sees_all(self) -> bool:
        """An administrator reads, lists and cancels every principal's jobs."""
        return self.scope is Scope.ADMIN

    @property
    def submits(self) -> bool:
        return self.scope in (Scope.JOBS, Scope.ADMIN)

    def owns(self, job_principal: str | None) -> bool:
        """Whether this principal may see a job submitted by ``job_principal``."""
        return self.sees_all or job_principal == self.name


ANONYMOUS = Principal("anonymous", Scope.ADMIN)
"""The one principal of ``DPCAL_AUTH=none``."""


def new_key() -> str:
    """A fresh API key: 256 random bits, URL-safe."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def digest(key: str) -> str:
    """What the store keeps of a key (a key has 256 random bits: a fast hash is enough, no salt needed)."""
    return hashlib.sha256(key.encode()).hexdigest()


API_KEY = "an API key (DPCAL_AUTH=api-key; keys from `dpcal keys create`)"


def unauthorized(reason: str, how: str = API_KEY) -> ApiProblem:
    """401 naming why and what to send (``how``: an API key, or an OIDC issuer's access token)."""
    return ApiProblem(
        401,
        "unauthorized",
        "Authentication required",
        f"{reason}: send Authorization: Bearer <token>, the token being {how}",
        headers={"WWW-Authenticate": 'Bearer realm="dpcal"'},
    )


def forbidden(principal: Principal, needed: str) -> ApiProblem:
    return ApiProblem(
        403, "forbidden", "Not allowed", f"{principal.name!r} has scope {principal.scope.value}: {needed}"
    )


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header (None where there is none)."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
