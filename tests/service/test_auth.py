"""Principals (DPCAL_AUTH=api-key and DPCAL_AUTH=oidc): keys from `dpcal keys` or JWTs signed by a test issuer on
loopback, jobs owned by their submitter, idempotency keys per principal, administrators seeing all, accounting open
or closed by DPCAL_AUTH_ACCOUNTING; what makes a token invalid."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from app.auth import digest
from app.jobs.store import JobStore
from app.main import create_app
from app.settings import Settings

from ..support.jobs import body
from ..support.oidc import AUDIENCE, Issuer
from ..support.params import MNIST
from ..support.server import ROOT

PRIVACY = {"algorithm": "dp-sgd", "params": MNIST | {"noise_multiplier": 1.1}, "delta": 1e-5, "accountant": "rdp"}
KEYS = {
    "alice": ("jobs", "key-alice"),
    "bob": ("jobs", "key-bob"),
    "root": ("admin", "key-root"),
    "eve": ("read", "key-eve"),
}


def _client(tmp_path, **settings) -> TestClient:
    database = str(tmp_path / "jobs.sqlite3")
    store = JobStore(database)
    for name, (scope, key) in KEYS.items():
        store.add_key(name, scope, digest(key))
    store.close()
    app = create_app(Settings(jobs_db=database, job_workers=1, embedded_workers=False, auth="api-key", **settings))
    return TestClient(app)


def _as(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[name][1]}"}


class Principals:
    """The same four principals (alice, bob: jobs; root: admin; eve: read) as API keys or as an issuer's tokens."""

    def __init__(self, mode: str, issuer: Issuer | None) -> None:
        self.mode, self.issuer = mode, issuer

    def client(self, tmp_path, **settings) -> TestClient:
        if self.issuer is None:
            return _client(tmp_path, **settings)
        oidc = {"auth": "oidc", "oidc_issuer": self.issuer.url, "oidc_audience": AUDIENCE}
        app = create_app(Settings(jobs_db=str(tmp_path / "jobs.sqlite3"), job_workers=1, embedded_workers=False,
                                  **oidc, **settings))  # fmt: skip
        return TestClient(app)

    def headers(self, name: str) -> dict[str, str]:
        if self.issuer is None:
            return _as(name)
        return {"Authorization": f"Bearer {self.issuer.token(name, scope='dpcal:' + KEYS[name][0])}"}


@pytest.fixture(params=["api-key", "oidc"])
def principals(request):
    if request.param == "api-key":
        yield Principals("api-key", None)
        return
    with Issuer() as issuer:
        yield Principals("oidc", issuer)


def test_jobs_need_a_live_key(tmp_path):
    with _client(tmp_path) as http:
        anonymous = http.get("/v1/jobs")
        wrong = http.get("/v1/jobs", headers={"Authorization": "Bearer not-a-key"})
        assert http.post("/v1/privacy", json=PRIVACY).status_code == 200  # accounting stays open by default
        assert http.get("/v1/jobs", headers=_as("alice")).status_code == 200
    assert anonymous.status_code == wrong.status_code == 401
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    assert "Authorization: Bearer" in anonymous.json()["detail"]


def test_principals_see_and_cancel_only_their_own_jobs(tmp_path, principals):
    _as = principals.headers
    with principals.client(tmp_path) as http:
        alice = http.post("/v1/jobs", json=body(trials=64), headers=_as("alice")).json()["id"]
        bob = http.post("/v1/jobs", json=body(trials=128), headers=_as("bob")).json()["id"]
        assert http.get(f"/v1/jobs/{alice}", headers=_as("alice")).status_code == 200
        assert http.get(f"/v1/jobs/{alice}", headers=_as("bob")).status_code == 404  # not 403: not revealed
        assert http.delete(f"/v1/jobs/{alice}", headers=_as("bob")).status_code == 404
        listed = {j["id"] for j in http.get("/v1/jobs", headers=_as("bob")).json()["jobs"]}
        assert listed == {bob}
        assert http.get("/v1/jobs", params={"cursor": alice}, headers=_as("bob")).status_code == 422
        everyone = {j["id"] for j in http.get("/v1/jobs", headers=_as("root")).json()["jobs"]}
        assert everyone == {alice, bob}
        assert http.get(f"/v1/jobs/{bob}", headers=_as("root")).status_code == 200
        assert http.delete(f"/v1/jobs/{alice}", headers=_as("alice")).status_code == 200
        refused = http.post("/v1/jobs", json=body(trials=64), headers=_as("eve"))  # scope read
        assert refused.status_code == 403 and "scope read" in refused.json()["detail"]
        assert http.get("/v1/jobs", headers=_as("eve")).json()["jobs"] == []


def test_idempotency_keys_are_per_principal(tmp_path, principals):
    _as = principals.headers
    key = {"Idempotency-Key": "nightly-run"}
    with principals.client(tmp_path) as http:
        first = http.post("/v1/jobs", json=body(trials=64), headers=_as("alice") | key)
        other = http.post("/v1/jobs", json=body(trials=128), headers=_as("bob") | key)  # another body: no 409
        again = http.post("/v1/jobs", json=body(trials=64), headers=_as("alice") | key)
        conflict = http.post("/v1/jobs", json=body(trials=128), headers=_as("alice") | key)
    assert first.status_code == other.status_code == 202 and first.json()["id"] != other.json()["id"]
    assert again.json()["id"] == first.json()["id"] and again.headers["Idempotent-Replayed"] == "true"
    assert conflict.status_code == 409 and other.json()["id"] not in conflict.text  # alice's own job only


def test_accounting_can_require_a_key(tmp_path, principals):
    _as = principals.headers
    with principals.client(tmp_path, auth_accounting="required") as http:
        assert http.post("/v1/privacy", json=PRIVACY).status_code == 401
        assert http.get("/v1/algorithms").status_code == 401
        assert http.post("/v1/privacy", json=PRIVACY, headers=_as("eve")).status_code == 200
        assert http.get("/healthz").status_code == 200  # health stays open


def test_dpcal_keys_create_list_revoke(tmp_path):
    env = {**os.environ, "DPCAL_JOBS_DB": str(tmp_path / "jobs.sqlite3")}

    def dpcal(*argv: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "app.cli", "keys", *argv]
        return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)

    created = dpcal("create", "ci-pipeline", "--scope", "jobs")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    assert key.startswith("dpcal_") and len(key) > 40
    assert dpcal("create", "ci-pipeline").returncode == 1  # names are unique
    assert dpcal("create", "bad name").returncode == 2
    listed = dpcal("list").stdout
    assert "ci-pipeline  jobs  created" in listed and key not in listed
    app = create_app(Settings(jobs_db=env["DPCAL_JOBS_DB"], embedded_workers=False, auth="api-key"))
    with TestClient(app) as http:
        assert http.get("/v1/jobs", headers={"Authorization": f"Bearer {key}"}).status_code == 200
        assert dpcal("revoke", "ci-pipeline").returncode == 0
        assert http.get("/v1/jobs", headers={"Authorization": f"Bearer {key}"}).status_code == 401
    assert "revoked" in dpcal("list").stdout


@pytest.mark.parametrize("variable", ["DPCAL_AUTH", "DPCAL_AUTH_ACCOUNTING"])
def test_auth_settings_are_checked(variable):
    from app.settings import SettingsError

    with pytest.raises(SettingsError, match=variable):
        Settings.from_env({variable: "maybe"})


def test_the_client_sends_its_key_or_the_environment_s(tmp_path, monkeypatch):
    from app.client import DpcalClient, DpcalProblem

    with _client(tmp_path) as http:
        transport = http._transport  # the app in this process
        with DpcalClient("http://testserver", transport=transport, api_key=KEYS["alice"][1]) as alice:
            job = alice.submit_job("dp-sgd-last-iterate", body()["params"], 1e-5, trials=64)
            assert alice.job(job.id).id == job.id
        monkeypatch.setenv("DPCAL_API_KEY", KEYS["bob"][1])
        with DpcalClient("http://testserver", transport=transport) as bob, pytest.raises(DpcalProblem) as missing:
            bob.job(job.id)
        assert missing.value.status == 404
        monkeypatch.delenv("DPCAL_API_KEY")
        with DpcalClient("http://testserver", transport=transport) as nobody, pytest.raises(DpcalProblem) as refused:
            nobody.job(job.id)
        assert refused.value.status == 401


def test_a_principal_over_its_request_rate_gets_429_and_others_do_not(tmp_path, principals):
    _as = principals.headers
    with principals.client(tmp_path, principal_burst=3, principal_rate=0.01) as http:
        answers = [http.get("/v1/jobs", headers=_as("alice")).status_code for _ in range(4)]
        refused = http.get("/v1/jobs", headers=_as("alice"))
        assert http.get("/v1/jobs", headers=_as("bob")).status_code == 200
        assert http.get("/healthz").status_code == 200  # never limited
        for _ in range(3):
            assert http.post("/v1/privacy", json=PRIVACY).status_code == 200  # a keyless client: by its address
        keyless = http.post("/v1/privacy", json=PRIVACY)
    assert answers == [200, 200, 200, 429]
    problem = refused.json()
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert "alice" in problem["detail"] and "DPCAL_PRINCIPAL_BURST" in problem["detail"]
    assert keyless.status_code == 429 and "client" in keyless.json()["detail"]


def test_the_access_line_names_the_principal(tmp_path, principals, caplog):
    with caplog.at_level("INFO", logger="dpcal.access"), principals.client(tmp_path) as http:
        assert http.get("/v1/jobs", headers=principals.headers("alice")).status_code == 200
    (line,) = [r for r in caplog.records if r.name == "dpcal.access" and getattr(r, "route", None) == "/v1/jobs"]
    assert line.principal == ("alice" if principals.mode == "api-key" else "oidc:alice")
