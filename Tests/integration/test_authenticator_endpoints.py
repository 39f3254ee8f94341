"""fingerauthd's other endpoints against PyJWT-made tokens over real TLS: the RFC 7523
grant at /oauth2/token, the TouchIDAuth /pubkey alias, DELETE by the key's own JWT,
manual approval (pending keys), /metrics and the per-request log line.

Every refusal is checked as a client and an admin see it: status, body, audit row.
"""

import hashlib
import json
import os
import re
import sys
import urllib.parse

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from support.tls import make_ca  # noqa: E402
from test_authenticator import AUDIENCE, HOST, UNVERIFIED, DeviceKey, claims, store, unsigned  # noqa: E402,F401 (store: fixture)

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())

GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
FORM = "application/x-www-form-urlencoded"
NO_LIMITS = ("--user-failures", "0", "--address-failures", "0")


class Server:
    def __init__(self, authd):
        self.authd = authd
        self.token = authd.create_token(HOST)
        self.secrets = [self.token]

    def register(self, user, key, path="/v1/keys", token=None):
        proof = key.proof(claims(sub=user))
        self.secrets.append(proof)
        return self.authd.post_json(path, {"user": user, "host": HOST, "jwk": key.jwk, "proof": proof},
                                    token=self.token if token is None else token)

    def grant(self, fields, content_type=FORM):
        body = fields if isinstance(fields, bytes) else urllib.parse.urlencode(fields).encode()
        self.secrets.append(body.decode())
        return self.authd.request("POST", "/oauth2/token", body=body, headers={"Content-Type": content_type})

    def login(self, jwt_text, path="/v1/login"):
        self.secrets.append(jwt_text)
        return self.authd.post_json(path, {"jwt": jwt_text})

    def last(self):
        return self.authd.audit_rows()[-1]


@pytest.fixture(scope="module")
def server(tmp_path_factory, store):
    """One daemon for the module, on SQLite and then on PostgreSQL (`store`)."""
    root = tmp_path_factory.mktemp("endpoints")
    authd = Authd(root / "server", audience=AUDIENCE, tls=make_ca(root / "ca"), db=store, args=NO_LIMITS)
    try:
        authd.start()
        s = Server(authd)
        s.alice = DeviceKey()
        assert s.register("alice", s.alice).status == 201
        yield s
    finally:
        authd.stop()
    assert authd.returncode == 0, authd.log_text()
    log = authd.log_text()
    for secret in s.secrets:
        assert secret not in log
    assert "access_token" not in log


# -- /oauth2/token -------------------------------------------------------------------------

def test_valid_pyjwt_assertion_gets_an_access_token_of_which_only_the_hash_is_stored(server):
    c = claims()
    answer = server.grant({"grant_type": GRANT, "assertion": server.alice.sign(c)})
    assert answer.status == 200, answer
    body = answer.json()
    assert set(body) == {"access_token", "token_type", "expires_in"}
    assert body["token_type"] == "Bearer" and body["expires_in"] == 300
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", body["access_token"])
    assert answer.headers["cache-control"] == "no-store" and answer.headers["pragma"] == "no-cache"
    row = server.last()
    assert (row["event"], row["outcome"], row["user"], row["host"], row["kid"], row["jti"]) == \
           ("oauth_token", "accept", "alice", HOST, server.alice.kid, c["jti"])
    stored = [(r["sha256"], r["user"], r["kid"]) for r in server.authd.sql("SELECT * FROM access_tokens")]
    digest = hashlib.sha256(body["access_token"].encode()).hexdigest()
    assert (digest, "alice", server.alice.kid) in stored
    assert not [r for r in stored if body["access_token"] in r]
    if not server.authd.is_postgres:
        with open(server.authd.db, "rb") as f:
            assert body["access_token"].encode() not in f.read()
    server.secrets.append(body["access_token"])


def test_the_same_assertion_twice_is_invalid_grant(server):
    assertion = server.alice.sign(claims())
    assert server.grant({"grant_type": GRANT, "assertion": assertion}).status == 200
    answer = server.grant({"grant_type": GRANT, "assertion": assertion})
    assert answer.status == 400 and answer.json() == {"error": "invalid_grant", "error_description": "replayed"}
    assert (server.last()["event"], server.last()["reason"]) == ("oauth_token", "replayed")
    # A login token used as an assertion is used up for /v1/login too, and the reverse.
    token = server.alice.sign(claims())
    assert server.login(token).status == 200
    assert server.grant({"grant_type": GRANT, "assertion": token}).json()["error_description"] == "replayed"


@pytest.mark.parametrize("case,reason", [
    ("expired", "expired"), ("alg_none", "alg_not_allowed"), ("wrong_aud", "wrong_audience"),
    ("unknown_kid", "unknown_kid"), ("ttl_over_max", "ttl_too_long"),
])
def test_refused_assertions_are_invalid_grant_and_audited(server, case, reason):
    import time
    now = int(time.time())
    assertion = {
        "expired": lambda: server.alice.sign(claims(now=now - 200, ttl=100)),
        "alg_none": lambda: unsigned({"alg": "none", "kid": server.alice.kid}, claims()),
        "wrong_aud": lambda: server.alice.sign(claims(aud="elsewhere")),
        "unknown_kid": lambda: DeviceKey().sign(claims()),
        "ttl_over_max": lambda: server.alice.sign(claims(ttl=301)),
    }[case]()
    answer = server.grant({"grant_type": GRANT, "assertion": assertion})
    assert answer.status == 400, answer
    # An assertion that never verified with a registered key is told invalid_grant and no more.
    if reason in UNVERIFIED:
        assert answer.json() == {"error": "invalid_grant"}
    else:
        assert answer.json() == {"error": "invalid_grant", "error_description": reason}
    row = server.last()
    assert (row["event"], row["outcome"], row["reason"], row["peer"]) == ("oauth_token", "deny", reason, "127.0.0.1")


@pytest.mark.parametrize("fields,content_type,error", [
    ({"assertion": "a.b.c"}, FORM, "invalid_request"),
    ({"grant_type": GRANT}, FORM, "invalid_request"),
    ({"grant_type": "authorization_code", "code": "x"}, FORM, "unsupported_grant_type"),
    ({"grant_type": "client_credentials"}, FORM, "unsupported_grant_type"),
    (b"grant_type=" + GRANT.encode() + b"&grant_type=" + GRANT.encode() + b"&assertion=a.b.c", FORM, "invalid_request"),
    (b"grant_type=%zz", FORM, "invalid_request"),
    ({"grant_type": GRANT, "assertion": "a.b.c"}, "application/json", "invalid_request"),
])
def test_malformed_token_requests_get_oauth_error_bodies(server, fields, content_type, error):
    answer = server.grant(fields, content_type)
    assert answer.status == 400 and answer.json() == {"error": error}
    row = server.last()
    assert (row["event"], row["outcome"], row["reason"]) == ("oauth_token", "deny", error)


# -- /pubkey and DELETE -----------------------------------------------------------------------

def test_pubkey_is_v1_keys_under_its_touchidauth_name(server):
    key = DeviceKey()
    answer = server.register("peggy", key, path="/pubkey")
    assert answer.status == 201 and answer.json() == {"kid": key.kid, "status": "active"}
    assert (server.last()["event"], server.last()["outcome"], server.last()["user"]) == ("register", "accept", "peggy")
    assert server.login(key.sign(claims(sub="peggy")), "/login").status == 200
    # Same rules as /v1/keys: no host token, no registration.
    answer = server.register("peggy", DeviceKey(), path="/pubkey", token="x" * 43)
    assert answer.status == 401 and answer.json() == {"error": "bad_host_token"}


def test_a_host_reads_its_key_status_without_an_audit_row(server):
    key = DeviceKey()
    assert server.register("quinn", key).status == 201
    rows = len(server.authd.audit_rows())
    ask = lambda kid, token: server.authd.request(  # noqa: E731
        "GET", "/v1/keys/" + kid, headers={} if token is None else {"Authorization": "Bearer " + token})
    answer = ask(key.kid, server.token)
    assert answer.status == 200
    document = answer.json()
    assert (document["kid"], document["user"], document["host"], document["status"]) == (key.kid, "quinn", HOST, "active")
    assert ask(key.kid, None).status == 401
    assert ask("no-such-kid", server.token).json() == {"error": "unknown_kid"}
    other = server.authd.create_token("another-host")
    server.secrets.append(other)
    assert ask(key.kid, other).status == 403
    server.authd.revoke(key.kid)
    assert ask(key.kid, server.token).json()["status"] == "revoked"
    # Reading is not audited: only the new host token and the admin's revocation are.
    assert [r["event"] for r in server.authd.audit_rows()[rows:]] == ["token_create", "admin_revoke"]


def test_a_key_revokes_itself_with_a_revocation_token_it_signed(server):
    key = DeviceKey()
    assert server.register("quinn", key).status == 201
    path = "/v1/keys/" + key.kid

    def delete(credential):
        server.secrets.append(credential)
        return server.authd.request("DELETE", path, headers={"Authorization": "Bearer " + credential})

    # Another key's token, this kid's header with another key's signature, and the key's own
    # captured *login* token: all refused before anything is said about the key.
    for credential, reason in ((server.alice.revocation(claims()), "kid_mismatch"),
                               (DeviceKey().revocation(claims(sub="quinn"), kid=key.kid), "bad_signature"),
                               (key.sign(claims(sub="quinn")), "bad_typ")):
        answer = delete(credential)
        assert answer.status == 401 and answer.json() == {"error": "invalid_token"}, reason
        row = server.last()
        assert (row["event"], row["outcome"], row["reason"], row["user"]) == ("revoke", "deny", reason, None)
    assert server.login(key.sign(claims(sub="quinn"))).status == 200
    # A revocation token is no login.
    own = key.revocation(claims(sub="quinn"))
    assert server.login(own).json() == {"error": "invalid_token"}
    # The key's own revocation token revokes it.
    answer = delete(own)
    assert answer.status == 204, answer
    row = server.last()
    assert (row["event"], row["outcome"], row["reason"], row["kid"], row["user"]) == \
           ("revoke", "accept", "key_holder", key.kid, "quinn")
    answer = server.login(key.sign(claims(sub="quinn")))
    assert answer.status == 401 and answer.json() == {"error": "key_revoked"}
    # Its token cannot be used twice, and a revoked key cannot act any more.
    again = delete(own)
    assert again.status == 401 and again.json() == {"error": "key_revoked"}


# -- approval = manual ------------------------------------------------------------------------

def test_manual_approval_keeps_new_keys_pending_until_an_admin_approves(tmp_path):
    authd = Authd(tmp_path / "manual", audience=AUDIENCE, tls=make_ca(tmp_path / "ca"),
                  args=("--approval", "manual") + NO_LIMITS)
    try:
        authd.start()
        s = Server(authd)
        key = DeviceKey()
        answer = s.register("rita", key)
        assert answer.status == 201 and answer.json() == {"kid": key.kid, "status": "pending"}
        assert (s.last()["event"], s.last()["outcome"], s.last()["reason"]) == ("register", "accept", "pending_approval")
        again = s.register("rita", key)
        assert again.status == 200 and again.json() == {"kid": key.kid, "status": "pending"}
        answer = s.login(key.sign(claims(sub="rita")))
        assert answer.status == 401 and answer.json() == {"error": "key_pending"}
        row = s.last()
        assert (row["event"], row["outcome"], row["reason"], row["kid"]) == ("login", "deny", "key_pending", key.kid)
        grant = s.grant({"grant_type": GRANT, "assertion": key.sign(claims(sub="rita"))})
        assert grant.json() == {"error": "invalid_grant", "error_description": "key_pending"}
        listed = json.loads(authd.admin("keys", "list", "--status", "pending", "--json").stdout)
        assert [(k["kid"], k["user"], k["status"]) for k in listed] == [(key.kid, "rita", "pending")]

        result = authd.admin("keys", "approve", "--kid", key.kid)
        assert result.returncode == 0 and "approved" in result.stdout
        row = s.last()
        assert (row["event"], row["outcome"], row["kid"], row["user"], row["peer"]) == \
               ("admin_approve", "accept", key.kid, "rita", "local")
        assert s.login(key.sign(claims(sub="rita"))).status == 200
        unknown = authd.admin("keys", "approve", "--kid", "nope")
        assert unknown.returncode == 1 and "not registered" in unknown.stderr
        authd.revoke(key.kid)
        revoked = authd.admin("keys", "approve", "--kid", key.kid)
        assert revoked.returncode == 1 and "revoked" in revoked.stderr
        assert "approval=manual" in authd.log_text()
    finally:
        authd.stop()
    assert authd.returncode == 0


# -- /metrics and the log line -------------------------------------------------------------------

def metric(text, name_and_labels):
    for line in text.splitlines():
        if line.startswith(name_and_labels + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_metrics_count_logins_by_outcome_and_reason_replays_latency_and_keys(server):
    before = server.authd.request("GET", "/metrics")
    assert before.status == 200
    assert before.headers["content-type"].startswith("text/plain; version=0.0.4")
    token = server.alice.sign(claims())
    assert server.login(token).status == 200
    assert server.login(token).status == 401
    assert server.login(server.alice.sign(claims(aud="x"))).status == 401
    after = server.authd.request("GET", "/metrics").body.decode()
    old = before.body.decode()
    accept = 'fingerauthd_logins_total{endpoint="/v1/login",outcome="accept",reason="none"}'
    replayed = 'fingerauthd_logins_total{endpoint="/v1/login",outcome="deny",reason="replayed"}'
    audience = 'fingerauthd_logins_total{endpoint="/v1/login",outcome="deny",reason="wrong_audience"}'
    assert metric(after, accept) == (metric(old, accept) or 0) + 1
    assert metric(after, replayed) == (metric(old, replayed) or 0) + 1
    assert metric(after, audience) == (metric(old, audience) or 0) + 1
    assert metric(after, "fingerauthd_replays_refused_total") == metric(old, "fingerauthd_replays_refused_total") + 1
    assert metric(after, 'fingerauthd_rate_limited_total{scope="user"}') == 0
    count = metric(after, "fingerauthd_request_duration_seconds_count")
    assert metric(after, 'fingerauthd_request_duration_seconds_bucket{le="+Inf"}') == count
    assert count >= metric(old, "fingerauthd_request_duration_seconds_count") + 4
    assert "# TYPE fingerauthd_request_duration_seconds histogram" in after
    keys = {s: metric(after, 'fingerauthd_keys{status="%s"}' % s) for s in ("active", "pending", "revoked")}
    listed = json.loads(server.authd.admin("keys", "list", "--json").stdout)
    assert keys == {s: float(sum(1 for k in listed if k["status"] == s)) for s in keys}
    assert 'fingerauthd_requests_total{route="/v1/login",status="200"}' in after
    assert "alice" not in after and server.alice.kid not in after


def test_one_structured_log_line_per_request_without_secrets(server):
    c = claims()
    token = server.alice.sign(c)
    assert server.grant({"grant_type": GRANT, "assertion": token}).status == 200
    lines = [l for l in server.authd.log_text().splitlines() if "jti=%s" % c["jti"] in l]
    assert len(lines) == 1
    assert re.fullmatch("fingerauthd: method=POST path=/oauth2/token status=200 outcome=accept reason=- sub=alice "
                        "kid=%s jti=%s peer=127.0.0.1 ms=[0-9]+" % (server.alice.kid, c["jti"]), lines[0]), lines
    assert token not in server.authd.log_text()


# -- the helper's stage times beside the token -------------------------------------------

STAGE_COLUMNS = ("ready_ms", "match_ms", "connect_ms")


def stage_columns(row):
    return tuple(row[name] for name in STAGE_COLUMNS)


def test_a_verified_logins_stage_times_go_on_its_audit_row_and_into_the_audit_command(server):
    c = claims()
    token = server.alice.sign(c)
    server.secrets.append(token)
    answer = server.authd.post_json("/v1/login", {"jwt": token, "stages": {"ready_ms": 12, "match_ms": 640,
                                                                           "connect_ms": 3}})
    assert answer.status == 200 and answer.json()["jti"] == c["jti"], answer
    row = server.last()
    assert (row["outcome"], row["jti"]) == ("accept", c["jti"]) and stage_columns(row) == (12, 640, 3), row
    printed = json.loads(server.authd.admin("audit", "--json").stdout)
    assert printed[-1]["jti"] == c["jti"] and printed[-1]["stages"] == {"ready_ms": 12, "match_ms": 640,
                                                                        "connect_ms": 3}
    # A login without them (TouchIDAuth's body) has none, and says so as null.
    plain = claims()
    assert server.login(server.alice.sign(plain)).status == 200
    assert stage_columns(server.last()) == (None, None, None)
    assert json.loads(server.authd.admin("audit", "--json").stdout)[-1]["stages"] is None


@pytest.mark.parametrize("stages", [
    {"ready_ms": -1}, {"ready_ms": "12"}, {"ready_ms": 1.5}, {"ready_ms": 1e3}, {"match_ms": 600001},
    {"connect_ms": 10 ** 30}, {"ready_ms": None}, {"ready_ms": [1]}, {}, {"other": 5}, [12, 640], "12", 12, None,
], ids=repr)
def test_malformed_stage_times_are_dropped_and_never_change_the_answer(server, stages):
    c = claims()
    token = server.alice.sign(c)
    server.secrets.append(token)
    answer = server.authd.post_json("/v1/login", {"jwt": token, "stages": stages})
    assert answer.status == 200 and answer.json()["jti"] == c["jti"], answer
    row = server.last()
    assert (row["outcome"], row["jti"]) == ("accept", c["jti"]) and stage_columns(row) == (None, None, None), row


def test_unknown_stage_names_are_ignored_and_the_known_ones_kept(server):
    c = claims()
    token = server.alice.sign(c)
    server.secrets.append(token)
    stages = {"ready_ms": 7, "<script>alert(1)</script>": 1, "answer_ms": "soon"}
    assert server.authd.post_json("/v1/login", {"jwt": token, "stages": stages}).status == 200
    assert stage_columns(server.last()) == (7, None, None)


def test_a_strangers_stage_times_are_not_kept(server):
    """Only a verified token's row carries times: a forged token's numbers go nowhere."""
    stranger = DeviceKey()
    forged = stranger.sign(claims(), kid=server.alice.kid)
    server.secrets.append(forged)
    answer = server.authd.post_json("/v1/login", {"jwt": forged, "stages": {"ready_ms": 1, "match_ms": 1}})
    assert answer.status == 401 and answer.json() == {"error": "invalid_token"}, answer
    row = server.last()
    assert (row["outcome"], row["verified"]) == ("deny", 0) and stage_columns(row) == (None, None, None), row
