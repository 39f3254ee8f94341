"""fingerauthd, the real daemon over real TLS, against tokens made by an independent JWT
implementation (PyJWT + cryptography).

    FINGERAUTH_BUILD=/dir/with/fingerauthd /usr/bin/python3 -m pytest -q Tests/integration/test_authenticator.py

One daemon serves the module (keys registered once); every test uses fresh `jti`s. Each
refusal is checked three ways: HTTP status, the `error` the client sees, and the audit row.
"""

import base64
import hashlib
import hmac
import http.client
import json
import os
import sqlite3
import subprocess
import sys
import time
import uuid

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from support.postgres import Postgres, available as postgres_available  # noqa: E402
from support.tls import make_ca  # noqa: E402

AUDIENCE = "fingerauth-test"
HOST = "host1.example"
OTHER_HOST = "host2.example"

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())


# -- an independent JWT/JWK toolbox -----------------------------------------------------

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def int_bytes(value):
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


# Refusals made before a token's signature verified with a registered key: the sender is
# told `invalid_token` and nothing more.
UNVERIFIED = {"malformed_token", "token_too_large", "alg_not_allowed", "bad_typ", "crit_not_supported", "missing_kid",
              "bad_kid", "unknown_kid", "unusable_key", "bad_signature", "kid_mismatch", "kid_not_thumbprint"}

PROOF_TYP = "fingerauth-proof+jwt"
REVOKE_TYP = "fingerauth-revoke+jwt"


class DeviceKey:
    """An RSA key as the PAM module would hold it, with its JWK and RFC 7638 kid."""

    def __init__(self, bits=2048):
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=bits)
        numbers = self.private.public_key().public_numbers()
        self.jwk = {"kty": "RSA", "n": b64url(int_bytes(numbers.n)), "e": b64url(int_bytes(numbers.e))}
        canonical = '{"e":"%s","kty":"RSA","n":"%s"}' % (self.jwk["e"], self.jwk["n"])
        self.kid = b64url(hashlib.sha256(canonical.encode("ascii")).digest())

    def private_pem(self):
        return self.private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption())

    def public_pem(self):
        return self.private.public_key().public_bytes(serialization.Encoding.PEM,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo)

    def sign(self, claims, algorithm="RS256", kid=None, headers=None):
        extra = {"kid": self.kid if kid is None else kid}
        extra.update(headers or {})
        return jwt.encode(claims, self.private, algorithm=algorithm, headers=extra)

    def proof(self, claims, kid=None):
        """A registration proof: typ fingerauth-proof+jwt (a login token is refused there)."""
        return self.sign(claims, kid=kid, headers={"typ": PROOF_TYP})

    def revocation(self, claims, kid=None):
        """A key holder's revocation token: typ fingerauth-revoke+jwt."""
        return self.sign(claims, kid=kid, headers={"typ": REVOKE_TYP})


def claims(sub="alice", iss=HOST, aud=AUDIENCE, ttl=30, now=None, **changes):
    now = int(time.time()) if now is None else now
    document = {"iss": iss, "sub": sub, "aud": aud, "iat": now, "nbf": now, "exp": now + ttl,
                "jti": b64url(os.urandom(16)), "amr": ["fpt", "swk"], "service": "sudo"}
    for name, value in changes.items():
        if value is None:
            document.pop(name, None)
        else:
            document[name] = value
    return document


def unsigned(header, payload, signature=b""):
    return "%s.%s.%s" % (b64url(json.dumps(header).encode()), b64url(json.dumps(payload).encode()),
                         b64url(signature))


# -- fixtures ------------------------------------------------------------------------

@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store(request):
    """The database every test of this file runs against: the default SQLite file (None),
    then a database on a PostgreSQL server of its own (stopped and removed afterwards)."""
    if request.param == "sqlite":
        yield None
        return
    if not postgres_available():
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    with Postgres() as pg:
        yield pg.create_database("authd")


@pytest.fixture(scope="module")
def world(tmp_path_factory, store):
    """A TLS daemon with alice's and bob's keys registered for HOST."""
    root = tmp_path_factory.mktemp("authd")
    ca = make_ca(root / "ca")
    # Dozens of deliberate refusals for alice from 127.0.0.1: the failure limits are off
    # here and tested on their own daemons (test_authenticator_protection.py).
    authd = Authd(root / "server", audience=AUDIENCE, tls=ca, db=store,
                  args=("--user-failures", "0", "--address-failures", "0"))
    try:
        authd.start()
        w = World(authd)
        w.token = authd.create_token(HOST)
        w.other_token = authd.create_token(OTHER_HOST)
        w.alice = DeviceKey()
        w.bob = DeviceKey()
        for user, key in (("alice", w.alice), ("bob", w.bob)):
            answer = w.register(user, key)
            assert answer.status == 201, answer
        yield w
    finally:
        authd.stop()
    assert authd.returncode == 0, authd.log_text()
    # No JWT, host token or key ever reached the log.
    log = authd.log_text()
    for secret in w.secrets:
        assert secret not in log
    assert "BEGIN" not in log


class World:
    def __init__(self, authd):
        self.authd = authd
        self.secrets = []

    def register(self, user, key, host=HOST, token=None, proof_key=None, proof_claims=None):
        token = self.token if token is None else token
        proof = (proof_key or key).proof(proof_claims or claims(sub=user, iss=host), kid=key.kid)
        self.secrets += [token, proof]
        return self.authd.post_json("/v1/keys", {"user": user, "host": host, "jwk": key.jwk, "proof": proof},
                                    token=token)

    def login(self, token, path="/v1/login"):
        self.secrets.append(token)
        return self.authd.post_json(path, {"jwt": token})

    def last_audit(self):
        return self.authd.audit_rows()[-1]

    def assert_refused(self, answer, reason, status=401, event="login"):
        """The answer and the audit row of a refusal: a token that never verified with a
        registered key is told only `invalid_token` and its row names the user as claimed;
        a verified one hears the reason and its row is the key holder's."""
        assert answer.status == status, answer
        unverified = event == "login" and reason in UNVERIFIED
        assert answer.json() == {"error": "invalid_token" if unverified else reason}
        row = self.last_audit()
        assert (row["event"], row["outcome"], row["reason"]) == (event, "deny", reason)
        assert row["peer"] == "127.0.0.1"
        if unverified:
            assert row["user"] is None and row["verified"] == 0, row


# -- accepted --------------------------------------------------------------------------

def test_valid_token_is_accepted_on_v1_login_and_on_the_touchidauth_alias(world):
    for path in ("/v1/login", "/login"):
        c = claims()
        answer = world.login(world.alice.sign(c), path)
        assert answer.status == 200, answer
        assert answer.headers["content-type"] == "application/json"
        assert answer.json() == {"ok": True, "sub": "alice", "kid": world.alice.kid, "jti": c["jti"]}
        row = world.last_audit()
        assert (row["event"], row["outcome"], row["user"], row["host"], row["kid"], row["jti"]) == \
               ("login", "accept", "alice", HOST, world.alice.kid, c["jti"])


def test_audience_may_be_an_array_containing_ours(world):
    answer = world.login(world.alice.sign(claims(aud=["other", AUDIENCE])))
    assert answer.status == 200, answer


def test_concurrent_replays_accept_exactly_once(world):
    import concurrent.futures
    token = world.alice.sign(claims())
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        statuses = sorted(pool.map(lambda _: world.login(token).status, range(8)))
    assert statuses == [200] + [401] * 7


def test_replayed_token_is_refused(world):
    token = world.alice.sign(claims())
    assert world.login(token).status == 200
    world.assert_refused(world.login(token), "replayed")
    world.assert_refused(world.login(token, "/login"), "replayed")


# -- refused ---------------------------------------------------------------------------

def forged_cases(w):
    now = int(time.time())
    good = w.alice.sign(claims())
    head, payload, signature = good.split(".")
    tampered = dict(claims(), sub="alice", exp=now + 60)
    other = DeviceKey()
    hs_header = {"alg": "HS256", "typ": "JWT", "kid": w.alice.kid}
    hs_input = "%s.%s" % (b64url(json.dumps(hs_header).encode()), b64url(json.dumps(claims()).encode()))
    hs_token = hs_input + "." + b64url(hmac.new(w.alice.public_pem(), hs_input.encode(), hashlib.sha256).digest())
    return {
        "alg_none": (unsigned({"alg": "none", "typ": "JWT", "kid": w.alice.kid}, claims()), "alg_not_allowed"),
        "alg_none_with_signature": (unsigned({"alg": "none", "kid": w.alice.kid}, claims(), b"x" * 256),
                                    "alg_not_allowed"),
        "hs256_with_public_key_as_secret": (hs_token, "alg_not_allowed"),
        "rs512": (w.alice.sign(claims(), algorithm="RS512"), "alg_not_allowed"),
        "typ_not_jwt": (w.alice.sign(claims(), headers={"typ": "JOSE+JSON"}), "bad_typ"),
        "wrong_key": (other.sign(claims(), kid=w.alice.kid), "bad_signature"),
        "unknown_kid": (other.sign(claims()), "unknown_kid"),
        "missing_kid": (jwt.encode(claims(), w.alice.private, algorithm="RS256"), "missing_kid"),
        "kid_of_another_user": (w.bob.sign(claims(sub="alice")), "kid_not_for_sub"),
        "kid_of_another_host": (w.alice.sign(claims(iss=OTHER_HOST)), "kid_not_for_iss"),
        "tampered_payload": ("%s.%s.%s" % (head, b64url(json.dumps(tampered).encode()), signature), "bad_signature"),
        "empty_signature": ("%s.%s." % (head, payload), "bad_signature"),
        "truncated_signature": ("%s.%s.%s" % (head, payload, signature[:len(signature) // 8 * 4]), "bad_signature"),
        "expired": (w.alice.sign(claims(now=now - 200, ttl=100)), "expired"),
        "nbf_in_future": (w.alice.sign(claims(nbf=now + 120, exp=now + 200)), "not_yet_valid"),
        "iat_in_future": (w.alice.sign(claims(now=now + 120, nbf=None)), "iat_in_future"),
        "ttl_over_max": (w.alice.sign(claims(ttl=301)), "ttl_too_long"),
        "exp_not_integer": (w.alice.sign(claims(exp=now + 30.5)), "bad_time_claim"),
        "missing_exp": (w.alice.sign(claims(exp=None)), "bad_time_claim"),
        "wrong_aud": (w.alice.sign(claims(aud="someone-else")), "wrong_audience"),
        "missing_aud": (w.alice.sign(claims(aud=None)), "wrong_audience"),
        "missing_jti": (w.alice.sign(claims(jti=None)), "missing_jti"),
        "jti_too_long": (w.alice.sign(claims(jti="j" * 129)), "bad_jti"),
        "missing_sub": (w.alice.sign(claims(sub=None)), "missing_sub"),
        "four_segments": (good + ".x", "malformed_token"),
        "two_segments": (head + "." + payload, "malformed_token"),
        "padded_base64": (head + "=." + payload + "." + signature, "malformed_token"),
        "crit_header": (w.alice.sign(claims(), headers={"crit": ["exp"]}), "crit_not_supported"),
    }


CASES = ["alg_none", "alg_none_with_signature", "hs256_with_public_key_as_secret", "rs512", "typ_not_jwt",
         "wrong_key", "unknown_kid", "missing_kid", "kid_of_another_user", "kid_of_another_host",
         "tampered_payload", "empty_signature", "truncated_signature", "expired", "nbf_in_future", "iat_in_future", "ttl_over_max",
         "exp_not_integer", "missing_exp", "wrong_aud", "missing_aud", "missing_jti", "jti_too_long",
         "missing_sub", "four_segments", "two_segments", "padded_base64", "crit_header"]


@pytest.mark.parametrize("case", CASES)
def test_forged_or_invalid_token_is_refused_and_audited(world, case):
    token, reason = forged_cases(world)[case]
    world.assert_refused(world.login(token), reason)


def test_key_revoked_by_its_host_over_http_is_refused(world):
    key = DeviceKey()
    assert world.register("carol", key).status == 201
    assert world.login(key.sign(claims(sub="carol"))).status == 200
    answer = world.authd.request("DELETE", "/v1/keys/" + key.kid, headers={"Authorization": "Bearer " + world.token})
    assert answer.status == 204, answer
    row = world.last_audit()
    assert (row["event"], row["outcome"], row["kid"], row["user"]) == ("revoke", "accept", key.kid, "carol")
    world.assert_refused(world.login(key.sign(claims(sub="carol"))), "key_revoked")
    # Registering it again does not bring it back.
    answer = world.register("carol", key)
    assert answer.status == 409 and answer.json() == {"error": "key_revoked"}


def test_key_revoked_by_the_admin_command_is_refused(world):
    key = DeviceKey()
    assert world.register("dave", key).status == 201
    world.authd.revoke(key.kid)
    assert world.last_audit()["event"] == "admin_revoke"
    world.assert_refused(world.login(key.sign(claims(sub="dave"))), "key_revoked")
    listed = json.loads(world.authd.admin("keys", "list", "--json").stdout)
    assert {"kid": key.kid, "user": "dave", "host": HOST, "status": "revoked"}.items() <= \
           [k for k in listed if k["kid"] == key.kid][0].items()


def test_delete_needs_the_host_token_of_the_keys_host(world):
    key = DeviceKey()
    assert world.register("erin", key).status == 201
    path = "/v1/keys/" + key.kid
    assert world.authd.request("DELETE", path).status == 401
    other = world.authd.request("DELETE", path, headers={"Authorization": "Bearer " + world.other_token})
    assert other.status == 403 and other.json() == {"error": "host_mismatch"}
    unknown = world.authd.request("DELETE", "/v1/keys/" + DeviceKey().kid,
                                  headers={"Authorization": "Bearer " + world.token})
    assert unknown.status == 404
    assert world.login(key.sign(claims(sub="erin"))).status == 200


# -- bodies and routes -----------------------------------------------------------------

def test_invalid_json_is_400_and_audited(world):
    answer = world.authd.post_json("/v1/login", None, raw=b'{"jwt": ')
    world.assert_refused(answer, "invalid_json", status=400)
    answer = world.authd.post_json("/v1/login", {"token": "x"})
    world.assert_refused(answer, "invalid_request", status=400)
    answer = world.authd.post_json("/v1/login", None, raw=b'{"jwt":"a","jwt":"b"}')
    world.assert_refused(answer, "invalid_json", status=400)


def test_one_mebibyte_body_is_413(world):
    body = b'{"jwt":"' + b"a" * (1024 * 1024) + b'"}'
    answer = world.authd.request("POST", "/v1/login", body=body, headers={"Content-Type": "application/json"})
    world.assert_refused(answer, "body_too_large", status=413)


def test_json_content_type_is_required(world):
    answer = world.authd.request("POST", "/v1/login", body=b'{"jwt":"a.b.c"}', headers={"Content-Type": "text/plain"})
    assert answer.status == 415


def test_routes_and_methods(world):
    assert world.authd.request("GET", "/healthz").json() == {"ok": True, "store": "available"}
    assert world.authd.request("GET", "/nope").status == 404
    assert world.authd.request("GET", "/v1/login").status == 405
    answer = world.authd.request("POST", "/healthz", body=b"{}", headers={"Content-Type": "application/json"})
    assert answer.status == 405 and answer.headers["allow"] == "GET, HEAD"


# -- registration ---------------------------------------------------------------------

def test_registering_the_same_key_again_answers_200(world):
    answer = world.register("alice", world.alice)
    assert answer.status == 200 and answer.json() == {"kid": world.alice.kid, "status": "active"}


def test_registration_answers_201_with_kid(world):
    key = DeviceKey()
    answer = world.register("frank", key)
    assert answer.status == 201 and answer.json() == {"kid": key.kid, "status": "active"}
    row = world.last_audit()
    assert (row["event"], row["outcome"], row["user"], row["host"], row["kid"]) == \
           ("register", "accept", "frank", HOST, key.kid)


def test_same_key_for_another_user_is_409(world):
    answer = world.register("mallory", world.alice)
    world.assert_refused(answer, "kid_conflict", status=409, event="register")


def test_registration_without_host_token_is_401(world):
    proof = world.alice.proof(claims(sub="grace"))
    answer = world.authd.post_json("/v1/keys", {"user": "grace", "host": HOST, "jwk": DeviceKey().jwk,
                                                "proof": proof})
    world.assert_refused(answer, "bad_host_token", event="register")


def test_registration_with_wrong_host_token_is_401(world):
    key = DeviceKey()
    answer = world.register("grace", key, token=b64url(os.urandom(32)))
    world.assert_refused(answer, "bad_host_token", event="register")
    answer = world.register("grace", key, token="not-a-token")
    world.assert_refused(answer, "bad_host_token", event="register")


def test_registration_for_another_host_is_403(world):
    key = DeviceKey()
    answer = world.register("grace", key, host=OTHER_HOST)
    world.assert_refused(answer, "host_mismatch", status=403, event="register")


def test_registration_proof_signed_by_another_key_is_401(world):
    key = DeviceKey()
    answer = world.register("grace", key, proof_key=DeviceKey())
    world.assert_refused(answer, "proof_bad_signature", event="register")


def test_registration_proof_for_another_user_is_401(world):
    key = DeviceKey()
    answer = world.register("grace", key, proof_claims=claims(sub="heidi"))
    world.assert_refused(answer, "proof_wrong_sub", event="register")


def test_registration_refuses_small_keys(world):
    key = DeviceKey(bits=1024)
    answer = world.register("grace", key)
    world.assert_refused(answer, "invalid_jwk", status=400, event="register")


# -- process -------------------------------------------------------------------------------

def test_plain_http_daemon_and_clean_exit(tmp_path):
    authd = Authd(tmp_path / "plain")
    with authd:
        assert authd.url.startswith("http://127.0.0.1:")
        assert authd.request("GET", "/healthz").status == 200
    assert authd.returncode == 0
    assert "stopped" in authd.log_text()


def test_plain_http_is_refused_off_loopback(tmp_path):
    result = subprocess.run([os.path.join(build_dir(), "fingerauthd"), "serve", "--listen", "0.0.0.0:0",
                             "--db", str(tmp_path / "db"), "--audience", AUDIENCE],
                            capture_output=True, text=True, timeout=10)
    assert result.returncode == 2
    assert "--tls-cert" in result.stderr


def test_usage_errors_exit_2(tmp_path):
    binary = os.path.join(build_dir(), "fingerauthd")
    for args in ([], ["frobnicate"], ["serve"], ["keys", "revoke", "--db", str(tmp_path / "db")],
                 ["serve", "--listen", "127.0.0.1:0", "--db", "x", "--audience", "a", "--max-ttl", "9999"]):
        result = subprocess.run([binary, *args], capture_output=True, text=True, timeout=10)
        assert result.returncode == 2, (args, result.stderr)
        assert "fingerauthd" in result.stderr
    assert subprocess.run([binary, "--help"], capture_output=True, timeout=10).returncode == 0


def test_only_the_token_hash_is_stored(tmp_path):
    authd = Authd(tmp_path / "t")
    token = authd.create_token("h")
    assert len(token) == 43
    connection = sqlite3.connect(authd.db)
    try:
        rows = connection.execute("SELECT sha256, host FROM host_tokens").fetchall()
    finally:
        connection.close()
    assert rows == [(hashlib.sha256(token.encode()).hexdigest(), "h")]
    assert os.stat(authd.db).st_mode & 0o077 == 0
