"""Offline grants (issue 36), end to end: the real fingerauthd with a grant key and an
`offline` policy rule, the real module and login helper through libpam, the virtual reader.
An online login brings a grant; with the authenticator stopped the finger logs in within
it, with the message; the grant's limits, its withdrawal and every forged or misplaced
grant fall to the password; offline logins reach the audit at the next contact."""

import base64
import json
import os
import re
import subprocess
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from support.world import HOST_ID
from test_agent import lw  # noqa: F401  (fixture: the agent's world)

OFFLINE_TEXT = re.compile(
    r"^Authenticator not reachable: logged in offline with this host's offline grant "
    r"\(expires \d{4}-\d\d-\d\d \d\d:\d\d UTC\)$")
UNREACHABLE = "Fingerprint login unavailable: authenticator not reachable"


class Offline:
    """A world whose fingerauthd signs offline grants (`--grant-key`), with alice enrolled."""

    def __init__(self, world):
        self.world = world
        self.authd = world.authd
        self.key_path = world.tmp / "grant.key"
        made = subprocess.run([self.authd.binary, "grants", "new-key", "--out", str(self.key_path)],
                              capture_output=True, text=True, timeout=30)
        assert made.returncode == 0, made.stderr
        assert os.stat(self.key_path).st_mode & 0o777 == 0o600
        self.restart()
        self.user_dir = world.state / "users" / "alice"

    def restart(self, stop_only=False):
        """Stops fingerauthd and, unless `stop_only`, starts it again on the same port and
        database with the grant key."""
        port = self.authd.port
        self.authd.stop()
        if stop_only:
            return
        self.authd.listen = "127.0.0.1:%d" % port
        if "--grant-key" not in self.authd.args:
            self.authd.args += ["--grant-key", str(self.key_path)]
        self.authd.start()

    def rule(self, users="alice", hosts="*", services="*", hours=8, uses=3, action="allow"):
        args = ["policy", "add", "--stage", "offline", "--users", users, "--hosts", hosts, "--services", services,
                "--action", action]
        if action != "deny":
            args += ["--offline-hours", str(hours), "--offline-uses", str(uses)]
        done = self.authd.admin(*args)
        assert done.returncode == 0, done.stderr
        return int(done.stdout.split()[2])

    @property
    def grant_file(self):
        return self.user_dir / "offline-grant"

    @property
    def log_file(self):
        return self.user_dir / "offline-log"

    def grant(self):
        """The claims of the grant the host keeps (not verified)."""
        receipt = json.loads(self.grant_file.read_text())
        return jwt.decode(receipt["grant"], options={"verify_signature": False})

    def receipt(self):
        return json.loads(self.grant_file.read_text())

    def online(self, user="alice", finger="finger-A", service="fa-only"):
        login = self.world.login(user, scans=[finger], service=self.world.service(service, fallback=False))
        assert login.name == "PAM_SUCCESS", login
        return login

    def offline(self, user="alice", scans=("finger-A",), service="fa-only", **kwargs):
        return self.world.login(user, scans=list(scans), service=self.world.service(service, fallback=False),
                                **kwargs)

    def grant_key(self):
        return serialization.load_pem_private_key(self.key_path.read_bytes(), password=None)


@pytest.fixture
def offline(world):
    o = Offline(world)
    world.enroll("alice", "finger-A")
    return o


def audit(world, event):
    return [r for r in world.authd.audit_rows() if r["event"] == event]


def test_no_offline_rule_gives_no_grant_and_an_unreachable_authenticator_the_password(offline, world):
    offline.online()
    assert not offline.grant_file.exists()
    # The host pinned the authenticator's grant key at enrollment all the same.
    pins = json.loads((world.state / "grant-keys").read_text())
    assert len(pins["keys"]) == 1 and pins["keys"][0]["crv"] == "P-256"
    assert audit(world, "login")[-1]["reason"] is None
    offline.restart(stop_only=True)
    login = offline.offline(scans=())
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.errors == [UNREACHABLE] and login.infos == []
    assert "offline: no offline grant" in world.log_lines()[-1]


def test_an_online_login_brings_a_grant_and_the_finger_then_logs_in_offline_with_the_message(offline, world):
    rule = offline.rule(hours=8, uses=3)
    offline.online()
    st = os.stat(offline.grant_file)
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o600)
    grant = offline.grant()
    assert (grant["sub"], grant["host"], grant["kid"]) == ("alice", HOST_ID, world.kid("alice"))
    assert grant["exp"] - grant["iat"] == 8 * 3600 and grant["uses"] == 3 and grant["services"] == ["*"]
    row = audit(world, "login")[-1]
    assert row["outcome"] == "accept" and row["reason"] == "offline grant %s until %d" % (grant["gid"], grant["exp"])
    listed = json.loads(world.authd.admin("grants", "list", "--json").stdout)
    assert [(g["gid"], g["host"], g["user"], g["rule"]) for g in listed] == [(grant["gid"], HOST_ID, "alice", rule)]

    offline.restart(stop_only=True)
    login = offline.offline()
    assert login.name == "PAM_SUCCESS", login
    assert login.infos[0] == "Place your finger on the fingerprint reader"
    assert OFFLINE_TEXT.match(login.infos[-1]), login.infos
    line = world.log_lines()[-1]
    assert "result=PAM_SUCCESS" in line and "offline grant %s, expires" % grant["gid"] in line, line
    records = offline.log_file.read_text().splitlines()
    assert len(records) == 1
    st = os.stat(offline.log_file)
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o600)
    header = jwt.get_unverified_header(records[0])
    claims = jwt.decode(records[0], options={"verify_signature": False})
    assert header["typ"] == "fingerauth-offline+jwt" and header["kid"] == world.kid("alice")
    assert (claims["seq"], claims["gid"], claims["sub"], claims["prev"]) == (1, grant["gid"], "alice", "")


def test_the_grants_uses_are_counted_and_the_last_falls_to_the_password(offline, world):
    offline.rule(uses=2)
    offline.online()
    offline.restart(stop_only=True)
    for _ in range(2):
        assert offline.offline().name == "PAM_SUCCESS"
    login = offline.offline(scans=())
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.errors == [UNREACHABLE]
    assert "grant used up (2 of 2 offline logins)" in world.log_lines()[-1]


def shift_receipt(offline, wall=0, boot_ms=0):
    receipt = offline.receipt()
    receipt["wall"] += wall
    receipt["boot_ms"] += boot_ms
    offline.grant_file.write_text(json.dumps(receipt))
    os.chmod(offline.grant_file, 0o600)


def test_a_grant_past_its_lifetime_by_either_clock_falls_to_the_password(offline, world):
    offline.rule(hours=1)
    offline.online()
    offline.restart(stop_only=True)
    # The monotonic clock says two hours went by, the wall clock none: a clock set back gains nothing.
    shift_receipt(offline, boot_ms=-2 * 3600 * 1000)
    login = offline.offline(scans=())
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert "grant lifetime over" in world.log_lines()[-1]
    # The wall clock says two hours, the monotonic clock none (another boot, or the clock moved on).
    shift_receipt(offline, wall=-2 * 3600, boot_ms=2 * 3600 * 1000)
    assert offline.offline(scans=()).name == "PAM_AUTHINFO_UNAVAIL"
    assert "grant lifetime over" in world.log_lines()[-1]


def sync(world):
    done = world.cli("sync", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_a_key_revoked_while_the_host_is_online_takes_its_grant_away_at_the_next_sync(offline, world):
    offline.rule()
    offline.online()
    gid = offline.grant()["gid"]
    assert world.authd.admin("grants", "list", "--json").stdout.count(gid) == 1
    world.authd.revoke(world.kid("alice"))
    # Revoked: no longer live, without a write of its own.
    assert json.loads(world.authd.admin("grants", "list", "--json").stdout) == []
    synced = sync(world)
    assert synced["users"] == [{"user": "alice", "grant": "withdrawn, dropped", "uploaded": 0, "left": 0}]
    assert not offline.grant_file.exists()
    offline.restart(stop_only=True)
    login = offline.offline(scans=())
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert "offline: no offline grant" in world.log_lines()[-1]


def test_an_admin_withdrawal_reaches_the_host_at_its_next_login_warm_up(offline, world):
    offline.rule()
    offline.online()
    done = world.authd.admin("grants", "withdraw", "--host", HOST_ID, "--user", "alice")
    assert done.returncode == 0 and "withdrew 1 grant of %s for alice" % HOST_ID in done.stdout, done
    row = audit(world, "grant_withdraw")[-1]
    assert row["host"] == HOST_ID and row["user"] == "alice" and "1 grant withdrawn" in row["reason"]
    # The next login's warm-up is the sync: the withdrawn grant is dropped before the finger,
    # and the login itself (online) brings a new one.
    offline.online()
    fresh = offline.grant()["gid"]
    listed = json.loads(world.authd.admin("grants", "list", "--json").stdout)
    assert [g["gid"] for g in listed] == [fresh]


def test_an_authoritative_refusal_online_removes_the_grant_at_once(offline, world):
    offline.rule()
    offline.online()
    assert offline.grant_file.exists()
    world.authd.admin("policy", "add", "--stage", "login", "--users", "alice", "--hosts", "*", "--action", "deny")
    login = offline.offline()
    assert login.name == "PAM_AUTH_ERR", login
    assert not offline.grant_file.exists()
    offline.restart(stop_only=True)
    assert offline.offline(scans=()).name == "PAM_AUTHINFO_UNAVAIL"
    assert "offline: no offline grant" in world.log_lines()[-1]


def test_a_login_the_policy_no_longer_grants_offline_drops_the_grant(offline, world):
    rule = offline.rule()
    offline.online()
    assert offline.grant_file.exists()
    world.authd.admin("policy", "remove", "--id", str(rule))
    offline.online()
    assert not offline.grant_file.exists()


def forge(offline, world, key=None, **changes):
    """Replaces the kept grant by one with `changes`, signed by `key` (default: the
    authenticator's own grant key), its receipt's clocks kept."""
    receipt = offline.receipt()
    claims = dict(offline.grant(), **changes)
    signer = key or offline.grant_key()
    numbers = signer.public_key().public_numbers()
    jwk = {"crv": "P-256", "kty": "EC", "x": b64(numbers.x.to_bytes(32, "big")), "y": b64(numbers.y.to_bytes(32, "big"))}
    import hashlib
    kid = b64(hashlib.sha256(json.dumps(jwk, separators=(",", ":"), sort_keys=True).encode()).digest())
    receipt["grant"] = jwt.encode(claims, signer, algorithm="ES256",
                                  headers={"typ": "fingerauth-grant+jwt", "kid": kid})
    offline.grant_file.write_text(json.dumps(receipt))
    os.chmod(offline.grant_file, 0o600)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@pytest.mark.parametrize("case, why", [
    ("another-key", "grant signed by a key this host does not pin"),
    ("another-host", "grant is for another host"),
    ("another-user", "grant is for another user"),
    ("another-kid", "grant is for another device key"),
    ("expired", "grant expired"),
    ("another-service", "grant is not for this service"),
    ("unsigned", "grant signature does not verify"),
    ("world-readable", "offline-grant: mode 644 is too open"),
    ("not-root", "offline-grant: owned by uid 5001, must be owned by root"),
])
def test_a_forged_or_misplaced_grant_falls_to_the_password(offline, world, case, why):
    offline.rule()
    offline.online()
    offline.restart(stop_only=True)
    if case == "another-key":
        forge(offline, world, key=ec.generate_private_key(ec.SECP256R1()))
    elif case == "another-host":
        forge(offline, world, host="otherhost")
    elif case == "another-user":
        forge(offline, world, sub="bob")
    elif case == "another-kid":
        forge(offline, world, kid=b64(os.urandom(32)))
    elif case == "expired":
        now = int(time.time())
        forge(offline, world, iat=now - 7200, exp=now - 60)
    elif case == "another-service":
        forge(offline, world, services=["sudo"])
    elif case == "unsigned":
        receipt = offline.receipt()
        head, body, sig = receipt["grant"].split(".")
        claims = json.loads(base64.urlsafe_b64decode(body + "=="))
        claims["uses"] = 1000
        receipt["grant"] = ".".join([head, b64(json.dumps(claims).encode()), sig])
        offline.grant_file.write_text(json.dumps(receipt))
    elif case == "world-readable":
        os.chmod(offline.grant_file, 0o644)
    elif case == "not-root":
        os.chown(offline.grant_file, 5001, 5001)
    login = offline.offline(scans=())
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.errors == [UNREACHABLE] and login.infos == []
    assert why in world.log_lines()[-1], world.log_lines()[-1]
    assert not offline.log_file.exists() or offline.log_file.read_text() == ""


def offline_jtis(offline):
    return [jwt.decode(line, options={"verify_signature": False})["jti"]
            for line in offline.log_file.read_text().splitlines()]


def test_offline_logins_reach_the_audit_in_order_at_the_next_online_login(offline, world):
    offline.rule(uses=5)
    offline.online()
    gid = offline.grant()["gid"]
    offline.restart(stop_only=True)
    for _ in range(3):
        assert offline.offline().name == "PAM_SUCCESS"
    jtis = offline_jtis(offline)
    assert len(set(jtis)) == 3
    offline.restart()
    offline.online()
    rows = world.authd.audit_rows()
    uploaded = [r for r in rows if r["event"] == "offline_login"]
    assert [r["jti"] for r in uploaded] == jtis
    assert [r["reason"] for r in uploaded] == ["grant %s, record %d" % (gid, n) for n in (1, 2, 3)]
    for row in uploaded:
        assert (row["user"], row["host"], row["kid"], row["outcome"], row["verified"], row["service"]) == (
            "alice", HOST_ID, world.kid("alice"), "accept", 1, "fa-only")
    # Uploaded by the warm-up, before the online login's own row.
    assert max(r["id"] for r in uploaded) < [r for r in rows if r["event"] == "login"][-1]["id"]
    assert audit(world, "offline_gap") == []
    # Each record acknowledged one by one; the new grant compacted the log to the last.
    assert (offline.user_dir / "offline-sent").read_text() == "%s 3\n" % world.kid("alice")
    # Held records are not sent again, and the log keeps only the last (the next one chains to it).
    offline.online()
    assert len(audit(world, "offline_login")) == 3
    assert offline_jtis(offline) == jtis[-1:]
    offline.restart(stop_only=True)
    assert offline.offline().name == "PAM_SUCCESS"
    offline.restart()
    offline.online()
    assert [r["reason"].split(", ")[-1] for r in audit(world, "offline_login")] == ["record %d" % n for n in (1, 2, 3, 4)]
    assert audit(world, "offline_gap") == []


@pytest.mark.parametrize("change", ["removed", "altered"])
def test_a_removed_or_altered_offline_record_is_flagged_when_uploaded(offline, world, change):
    offline.rule(uses=5)
    offline.online()
    offline.restart(stop_only=True)
    for _ in range(3):
        assert offline.offline().name == "PAM_SUCCESS"
    lines = offline.log_file.read_text().splitlines()
    if change == "removed":
        del lines[1]
    else:
        head, body, sig = lines[1].split(".")
        claims = json.loads(base64.urlsafe_b64decode(body + "=="))
        claims["service"] = "login"
        lines[1] = ".".join([head, b64(json.dumps(claims).encode()), sig])
    offline.log_file.write_text("".join(line + "\n" for line in lines))
    offline.restart()
    synced = sync(world)
    assert synced["users"][0]["uploaded"] == len(lines) and synced["users"][0]["left"] == 0, synced
    rows = [r for r in world.authd.audit_rows() if r["event"] in ("offline_login", "offline_gap")]
    assert [(r["event"], r["reason"].split(", ")[-1]) for r in rows] == [
        ("offline_login", "record 1"), ("offline_gap", "seq_jump: record 2 missing"), ("offline_login", "record 3")]
    gap = rows[1]
    assert gap["outcome"] == "deny" and gap["user"] == "alice" and gap["kid"] == world.kid("alice")


def test_the_sync_endpoint_refuses_what_is_not_a_sync_and_drops_a_strangers_records(offline, world):
    authd = world.authd
    assert authd.request("GET", "/v1/offline-sync").status == 405
    assert authd.post_json("/v1/offline-sync", None, raw=b"{not json").status == 400
    assert authd.post_json("/v1/offline-sync", {"grants": ["a b"]}).status == 400
    assert authd.post_json("/v1/offline-sync", {"grants": ["x"] * 33}).status == 400
    answer = authd.post_json("/v1/offline-sync", {"grants": ["AAAAAAAAAAAAAAAAAAAAAA"], "records": []})
    assert answer.status == 200 and answer.json()["grants"] == {"AAAAAAAAAAAAAAAAAAAAAA": "withdrawn"}
    assert [k["crv"] for k in answer.json()["grant_keys"]] == ["P-256"]
    # A record in alice's name, signed by a key that is not hers: dropped, nothing written.
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    record = jwt.encode({"seq": 1, "gid": "g", "sub": "alice", "host": HOST_ID, "kid": world.kid("alice"),
                         "jti": "j", "service": "sudo", "at": int(time.time()), "prev": ""}, stranger,
                        algorithm="RS256", headers={"typ": "fingerauth-offline+jwt", "kid": world.kid("alice")})
    answer = authd.post_json("/v1/offline-sync", {"grants": [], "records": [record]})
    assert answer.status == 200 and answer.json()["held"] == {}
    assert answer.json()["rejected"] == {world.kid("alice"): [1]}
    assert audit(world, "offline_login") == [] and audit(world, "offline_gap") == []


def test_a_remote_session_is_skipped_offline_exactly_as_online(offline, world):
    offline.rule()
    offline.online()
    offline.restart(stop_only=True)
    login = offline.offline(scans=(), rhost="203.0.113.9")
    assert login.name != "PAM_SUCCESS", login
    assert login.infos == [] and "remote session skipped" in world.log_lines()[-1]
    assert not offline.log_file.exists() or offline.log_file.read_text() == ""


def test_a_screen_locker_logs_in_offline_through_the_agent_for_its_own_user_only(lw):
    """The agent's world (files an unprivileged user can reach, the agent running), with a
    grant key: the agent runs the same helper, so the same grant."""
    from support.world import USERS
    w = lw
    o = Offline(w)
    w.enroll("alice", "finger-A")
    o.rule()
    online = w.login("alice", scans=["finger-A"], as_uid=USERS["alice"], service=w.service("locker", fallback=False))
    assert online.name == "PAM_SUCCESS", online
    assert o.grant_file.exists()
    o.restart(stop_only=True)
    login = w.login("alice", scans=["finger-A"], as_uid=USERS["alice"], service=w.service("locker", fallback=False))
    assert login.name == "PAM_SUCCESS", login
    assert OFFLINE_TEXT.match(login.infos[-1]), login.infos
    line = w.agent.wait_for_log("offline grant")
    assert "result=PAM_SUCCESS" in line and "user=alice" in line
    # Bob's locker cannot use alice's grant: the agent answers for the caller's own user only.
    other = w.login("alice", as_uid=USERS["bob"], service=w.service("locker", fallback=False))
    assert other.name != "PAM_SUCCESS", other
    assert len(o.log_file.read_text().splitlines()) == 1


def pinned_kids(world):
    return sorted(k["kid"] for k in json.loads((world.state / "grant-keys").read_text())["keys"])


def test_a_grant_key_rotation_keeps_the_hosts_grants_through_its_overlap(offline, world):
    offline.rule()
    offline.online()
    old_kid = jwt.get_unverified_header(offline.receipt()["grant"])["kid"]
    assert pinned_kids(world) == [old_kid]
    # Rotate: a new key signs, the old one is still published.
    old_path = offline.key_path
    new_path = world.tmp / "grant-new.key"
    made = subprocess.run([world.authd.binary, "grants", "new-key", "--out", str(new_path)],
                          capture_output=True, text=True, timeout=30)
    assert made.returncode == 0, made.stderr
    new_kid = re.search(r"grant key (\S+) written", made.stdout).group(1)
    world.authd.args = [a for a in world.authd.args if a not in ("--grant-key", str(old_path))]
    world.authd.args += ["--grant-key", str(new_path), "--grant-key-previous", str(old_path)]
    offline.restart()
    sync(world)
    assert pinned_kids(world) == sorted([old_kid, new_kid])
    # The old key's grant still works offline during the overlap.
    offline.restart(stop_only=True)
    assert offline.offline().name == "PAM_SUCCESS"
    offline.restart()
    offline.online()
    assert jwt.get_unverified_header(offline.receipt()["grant"])["kid"] == new_kid
    # The overlap over: the old key is no longer published, nor pinned after the next contact.
    world.authd.args = [a for a in world.authd.args if a not in ("--grant-key-previous", str(old_path))]
    offline.restart()
    sync(world)
    assert pinned_kids(world) == [new_kid]
    offline.restart(stop_only=True)
    assert offline.offline().name == "PAM_SUCCESS"
    # A grant the old key signs now is refused here.
    forge(offline, world, key=serialization.load_pem_private_key(old_path.read_bytes(), password=None))
    assert offline.offline(scans=()).name == "PAM_AUTHINFO_UNAVAIL"
    assert "grant signed by a key this host does not pin" in world.log_lines()[-1]


class StatusServer:
    """A stand-in at the authenticator's address that answers every request with `status`."""

    def __init__(self, world, status):
        import http.server
        from support.fakeauth import TLSServer

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self):
                length = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(min(length, 1 << 16))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_GET = do_POST = answer

            def log_message(self, *args):
                pass

        self.server = TLSServer(Handler, world.ca.server_cert, world.ca.server_key)


@pytest.mark.parametrize("where", ["502", "503", "504", "silent", "no-such-name"])
def test_every_kind_of_unreachable_uses_the_grant(offline, world, where):
    """Connection refused is above; a gateway with nobody behind it, a server that never
    answers (the warm-up's 3 s bound) and a name that does not resolve are the same."""
    from support.fakeauth import SilentServer
    offline.rule()
    offline.online()
    if where == "silent":
        with SilentServer() as silent:
            world.write_conf(url=silent.url + "/v1/login")
            # The reader's socket exists while the helper still waits out the warm-up's 3 s,
            # and the device reads a command only once the verify runs: the finger comes
            # after that bound, as a person's would, not into a socket nobody reads yet.
            world.reader.feed(["SCAN finger-A"], after=3.5)
            login = offline.offline(scans=())
            world.reader.wait()
    elif where == "no-such-name":
        world.write_conf(url="https://fingerauth-test.invalid/v1/login")
        login = offline.offline()
    else:
        with StatusServer(world, int(where)).server as server:
            world.write_conf(url=server.url + "/v1/login")
            login = offline.offline()
    assert login.name == "PAM_SUCCESS", login
    assert OFFLINE_TEXT.match(login.infos[-1]), login.infos
    assert len(offline.log_file.read_text().splitlines()) == 1


@pytest.mark.parametrize("status", [500, 429, 404])
def test_an_authenticator_that_answers_is_not_unreachable_and_the_grant_stays_unused(offline, world, status):
    offline.rule()
    offline.online()
    with StatusServer(world, status).server as server:
        world.write_conf(url=server.url + "/v1/login")
        login = offline.offline()
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert not offline.log_file.exists() or offline.log_file.read_text() == ""
    assert offline.grant_file.exists()
    assert "authenticator answered %d" % status in world.log_lines()[-1], world.log_lines()[-1]


def test_status_says_where_the_users_offline_grant_stands(offline, world):
    def line():
        done = world.cli("status", "--user", "alice", "--json", "--pam-dir", str(world.confdir))
        [check] = [c for c in json.loads(done.stdout)["checks"] if c["name"] == "offline"]
        return check
    assert line()["status"] == "pass" and line()["detail"].startswith("no offline grant"), line()
    offline.rule(uses=2, services="fa-only,sudo")
    offline.online()
    now = line()
    assert now["status"] == "pass", now
    assert re.fullmatch(r"grant until \d{4}-\d\d-\d\d \d\d:\d\d UTC, 2 of 2 offline logins left, for fa-only,sudo",
                        now["detail"]), now
    offline.restart(stop_only=True)
    assert offline.offline().name == "PAM_SUCCESS"
    after = line()
    assert "1 of 2 offline logins left" in after["detail"] and "1 offline login(s) not yet uploaded" in after["detail"]
    assert after["status"] == "pass", after
    os.chmod(offline.grant_file, 0o644)
    unsafe = line()
    assert unsafe["status"] == "warn" and "offline-grant: mode 644 is too open" in unsafe["detail"], unsafe
    assert unsafe["fix"].startswith("fingerauth sync")
