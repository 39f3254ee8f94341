"""Two fingerauthd instances on one PostgreSQL (Debian's `postgresql`, initdb in a
temporary folder, a loopback port): one registry, one replay cache, one audit log.

    FINGERAUTH_BUILD=/dir /usr/bin/python3 -m pytest -q Tests/integration/test_fleet.py

Every server a test starts (PostgreSQL and both daemons) is stopped in a finally; the
figures each test measured are printed (pytest -s shows them).
"""

import concurrent.futures
import http.client
import json
import os
import socket
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.approvals import Parties, rows, wait_until  # noqa: E402
from support.authd import Authd, build_dir  # noqa: E402
from support.load import run_load  # noqa: E402
from support.postgres import Postgres, available as postgres_available  # noqa: E402
from support.tls import make_ca  # noqa: E402
from test_authenticator import AUDIENCE, HOST, DeviceKey, claims  # noqa: E402
from test_authenticator_load import login_items, register_users  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                       reason="no fingerauthd in %s" % build_dir()),
    pytest.mark.skipif(not postgres_available(), reason="PostgreSQL is not installed (apt-get install postgresql)"),
]

UNLIMITED = ("--user-failures", "0", "--address-failures", "0")


class Fleet:
    def __init__(self, pg, url, a, b, ca):
        self.pg = pg
        self.url = url
        self.a = a
        self.b = b
        self.ca = ca
        self.token = None
        self.killed = set()


@pytest.fixture
def fleet(tmp_path):
    ca = make_ca(tmp_path / "ca")
    with Postgres() as pg:
        url = pg.create_database("fleet")
        f = None
        a = Authd(tmp_path / "a", audience=AUDIENCE, tls=ca, db=url, args=UNLIMITED)
        b = Authd(tmp_path / "b", audience=AUDIENCE, tls=ca, db=url, args=UNLIMITED)
        try:
            a.start()
            b.start()
            f = Fleet(pg, url, a, b, ca)
            f.token = a.create_token(HOST)
            yield f
        finally:
            a.stop()
            b.stop()
        for authd in (a, b):
            if f is not None and authd not in f.killed:
                assert authd.returncode == 0, authd.log_text()
            assert "BEGIN" not in authd.log_text()


def login(authd, token, connection=None):
    """POST /v1/login on `connection` (kept alive) or a fresh one; (status, json body)."""
    body = json.dumps({"jwt": token}).encode()
    own = connection is None
    connection = connection or authd.connection(10)
    try:
        connection.request("POST", "/v1/login", body=body, headers={"Content-Type": "application/json"})
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read() or b"{}")
    finally:
        if own:
            connection.close()


def register(fleet, authd, user, key):
    answer = authd.post_json("/v1/keys", {"user": user, "host": HOST, "jwk": key.jwk,
                                          "proof": key.proof(claims(sub=user))}, token=fleet.token)
    assert answer.status == 201, answer
    return answer


def test_the_schema_is_created_once_with_its_version(fleet):
    assert fleet.pg.query("fleet", "SELECT version FROM fingerauthd_schema ORDER BY version") == \
        [{"version": 1}, {"version": 2}, {"version": 3}, {"version": 4}, {"version": 5},
         {"version": 6}, {"version": 7}, {"version": 8}, {"version": 9}, {"version": 10}, {"version": 11},
         {"version": 12}, {"version": 13}, {"version": 14}, {"version": 15}]
    assert fleet.a.request("GET", "/healthz").json() == {"ok": True, "store": "available"}
    assert fleet.b.request("GET", "/healthz").json() == {"ok": True, "store": "available"}


def test_the_same_token_sent_to_both_at_the_same_moment_is_accepted_exactly_once(fleet):
    key = DeviceKey()
    register(fleet, fleet.a, "alice", key)
    tokens = [key.sign(claims(sub="alice", ttl=120)) for _ in range(150)]
    senders = [fleet.a, fleet.b] * 4  # 8 copies of each token, 4 to each instance
    barrier = threading.Barrier(len(senders))
    statuses = [[None] * len(senders) for _ in tokens]

    def sender(n):
        connection = senders[n].connection(10)
        try:
            for t, token in enumerate(tokens):
                barrier.wait(timeout=30)
                statuses[t][n] = login(senders[n], token, connection)[0]
        finally:
            connection.close()

    with concurrent.futures.ThreadPoolExecutor(len(senders)) as pool:
        list(pool.map(sender, range(len(senders))))
    accepted = [row.count(200) for row in statuses]
    print("\nsame token x8 on two instances, %d tokens: accepted once %d, twice or more %d, never %d"
          % (len(tokens), accepted.count(1), sum(1 for n in accepted if n > 1), accepted.count(0)))
    assert accepted == [1] * len(tokens)
    assert all(sorted(row) == [200] + [401] * (len(senders) - 1) for row in statuses)
    replays = [r for r in fleet.a.audit_rows() if r["reason"] == "replayed"]
    assert len(replays) == len(tokens) * (len(senders) - 1)


def test_a_key_revoked_through_one_instance_is_refused_by_the_other_at_once(fleet):
    key = DeviceKey()
    register(fleet, fleet.a, "carol", key)
    assert login(fleet.b, key.sign(claims(sub="carol")))[0] == 200
    answer = fleet.a.request("DELETE", "/v1/keys/" + key.kid, headers={"Authorization": "Bearer " + fleet.token})
    assert answer.status == 204, answer
    revoked_at = time.monotonic()
    assert login(fleet.b, key.sign(claims(sub="carol"))) == (401, {"error": "key_revoked"})
    print("\nrevoked through A, refused by B %.0f ms later" % ((time.monotonic() - revoked_at) * 1000))
    answer = fleet.b.request("GET", "/v1/keys/" + key.kid, headers={"Authorization": "Bearer " + fleet.token})
    assert answer.json()["status"] == "revoked"


def test_both_instances_write_one_audit_log(fleet):
    key = DeviceKey()
    register(fleet, fleet.a, "dave", key)
    first, second = claims(sub="dave"), claims(sub="dave")
    assert login(fleet.a, key.sign(first))[0] == 200
    assert login(fleet.b, key.sign(second))[0] == 200
    for authd in (fleet.a, fleet.b):
        shown = json.loads(authd.admin("audit", "--user", "dave", "--json").stdout)
        assert [(r["event"], r["outcome"], r["jti"]) for r in shown if r["event"] == "login"] == \
               [("login", "accept", first["jti"]), ("login", "accept", second["jti"])]
    # One sequence of ids: rows of both instances interleave in one table.
    ids = [r["id"] for r in fleet.a.audit_rows()]
    assert ids == sorted(set(ids))


def test_one_users_failures_through_both_instances_are_counted_together(tmp_path):
    ca = make_ca(tmp_path / "ca")
    limits = ("--user-failures", "3", "--failure-window", "60", "--address-failures", "0")
    with Postgres() as pg:
        url = pg.create_database("limits")
        a = Authd(tmp_path / "a", audience=AUDIENCE, tls=ca, db=url, args=limits)
        b = Authd(tmp_path / "b", audience=AUDIENCE, tls=ca, db=url, args=limits)
        try:
            a.start()
            b.start()
            fleet = Fleet(pg, url, a, b, ca)
            fleet.token = a.create_token(HOST)
            key, other = DeviceKey(), DeviceKey()
            register(fleet, a, "xavier", key)
            register(fleet, a, "yvonne", other)
            statuses = []
            for authd in (a, a, b):
                answer = authd.post_json("/v1/login", {"jwt": key.sign(claims(sub="xavier", aud="wrong"))})
                statuses.append(answer.status)
            # A valid token now waits, through either instance; another user does not.
            waits = []
            for authd in (a, b):
                answer = authd.post_json("/v1/login", {"jwt": key.sign(claims(sub="xavier"))})
                statuses.append(answer.status)
                assert answer.status == 429 and answer.json() == {"error": "rate_limited"}
                waits.append(int(answer.headers["retry-after"]))
            print("\n3 failures (A, A, B) with --user-failures 3: statuses %s, Retry-After %s" % (statuses, waits))
            assert statuses == [401, 401, 401, 429, 429]
            assert all(1 <= wait <= 60 for wait in waits)
            # The limits are read ahead by the name the token claims; xavier's key claiming
            # yvonne is still limited as xavier (read again for the key's user), not let
            # through on yvonne's empty window.
            disguised = b.post_json("/v1/login", {"jwt": key.sign(claims(sub="yvonne"))})
            assert disguised.status == 429 and disguised.json() == {"error": "rate_limited"}, disguised
            assert b.post_json("/v1/login", {"jwt": other.sign(claims(sub="yvonne"))}).status == 200
            rows = pg.query("limits", "SELECT key, count FROM rate_counters ORDER BY key")
            # The two registrations counted against the host (host-registrations), shared too.
            assert {"key": "registration:%s" % HOST, "count": 2} in rows, rows
            rows = [row for row in rows if not row["key"].startswith("registration:")]
            # Counted for the verified user at the address the failures came from (a leaked
            # old token replayed from elsewhere does not lock xavier out everywhere).
            assert rows == [{"key": "address:127.0.0.1", "count": 3}, {"key": "user:xavier@127.0.0.1", "count": 3}] \
                or rows == [{"key": "user:xavier@127.0.0.1", "count": 3}]
        finally:
            a.stop()
            b.stop()
        for authd in (a, b):
            assert authd.returncode == 0, authd.log_text()


def test_stopping_postgresql_under_load_fails_closed_and_recovers_without_a_restart(fleet):
    users = register_users(fleet.a, fleet.token, 4)
    items, jtis = login_items(users, 1200)
    halves = [items[0::2], items[1::2]]
    results = [None, None]
    marks = {}

    def drive(n, authd):
        results[n] = run_load("127.0.0.1", authd.port, fleet.ca.ssl_context(), halves[n], clients=8, duration=12)

    threads = [threading.Thread(target=drive, args=(n, authd)) for n, authd in enumerate((fleet.a, fleet.b))]
    for thread in threads:
        thread.start()
    try:
        time.sleep(3)
        fleet.pg.stop("fast")
        marks["stopped"] = time.monotonic()
        down_health = [fleet.a.request("GET", "/healthz").status, fleet.b.request("GET", "/healthz").status]
        key = users["load0"]
        down_login = login(fleet.b, key.sign(claims(sub="load0")))
        time.sleep(3)
        marks["restarting"] = time.monotonic()
        fleet.pg.start()
    finally:
        for thread in threads:
            thread.join(timeout=60)
    assert down_health == [503, 503]
    assert down_login == (503, {"error": "unavailable"})
    during = [a for r in results for a, began in zip(r.answers, r.began)
              if a is not None and marks["stopped"] <= began < marks["restarting"]]
    after = [a for r in results for a, began in zip(r.answers, r.began)
             if a is not None and began > marks["restarting"] + 2]
    print("\nPostgreSQL stopped %.1f s: %d requests then, %s; %d requests after it came back, %d accepted"
          % (marks["restarting"] - marks["stopped"], len(during),
             sorted({a[0] for a in during}, key=str), len(after), sum(1 for a in after if a[0] == 200)))
    assert during and all(a[0] is not None and not 200 <= a[0] < 300 for a in during)
    assert after and sum(1 for a in after if a[0] == 200) >= len(after) * 0.9
    # Recovery without restarting either daemon; both report the store healthy again.
    assert fleet.a.request("GET", "/healthz").status == 200
    assert fleet.b.request("GET", "/healthz").status == 200
    # No accepted jti is accepted again, through either instance.
    accepted = [item for r, half in zip(results, halves) for a, item in zip(r.answers, half)
                if a is not None and a[0] == 200 and item.path != "/oauth2/token"]
    assert accepted
    for n, item in enumerate(accepted):
        authd = fleet.a if n % 2 else fleet.b
        token = json.loads(item.body)["jwt"]
        assert login(authd, token) == (401, {"error": "replayed"})


def test_killing_one_instance_under_load_the_other_keeps_answering(fleet):
    users = register_users(fleet.a, fleet.token, 4)
    items, jtis = login_items(users, 1000)
    halves = [items[0::2], items[1::2]]
    results = [None, None]

    def drive(n, authd):
        results[n] = run_load("127.0.0.1", authd.port, fleet.ca.ssl_context(), halves[n], clients=8, duration=10)

    threads = [threading.Thread(target=drive, args=(n, authd)) for n, authd in enumerate((fleet.a, fleet.b))]
    for thread in threads:
        thread.start()
    try:
        time.sleep(4)
        fleet.killed.add(fleet.a)
        fleet.a.kill()
        killed = time.monotonic()
    finally:
        for thread in threads:
            thread.join(timeout=60)
    a_result, b_result = results
    b_after = [a for a, began in zip(b_result.answers, b_result.began) if a is not None and began > killed]
    print("\nA killed: B answered %d requests after it, %d of them 200; B errors %d"
          % (len(b_after), sum(1 for a in b_after if a[0] == 200), len(b_result.errors)))
    assert b_after and all(a[0] == 200 for a in b_after)
    assert b_result.errors == []
    # Nothing A acknowledged is lost: each accept is in the one audit log, and its token is
    # refused as replayed by B.
    acknowledged = [(item, jti) for a, item, jti in zip(a_result.answers, halves[0], jtis[0::2])
                    if a is not None and a[0] == 200]
    assert acknowledged
    audited = {r["jti"] for r in fleet.b.audit_rows() if r["outcome"] == "accept"}
    assert {jti for _, jti in acknowledged} <= audited
    for item, _ in acknowledged[:200]:
        if item.path == "/oauth2/token":
            continue
        assert login(fleet.b, json.loads(item.body)["jwt"]) == (401, {"error": "replayed"})


def test_a_password_in_the_url_never_reaches_the_log(tmp_path):
    with Postgres() as pg:
        pg.psql("postgres", "ALTER USER fa PASSWORD 'sekrit-pw-123'")
        url = pg.create_database("pw").replace("fa@", "fa:sekrit-pw-123@")
        authd = Authd(tmp_path / "pw", audience=AUDIENCE, db=url)
        try:
            authd.start()
            assert authd.request("GET", "/healthz").status == 200
        finally:
            authd.stop()
        log = authd.log_text()
        assert "sekrit-pw-123" not in log
        assert "db=postgresql://fa:***@127.0.0.1:%d/pw" % pg.port in log


def test_an_unreachable_database_at_start_is_an_error_without_the_password(tmp_path):
    from support.postgres import free_port
    url = "postgresql://fa:sekrit-pw-456@127.0.0.1:%d/none" % free_port()
    authd = Authd(tmp_path / "down", audience=AUDIENCE, db=url)
    with pytest.raises(RuntimeError):
        authd.start()
    authd.stop()
    assert authd.returncode == 1
    log = authd.log_text()
    assert "cannot connect" in log and "sekrit-pw-456" not in log


def test_expired_jti_and_old_audit_rows_are_pruned_on_schedule(tmp_path):
    with Postgres() as pg:
        url = pg.create_database("prune")
        authd = Authd(tmp_path / "p", audience=AUDIENCE, db=url,
                      args=("--prune-interval", "1", "--audit-retention-days", "30"))
        try:
            authd.start()
            old = int(time.time()) - 40 * 86400
            pg.psql("prune", "INSERT INTO replay (jti, keep_until) SELECT 'old' || g, %d FROM generate_series(1, 2500) g" % old)
            pg.psql("prune", "INSERT INTO replay (jti, keep_until) VALUES ('fresh', %d)" % (int(time.time()) + 300))
            pg.psql("prune", "INSERT INTO audit (\"time\", event, outcome) SELECT %d, 'login', 'accept' "
                             "FROM generate_series(1, 1500)" % old)
            pg.psql("prune", "INSERT INTO rate_counters (key, window_start, expires, count) "
                             "VALUES ('user:old', %d, %d, 5)" % (old, old + 60))
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                left = pg.query("prune", "SELECT (SELECT count(*) FROM replay) AS replay, "
                                         "(SELECT count(*) FROM audit WHERE \"time\" < %d) AS audit, "
                                         "(SELECT count(*) FROM rate_counters) AS rate" % (old + 1))[0]
                if left == {"replay": 1, "audit": 0, "rate": 0}:
                    break
                time.sleep(0.3)
            assert left == {"replay": 1, "audit": 0, "rate": 0}
            # The line is written once the pass has committed: on a busy machine a moment later.
            assert wait_until(lambda: "pruned 2500 jti" in authd.log_text(), 5), authd.log_text()
        finally:
            authd.stop()


# -- remote approval across instances (PostgreSQL's LISTEN/NOTIFY) -----------------------

WAIT = 6  # --approval-wait: a watch's heartbeat, the latest a missed notice is caught
APPROVAL_ARGS = UNLIMITED + ("--approval-wait", str(WAIT), "--approval-host-requests", "0",
                             "--approval-address-requests", "0", "--approval-mute", "1")


def notices(authd):
    """fingerauthd_approval_notifications_total of `authd`'s /metrics."""
    for line in authd.request("GET", "/metrics").body.decode().splitlines():
        if line.startswith("fingerauthd_approval_notifications_total "):
            return int(line.split()[1])
    raise AssertionError("no fingerauthd_approval_notifications_total in /metrics")


def listening(authd, times=1, timeout=15):
    """Waits until `authd`'s log says its listener (re)connected `times` times."""
    def count():
        text = authd.log_text()
        return text.count("approval notices: listening on PostgreSQL") + text.count("approval notices: listening again")
    assert wait_until(lambda: count() >= times, timeout), authd.log_text()


@pytest.fixture(scope="module")
def approval_fleet(tmp_path_factory):
    """Two instances on one PostgreSQL with remote approval allowed; host keys and device
    keys registered once through A. Yields (pg, A's parties, B's parties) with the same keys."""
    root = tmp_path_factory.mktemp("approval-fleet")
    ca = make_ca(root / "ca")
    with Postgres() as pg:
        url = pg.create_database("approvals")
        a = Authd(root / "a", audience=AUDIENCE, tls=ca, db=url, args=APPROVAL_ARGS)
        b = Authd(root / "b", audience=AUDIENCE, tls=ca, db=url, args=APPROVAL_ARGS)
        try:
            a.start()
            b.start()
            allowed = a.admin("policy", "add", "--stage", "approve", "--users", "*", "--hosts", "*",
                              "--action", "allow")
            assert allowed.returncode == 0, allowed.stderr
            pa = Parties(a)
            pa.web01 = pa.host_key("web01")
            pa.alice = pa.device_key("alice", "ws-alice")
            pa.alice_laptop = pa.device_key("alice", "laptop-alice")
            pb = Parties(b)
            pb.tokens = pa.tokens
            pb.web01, pb.alice, pb.alice_laptop = pa.web01, pa.alice, pa.alice_laptop
            listening(a)
            listening(b)
            yield pg, pa, pb
        finally:
            a.stop()
            b.stop()
        for authd in (a, b):
            assert authd.returncode == 0, authd.log_text()
            log = authd.log_text()
            for secret in pa.secrets + pb.secrets:
                assert secret not in log


@pytest.fixture
def approvals(approval_fleet):
    """The fleet with nothing pending (whatever a test left is withdrawn)."""
    pg, pa, pb = approval_fleet
    for shown in pa.watch(pa.alice).json()["approvals"]:
        pa.withdraw(pa.web01, shown["id"])
    return approval_fleet


def parked(call, settle=0.5):
    """Runs `call` on a thread (a long poll); returns (thread, result) once it has had
    `settle` s to park. result["answer"] and result["at"] (monotonic) are set when it returns."""
    result = {}

    def run():
        result["answer"] = call()
        result["at"] = time.monotonic()

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(settle)
    return thread, result


def test_a_request_posted_to_a_reaches_the_watch_parked_on_b_at_once(approvals):
    pg, pa, pb = approvals
    before = notices(pb.authd)
    thread, watched = parked(lambda: pb.watch(pb.alice, wait=10, timeout=15))
    asked_at = time.monotonic()
    asked = pa.request(pa.web01, "alice")
    assert asked.status == 201, asked.body
    thread.join(15)
    answer = watched["answer"]
    delay = watched["at"] - asked_at
    print("\nrequest on A, watch parked on B: delivered %.0f ms later" % (delay * 1000))
    assert answer.status == 200
    assert [a["id"] for a in answer.json()["approvals"]] == [asked.json()["id"]]
    assert delay < 1.0
    # B heard the notice (A's own came back to A too: a spurious wake-up there is harmless).
    assert wait_until(lambda: notices(pb.authd) > before, 2)
    assert rows(pb.authd, "approval_shown", asked.json()["id"])[0]["workstation"] == "ws-alice"


def test_a_notice_that_is_not_ours_is_ignored_and_the_listener_goes_on(approvals):
    pg, pa, pb = approvals
    for payload in ("garbage", "id Alice", "a b c", "x" * 7999, "id ../etc", ""):
        pg.psql("approvals", "SELECT pg_notify('fingerauth_approvals', '%s')" % payload)
    for authd in (pa.authd, pb.authd):
        assert wait_until(lambda: "approval notices: a notice that is not ours was ignored" in authd.log_text(), 2)
        # Once per connection: whoever may NOTIFY cannot fill the log.
        assert authd.log_text().count("a notice that is not ours") == 1
    thread, watched = parked(lambda: pb.watch(pb.alice, wait=10, timeout=15))
    asked_at = time.monotonic()
    asked = pa.request(pa.web01, "alice")
    assert asked.status == 201, asked.body
    thread.join(15)
    assert [a["id"] for a in watched["answer"].json()["approvals"]] == [asked.json()["id"]]
    assert watched["at"] - asked_at < 1.0


def test_a_decision_posted_to_a_reaches_the_hosts_poll_parked_on_b_at_once(approvals):
    pg, pa, pb = approvals
    opened = pa.request(pa.web01, "alice").json()
    shown = pa.shown(pa.alice)
    thread, polled = parked(lambda: pb.state(pb.web01, opened["id"], wait=10, timeout=15))
    decided_at = time.monotonic()
    decided = pa.decide(pa.alice, shown)
    assert (decided.status, decided.json()) == (200, {"status": "approved"})
    thread.join(15)
    delay = polled["at"] - decided_at
    print("\ndecision on A, host's poll parked on B: answered %.0f ms later" % (delay * 1000))
    assert polled["answer"].status == 200 and polled["answer"].json()["status"] == "approved"
    assert delay < 1.0


def test_two_workstations_deciding_at_once_on_two_instances_make_exactly_one_decision(approvals):
    pg, pa, pb = approvals
    for _ in range(5):
        opened = pa.request(pa.web01, "alice").json()
        shown = pa.shown(pa.alice)
        tokens = [pa.decision_token(pa.alice, shown), pb.decision_token(pa.alice_laptop, shown, decision="deny")]
        answers = [None, None]
        start = threading.Barrier(2)

        def decide(i, parties, key):
            start.wait()
            answers[i] = parties.decide(key, shown, token=tokens[i])

        threads = [threading.Thread(target=decide, args=(0, pa, pa.alice)),
                   threading.Thread(target=decide, args=(1, pb, pa.alice_laptop))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert sorted(a.status for a in answers) == [200, 409], [(a.status, a.body) for a in answers]
        won = next(a for a in answers if a.status == 200).json()["status"]
        assert next(a for a in answers if a.status == 409).json() == {"error": "approval_closed", "status": won}
        assert pb.state(pb.web01, opened["id"]).json()["status"] == won
        ends = [(r["event"], r["outcome"], r["reason"]) for r in rows(pa.authd, approval=opened["id"])
                if r["event"] in ("approval_approved", "approval_denied")]
        # One decision recorded; the loser's refusal is its own row.
        decisions = [e for e in ends if e[2] != "approval_closed"]
        assert decisions in ([("approval_approved", "accept", None)],
                             [("approval_denied", "deny", "approval_muted")]), ends
        assert len(ends) == 2, ends
        if won == "denied":
            time.sleep(2.1)  # --approval-mute 1, and the instances read the clock to the second


def test_a_lost_notice_is_caught_by_the_reconnect_or_the_watchs_heartbeat_and_the_listener_comes_back(approvals):
    pg, pa, pb = approvals
    kill = ("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = 'approvals' AND query LIKE 'LISTEN%'")

    def watch_until_delivered(wanted, deadline):
        """Watches on B (as the workstation does, again after each answer) until the
        approval `wanted()` names is shown; the monotonic time it was, or None."""
        while time.monotonic() < deadline:
            answer = pb.watch(pb.alice, wait=10, timeout=15)
            assert answer.status == 200, answer.body
            if wanted() in [a["id"] for a in answer.json()["approvals"]]:
                return time.monotonic()
        return None

    # 1. Both listeners killed just before the request: the notice is sent while B's
    #    listener is away; its reconnect (first back-off 0.25 s) wakes every parked poll.
    lost_before = pb.authd.log_text().count("approval notices: connection lost")
    found = {}
    until = time.monotonic() + WAIT + 3
    thread, _ = parked(lambda: found.update(at=watch_until_delivered(lambda: found.get("id"), until)))
    assert pg.psql("postgres", kill) == [["t"], ["t"]]
    asked_at = time.monotonic()
    asked = pa.request(pa.web01, "alice")
    assert asked.status == 201, asked.body
    found["id"] = asked.json()["id"]
    thread.join(WAIT + 5)
    delivered_at = found["at"]
    assert delivered_at is not None
    print("\nlisteners killed, request on A: delivered on B %.0f ms later" % ((delivered_at - asked_at) * 1000))
    # The reconnect's wake-up or at the latest the heartbeat (--approval-wait).
    assert delivered_at - asked_at < WAIT + 1
    assert wait_until(lambda: pb.authd.log_text().count("approval notices: connection lost") > lost_before, 5)
    listening(pb.authd, times=2)
    pa.withdraw(pa.web01, asked.json()["id"])

    # 2. B's listener kept away (the database refuses new connections; the pools keep
    #    theirs): the notice is lost for good, the watch parked on B shows the request at
    #    its heartbeat.
    pg.psql("postgres", "ALTER DATABASE approvals ALLOW_CONNECTIONS false")
    try:
        assert pg.psql("postgres", kill) == [["t"], ["t"]]
        assert wait_until(lambda: pb.authd.log_text().count("approval notices: connection lost") > lost_before + 1, 5)
        heard = notices(pb.authd)
        thread, watched = parked(lambda: pb.watch(pb.alice, wait=10, timeout=15))
        asked_at = time.monotonic()
        asked = pa.request(pa.web01, "alice")
        assert asked.status == 201, asked.body
        thread.join(WAIT + 5)
        delay = watched["at"] - asked_at
        print("listener kept away, request on A: delivered on B at the heartbeat, %.1f s later" % delay)
        assert [a["id"] for a in watched["answer"].json()["approvals"]] == [asked.json()["id"]]
        # Parked 0.5 s before the request, answered at its --approval-wait, not before.
        assert WAIT - 1.5 <= delay <= WAIT + 0.5
        assert notices(pb.authd) == heard
        assert "cannot listen" in pb.authd.log_text()
    finally:
        pg.psql("postgres", "ALTER DATABASE approvals ALLOW_CONNECTIONS true")
    pa.withdraw(pa.web01, asked.json()["id"])

    # 3. The listener comes back (back-off at most 5 s): a request is delivered at once again.
    listening(pb.authd, times=3, timeout=15)
    thread, watched = parked(lambda: pb.watch(pb.alice, wait=10, timeout=15))
    asked_at = time.monotonic()
    asked = pa.request(pa.web01, "alice")
    assert asked.status == 201, asked.body
    thread.join(15)
    delay = watched["at"] - asked_at
    print("listener back, request on A: delivered on B %.0f ms later" % (delay * 1000))
    assert [a["id"] for a in watched["answer"].json()["approvals"]] == [asked.json()["id"]]
    assert delay < 1.0


class FreezableProxy:
    """A TCP proxy on loopback in front of PostgreSQL. After `freeze()` it accepts new
    connections and never forwards them (a database that does not answer); the
    connections made before go on."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.frozen = False
        self.held = 0
        self.sockets = []
        threading.Thread(target=self._accept, daemon=True).start()

    def freeze(self):
        self.frozen = True

    def _accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self.sockets.append(client)
            if self.frozen:
                self.held += 1
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            self.sockets.append(upstream)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.server.close()
        for s in self.sockets:
            s.close()


def test_a_server_stops_at_once_while_its_listener_waits_on_a_database_that_does_not_answer(tmp_path):
    ca = make_ca(tmp_path / "ca")
    with Postgres() as pg:
        pg.create_database("frozen")
        proxy = FreezableProxy(pg.port)
        user = pg.url().split("//")[1].split("@")[0]
        authd = Authd(tmp_path / "b", audience=AUDIENCE, tls=ca, args=APPROVAL_ARGS,
                      db="postgresql://%s@127.0.0.1:%d/frozen" % (user, proxy.port))
        try:
            authd.start()
            listening(authd)
            proxy.freeze()
            killed = pg.psql("postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                         "WHERE datname = 'frozen' AND query LIKE 'LISTEN%'")
            assert killed == [["t"]]
            assert wait_until(lambda: "approval notices: connection lost" in authd.log_text(), 5)
            # libpq's own unprefixed notice of the ended session is not printed; our line says it.
            assert "FATAL:" not in authd.log_text()
            time.sleep(1.0)  # the listener is connecting again, to a proxy that never answers
            assert "cannot listen" not in authd.log_text()
            assert proxy.held == 1  # the listener's new connection, waiting for an answer
            stopping = time.monotonic()
            authd.stop()
            took = time.monotonic() - stopping
        finally:
            authd.stop()
            proxy.close()
    print("\nSIGTERM while the listener connects to a database that does not answer: stopped in %.2f s" % took)
    assert authd.returncode == 0, authd.log_text()
    assert authd.log_text().rstrip().endswith("fingerauthd: stopped")
    # The reconnection waits at most 5 s; the stop is seen within 250 ms of its waits.
    assert took < 1.5
