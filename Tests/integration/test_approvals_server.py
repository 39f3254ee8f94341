"""Remote approval at a real fingerauthd over TLS, on SQLite and on PostgreSQL: web01 asks
(signed by its host key) that alice approve `sudo` there; her workstation ws-alice watches
(a long poll with her device key) and she decides (a decision signed by the same key).

Each abuse a reviewer tries first is a test: a request signed by no host key, by a revoked
one, by a user's device key; bob's request answered by alice's key; a decision replayed,
late, or naming another host, service, client, nonce or code; a watch by a revoked key; a
flood of requests for one user; retries; the muted window after "Not me"; a clock ten
minutes off; two workstations deciding at once. Every answer is checked as the client sees
it (status, body) and as the admin does (the audit rows).
"""

import os
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.approvals import Parties, nonce, rows, wait_until  # noqa: E402
from support.authd import Authd, build_dir  # noqa: E402
from support.tls import make_ca  # noqa: E402
from test_authenticator import AUDIENCE, DeviceKey, claims, store  # noqa: E402,F401 (store: fixture)

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())

MUTE = 3
ARGS = ("--user-failures", "0", "--address-failures", "0", "--approval-mute", str(MUTE), "--approval-wait", "5",
        "--approval-host-requests", "0", "--approval-address-requests", "0")


@pytest.fixture(scope="module")
def world(tmp_path_factory, store):
    """One daemon for the module, remote approval allowed for everyone by the policy."""
    root = tmp_path_factory.mktemp("approvals")
    authd = Authd(root / "server", audience=AUDIENCE, tls=make_ca(root / "ca"), db=store, args=ARGS)
    try:
        authd.start()
        allowed = authd.admin("policy", "add", "--stage", "approve", "--users", "*", "--hosts", "*",
                              "--action", "allow")
        assert allowed.returncode == 0, allowed.stderr
        p = Parties(authd)
        p.web01 = p.host_key("web01")
        p.db01 = p.host_key("db01")
        p.alice = p.device_key("alice", "ws-alice")
        p.alice_laptop = p.device_key("alice", "laptop-alice")
        p.bob = p.device_key("bob", "ws-bob")
        yield p
    finally:
        authd.stop()
    assert authd.returncode == 0, authd.log_text()
    log = authd.log_text()
    for secret in p.secrets:
        assert secret not in log


@pytest.fixture
def parties(world):
    """The world with nothing pending: whatever a test left is withdrawn."""
    for key in (world.alice, world.bob):
        for shown in world.watch(key).json()["approvals"]:
            host_key = world.web01 if shown["host"] == "web01" else world.db01
            world.withdraw(host_key, shown["id"])
    return world


def test_a_request_is_shown_on_the_workstation_and_a_finger_approves_it_within_the_hosts_long_poll(parties):
    p = parties
    asked = p.request(p.web01, "alice", rhost="10.0.0.5", tty="pts/3")
    assert asked.status == 201, asked.body
    opened = asked.json()
    assert len(opened["id"]) == 22 and 10 <= int(opened["code"]) <= 99
    assert abs(opened["server_time"] - time.time()) < 5
    assert opened["expires"] <= opened["server_time"] + 60

    shown = p.shown(p.alice)
    assert (shown["id"], shown["code"], shown["user"], shown["host"], shown["service"], shown["rhost"],
            shown["tty"], shown["nonce"]) == (opened["id"], opened["code"], "alice", "web01", "sudo", "10.0.0.5",
                                              "pts/3", asked.claims["nonce"])

    waited = {}

    def host_waits():
        started = time.monotonic()
        waited["answer"] = p.state(p.web01, opened["id"], wait=5)
        waited["seconds"] = time.monotonic() - started

    waiter = threading.Thread(target=host_waits)
    waiter.start()
    time.sleep(0.5)  # the host's poll is parked by now
    decided_at = time.monotonic()
    decided = p.decide(p.alice, shown)
    assert decided.status == 200, decided.body
    assert decided.json() == {"status": "approved"}
    waiter.join(10)
    state = waited["answer"].json()
    assert waited["answer"].status == 200 and state["status"] == "approved"
    assert state["workstation"] == "ws-alice" and state["kid"] == p.alice.kid
    # Woken by the decision, not by the end of its 5 s wait.
    assert waited["seconds"] < 0.5 + (time.monotonic() - decided_at) + 1.0 < 4

    approval = opened["id"]
    requested = rows(p.authd, "approval_requested", approval)
    assert [(r["outcome"], r["user"], r["host"], r["service"], r["client_address"]) for r in requested] == [
        ("accept", "alice", "web01", "sudo", "10.0.0.5")]
    assert requested[0]["kid"] == p.web01.kid
    shown_rows = rows(p.authd, "approval_shown", approval)
    assert [(r["workstation"], r["kid"]) for r in shown_rows] == [("ws-alice", p.alice.kid)]
    approved = rows(p.authd, "approval_approved", approval)
    assert [(r["outcome"], r["user"], r["host"], r["kid"], r["workstation"]) for r in approved] == [
        ("accept", "alice", "web01", p.alice.kid, "ws-alice")]
    login = rows(p.authd, "login", approval)
    assert [(r["outcome"], r["user"], r["host"], r["service"], r["reason"]) for r in login] == [
        ("accept", "alice", "web01", "sudo", "remote approval")]
    # Nothing is shown any more.
    assert p.watch(p.alice).json()["approvals"] == []


def test_a_request_signed_by_no_host_key_a_revoked_one_or_a_users_device_key_is_refused(parties):
    p = parties
    stranger = DeviceKey()
    stranger.host = "web01"
    answer = p.request(stranger, "alice")
    assert (answer.status, answer.json()["error"]) == (401, "invalid_token")

    device = p.alice
    answer = p.request(device, "alice", iss="ws-alice")
    assert (answer.status, answer.json()["error"]) == (401, "invalid_token")

    revoked = p.host_key("old-web")
    revoking = p.authd.admin("hosts", "revoke-key", "--kid", revoked.kid)
    assert revoking.returncode == 0, revoking.stderr
    answer = p.request(revoked, "alice")
    assert (answer.status, answer.json()["error"]) == (401, "key_revoked")

    refused = [r for r in rows(p.authd, "approval_requested") if r["outcome"] == "deny"]
    reasons = [(r["reason"], r["claimed_user"] or r["user"]) for r in refused[-3:]]
    assert reasons == [("unknown_kid", "alice"), ("unknown_kid", "alice"), ("key_revoked", "alice")]
    assert p.watch(p.alice).json()["approvals"] == []


def test_a_host_key_cannot_sign_for_another_host_or_read_another_hosts_approval(parties):
    p = parties
    answer = p.request(p.db01, "alice", iss="web01")
    assert (answer.status, answer.json()["error"]) == (401, "kid_not_for_iss")
    opened = p.request(p.web01, "alice").json()
    other = p.state(p.db01, opened["id"])
    assert (other.status, other.json()["error"]) == (404, "approval_unknown")
    assert p.withdraw(p.db01, opened["id"]).status == 404
    assert p.state(p.web01, opened["id"]).json()["status"] == "pending"


def test_bobs_request_answered_by_alices_workstation_is_refused_and_stays_pending(parties):
    p = parties
    opened = p.request(p.web01, "bob").json()
    shown_to_bob = p.shown(p.bob)
    assert p.watch(p.alice).json()["approvals"] == []
    answer = p.decide(p.alice, shown_to_bob)
    assert (answer.status, answer.json()["error"]) == (403, "not_your_approval")
    assert p.state(p.web01, opened["id"]).json()["status"] == "pending"
    row = rows(p.authd, "approval_approved", opened["id"])[-1]
    assert (row["outcome"], row["reason"], row["user"], row["kid"]) == ("deny", "not_your_approval", "alice",
                                                                        p.alice.kid)


@pytest.mark.parametrize("field,value", [("host", "db01"), ("service", "su"), ("rhost", "10.9.9.9"),
                                         ("nonce", "A" * 24), ("code", "00")])
def test_a_decision_naming_another_host_service_client_nonce_or_code_is_refused(parties, field, value):
    p = parties
    opened = p.request(p.web01, "alice").json()
    shown = p.shown(p.alice)
    answer = p.decide(p.alice, shown, **{field: value})
    assert (answer.status, answer.json()["error"]) == (403, "approval_mismatch")
    assert p.state(p.web01, opened["id"]).json()["status"] == "pending"


def test_a_request_asked_by_another_user_names_them_and_the_decision_must_too(parties):
    p = parties
    opened = p.request(p.web01, "alice", service="su", caller="bob")
    assert opened.status == 201, opened.body
    shown = p.shown(p.alice)
    assert shown["caller"] == "bob"
    for caller in (None, "alice", "carol"):
        answer = p.decide(p.alice, shown, caller=caller)
        assert (answer.status, answer.json()["error"]) == (403, "approval_mismatch"), caller
    assert p.decide(p.alice, shown).status == 200
    assert p.state(p.web01, opened.json()["id"]).json()["status"] == "approved"
    assert "asked by bob" in p.authd.log_text()
    p.request(p.web01, "alice", caller="alice")
    assert p.shown(p.alice)["caller"] == "", "the user asking for themself is no other caller"
    p.withdraw(p.web01, p.shown(p.alice)["id"])
    for forged in ("bob smith", "b\nob", 42, "x" * 65):
        refused = p.request(p.web01, "alice", caller=forged)
        assert (refused.status, refused.json()["error"]) == (400, "invalid_request"), forged
    assert p.watch(p.alice).json()["approvals"] == []


def test_a_decision_replayed_for_a_second_request_or_after_its_minute_is_refused(parties):
    p = parties
    first = p.request(p.web01, "alice").json()
    shown = p.shown(p.alice)
    token = p.decision_token(p.alice, shown)
    assert p.decide(p.alice, shown, token=token).status == 200
    again = p.decide(p.alice, shown, token=token)
    assert (again.status, again.json()["error"]) == (401, "replayed")

    second = p.request(p.web01, "alice").json()
    assert second["id"] != first["id"]
    other = p.decide(p.alice, shown, approval=second["id"], token=token)
    assert (other.status, other.json()["error"]) == (404, "approval_unknown")
    late_shown = p.shown(p.alice)
    late = p.decide(p.alice, late_shown, now=int(time.time()) - 120, ttl=60)
    assert (late.status, late.json()["error"]) == (401, "expired")
    assert p.state(p.web01, second["id"]).json()["status"] == "pending"
    long_lived = p.decide(p.alice, late_shown, ttl=90)
    assert (long_lived.status, long_lived.json()["error"]) == (401, "ttl_too_long")


def test_a_watch_or_decision_by_a_revoked_or_unknown_key_is_refused(parties):
    p = parties
    key = p.device_key("alice", "ws-old")
    opened = p.request(p.web01, "alice").json()
    shown = p.shown(key)
    assert p.authd.admin("keys", "revoke", "--kid", key.kid).returncode == 0
    answer = p.watch(key)
    assert (answer.status, answer.json()["error"]) == (401, "key_revoked")
    # At once, not when a cache next reads the key.
    late = p.decide(key, shown)
    assert (late.status, late.json()["error"]) == (401, "key_revoked")
    assert p.state(p.web01, opened["id"]).json()["status"] == "pending"
    stranger = DeviceKey()
    stranger.user, stranger.host = "alice", "ws-alice"
    assert p.watch(stranger).status == 401
    assert p.authd.request("GET", "/v1/approvals/watch").status == 401
    # A host key is not a device key, and a login token is not a watch token.
    host_as_device = p.web01
    host_as_device.user = "alice"
    assert p.watch(host_as_device).status == 401
    login = p.alice.sign(claims(sub="alice", iss="ws-alice"))
    assert p.watch(p.alice, token=login).json()["error"] == "invalid_token"


def test_fifty_requests_in_a_minute_for_one_user_from_several_hosts_leave_one_pending_and_few_rows(parties):
    p = parties
    hosts = [p.web01, p.db01]
    before = len(rows(p.authd, "approval_requested"))
    answers = [p.request(hosts[i % 2], "alice", tty="pts/%d" % i) for i in range(50)]
    statuses = [a.status for a in answers]
    assert statuses[0] == 201 and statuses.count(201) == 1, statuses
    assert all(a.status == 409 and a.json()["error"] == "approval_pending" for a in answers[1:])
    assert len(p.watch(p.alice).json()["approvals"]) == 1
    written = rows(p.authd, "approval_requested")[before:]
    refused = [r for r in written if r["reason"] == "approval_pending"]
    # One row per window (a minute), two if the flood straddled its start.
    assert 1 <= len(refused) <= 2, refused
    assert len([r for r in written if r["outcome"] == "accept"]) == 1


def test_a_retry_from_the_same_terminal_replaces_the_pending_request_and_never_shows_two(parties):
    p = parties
    first = p.request(p.web01, "alice", tty="pts/7").json()
    second = p.request(p.web01, "alice", tty="pts/7").json()
    third = p.request(p.web01, "alice", tty="pts/7").json()
    assert len({first["id"], second["id"], third["id"]}) == 3
    shown = p.watch(p.alice).json()["approvals"]
    assert [a["id"] for a in shown] == [third["id"]]
    assert p.state(p.web01, first["id"]).json()["status"] == "withdrawn"
    assert p.state(p.web01, second["id"]).json()["status"] == "withdrawn"
    replaced = rows(p.authd, "approval_withdrawn", first["id"])
    assert [r["reason"] for r in replaced] == ["replaced_by_retry"]
    # Another terminal of the same host is another login: refused while one is pending.
    other = p.request(p.web01, "alice", tty="pts/8")
    assert (other.status, other.json()["error"]) == (409, "approval_pending")


def test_not_me_denies_at_once_and_mutes_the_users_requests_for_the_window(parties):
    p = parties
    opened = p.request(p.web01, "alice").json()
    shown = p.shown(p.alice)
    denied = p.decide(p.alice, shown, decision="deny")
    assert (denied.status, denied.json()) == (200, {"status": "denied"})
    assert p.state(p.web01, opened["id"]).json()["status"] == "denied"
    row = rows(p.authd, "approval_denied", opened["id"])
    assert [(r["outcome"], r["user"], r["host"], r["workstation"]) for r in row] == [
        ("deny", "alice", "web01", "ws-alice")]
    muted = p.request(p.db01, "alice")
    assert (muted.status, muted.json()["error"]) == (429, "approval_muted")
    assert 1 <= int(muted.headers["retry-after"]) <= MUTE
    # bob is not muted by alice's "Not me".
    assert p.request(p.web01, "bob").status == 201
    time.sleep(MUTE + 0.5)
    assert p.request(p.db01, "alice").status == 201


def test_a_workstation_clock_ten_minutes_off_hears_why_and_signs_by_the_servers_clock(parties):
    p = parties
    opened = p.request(p.web01, "alice").json()
    answer = p.watch(p.alice)
    server_time = answer.json()["server_time"]
    assert abs(server_time - time.time()) < 5 and "date" in answer.headers
    shown = answer.json()["approvals"][0]
    behind = p.decide(p.alice, shown, now=int(time.time()) - 600)
    assert (behind.status, behind.json()["error"]) == (401, "expired")
    ahead = p.decide(p.alice, shown, now=int(time.time()) + 600)
    assert ahead.status == 401 and ahead.json()["error"] in ("not_yet_valid", "iat_in_future")
    assert "date" in ahead.headers
    # Signed by the server's clock (what the watch said), it is approved.
    assert p.decide(p.alice, shown, now=server_time).status == 200
    assert p.state(p.web01, opened["id"]).json()["status"] == "approved"


def test_two_workstations_deciding_at_once_make_exactly_one_decision(parties):
    p = parties
    opened = p.request(p.web01, "alice").json()
    shown = p.shown(p.alice)
    tokens = [p.decision_token(p.alice, shown), p.decision_token(p.alice_laptop, shown, decision="deny")]
    answers = [None, None]
    start = threading.Barrier(2)

    def decide(i, key):
        start.wait()
        answers[i] = p.decide(key, shown, token=tokens[i])

    threads = [threading.Thread(target=decide, args=(0, p.alice)), threading.Thread(target=decide,
                                                                                   args=(1, p.alice_laptop))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    statuses = sorted(a.status for a in answers)
    assert statuses == [200, 409], [(a.status, a.body) for a in answers]
    won = next(a for a in answers if a.status == 200).json()["status"]
    lost = next(a for a in answers if a.status == 409).json()
    assert lost == {"error": "approval_closed", "status": won}
    assert p.state(p.web01, opened["id"]).json()["status"] == won
    decided = [r for r in rows(p.authd, approval=opened["id"])
               if r["event"] in ("approval_approved", "approval_denied") and r["reason"] != "approval_closed"]
    assert len(decided) == 1
    if won == "denied":
        time.sleep(MUTE + 0.5)


def test_the_host_withdraws_its_request_and_the_workstation_stops_showing_it(parties):
    p = parties
    opened = p.request(p.web01, "alice").json()
    shown = p.shown(p.alice)
    watched = {}

    def workstation_watches():
        watched["answer"] = p.watch(p.alice, have=shown["id"], wait=5)

    watcher = threading.Thread(target=workstation_watches)
    watcher.start()
    time.sleep(0.5)
    gone = p.withdraw(p.web01, opened["id"])
    assert (gone.status, gone.json()["status"]) == (200, "withdrawn")
    watcher.join(10)
    assert watched["answer"].json()["approvals"] == []
    late = p.decide(p.alice, shown)
    assert (late.status, late.json()) == (409, {"error": "approval_closed", "status": "withdrawn"})
    assert [r["outcome"] for r in rows(p.authd, "approval_withdrawn", opened["id"])] == ["accept"]


def test_an_approval_nobody_decides_expires_and_the_host_hears_it(parties):
    p = parties
    opened = p.request(p.web01, "alice", ttl=2).json()
    started = time.monotonic()
    state = p.state(p.web01, opened["id"], wait=5)
    assert state.json()["status"] == "expired"
    assert time.monotonic() - started < 4
    assert p.watch(p.alice).json()["approvals"] == []
    assert [r["outcome"] for r in rows(p.authd, "approval_expired", opened["id"])] == ["accept"]
    assert p.request(p.web01, "alice").status == 201


def test_a_watch_is_parked_until_a_request_comes_and_answers_its_heartbeat_when_none_does(parties):
    p = parties
    started = time.monotonic()
    idle = p.watch(p.alice, wait=1)
    assert idle.json()["approvals"] == [] and 0.9 < time.monotonic() - started < 3
    watched = {}

    def workstation_watches():
        begun = time.monotonic()
        watched["answer"] = p.watch(p.alice, wait=5)
        watched["seconds"] = time.monotonic() - begun

    watcher = threading.Thread(target=workstation_watches)
    watcher.start()
    time.sleep(0.5)
    opened = p.request(p.web01, "alice").json()
    watcher.join(10)
    assert [a["id"] for a in watched["answer"].json()["approvals"]] == [opened["id"]]
    assert watched["seconds"] < 2


def test_bad_ids_methods_and_bodies_are_refused_before_anything_is_looked_up(parties):
    p = parties
    assert p.authd.request("GET", "/v1/approvals/not-an-id").status == 404
    assert p.authd.request("PUT", "/v1/approvals/" + "A" * 22).status == 405
    assert p.authd.request("GET", "/v1/approvals").status == 405
    assert p.authd.request("GET", "/v1/approvals/%s/decision" % ("A" * 22)).status == 405
    assert p.authd.post_json("/v1/approvals", {"token": "x"}).status == 400
    token, _ = p.request_token(p.web01, "alice", session="short")
    assert p.authd.post_json("/v1/approvals", {"jwt": token}).status == 400
    token, _ = p.request_token(p.web01, "alice", tty="pts/1\nRESULT 0")
    assert p.authd.post_json("/v1/approvals", {"jwt": token}).status == 400
    token, _ = p.request_token(p.web01, "al ice")
    assert p.authd.post_json("/v1/approvals", {"jwt": token}).status == 401
    token, _ = p.request_token(p.web01, "alice", ttl=61)
    assert p.authd.post_json("/v1/approvals", {"jwt": token}).json()["error"] == "ttl_too_long"
    assert p.watch(p.alice).json()["approvals"] == []


def test_without_an_approve_rule_nobody_may_ask(tmp_path):
    with Authd(tmp_path / "server", audience=AUDIENCE, tls=make_ca(tmp_path / "ca"), args=ARGS) as authd:
        p = Parties(authd)
        key = p.host_key("web01")
        answer = p.request(key, "alice")
        assert (answer.status, answer.json()["error"]) == (403, "policy_denied")
        row = rows(authd, "approval_requested")[-1]
        assert (row["outcome"], row["reason"], row["user"], row["host"]) == ("deny", "policy_denied", "alice",
                                                                             "web01")
