"""A compromised host against the registry (issue 32, point 4), on both stores: the same key
registered again and again with fresh proofs writes no audit row and no replay row; a
host's registrations are limited per window (429, counted in one `refusals` row, not
audited one by one); a user holds at most `max-keys-per-user-host` keys on one host. Each
case through the real fingerauthd's `POST /v1/keys`, the rows counted in its database."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from test_authenticator import HOST, DeviceKey, claims  # noqa: E402
from test_authenticator_abuse import db, server  # noqa: E402,F401  (store fixtures: sqlite and postgresql)

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())


def register(authd, token, key, user="alice", host=HOST):
    """One registration of `key` with a fresh proof (a new jti each time)."""
    return authd.post_json("/v1/keys", {"user": user, "host": host, "jwk": key.jwk,
                                        "proof": key.proof(claims(sub=user, iss=host))}, token=token)


def rows(authd):
    """(audit rows, replay rows) in the daemon's database now."""
    audit = authd.sql("SELECT COUNT(*) AS n FROM audit")[0]["n"]
    replay = authd.sql("SELECT COUNT(*) AS n FROM replay")[0]["n"]
    return audit, replay


def test_four_hundred_registrations_of_one_key_write_one_row_each_of_audit_and_replay(tmp_path, db):
    with Authd(tmp_path / "a", db=db, args=("--host-registrations", "0")) as authd:
        token = authd.create_token(HOST)
        key = DeviceKey()
        before = rows(authd)
        answers = [register(authd, token, key) for _ in range(400)]
        assert [a.status for a in answers] == [201] + [200] * 399, sorted(set(a.status for a in answers))
        assert {a.body for a in answers[1:]} == {('{"kid":"%s","status":"active"}' % key.kid).encode()}
        audit, replay = rows(authd)
        assert (audit - before[0], replay - before[1]) == (1, 1), (before, audit, replay)
        registered = [r for r in authd.audit_rows() if r["event"] == "register"]
        assert [(r["outcome"], r["reason"], r["kid"]) for r in registered] == [("accept", None, key.kid)]


def test_a_hosts_registrations_past_its_limit_are_429_and_counted_in_one_row(tmp_path, db):
    with Authd(tmp_path / "a", db=db) as authd:  # the default: 30 a window
        token = authd.create_token(HOST)
        other = authd.create_token("otherhost")
        key = DeviceKey()
        before = rows(authd)
        answers = [register(authd, token, key) for _ in range(400)]
        statuses = [a.status for a in answers]
        assert statuses == [201] + [200] * 29 + [429] * 370, statuses
        assert answers[-1].json() == {"error": "rate_limited"}
        assert 1 <= int(answers[-1].headers["retry-after"]) <= 300
        # The 429s are counted in memory and written once a second, together.
        counted = authd.wait_for_rows(lambda all_rows: sum(r["count"] for r in all_rows if r["event"] == "refusals") == 370)
        assert {r["reason"] for r in counted if r["event"] == "refusals"} == {"registrations_limited"}
        audit, replay = rows(authd)
        # The registration and the refusals row (one a window; two when the run straddles a
        # window's end, and a window's row may be added to twice).
        assert audit - before[0] <= 3 and replay - before[1] == 1, (before, audit, replay)
        log = authd.log_text()
        assert log.count("host %s registered 30 keys within 300 s" % HOST) == 1, log[-2000:]
        # Another host is not held back; a new key of this host waits like the same key again.
        assert register(authd, other, DeviceKey(), host="otherhost").status == 201
        assert register(authd, token, DeviceKey(), user="bob").status == 429


def test_a_user_holds_at_most_ten_keys_on_one_host_and_revoked_ones_do_not_count(tmp_path, db):
    with Authd(tmp_path / "a", db=db) as authd:
        token = authd.create_token(HOST)
        keys = [DeviceKey() for _ in range(10)]
        assert [register(authd, token, key).status for key in keys] == [201] * 10
        extra = DeviceKey()
        refused = register(authd, token, extra)
        assert refused.status == 409 and refused.json() == {"error": "too_many_keys"}, refused
        row = [r for r in authd.audit_rows() if r["event"] == "register"][-1]
        assert (row["outcome"], row["reason"], row["kid"], row["user"]) == ("deny", "too_many_keys", extra.kid, "alice")
        assert not authd.sql("SELECT kid FROM keys WHERE kid = '%s'" % extra.kid)
        # The same key again is not one more; another user and another host have room.
        assert register(authd, token, keys[0]).status == 200
        assert register(authd, token, DeviceKey(), user="bob").status == 201
        assert register(authd, authd.create_token("host2"), DeviceKey(), host="host2").status == 201
        # A revoked key frees its place.
        authd.revoke(keys[0].kid)
        assert register(authd, token, extra).status == 201
        assert register(authd, token, DeviceKey()).status == 409


def test_the_key_limit_is_the_admins_to_set(tmp_path, db):
    with Authd(tmp_path / "a", db=db, args=("--max-keys-per-user-host", "2")) as authd:
        token = authd.create_token(HOST)
        assert [register(authd, token, DeviceKey()).status for _ in range(3)] == [201, 201, 409]
    with Authd(tmp_path / "b", args=("--max-keys-per-user-host", "0")) as authd:
        token = authd.create_token(HOST)
        assert [register(authd, token, DeviceKey()).status for _ in range(11)] == [201] * 11  # 0: no limit


def test_bad_limits_are_usage_errors(tmp_path):
    import subprocess
    binary = os.path.join(build_dir(), "fingerauthd")
    base = [binary, "serve", "--listen", "127.0.0.1:0", "--audience", "a", "--db", str(tmp_path / "db")]
    for option, value in (("--max-keys-per-user-host", "x"), ("--max-keys-per-user-host", "-1"),
                          ("--host-registrations", "many")):
        done = subprocess.run(base + [option, value], capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and option[2:] in done.stderr, (option, done.stderr)
