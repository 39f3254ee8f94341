"""fingerauthd under load and through a crash, over real TLS on loopback.

    FINGERAUTH_BUILD=/dir /usr/bin/python3 -m pytest -q Tests/integration/test_authenticator_load.py

The LONG test runs 60 s: 50 clients, each on a keep-alive HTTPS connection, send tokens
signed beforehand by PyJWT (in two processes, so the clients are not the bottleneck) at
FINGERAUTH_LOAD_RATE requests per second in total (default 100), spread evenly over the
minute. The crash test sends as fast as it can, kills the daemon with SIGKILL in the
middle, restarts it on the same database and checks what was promised before the crash.
"""

import contextlib
import json
import os
import sqlite3
import sys
import threading
import time
import urllib.parse

import pytest
from cryptography.hazmat.primitives import serialization

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from support.load import Item, run_load, sign_all  # noqa: E402
from support.postgres import Postgres, available as postgres_available  # noqa: E402
from support.tls import make_ca  # noqa: E402
from test_authenticator import AUDIENCE, HOST, DeviceKey, claims  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())

GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
CLIENTS = 50


def private_pem(key):
    return key.private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption())


def login_items(users, count, ttl=300):
    """`count` requests spread over `users` ({name: DeviceKey}): 8 in 10 on /v1/login,
    1 on /login, 1 on /oauth2/token; each with its own token. Returns (items, jtis)."""
    names = sorted(users)
    plans = [[] for _ in names]
    for i in range(count):
        plans[i % len(names)].append(i)
    items = [None] * count
    jtis = [None] * count
    for n, name in enumerate(names):
        key = users[name]
        documents = [claims(sub=name, ttl=ttl) for _ in plans[n]]
        tokens = sign_all(private_pem(key), key.kid, documents)
        for i, document, token in zip(plans[n], documents, tokens):
            jtis[i] = document["jti"]
            if i % 10 == 9:
                body = urllib.parse.urlencode({"grant_type": GRANT, "assertion": token}).encode()
                items[i] = Item("/oauth2/token", "application/x-www-form-urlencoded", body)
            else:
                path = "/login" if i % 10 == 8 else "/v1/login"
                items[i] = Item(path, "application/json", json.dumps({"jwt": token}).encode())
    return items, jtis


def register_item(token, user, key):
    proof = key.proof(claims(sub=user, ttl=300))
    body = json.dumps({"user": user, "host": HOST, "jwk": key.jwk, "proof": proof}).encode()
    return Item("/v1/keys", "application/json", body, expect=201, headers={"Authorization": "Bearer " + token})


def register_users(authd, token, count):
    users = {"load%d" % i: DeviceKey() for i in range(count)}
    for name, key in users.items():
        answer = authd.post_json("/v1/keys", {"user": name, "host": HOST, "jwk": key.jwk,
                                              "proof": key.proof(claims(sub=name))}, token=token)
        assert answer.status == 201, answer
    return users


def audit_count(db, events=("login", "oauth_token")):
    connection = sqlite3.connect(db, timeout=10)
    try:
        marks = ",".join("?" * len(events))
        return connection.execute("SELECT count(*) FROM audit WHERE event IN (%s)" % marks, events).fetchone()[0]
    finally:
        connection.close()


def test_LONG_load_50_clients_for_60_seconds_answers_every_request_with_one_audit_row_each(tmp_path):
    rate = int(os.environ.get("FINGERAUTH_LOAD_RATE", "100"))
    duration = 60.0
    ca = make_ca(tmp_path / "ca")
    authd = Authd(tmp_path / "server", audience=AUDIENCE, tls=ca)
    try:
        authd.start()
        token = authd.create_token(HOST)
        users = register_users(authd, token, 5)
        items, _ = login_items(users, int(rate * duration))
        before = audit_count(authd.db)
        result = run_load("127.0.0.1", authd.port, ca.ssl_context(), items, clients=CLIENTS, duration=duration)
        summary = result.summary()
        print("\nload:", summary)
        assert result.errors == [], (summary, result.errors[:5])
        # The server kept up: (almost) everything scheduled inside the minute was sent.
        assert result.sent >= 0.9 * len(items), summary
        assert result.elapsed >= duration - 2, summary
        assert audit_count(authd.db) - before == result.sent
        accepted = sum(1 for row in authd.audit_rows()[-result.sent:] if row["outcome"] == "accept")
        assert accepted == result.sent
        metrics = authd.request("GET", "/metrics").body.decode()
        assert 'fingerauthd_logins_total{endpoint="/v1/login",outcome="accept",reason="none"}' in metrics
        assert "fingerauthd_replays_refused_total 0" in metrics
        # One log line per request.
        log = authd.log_text()
        assert log.count(" status=200 outcome=accept ") == result.sent
        with open(os.path.join(str(tmp_path), "load-summary.txt"), "w") as f:
            f.write(summary + "\n")
    finally:
        authd.stop()
    assert authd.returncode == 0


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_kill_9_during_load_then_restart_keeps_every_registration_and_refuses_every_replay(tmp_path, store):
    """SIGKILL at full load (group commit batches in flight), then a restart on the same
    database: every token answered 200 before the kill is refused as a replay, every key
    answered 201 is there, and every answered request has its audit row."""
    if store == "postgresql" and not postgres_available():
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    with contextlib.ExitStack() as stack:
        db = stack.enter_context(Postgres()).create_database("crash") if store == "postgresql" else None
        crash_and_restart(tmp_path, db)


def crash_and_restart(tmp_path, db):
    ca = make_ca(tmp_path / "ca")
    authd = Authd(tmp_path / "server", audience=AUDIENCE, tls=ca, db=db)
    try:
        authd.start()
        token = authd.create_token(HOST)
        users = register_users(authd, token, 4)
        logins, jtis = login_items(users, 10000)
        newcomers = [("crash%d" % i, DeviceKey()) for i in range(24)]
        registrations = [register_item(token, name, key) for name, key in newcomers]
        # One registration every 100 logins, throughout.
        items, kinds = [], []
        for i, item in enumerate(logins):
            items.append(item)
            kinds.append(("login", i))
            if i % 100 == 50 and registrations:
                items.append(registrations.pop(0))
                kinds.append(("register", len(newcomers) - len(registrations) - 1))

        stop = threading.Event()
        outcome = {}
        runner = threading.Thread(target=lambda: outcome.update(result=run_load(
            "127.0.0.1", authd.port, ca.ssl_context(), items, clients=CLIENTS, duration=30, pace=False,
            timeout=5, stop=stop)))
        runner.start()
        # Killed while the load is at full speed (the clients send a few thousand a second).
        time.sleep(1.2)
        authd.kill()
        stop.set()
        runner.join(timeout=60)
        result = outcome["result"]
        answered = [(kinds[i], a) for i, a in enumerate(result.answers) if a is not None and a[0] is not None]
        accepted = [jtis[k[1]] for k, a in answered if k[0] == "login" and a[0] == 200]
        created = [newcomers[k[1]][1].kid for k, a in answered if k[0] == "register" and a[0] == 201]
        print("\ncrash: %d answered before SIGKILL (%d logins accepted, %d keys created), %s"
              % (len(answered), len(accepted), len(created), result.summary()))
        assert len(accepted) > 100 and created, "the crash came too early to prove anything"
        assert len(accepted) < len(logins), "the load ended before the crash"
        # Nothing but 200/201 was answered before the crash.
        assert all(a[0] in (200, 201) for _, a in answered)

        if not authd.is_postgres:
            connection = sqlite3.connect(authd.db, timeout=10)
            try:
                assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            finally:
                connection.close()
        # Thousands of replays from one address for a few users: the failure limits would
        # (rightly) answer 429 after the first ones; they are off for this check.
        authd.args = ["--user-failures", "0", "--address-failures", "0"]
        authd.start()
        listed = {k["kid"]: k for k in json.loads(authd.admin("keys", "list", "--json").stdout)}
        for kid in created:
            assert listed[kid]["status"] == "active"
        rows = authd.audit_rows()
        audited = {row["jti"] for row in rows if row["event"] in ("login", "oauth_token") and row["outcome"] == "accept"}
        assert set(accepted) <= audited
        registered = {row["kid"] for row in rows if row["event"] == "register" and row["outcome"] == "accept"}
        assert set(created) <= registered
        # Every token accepted before the crash is refused now: send them all again.
        replay = [items[i] for i, a in enumerate(result.answers)
                  if a is not None and a[0] == 200 and kinds[i][0] == "login"]
        for item in replay:
            item.expect = 400 if item.path == "/oauth2/token" else 401
        again = run_load("127.0.0.1", authd.port, ca.ssl_context(), replay, clients=8, duration=120, pace=False)
        assert again.sent == len(replay) and again.errors == [], again.summary()
        bodies = {a[1] for a in again.answers}
        assert bodies <= {b'{"error":"replayed"}', b'{"error":"invalid_grant","error_description":"replayed"}'}
    finally:
        authd.stop()
    assert authd.returncode == 0
