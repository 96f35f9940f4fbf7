"""A test OpenID Connect issuer on loopback: its discovery document and JWKS served by a thread, tokens signed with
its own keys (RSA and EC), and keys that can be rotated."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

AUDIENCE = "dpcal-api"


class Issuer:
    """``with Issuer() as issuer``: serves ``/.well-known/openid-configuration`` and ``/jwks.json`` on loopback."""

    def __init__(self) -> None:
        self.keys: dict[str, Any] = {"rsa-1": rsa.generate_private_key(public_exponent=65537, key_size=2048)}
        self.fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # http.server's name
                if self.path == "/.well-known/openid-configuration":
                    document = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks.json"}
                elif self.path == "/jwks.json":
                    issuer.fetches += 1
                    document = issuer.jwks()
                else:
                    self.send_error(404)
                    return
                payload = json.dumps(document).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Issuer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid, key in self.keys.items():
            algorithm = jwt.algorithms.RSAAlgorithm if kid.startswith("rsa") else jwt.algorithms.ECAlgorithm
            jwk = json.loads(algorithm.to_jwk(key.public_key()))
            keys.append(jwk | {"kid": kid, "use": "sig"})
        return {"keys": keys}

    def rotate(self, kid: str, curve: bool = True) -> None:
        """Publish another key (EC P-256 by default)."""
        key = ec.generate_private_key(ec.SECP256R1()) if curve else rsa.generate_private_key(65537, 2048)
        self.keys[kid] = key

    def token(self, subject: str, scope: str | None = "dpcal:jobs", kid: str = "rsa-1", **claims: Any) -> str:
        now = int(time.time())
        payload = {"iss": self.url, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + 300}
        if scope is not None:
            payload["scope"] = scope
        payload |= claims
        algorithm = "RS256" if kid.startswith("rsa") else "ES256"
        return jwt.encode(
            {k: v for k, v in payload.items() if v is not None}, self.keys[kid], algorithm, headers={"kid": kid}
        )
