"""Host keys (issue 47, part 1) against the real fingerauthd over TLS, on SQLite and then
PostgreSQL: `POST /v1/hosts/keys` with the host's enrollment token and a proof signed by
the new host key (typ fingerauth-host-proof+jwt, sub = iss = the host); one active host key
per host; the admin's `fingerauthd hosts keys|revoke-key` and `token revoke --host`; a host
key never logs in. Then `fingerauth host register|status` on a host against a real
fingerauthd.

Every refusal is checked as a client and an admin see it: status, body, audit row."""

import json
import os
import re
import stat
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from support.cli import run  # noqa: E402
from support.tls import make_ca  # noqa: E402
from test_authenticator import AUDIENCE, HOST, DeviceKey, claims, store  # noqa: E402,F401 (store: fixture)

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())

HOST_PROOF_TYP = "fingerauth-host-proof+jwt"
PATH = "/v1/hosts/keys"


class Server:
    def __init__(self, authd):
        self.authd = authd
        self.tokens = {}
        self.secrets = []

    def token(self, host):
        if host not in self.tokens:
            self.tokens[host] = self.authd.create_token(host)
            self.secrets.append(self.tokens[host])
        return self.tokens[host]

    def proof(self, key, host, signer=None, typ=HOST_PROOF_TYP, **changes):
        text = (signer or key).sign(claims(**{"sub": host, "iss": host, **changes}), kid=key.kid,
                                     headers={"typ": typ})
        self.secrets.append(text)
        return text

    def register(self, key, host, token=None, proof=None):
        token = self.token(host) if token is None else token
        document = {"host": host, "jwk": key.jwk, "proof": proof or self.proof(key, host)}
        return self.authd.post_json(PATH, document, token=token or None)

    def host_keys(self, *args):
        done = self.authd.admin("hosts", "keys", "--json", *args)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def status_of(self, kid):
        return [k["status"] for k in self.host_keys() if k["kid"] == kid]

    def rows(self, event, kid):
        return [r for r in self.authd.audit_rows() if r["event"] == event and r["kid"] == kid]

    def assert_refused(self, answer, status, reason, host, kid=None):
        assert answer.status == status, answer
        assert answer.json()["error"] == reason, answer
        row = self.authd.audit_rows()[-1]
        assert (row["event"], row["outcome"], row["reason"], row["host"]) == ("host_key_register", "deny", reason, host)
        assert row["user"] is None and row["peer"] == "127.0.0.1"
        if kid is not None:
            assert row["kid"] == kid


@pytest.fixture(scope="module")
def server(tmp_path_factory, store):
    root = tmp_path_factory.mktemp("hostkeys")
    authd = Authd(root / "server", audience=AUDIENCE, tls=make_ca(root / "ca"), db=store,
                  args=("--user-failures", "0", "--address-failures", "0"))
    try:
        authd.start()
        s = Server(authd)
        yield s
    finally:
        authd.stop()
    assert authd.returncode == 0, authd.log_text()
    # No JWT, host token or key ever reached the log.
    log = authd.log_text()
    for secret in s.secrets:
        assert secret not in log
    assert "BEGIN" not in log


# -- registration -----------------------------------------------------------------------

def test_registration_answers_201_then_200_for_the_same_key_and_writes_one_row(server):
    key = DeviceKey()
    first = server.register(key, "web01.example")
    assert first.status == 201, first
    assert first.json() == {"kid": key.kid, "status": "active", "host": "web01.example"}
    rows = server.rows("host_key_register", key.kid)
    assert [(r["outcome"], r["reason"], r["host"], r["user"]) for r in rows] == [("accept", None, "web01.example", None)]
    again = server.register(key, "web01.example")
    assert again.status == 200 and again.json() == first.json()
    assert len(server.rows("host_key_register", key.kid)) == 1, "the same key again writes nothing"
    listed = [k for k in server.host_keys("--host", "web01.example")]
    assert [(k["kid"], k["host"], k["status"], k["revoked"]) for k in listed] == [
        (key.kid, "web01.example", "active", None)]
    # Not a device key: the keys registry does not list it.
    done = server.authd.admin("keys", "list", "--json")
    assert key.kid not in done.stdout


def test_absent_or_bad_host_token_is_401(server):
    key = DeviceKey()
    absent = server.authd.post_json(PATH, {"host": "web02.example", "jwk": key.jwk,
                                           "proof": server.proof(key, "web02.example")})
    assert absent.status == 401 and absent.json() == {"error": "bad_host_token"}
    assert absent.headers.get("WWW-Authenticate", absent.headers.get("www-authenticate")) == 'Bearer realm="fingerauthd"'
    row = server.authd.audit_rows()[-1]
    assert (row["event"], row["outcome"], row["reason"]) == ("host_key_register", "deny", "bad_host_token")
    wrong = server.register(key, "web02.example", token="f" * 64)
    assert wrong.status == 401 and wrong.json() == {"error": "bad_host_token"}
    assert server.status_of(key.kid) == []


def test_the_token_of_one_host_cannot_register_for_another(server):
    key = DeviceKey()
    answer = server.register(key, "web03.example", token=server.token("web04.example"))
    server.assert_refused(answer, 403, "host_mismatch", "web03.example")
    assert server.status_of(key.kid) == []


@pytest.mark.parametrize("case", ["another-key", "wrong-typ", "device-proof", "sub-not-host", "iss-not-host",
                                  "wrong-audience"])
def test_a_refused_proof_is_400_with_its_reason_and_audited(server, case):
    host = "web05.example"
    key, other = DeviceKey(), DeviceKey()
    proof, reason = {
        "another-key": (lambda: server.proof(key, host, signer=other), "proof_bad_signature"),
        "wrong-typ": (lambda: server.proof(key, host, typ="JWT"), "proof_bad_typ"),
        # A user's device-key registration proof is not a host's.
        "device-proof": (lambda: server.proof(key, host, typ="fingerauth-proof+jwt", sub="alice"), "proof_bad_typ"),
        "sub-not-host": (lambda: server.proof(key, host, sub="alice"), "proof_wrong_sub"),
        "iss-not-host": (lambda: server.proof(key, host, iss="web06.example"), "proof_wrong_iss"),
        "wrong-audience": (lambda: server.proof(key, host, aud="someone-else"), "proof_wrong_audience"),
    }[case]
    answer = server.register(key, host, proof=proof())
    server.assert_refused(answer, 400, reason, host, kid=key.kid)
    assert server.status_of(key.kid) == []


def test_a_device_key_registration_is_refused_at_the_host_key_endpoint(server):
    """`fingerauth register`'s body and proof, sent to /v1/hosts/keys: refused, no host key."""
    key = DeviceKey()
    proof = key.proof(claims(sub="alice", iss="web07.example"))
    server.secrets.append(proof)
    answer = server.authd.post_json(PATH, {"user": "alice", "host": "web07.example", "jwk": key.jwk, "proof": proof},
                                    token=server.token("web07.example"))
    server.assert_refused(answer, 400, "proof_bad_typ", "web07.example", kid=key.kid)
    assert server.status_of(key.kid) == []


def test_a_replayed_proof_registers_nothing(server):
    host = "web08.example"
    key, second = DeviceKey(), DeviceKey()
    jti = "host-proof-jti-replayed"
    assert server.register(key, host, proof=server.proof(key, host, jti=jti)).status == 201
    answer = server.register(second, host, proof=server.proof(second, host, jti=jti))
    server.assert_refused(answer, 400, "proof_replayed", host, kid=second.kid)
    assert server.status_of(key.kid) == ["active"] and server.status_of(second.kid) == []


def test_a_small_or_malformed_key_is_400(server):
    small = DeviceKey(bits=1024)
    answer = server.register(small, "web09.example")
    server.assert_refused(answer, 400, "invalid_jwk", "web09.example")
    bad = server.authd.post_json(PATH, {"host": "web09.example"}, token=server.token("web09.example"))
    assert bad.status == 400 and bad.json() == {"error": "invalid_request"}


def test_a_device_keys_kid_is_not_taken_as_a_host_key(server):
    key = DeviceKey()
    host = "web10.example"
    proof = key.proof(claims(sub="alice", iss=host))
    server.secrets.append(proof)
    device = server.authd.post_json("/v1/keys", {"user": "alice", "host": host, "jwk": key.jwk, "proof": proof},
                                    token=server.token(host))
    assert device.status == 201, device
    answer = server.register(key, host)
    server.assert_refused(answer, 409, "kid_conflict", host, kid=key.kid)
    assert server.status_of(key.kid) == []


def test_another_hosts_key_is_409(server):
    key = DeviceKey()
    assert server.register(key, "web11.example").status == 201
    answer = server.register(key, "web12.example")
    server.assert_refused(answer, 409, "kid_conflict", "web12.example", kid=key.kid)


def test_routes_and_methods(server):
    for method in ("GET", "PUT", "DELETE"):
        answer = server.authd.request(method, PATH)
        assert answer.status == 405 and answer.headers.get("Allow", answer.headers.get("allow")) == "POST", answer
    assert server.authd.request("POST", "/v1/hosts/keys/x").status == 404


# -- one active host key per host --------------------------------------------------------

def test_a_new_key_revokes_the_hosts_previous_one_and_the_revoked_one_never_comes_back(server):
    host = "web20.example"
    old, new = DeviceKey(), DeviceKey()
    assert server.register(old, host).status == 201
    assert server.register(new, host).status == 201
    listed = server.host_keys("--host", host)
    # Both may be of the same second: compared as a set.
    assert sorted((k["kid"], k["status"]) for k in listed) == sorted([(new.kid, "active"), (old.kid, "revoked")])
    assert [k for k in listed if k["kid"] == old.kid][0]["revoked"] is not None
    rows = server.rows("host_key_revoke", old.kid)
    assert [(r["outcome"], r["reason"], r["host"]) for r in rows] == [("accept", "host_key_replaced", host)]
    back = server.register(old, host)
    server.assert_refused(back, 409, "key_revoked", host, kid=old.kid)
    assert server.status_of(new.kid) == ["active"]


def test_the_admin_revokes_a_host_key_by_kid_or_by_host(server):
    a, b = DeviceKey(), DeviceKey()
    assert server.register(a, "web21.example").status == 201
    assert server.register(b, "web22.example").status == 201
    by_kid = server.authd.admin("hosts", "revoke-key", "--kid", a.kid)
    assert by_kid.returncode == 0 and by_kid.stdout == "revoked host key %s of web21.example\n" % a.kid, by_kid
    by_host = server.authd.admin("hosts", "revoke-key", "--host", "web22.example")
    assert by_host.returncode == 0 and by_host.stdout == "revoked host key %s of web22.example\n" % b.kid, by_host
    assert server.status_of(a.kid) == ["revoked"] and server.status_of(b.kid) == ["revoked"]
    for key, host in ((a, "web21.example"), (b, "web22.example")):
        rows = server.rows("admin_revoke", key.kid)
        assert [(r["outcome"], r["reason"], r["host"], r["peer"]) for r in rows] == [("accept", "host_key", host, "local")]
    again = server.authd.admin("hosts", "revoke-key", "--kid", a.kid)
    assert again.returncode == 0 and again.stdout == "%s was already revoked\n" % a.kid
    unknown = server.authd.admin("hosts", "revoke-key", "--host", "web23.example")
    assert unknown.returncode == 1
    assert unknown.stderr.endswith("fingerauthd: hosts revoke-key: no active host key of web23.example; "
                                   "see 'fingerauthd hosts keys'\n"), unknown.stderr
    row = server.authd.audit_rows()[-1]
    assert (row["event"], row["outcome"], row["host"]) == ("admin_revoke", "deny", "web23.example")
    both = server.authd.admin("hosts", "revoke-key", "--kid", a.kid, "--host", "web21.example")
    assert both.returncode == 2 and "give --kid KID" in both.stderr


def test_token_revoke_host_revokes_its_host_keys_too(server):
    host = "web24.example"
    key = DeviceKey()
    assert server.register(key, host).status == 201
    done = server.authd.admin("token", "revoke", "--host", host)
    assert done.returncode == 0, done.stderr
    assert "revoked host key %s of %s\n" % (key.kid, host) in done.stdout
    assert server.status_of(key.kid) == ["revoked"]
    rows = server.rows("admin_revoke", key.kid)
    assert [(r["outcome"], r["reason"], r["host"]) for r in rows] == [("accept", "host_revoked", host)]
    # Its token is gone too: a new key for it is refused.
    again = server.register(DeviceKey(), host, token=server.tokens[host])
    assert again.status == 401


def test_a_host_key_never_logs_in(server):
    """Signed by a registered, active host key, a login token is unverified: no such kid."""
    host = "web25.example"
    key = DeviceKey()
    assert server.register(key, host).status == 201
    for sub in ("alice", host):
        token = key.sign(claims(sub=sub, iss=host))
        server.secrets.append(token)
        answer = server.authd.post_json("/v1/login", {"jwt": token})
        assert answer.status == 401 and answer.json() == {"error": "invalid_token"}, answer
        row = server.authd.audit_rows()[-1]
        assert (row["event"], row["outcome"], row["reason"], row["kid"]) == ("login", "deny", "unknown_kid", key.kid)
    assert server.status_of(key.kid) == ["active"]


# -- fingerauth host register|status on a host ----------------------------------------------

def test_fingerauth_host_register_makes_the_key_and_registers_it(world):
    folder = world.state / "host"
    key_path = folder / "host.key"
    missing = run(world, "host", "status")
    assert missing.returncode == 1 and missing.stderr == (
        "fingerauth: this host has no host key (make and register one: fingerauth host register)\n")

    done = run(world, "host", "register")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    kid = re.fullmatch(r"created host key (\S+) \(RSA-2048\) in %s" % re.escape(str(key_path)), lines[0]).group(1)
    assert lines[1:] == ["registered host key %s for testhost at %s/v1/hosts/keys: active" % (kid, world.authd.url)]
    assert stat.S_IMODE(os.stat(key_path).st_mode) == 0o600 and os.stat(key_path).st_uid == 0
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert key_path.read_text().startswith("-----BEGIN PRIVATE KEY-----\n")
    registration = folder / "registration"
    assert stat.S_IMODE(os.stat(registration).st_mode) == 0o600
    text = registration.read_text()
    assert "kid = %s\n" % kid in text and "status = active\n" in text
    assert "authenticator = %s/v1/hosts/keys\n" % world.authd.url in text

    listed = world.authd.admin("hosts", "keys", "--json")
    assert [(k["kid"], k["host"], k["status"]) for k in json.loads(listed.stdout)] == [(kid, "testhost", "active")]

    again = run(world, "host", "register")
    assert again.returncode == 0 and again.stdout == (
        "registered host key %s for testhost at %s/v1/hosts/keys: active\n" % (kid, world.authd.url)), again.stderr
    rows = [r for r in world.authd.audit_rows() if r["event"] == "host_key_register"]
    assert [(r["outcome"], r["kid"]) for r in rows] == [("accept", kid)]

    status = run(world, "host", "status", "--json")
    assert status.returncode == 0, status.stderr
    document = json.loads(status.stdout)
    assert (document["host"], document["kid"], document["status"]) == ("testhost", kid, "active")
    plain = run(world, "host", "status")
    assert plain.stdout.splitlines()[:3] == ["host:   testhost", "kid:    " + kid, "status: active"]

    # Revoked by the admin: the host hears what to do.
    assert world.authd.admin("hosts", "revoke-key", "--kid", kid).returncode == 0
    refused = run(world, "host", "register")
    assert refused.returncode == 1 and refused.stderr.startswith(
        "fingerauth: the authenticator has revoked this host key; make a new one: remove %s" % key_path), refused.stderr


def test_fingerauth_host_needs_a_subcommand(world):
    done = run(world, "host")
    assert done.returncode == 2 and done.stderr.startswith("fingerauth: host needs register or status\nusage: fingerauth host")
