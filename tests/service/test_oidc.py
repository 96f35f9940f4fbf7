"""DPCAL_AUTH=oidc: what makes a bearer token valid (signature by a published key of an accepted algorithm, issuer,
audience, expiry, subject, a dpcal scope), key rotation without a restart, and an unreachable issuer answered 503."""

from __future__ import annotations

import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings, SettingsError

from ..support.http import assert_problem
from ..support.oidc import AUDIENCE, Issuer
from ..support.server import free_port


@pytest.fixture
def issuer():
    with Issuer() as running:
        yield running


def _client(tmp_path, issuer_url: str, **settings) -> TestClient:
    oidc = Settings(
        jobs_db=str(tmp_path / "jobs.sqlite3"),
        embedded_workers=False,
        auth="oidc",
        oidc_issuer=issuer_url,
        oidc_audience=AUDIENCE,
        **settings,
    )
    return TestClient(create_app(oidc))


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_invalid_tokens_are_401_naming_why(tmp_path, issuer):
    now = int(time.time())
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)  # not published by the issuer
    unsigned = jwt.encode({"iss": issuer.url, "aud": AUDIENCE, "sub": "mallory", "exp": now + 300,
                           "scope": "dpcal:admin"}, None, algorithm="none", headers={"kid": "rsa-1"})  # fmt: skip
    forged = jwt.encode({"iss": issuer.url, "aud": AUDIENCE, "sub": "mallory", "exp": now + 300,
                         "scope": "dpcal:admin"}, stranger, algorithm="RS256", headers={"kid": "rsa-1"})  # fmt: skip
    refused = {
        "expired": issuer.token("alice", exp=now - 120),
        "another audience": issuer.token("alice", aud="another-api"),
        "another issuer": issuer.token("alice", iss="https://elsewhere.example"),
        "no subject": issuer.token("alice", sub=None),
        "not yet valid": issuer.token("alice", nbf=now + 600),
        "unsigned": unsigned,
        "forged": forged,
        "unknown key": forged.replace(
            forged.split(".")[0], jwt.api_jws.base64url_encode(b'{"alg":"RS256","kid":"x"}').decode()
        ),
        "garbage": "not.a.token",
    }
    with _client(tmp_path, issuer.url) as http:
        assert http.get("/v1/jobs", headers=_bearer(issuer.token("alice"))).status_code == 200
        for why, token in refused.items():
            response = http.get("/v1/jobs", headers=_bearer(token))
            problem = assert_problem(response, 401)
            assert "token was refused" in problem["detail"] and response.headers["www-authenticate"], why
        assert_problem(http.get("/v1/jobs"), 401)


def test_a_token_without_a_dpcal_scope_is_403_and_the_scope_claim_is_configurable(tmp_path, issuer):
    with _client(tmp_path, issuer.url) as http:
        problem = assert_problem(
            http.get("/v1/jobs", headers=_bearer(issuer.token("alice", scope="openid email"))), 403
        )
        assert "oidc:alice" in problem["detail"] and "dpcal:read" in problem["detail"]
    with _client(tmp_path, issuer.url, oidc_scope_claim="scp") as http:
        listed = issuer.token("alice", scope=None, scp=["openid", "dpcal:read"])
        assert http.get("/v1/jobs", headers=_bearer(listed)).status_code == 200
        read_only = http.post("/v1/jobs", json={}, headers=_bearer(listed))
        assert read_only.status_code in (403, 422)  # the body is checked first or the scope: never accepted


def test_a_rotated_key_is_fetched_without_a_restart(tmp_path, issuer):
    with _client(tmp_path, issuer.url) as http:
        assert http.get("/v1/jobs", headers=_bearer(issuer.token("alice"))).status_code == 200
        fetched = issuer.fetches
        issuer.rotate("ec-2")  # the issuer publishes a new EC key and signs with it
        deadline = time.monotonic() + 60  # the keys are fetched again for an unknown key id, at most every 5 s
        while (answer := http.get("/v1/jobs", headers=_bearer(issuer.token("alice", kid="ec-2")))).status_code != 200:
            assert answer.status_code == 401 and time.monotonic() < deadline, answer.text
            time.sleep(0.5)
        assert fetched < issuer.fetches <= fetched + 2  # not once per refused token


def test_an_unreachable_issuer_is_503_with_retry_after(tmp_path):
    with Issuer() as signer, _client(tmp_path, f"http://127.0.0.1:{free_port()}") as http:
        token = signer.token("alice")
        response = http.get("/v1/jobs", headers=_bearer(token))
    problem = assert_problem(response, 503)
    assert problem["type"].endswith("issuer-unreachable") and response.headers["Retry-After"] == "5"


@pytest.mark.parametrize(
    ("environment", "named"),
    [
        ({"DPCAL_AUTH": "oidc"}, "DPCAL_OIDC_ISSUER and DPCAL_OIDC_AUDIENCE"),
        ({"DPCAL_AUTH": "oidc", "DPCAL_OIDC_ISSUER": "https://id.example"}, "DPCAL_OIDC_AUDIENCE"),
        ({"DPCAL_OIDC_ALGORITHMS": "HS256"}, "DPCAL_OIDC_ALGORITHMS"),
        ({"DPCAL_OIDC_ALGORITHMS": "none"}, "DPCAL_OIDC_ALGORITHMS"),
    ],
)
def test_oidc_settings_are_checked(environment, named):
    with pytest.raises(SettingsError, match=named):
        Settings.from_env(environment)
