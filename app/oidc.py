"""OpenID Connect bearer tokens (``DPCAL_AUTH=oidc``): a JWT from the configured issuer names the principal.

A token is accepted when PyJWT verifies it against the issuer's published signing keys (its JWKS, fetched from
``DPCAL_OIDC_JWKS_URL`` or from the ``jwks_uri`` of the issuer's ``/.well-known/openid-configuration``, cached for
five minutes and fetched again for an unknown key id — at most every 5 s —, so a key rotation needs no restart) with

* a public-key signature of an accepted algorithm (``DPCAL_OIDC_ALGORITHMS``; never ``none`` nor a shared secret),
* ``iss`` equal to ``DPCAL_OIDC_ISSUER``, ``aud`` naming ``DPCAL_OIDC_AUDIENCE``, an ``exp`` not past and an ``nbf``
  reached (30 s of clock skew allowed), and a ``sub``.

The principal is ``oidc:<sub>`` (a key's principal is its bare name, so the two never meet), its scope the highest
``dpcal:read`` / ``dpcal:jobs`` / ``dpcal:admin`` in the scope claim (``DPCAL_OIDC_SCOPE_CLAIM``, default ``scope``:
a space-separated string, or a list as in ``scp``). Any other token is a 401 naming why; a valid token granting no
dpcal scope is a 403; an issuer whose keys cannot be fetched is a 503 with ``Retry-After``.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from typing import Any

import jwt

from .auth import Principal, Scope, unauthorized
from .problems import ApiProblem
from .settings import Settings

SCOPE_PREFIX = "dpcal:"
CLOCK_SKEW_SECONDS = 30
FETCH_SECONDS = 5.0
"""How long fetching the issuer's discovery document or keys may take."""
REFETCH_COOLDOWN_SECONDS = 5.0
"""A token naming an unknown key id fetches the keys again at most this often (a flood of such tokens must not
become a flood of requests to the issuer)."""


class TokenVerifier:
    """Verifies bearer tokens of one issuer (module docstring). Thread-safe; used from the thread pool (fetching
    the keys blocks)."""

    def __init__(self, settings: Settings) -> None:
        if not settings.oidc_issuer or not settings.oidc_audience:
            raise ValueError("DPCAL_AUTH=oidc needs DPCAL_OIDC_ISSUER and DPCAL_OIDC_AUDIENCE")
        self.issuer, self.audience = settings.oidc_issuer, settings.oidc_audience
        self.algorithms = list(settings.oidc_algorithms)
        self.scope_claim = settings.oidc_scope_claim
        self._jwks_url = settings.oidc_jwks_url
        self._keys: jwt.PyJWKClient | None = None
        self._lock = threading.Lock()

    def principal(self, token: str) -> Principal:
        """The principal the token names (401 for an invalid token, 403 for one granting no dpcal scope, 503 while
        the issuer's keys cannot be fetched)."""
        try:
            key = self._key_set().get_signing_key_from_jwt(token)
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=self.algorithms,
                audience=self.audience,
                issuer=self.issuer,
                leeway=CLOCK_SKEW_SECONDS,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except (jwt.PyJWKClientConnectionError, OSError) as error:
            raise issuer_unreachable(self.issuer, error) from None
        except jwt.PyJWTError as error:
            raise unauthorized(f"the token was refused ({error})", how="an access token from the issuer") from None
        name = f"oidc:{claims['sub']}"
        scope = granted_scope(claims.get(self.scope_claim))
        if scope is None:
            raise ApiProblem(
                403,
                "forbidden",
                "Not allowed",
                f"the token of {name!r} grants no dpcal scope in its {self.scope_claim!r} claim (dpcal:read, "
                "dpcal:jobs or dpcal:admin)",
            )
        return Principal(name, scope)

    def _key_set(self) -> jwt.PyJWKClient:
        with self._lock:
            if self._keys is None:
                url = self._jwks_url or _discovered_jwks_url(self.issuer)
                self._keys = jwt.PyJWKClient(
                    url,
                    cache_keys=True,
                    lifespan=300,
                    timeout=FETCH_SECONDS,
                    cooldown_duration=REFETCH_COOLDOWN_SECONDS,
                )
            return self._keys


def granted_scope(claim: object) -> Scope | None:
    """The highest dpcal scope a scope claim grants (a space-separated string or a list of strings), or None."""
    items = claim.split() if isinstance(claim, str) else claim if isinstance(claim, list) else []
    granted = {
        item.removeprefix(SCOPE_PREFIX) for item in items if isinstance(item, str) and item.startswith(SCOPE_PREFIX)
    }
    for scope in (Scope.ADMIN, Scope.JOBS, Scope.READ):
        if scope.value in granted:
            return scope
    return None


def _discovered_jwks_url(issuer: str) -> str:
    """``jwks_uri`` from the issuer's OpenID Connect discovery document."""
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        with urllib.request.urlopen(url, timeout=FETCH_SECONDS) as response:  # the configured issuer
            document = json.load(response)
    except ValueError as error:  # not JSON
        raise OSError(f"{url} is not a discovery document") from error
    jwks_uri = document.get("jwks_uri") if isinstance(document, dict) else None
    if not isinstance(jwks_uri, str):
        raise OSError(f"{url} names no jwks_uri")
    return jwks_uri


def issuer_unreachable(issuer: str, error: Exception) -> ApiProblem:
    return ApiProblem(
        503,
        "issuer-unreachable",
        "Identity provider unreachable",
        f"the signing keys of {issuer} cannot be fetched ({type(error).__name__}); retry after 5 s",
        headers={"Retry-After": "5"},
    )
