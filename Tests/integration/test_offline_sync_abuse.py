"""Offline records against the people they are for (issue 45, points 6-9): the real
fingerauthd over TLS (SQLite, and PostgreSQL where the store decides), the real helper and
`fingerauth sync` on the host side. Records are signed with alice's own device key — what a
root on her host, or a thief with her laptop, can do — and uploaded as the host would."""

import json
import os
import sqlite3
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from support.world import HOST_ID, World
from test_offline_grants import Offline, sync
from test_policy import db, server  # noqa: F401  (store fixtures: sqlite and postgresql)

OFFLINE_EVENTS = ("offline_login", "offline_gap")


@pytest.fixture
def sworld(tmp_path, ca, db):  # noqa: F811
    """A world whose fingerauthd keeps its registry in SQLite, or in PostgreSQL (`db`)."""
    w = World(tmp_path, ca)
    try:
        w.start_authenticator()
        if db is not None:
            # The same daemon on the same port, its registry in PostgreSQL.
            w.authd.stop()
            w.authd.db = db
            w.authd.listen = "127.0.0.1:%d" % w.authd.port
            w.authd.start()
            w.token_path.write_text(w.authd.create_token(HOST_ID) + "\n")
            os.chmod(w.token_path, 0o600)
        yield w
    finally:
        w.close()


@pytest.fixture
def offline(world):
    o = Offline(world)
    world.enroll("alice", "finger-A")
    return o


@pytest.fixture
def soffline(sworld):
    o = Offline(sworld)
    sworld.enroll("alice", "finger-A")
    return o


def device_key(world, user="alice"):
    """The user's device key and kid, read once per world (kept on the world itself: an id()
    of a world that is gone may be a new world's)."""
    keys = world.__dict__.setdefault("_offline_device_keys", {})
    if user not in keys:
        pem = world.paths(user)[2].read_bytes()
        keys[user] = (serialization.load_pem_private_key(pem, password=None), world.kid(user))
    return keys[user]


def signed_record(world, seq, gid, prev="", at=None, service="fa-only", jti=None, user="alice"):
    key, kid = device_key(world, user)
    claims = {"seq": seq, "gid": gid, "sub": user, "host": HOST_ID, "kid": kid, "jti": jti or "jti-%d" % seq,
              "service": service, "at": int(time.time()) if at is None else at, "prev": prev}
    return jwt.encode(claims, key, algorithm="RS256",
                      headers={"typ": "fingerauth-offline+jwt", "kid": kid})


def upload(world, *records, source=None):
    return world.authd.post_json("/v1/offline-sync", {"grants": [], "records": list(records)}, source=source)


def offline_rows(world):
    return [r for r in world.authd.audit_rows() if r["event"] in OFFLINE_EVENTS]


# -- 6: rows without limit --------------------------------------------------------------

def test_a_revoked_keys_uploads_add_at_most_its_grants_uses_rows_and_none_is_an_accept(soffline, sworld):
    soffline.rule(uses=3)
    soffline.online()
    gid = soffline.grant()["gid"]
    sworld.authd.revoke(sworld.kid("alice"))
    statuses = []
    for n in range(40):
        answer = upload(sworld, signed_record(sworld, n + 1, gid, jti="stolen-%d" % n))
        statuses.append(answer.status)
    logins = [r for r in offline_rows(sworld) if r["event"] == "offline_login"]
    assert 1 <= len(logins) <= 3
    assert all(r["outcome"] == "deny" and r["reason"].startswith("after_revocation") for r in logins), logins
    assert len(offline_rows(sworld)) <= 2 * 3
    # Every upload counted against the key: past its limit, 429.
    assert statuses[:10] == [200] * 10 and set(statuses[10:]) == {429}, statuses


def test_a_never_approved_keys_records_are_stored_nowhere(offline, world):
    offline.rule(uses=3)
    offline.online()
    gid = offline.grant()["gid"]
    offline.restart(stop_only=True)
    connection = sqlite3.connect(world.authd.db, timeout=5)
    connection.execute("UPDATE keys SET status = 'pending' WHERE kid = ?", (world.kid("alice"),))
    connection.commit()
    connection.close()
    offline.restart()
    answer = upload(world, signed_record(world, 1, gid), signed_record(world, 2, gid))
    assert answer.status == 200 and offline_rows(world) == []
    assert answer.json().get("held") == {} and answer.json()["rejected"] == {world.kid("alice"): [1, 2]}, answer


def test_the_sync_endpoint_is_not_there_without_a_grant_key_or_any_grant(world):
    answer = world.authd.post_json("/v1/offline-sync", {"grants": [], "records": []})
    assert answer.status == 404 and answer.json() == {"error": "not_found"}, answer


def test_every_upload_counts_against_its_key_and_the_eleventh_in_the_window_is_429(offline, world):
    offline.rule(uses=3)
    offline.online()
    gid = offline.grant()["gid"]
    statuses = [upload(world, signed_record(world, 1, gid)).status for _ in range(11)]
    assert statuses == [200] * 10 + [429], statuses
    # Nothing but the first upload wrote a row: the rest were retries of the same record.
    assert [r["reason"] for r in offline_rows(world)] == ["grant %s, record 1" % gid]


# -- 7: every record judged against its grant ---------------------------------------------

def test_a_record_no_grant_covers_is_refused_in_the_audit(soffline, sworld):
    soffline.rule(uses=2)
    soffline.online()
    grant = soffline.grant()
    gid = grant["gid"]
    records = [
        signed_record(sworld, 1, gid),
        signed_record(sworld, 2, "AAAAAAAAAAAAAAAAAAAAAA"),
        signed_record(sworld, 3, gid, at=grant["iat"] - 7200),
        signed_record(sworld, 4, gid),
        signed_record(sworld, 5, gid),
    ]
    assert upload(sworld, *records).status == 200
    # (The records do not chain: the gap rows are another test's.)
    rows = [r for r in offline_rows(sworld) if r["event"] == "offline_login"]
    assert [(r["outcome"], r["reason"].split(": ")[0] if r["outcome"] == "deny" else "-") for r in rows] == [
        ("accept", "-"), ("deny", "no_grant"), ("deny", "outside_window"), ("deny", "over_uses"),
        ("deny", "over_uses")], rows
    assert rows[1]["reason"] == "no_grant: grant AAAAAAAAAAAAAAAAAAAAAA, record 2"


def test_the_console_marks_a_refused_offline_login(tmp_path, ca):
    from support.console import ConsoleClient, create_admin
    w = World(tmp_path, ca)
    try:
        w.start_authenticator(args=("--admin-listen", "0"))
        o = Offline(w)
        w.enroll("alice", "finger-A")
        o.rule()
        o.online()
        gid = o.grant()["gid"]
        assert upload(w, signed_record(w, 1, gid), signed_record(w, 2, "BBBBBBBBBBBBBBBBBBBBBB")).status == 200
        create_admin(w.authd, "ada")
        client = ConsoleClient(w.authd)
        assert client.sign_in("ada").status == 303
        page = client.get("/audit?event=offline_login").text
        marked = [line for line in page.splitlines() if line.startswith("<tr class=\"attention\">")]
        plain = [line for line in page.splitlines() if line.startswith("<tr><td>") and "offline_login" in line]
        assert len(marked) == 1 and "<mark" in marked[0] and "no_grant" in marked[0], page
        assert len(plain) == 1 and "grant %s, record 1" % gid in plain[0], page
    finally:
        w.close()


# -- 8: the uploader does not date the evidence ---------------------------------------------

def test_a_gap_row_claiming_1970_is_stored_at_receipt_and_outlives_pruning(offline, world):
    offline.rule(uses=3)
    offline.online()
    gid = offline.grant()["gid"]
    before = int(time.time())
    answer = upload(world, signed_record(world, 5, gid, at=0))
    assert answer.status == 200 and len(offline_rows(world)) == 2
    offline.authd.args += ["--prune-interval", "1"]
    offline.restart()
    time.sleep(2.5)
    rows = offline_rows(world)
    assert [(r["event"], r["reason"].split(":")[0]) for r in rows] == [
        ("offline_gap", "seq_jump"), ("offline_login", "outside_window")], rows
    assert all(r["time"] >= before and r["claimed_time"] == 0 for r in rows), rows
    assert answer.json()["held"] == {world.kid("alice"): [5]}, answer


def test_a_seq_of_2_40_does_not_swallow_the_hosts_genuine_records(soffline, sworld):
    soffline.rule(uses=5)
    soffline.online()
    gid = soffline.grant()["gid"]
    kid = sworld.kid("alice")
    huge = upload(sworld, signed_record(sworld, 1 << 40, gid, jti="renumbered"))
    assert huge.status == 200 and huge.json()["held"] == {kid: [1 << 40]}, huge
    soffline.restart(stop_only=True)
    for _ in range(2):
        assert soffline.offline().name == "PAM_SUCCESS"
    soffline.restart()
    synced = sync(sworld)
    assert synced["users"][0]["uploaded"] == 2 and synced["users"][0]["left"] == 0, synced
    rows = [(r["event"], r["outcome"], r["reason"]) for r in offline_rows(sworld)]
    assert rows[-3:] == [
        ("offline_gap", "deny", "seq_rewind: record 1 after record %d" % (1 << 40)),
        ("offline_login", "accept", "grant %s, record 1" % gid),
        ("offline_login", "accept", "grant %s, record 2" % gid)], rows
    assert (soffline.user_dir / "offline-sent").read_text() == "%s 1\n%s 2\n" % (kid, kid)


def test_the_host_drops_only_the_records_the_answer_names_one_by_one(offline, world):
    offline.rule(uses=5)
    offline.online()
    offline.restart(stop_only=True)
    for _ in range(3):
        assert offline.offline().name == "PAM_SUCCESS"
    kid = world.kid("alice")
    # An authenticator that holds record 1 only (say its row budget was spent); the old
    # answer's high-water mark claims all three.
    import http.server
    from support.fakeauth import TLSServer
    answer = json.dumps({"grants": {}, "held": {kid: [1]}, "records": {kid: 3}}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    with TLSServer(Handler, world.ca.server_cert, world.ca.server_key) as stub:
        world.write_conf(url=stub.url + "/v1/login")
        done = world.cli("sync", "--json")
    assert (offline.user_dir / "offline-sent").read_text() == "%s 1\n" % kid, done.stdout + done.stderr
    # The real authenticator then gets records 2 and 3 (and 1, already named, not again).
    world.write_conf(url=world.authd.url + "/v1/login")
    offline.restart()
    synced = sync(world)
    assert synced["users"][0]["uploaded"] == 2 and synced["users"][0]["left"] == 0, synced
    logins = [r for r in offline_rows(world) if r["event"] == "offline_login"]
    assert [r["reason"].split(", ")[-1] for r in logins] == ["record 2", "record 3"]


# -- 9: control characters ----------------------------------------------------------------

HOSTILE = "sudo\x1b]0;owned\x07\x1b[2J\nFAKE accept"


def test_a_record_with_control_characters_is_refused_and_nothing_raw_reaches_the_audit_command(offline, world):
    offline.rule(uses=3)
    offline.online()
    gid = offline.grant()["gid"]
    answer = upload(world, signed_record(world, 1, gid, service=HOSTILE),
                    signed_record(world, 2, gid, jti="j\x1b[31m"), signed_record(world, 3, "g\x9b1m"))
    printed = world.authd.admin("audit")
    assert printed.returncode == 0 and "\x1b" not in printed.stdout and "\x9b" not in printed.stdout
    assert answer.status == 200 and offline_rows(world) == []
    assert answer.json().get("held") == {} and answer.json()["rejected"] == {world.kid("alice"): [1, 2, 3]}, answer


def test_a_hostile_value_already_in_the_database_is_printed_escaped(offline, world):
    offline.rule(uses=3)
    offline.online()
    connection = sqlite3.connect(world.authd.db, timeout=5)
    try:
        connection.execute(
            "INSERT INTO audit (time, event, user, host, kid, jti, outcome, reason, peer, verified, count, service) "
            "VALUES (?, 'offline_login', 'alice', ?, ?, ?, 'accept', ?, '127.0.0.1', 1, 1, ?)",
            (int(time.time()), HOST_ID, world.kid("alice"), "jti\x1b[8m", "grant \x1b]0;x\x07", HOSTILE))
        connection.execute("UPDATE offline_grants SET host = ?", ("evil\x1b[2Jhost",))
        connection.commit()
    finally:
        connection.close()
    table = world.authd.admin("audit")
    assert table.returncode == 0
    assert "\x1b" not in table.stdout and "\x07" not in table.stdout
    assert "jti\\x1b[8m" in table.stdout and "grant \\x1b]0;x\\x07" in table.stdout
    assert not any(line.startswith("FAKE") for line in table.stdout.splitlines())
    as_json = world.authd.admin("audit", "--json")
    assert "\x1b" not in as_json.stdout and json.loads(as_json.stdout)[-1]["service"] == HOSTILE
    grants = world.authd.admin("grants", "list")
    assert grants.returncode == 0 and "\x1b" not in grants.stdout and "evil\\x1b[2Jhost" in grants.stdout, grants
