"""fingerauthd against an attacker on the network (issue 12), on both stores: limits that
strangers cannot aim, a flood that cannot fill the disk, identities compared byte for byte,
revocation that reaches every key, token and access token of a host, one replay window for
a fleet whose instances disagree on skew and time, and a remote database only over TLS.
Every daemon here is the real fingerauthd on loopback; the attacker's addresses are
127.0.0.2 and up (the whole 127/8 is local)."""

import concurrent.futures
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from support.load import sign_all  # noqa: E402
from support.postgres import Postgres, available as postgres_available  # noqa: E402
from support.tls import make_ca  # noqa: E402
from test_authenticator import AUDIENCE, HOST, DeviceKey, b64url, claims  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())

GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request):
    """None for SQLite, or a PostgreSQL server of this module's own."""
    if request.param == "sqlite":
        yield None
        return
    if not postgres_available():
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    with Postgres() as pg:
        yield pg


@pytest.fixture
def db(server, request):
    """A fresh database for one test: a SQLite file of its own (None) or a new PostgreSQL database."""
    if server is None:
        return None
    name = "t_%d_%d" % (os.getpid(), int(time.monotonic() * 1e6))
    return server.create_database(name)


def register(authd, token, user, host=HOST):
    key = DeviceKey()
    answer = authd.post_json("/v1/keys", {"user": user, "host": host, "jwk": key.jwk,
                                          "proof": key.proof(claims(sub=user, iss=host))}, token=token)
    assert answer.status == 201, answer
    return key


def forged(key, user):
    """A token that names `user` and `key`'s kid, signed by a key of nobody's."""
    return DeviceKey().sign(claims(sub=user), kid=key.kid)


# -- limits that strangers cannot aim ----------------------------------------------------------

def test_forged_tokens_lock_out_only_the_address_that_sent_them(tmp_path, db):
    with Authd(tmp_path / "a", db=db, args=("--address-failures", "10", "--user-failures", "10")) as authd:
        alice = register(authd, authd.create_token(HOST), "alice")
        answers = [authd.post_json("/v1/login", {"jwt": forged(alice, "alice")}, source="127.0.0.2") for _ in range(12)]
        assert [a.status for a in answers] == [401] * 10 + [429] * 2
        assert all(a.json() == {"error": "invalid_token"} for a in answers[:10])
        # Alice, elsewhere, is not locked out by what a stranger claimed in her name.
        assert authd.post_json("/v1/login", {"jwt": alice.sign(claims())}, source="127.0.0.3").status == 200
        # The stranger's own address is, and its 429s leave only after a pause (the tarpit
        # that keeps a flood from taking the server's CPU).
        started = time.monotonic()
        limited = authd.post_json("/v1/login", {"jwt": alice.sign(claims())}, source="127.0.0.2")
        held = time.monotonic() - started
        assert limited.status == 429 and int(limited.headers["retry-after"]) >= 1
        assert held >= 0.010, "a 429 past the limit is held back at least 10 ms (took %.1f ms)" % (held * 1000)
        assert authd.post_json("/v1/login", {"jwt": alice.sign(claims())}, source="127.0.0.4").status == 200
        rows = [r for r in authd.audit_rows() if r["peer"] == "127.0.0.2" and r["event"] == "login"]
        assert len(rows) == 10
        for row in rows:
            assert (row["user"], row["claimed_user"], row["reason"], bool(row["verified"])) == \
                   (None, "alice", "bad_signature", False)
        log = authd.log_text()
        assert "reason=bad_signature sub=- claimed=alice" in log


def test_replays_of_alices_own_token_limit_alice_at_that_address_only(tmp_path, db):
    with Authd(tmp_path / "r", db=db, args=("--address-failures", "50", "--user-failures", "10")) as authd:
        alice = register(authd, authd.create_token(HOST), "alice")
        used = alice.sign(claims())
        assert authd.post_json("/v1/login", {"jwt": used}, source="127.0.0.2").status == 200
        for _ in range(10):
            again = authd.post_json("/v1/login", {"jwt": used}, source="127.0.0.2")
            assert again.status == 401 and again.json() == {"error": "replayed"}
        limited = authd.post_json("/v1/login", {"jwt": alice.sign(claims())}, source="127.0.0.2")
        assert limited.status == 429
        row = authd.audit_rows()[-1]
        assert (row["user"], row["reason"], row["peer"], bool(row["verified"])) == ("alice", "rate_limited", "127.0.0.2", True)
        # One leaked old token replayed from one place does not lock alice out everywhere.
        assert authd.post_json("/v1/login", {"jwt": alice.sign(claims())}, source="127.0.0.3").status == 200


def test_the_client_behind_a_trusted_proxy_is_the_right_most_untrusted_forwarded_address(tmp_path, db):
    args = ("--address-failures", "3", "--trusted-proxies", "127.0.0.9/32")
    with Authd(tmp_path / "x", db=db, args=args) as authd:
        alice = register(authd, authd.create_token(HOST), "alice")

        def via_proxy(forwarded, token):
            connection = authd.connection(source="127.0.0.9")
            try:
                connection.request("POST", "/v1/login", body=json.dumps({"jwt": token}),
                                   headers={"Content-Type": "application/json", "X-Forwarded-For": forwarded})
                return connection.getresponse().status
            finally:
                connection.close()
        # A client that puts someone else's address left of what the proxy appended is
        # counted as itself.
        assert [via_proxy("192.0.2.1, 198.51.100.7", forged(alice, "alice")) for _ in range(4)] == [401] * 3 + [429]
        assert via_proxy("198.51.100.8", alice.sign(claims())) == 200
        assert via_proxy("192.0.2.1", alice.sign(claims())) == 200
        # Not from the proxy: the header is ignored, the peer counts.
        assert [authd.post_json("/v1/login", {"jwt": forged(alice, "alice")}, source="127.0.0.5").status
                for _ in range(4)] == [401] * 3 + [429]
        peers = {r["peer"] for r in authd.audit_rows() if r["reason"] == "bad_signature"}
        assert peers == {"198.51.100.7", "127.0.0.5"}


def post_with_forwarded_lines(authd, source, lines, path, document, token=None):
    """POST `document` from `source` with one `X-Forwarded-For` header line per item of
    `lines` (http.client's putheader sends each as a line of its own): the status."""
    connection = authd.connection(source=source)
    try:
        body = json.dumps(document).encode()
        connection.putrequest("POST", path)
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(len(body)))
        if token is not None:
            connection.putheader("Authorization", "Bearer " + token)
        for line in lines:
            connection.putheader("X-Forwarded-For", line)
        connection.endheaders(body)
        answer = connection.getresponse()
        answer.read()
        return answer.status
    finally:
        connection.close()


def test_every_forwarded_for_line_counts_so_a_blocked_client_cannot_split_its_way_out(tmp_path, db):
    """HAProxy's `option forwardfor` appends a header line of its own rather than extending
    the client's: the client's own first line must not be the one believed."""
    args = ("--address-failures", "3", "--trusted-proxies", "127.0.0.9/32,10.0.0.0/8")
    with Authd(tmp_path / "s", db=db, args=args) as authd:
        alice = register(authd, authd.create_token(HOST), "alice")

        def login(lines, token, source="127.0.0.9"):
            return post_with_forwarded_lines(authd, source, lines, "/v1/login", {"jwt": token})
        # The client at 198.51.100.7, behind the proxy, fails three times: it is blocked.
        assert [login(["198.51.100.7"], forged(alice, "alice")) for _ in range(3)] == [401] * 3
        # Six valid logins, each with a line of the client's own naming another address
        # before the line the proxy appended: every one is still the blocked client.
        assert [login(["192.0.2.%d" % i, "198.51.100.7"], alice.sign(claims())) for i in range(6)] == [429] * 6
        # A chain of trusted proxies (the second, 10.1.1.1, appended a line after the first's):
        # the right-most untrusted address counts, wherever the lines break.
        assert login(["192.0.2.50", "198.51.100.7, 10.1.1.1"], alice.sign(claims())) == 429
        assert login(["192.0.2.50", "198.51.100.7", "10.1.1.1"], alice.sign(claims())) == 429
        assert login(["198.51.100.7", "198.51.100.8", "10.1.1.1"], alice.sign(claims())) == 200
        # Not from a trusted proxy: every line is ignored, the peer itself counts.
        assert [login(["192.0.2.%d" % i], forged(alice, "alice"), source="127.0.0.5") for i in range(3)] == [401] * 3
        assert login(["192.0.2.99", "192.0.2.98"], alice.sign(claims()), source="127.0.0.5") == 429
        rows = [r for r in authd.audit_rows() if r["event"] == "login" and r["outcome"] == "accept"]
        assert [r["peer"] for r in rows] == ["198.51.100.8"]
        refused = {r["peer"] for r in authd.audit_rows() if r["reason"] == "bad_signature"}
        assert refused == {"198.51.100.7", "127.0.0.5"}


def test_wrong_host_tokens_at_the_policy_check_count_against_the_address(tmp_path, db):
    with Authd(tmp_path / "p", db=db, args=("--address-failures", "3")) as authd:
        token = authd.create_token(HOST)
        wrong = [authd.post_json("/v1/policy/check", {"user": "alice"}, token="x" * 43, source="127.0.0.2")
                 for _ in range(4)]
        assert [a.status for a in wrong] == [401, 401, 401, 429]
        assert wrong[0].json() == {"error": "bad_host_token"}
        # The address is past its limit for everything, its right token included; others are not.
        assert authd.post_json("/v1/policy/check", {"user": "alice"}, token=token, source="127.0.0.2").status == 429
        answer = authd.post_json("/v1/policy/check", {"user": "alice"}, token=token, source="127.0.0.3")
        assert answer.status == 200 and answer.json() == {"allowed": True, "rule": None}
        assert "path=/v1/policy/check status=401 outcome=deny reason=bad_host_token" in authd.log_text()


# -- a flood cannot fill the disk ---------------------------------------------------------------

def test_a_flood_of_refused_requests_adds_a_bounded_number_of_audit_rows(tmp_path, db):
    """50,000 refused requests from one address: address-failures rows of their own (50),
    then one `refusals` row per address and failure window holding the count."""
    total, limit = 50000, 50
    with Authd(tmp_path / "f", db=db, args=("--address-failures", str(limit))) as authd:
        alice = register(authd, authd.create_token(HOST), "alice")
        before = len(authd.audit_rows())
        garbage = json.dumps({"jwt": forged(alice, "alice")}).encode()
        sent = [0]
        lock = threading.Lock()

        def flood(count):
            connection = authd.connection(timeout=30, source="127.0.0.2")
            statuses = {}
            for _ in range(count):
                connection.request("POST", "/v1/login", body=garbage, headers={"Content-Type": "application/json"})
                answer = connection.getresponse()
                answer.read()
                statuses[answer.status] = statuses.get(answer.status, 0) + 1
            connection.close()
            with lock:
                sent[0] += count
            return statuses

        # As many keep-alive connections as one address may hold (64): the 429s of an address
        # past its limit leave only after a short pause (the tarpit), so that is the fastest
        # a flood can go.
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=65) as pool:
            flooding = [pool.submit(flood, total // 64 + (1 if i < total % 64 else 0)) for i in range(64)]
            # Alice logs in from her own address all along.
            alongside = []
            while not all(f.done() for f in flooding):
                alongside.append(authd.post_json("/v1/login", {"jwt": alice.sign(claims())}).status)
            statuses = {}
            for f in flooding:
                for status, count in f.result().items():
                    statuses[status] = statuses.get(status, 0) + count
        seconds = time.monotonic() - started
        # The limit is checked before the work and counted after it: requests of the 64
        # connections in flight when it is reached may still be answered 401.
        refused, limited = statuses.get(401, 0), statuses.get(429, 0)
        assert refused + limited == total and limit <= refused <= limit + 64, statuses
        assert alongside and set(alongside) == {200}
        rows = authd.wait_for_rows(lambda rows: sum(r["count"] for r in rows if r["event"] == "refusals") == limited)
        flood_rows = [r for r in rows[before:] if r["peer"] == "127.0.0.2"]
        refusals = [r for r in flood_rows if r["event"] == "refusals"]
        print("\n%d refused requests in %.1f s (%d alice logins alongside): %d audit rows (%d refusals rows)"
              % (total, seconds, len(alongside), len(flood_rows), len(refusals)))
        # The bound: one row per refusal up to the limit (and the few in flight when it was
        # reached), plus one row per failure window the flood spanned.
        assert len(flood_rows) <= refused + 2
        assert sum(r["count"] for r in refusals) == limited
        assert all(r["reason"] == "rate_limited" and not r["verified"] for r in refusals)
        metrics = authd.request("GET", "/metrics", source="127.0.0.3").body.decode()
        assert "fingerauthd_refusals_counted_total %d" % limited in metrics
        # Logged one by one up to the limit, then once per failure window.
        assert authd.log_text().count("peer=127.0.0.2 ") <= refused + 2


# -- identities compared as bytes -----------------------------------------------------------------

def test_a_kelvin_sign_is_not_a_k_and_a_nul_in_a_kid_goes_nowhere(tmp_path, db):
    with Authd(tmp_path / "k", db=db) as authd:
        kate = register(authd, authd.create_token(HOST), "kate")
        # Swift's == takes the Kelvin sign for a K; the user-name rule refuses both spellings
        # (not lower-case ASCII) before any key is looked up.
        for sub in ("\u212aate", "Kate"):
            answer = authd.post_json("/v1/login", {"jwt": kate.sign(claims(sub=sub))})
            assert answer.status == 400 and answer.json()["error"] == "invalid_request", sub
            row = authd.audit_rows()[-1]
            assert (row["user"], row["reason"]) == (None, "invalid_user_name")
        for kid in ("REAL\u0000x", kate.kid + "\u0000", "\u212a" + kate.kid[1:]):
            answer = authd.post_json("/v1/login", {"jwt": kate.sign(claims(sub="kate"), kid=kid)})
            assert answer.status == 401 and answer.json() == {"error": "invalid_token"}, repr(kid)
            assert authd.audit_rows()[-1]["reason"] == "bad_kid"
        token = authd.create_token(HOST)
        for path in ("/v1/keys/REAL%00x", "/v1/keys/" + urllib.parse.quote(kate.kid + "\u0000")):
            answer = authd.request("GET", path, headers={"Authorization": "Bearer " + token})
            assert answer.status == 404 and answer.json() == {"error": "unknown_kid"}, path
        assert authd.post_json("/v1/login", {"jwt": kate.sign(claims(sub="kate"))}).status == 200


# -- revocation that reaches everything ------------------------------------------------------------

def grant(authd, token):
    return authd.request("POST", "/oauth2/token", body=urllib.parse.urlencode({"grant_type": GRANT, "assertion": token}),
                         headers={"Content-Type": "application/x-www-form-urlencoded"})


def introspect(authd, host_token, access):
    answer = authd.request("POST", "/oauth2/introspect", body="token=" + access,
                           headers={"Content-Type": "application/x-www-form-urlencoded",
                                    "Authorization": "Bearer " + host_token})
    assert answer.status == 200, answer
    return answer.json()


def test_revoking_a_hosts_token_revokes_its_keys_and_their_access_tokens(tmp_path, db):
    with Authd(tmp_path / "v", db=db) as authd:
        token = authd.create_token(HOST)
        other_token = authd.create_token("other-host")
        alice, bob = register(authd, token, "alice"), register(authd, token, "bob")
        carol = register(authd, other_token, "carol", host="other-host")
        access = grant(authd, alice.sign(claims())).json()["access_token"]
        assert introspect(authd, other_token, access)["active"] is True
        result = authd.admin("token", "revoke", "--host", HOST)
        assert result.returncode == 0, result.stderr
        assert "revoked 1 token" in result.stdout
        assert "revoked 2 keys of %s and withdrew 1 access token issued to them" % HOST in result.stdout
        for key, user in ((alice, "alice"), (bob, "bob")):
            answer = authd.post_json("/v1/login", {"jwt": key.sign(claims(sub=user))})
            assert answer.status == 401 and answer.json() == {"error": "key_revoked"}
        assert introspect(authd, other_token, access) == {"active": False}
        assert authd.post_json("/v1/login", {"jwt": carol.sign(claims(sub="carol", iss="other-host"))}).status == 200
        rows = [r for r in authd.audit_rows() if r["event"] == "admin_revoke"]
        assert sorted((r["user"], r["reason"]) for r in rows) == [("alice", "host_revoked"), ("bob", "host_revoked")]


def test_keys_are_revoked_in_bulk_by_user_or_host(tmp_path, db):
    with Authd(tmp_path / "b", db=db) as authd:
        token, other = authd.create_token(HOST), authd.create_token("h2")
        keys = {("alice", HOST): register(authd, token, "alice"), ("alice", "h2"): register(authd, other, "alice", "h2"),
                ("bob", HOST): register(authd, token, "bob"), ("bob", "h2"): register(authd, other, "bob", "h2")}
        result = authd.admin("keys", "revoke", "--user", "alice")
        assert result.returncode == 0 and "revoked 2 keys of user alice" in result.stdout, result.stdout
        result = authd.admin("keys", "revoke", "--user", "bob", "--host", "h2")
        assert result.returncode == 0 and "revoked 1 key of user bob on host h2" in result.stdout, result.stdout
        listed = {(k["user"], k["host"]): k["status"] for k in json.loads(authd.admin("keys", "list", "--json").stdout)}
        assert listed == {("alice", HOST): "revoked", ("alice", "h2"): "revoked", ("bob", HOST): "active",
                          ("bob", "h2"): "revoked"}
        assert authd.admin("keys", "revoke").returncode == 2
        assert authd.admin("keys", "revoke", "--kid", "x", "--user", "bob").returncode == 2


def test_no_login_is_accepted_once_a_revocation_committed(tmp_path, db):
    with Authd(tmp_path / "race", db=db, args=("--user-failures", "0", "--address-failures", "0")) as authd:
        alice = register(authd, authd.create_token(HOST), "alice")
        tokens = sign_all(alice.private_pem(), alice.kid, [claims() for _ in range(4000)])
        results = []
        stop = threading.Event()

        def hammer(part):
            connection = authd.connection(timeout=10)
            for token in part:
                if stop.is_set():
                    break
                began = time.monotonic()
                connection.request("POST", "/v1/login", body=json.dumps({"jwt": token}),
                                   headers={"Content-Type": "application/json"})
                answer = connection.getresponse()
                answer.read()
                results.append((began, answer.status))
                time.sleep(0.004)  # paced, so that tokens last past the revocation
            connection.close()

        threads = [threading.Thread(target=hammer, args=(tokens[i::6],)) for i in range(6)]
        for t in threads:
            t.start()
        time.sleep(0.7)
        revoked = authd.admin("keys", "revoke", "--kid", alice.kid)
        committed = time.monotonic()
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        assert revoked.returncode == 0, revoked.stderr
        before = [s for began, s in results if began < committed]
        after = [s for began, s in results if began >= committed]
        print("\n%d logins before the revocation returned (%d accepted), %d after (%d accepted, statuses %s)"
              % (len(before), before.count(200), len(after), after.count(200), sorted(set(after))))
        assert before.count(200) > 10 and len(after) > 10
        assert set(after) == {401}


# -- one replay window for the fleet -----------------------------------------------------------------

def test_two_instances_with_other_skews_and_clocks_share_one_replay_window(tmp_path):
    """A (skew 0, max-ttl 30) and B (skew 300, max-ttl 300, its clock 400 s ahead through
    libfaketime), both pruning every second, on one PostgreSQL (a fleet shares one): a
    token accepted by A stays refused by both for as long as either would take it."""
    if not postgres_available():
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    if not os.path.exists(FAKETIME):
        pytest.skip("libfaketime is not installed (apt-get install faketime)")
    with Postgres() as server:
        fleet_window(tmp_path, server)


def fleet_window(tmp_path, server):
    url = server.create_database("fleet_window")
    a = Authd(tmp_path / "a", db=url, args=("--skew", "0", "--max-ttl", "30", "--prune-interval", "1"))
    b = Authd(tmp_path / "b", db=url, args=("--skew", "300", "--max-ttl", "300", "--prune-interval", "1"))
    # B's clocks 400 s ahead (libfaketime moves the monotonic clock along, so that timed waits stay right).
    ahead = tmp_path / "fingerauthd-400s-ahead"
    # (libfaketime as `faketime` sets it up, but without its wrapper process, which would
    # stand between the test's SIGTERM and the daemon; through env(1), with which the
    # preloaded library leaves the daemon's arguments alone.)
    ahead.write_text('#!/bin/sh\nLD_PRELOAD=%s FAKETIME=+400s exec /usr/bin/env %s "$@"\n' % (FAKETIME, b.binary))
    ahead.chmod(0o755)
    b.binary = str(ahead)
    try:
        a.start()
        b.start()
        alice = register(a, a.create_token(HOST), "alice")
        # A lives 3 s (its skew 0): enough for the first answers on a busy machine, where
        # 2 s (1 s and a fraction after the truncated `now`) was not always.
        now, ttl = int(time.time()), 3
        c = claims(now=now, ttl=ttl)
        token = alice.sign(c)
        assert a.post_json("/v1/login", {"jwt": token}).status == 200
        assert b.post_json("/v1/login", {"jwt": token}).json() == {"error": "replayed"}
        kept = lambda: server.query("fleet_window", "SELECT keep_until FROM replay WHERE jti = '%s'" % c["jti"])  # noqa: E731
        assert kept() == [{"keep_until": now + ttl + 300}]
        # Past the token's exp and several pruning passes of both (B's own clock is 400 s
        # ahead, past the row's keep_until): the row stays, B with its 300 s skew refuses it.
        time.sleep(max(0.0, now + ttl + 3 - time.time()))
        assert kept() == [{"keep_until": now + ttl + 300}]
        assert b.post_json("/v1/login", {"jwt": token}).json() == {"error": "replayed"}
        assert a.post_json("/v1/login", {"jwt": token}).json() == {"error": "expired"}
        # B judges times by the database's clock, not its own: a fresh token is good there.
        assert re.search(r"this machine's clock is (39\d|40\d) s ahead of the database's", b.log_text()), b.log_text()
        assert b.post_json("/v1/login", {"jwt": alice.sign(claims())}).status == 200
    finally:
        a.stop()
        b.stop()
    assert a.returncode == 0 and b.returncode == 0


def test_a_database_on_another_machine_needs_an_explicit_sslmode(tmp_path):
    binary = os.path.join(build_dir(), "fingerauthd")
    started = time.monotonic()
    result = subprocess.run([binary, "serve", "--listen", "127.0.0.1:0", "--audience", AUDIENCE,
                             "--db", "postgresql://fa:secret@192.0.2.10/authd"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert "sslmode=verify-full" in result.stderr and "secret" not in result.stderr
    assert time.monotonic() - started < 2, "refused before any connection attempt"
