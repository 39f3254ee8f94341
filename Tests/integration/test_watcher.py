"""`fingerauth-watcher`: the workstation's resident approval watcher. A real fingerauthd over
TLS (the policy's approve stage allowing it), web01 asking with a host key made here
(support.approvals.Parties), and the workstation ws-alice as a World: its fingerauth.conf,
its virtual reader, alice's finger-A enrolled and her device key registered under ws-alice.
Its desktop is a private dbus-daemon with small fakes (support.fake_desktop): logind, whose
sessions the test sets (active, locked, remote), and a notification daemon that records what
was shown and lets the test choose "Not me". What the person sees (the notification, its
end), what the server learns (the approval's state, the audit rows) and the watcher's log
lines are checked."""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.approvals import Parties, approving_workstation, rows, wait_until  # noqa: E402
from support.authd import build_dir  # noqa: E402
from support.cli import enroll  # noqa: E402
from support.fake_desktop import Desktop, session  # noqa: E402
from support.vreader import VirtualReader, enroll_commands, scan_commands  # noqa: E402
from support.world import NSS_WRAPPER, USERS, World  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauth-watcher"), os.X_OK),
                                reason="no fingerauth-watcher in %s" % build_dir())

FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
MUTE = 3
ARGS = ("--user-failures", "0", "--address-failures", "0", "--approval-mute", str(MUTE), "--approval-wait", "5",
        "--approval-host-requests", "0", "--approval-address-requests", "0")
WORKSTATION = "ws-alice"
ALICE = session("alice", USERS["alice"])


class Watcher:
    """One `fingerauth-watcher` process with short settings; its log is its standard error."""

    def __init__(self, ws, desktop, conf, name="watcher", env=None, seats_every=1, session_bus=None):
        self.log_path = ws.tmp / (name + ".log")
        cmd = [str(ws.build / "fingerauth-watcher"), "--config", str(conf), "--session-bus", session_bus or desktop.socket,
               "--seats-every", str(seats_every), "--park", "2", "--retry", "2"]
        if env is not None:
            # Through env(1), as test_cli_approve runs a clock ahead: the preloaded library
            # then leaves the program's own arguments alone.
            cmd = ["/usr/bin/env"] + cmd
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(cmd, env=dict(ws.env, **(env or {})), stdout=subprocess.DEVNULL,
                                            stderr=log, stdin=subprocess.DEVNULL)

    def text(self):
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def lines(self):
        return [line[len("fingerauth-watcher: "):] for line in self.text().splitlines()]

    def wait_for(self, line, timeout=15):
        found = wait_until(lambda: any(x.startswith(line) for x in self.lines()), timeout)
        assert found, "no %r in the watcher's log:\n%s" % (line, self.text())

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


@pytest.fixture
def ws(tmp_path, ca):
    """ws-alice (alice enrolled with finger-A), its desktop with alice at an unlocked seat,
    its authenticator allowing remote approval, and web01's host key (`ws.web01`)."""
    w = World(tmp_path, ca)
    # Not under pytest's folders (0700): the notifier, as alice, must reach the bus.
    w.desktop_dir = tempfile.mkdtemp(prefix="fa-desk.")
    os.chmod(w.desktop_dir, 0o755)
    w.desktop = Desktop(os.path.join(w.desktop_dir, "bus"))
    w.watchers = []
    try:
        approving_workstation(w, WORKSTATION, ARGS)
        w.desktop.start(users={k: w.env[k] for k in ("LD_PRELOAD", "NSS_WRAPPER_PASSWD", "NSS_WRAPPER_GROUP")})
        w.desktop.set_sessions([ALICE])
        w.write_conf(system_bus=w.desktop.socket)
        enroll(w, "alice", "finger-A")
        w.parties = Parties(w.authd)
        w.web01 = w.parties.host_key("web01")
        yield w
    finally:
        for watcher in w.watchers:
            watcher.stop()
        w.desktop.close()
        w.close()
        shutil.rmtree(w.desktop_dir, ignore_errors=True)
    for watcher in w.watchers:
        text = watcher.text()
        # No token of any kind (a compact JWT's header starts `eyJ`), no crash.
        assert "eyJ" not in text and "Fatal error" not in text, text
        for secret in w.parties.secrets:
            assert secret not in text


def start_watcher(ws, conf=None, name="watcher", env=None, seats_every=1):
    watcher = Watcher(ws, ws.desktop, conf or ws.conf_path, name, env, seats_every)
    ws.watchers.append(watcher)
    return watcher


def shown(ws, count=1, timeout=15):
    """The notifications, once `count` have been shown."""
    assert wait_until(lambda: len(ws.desktop.notifications()) >= count, timeout), "\n".join(
        w.text() for w in ws.watchers)
    return ws.desktop.notifications()


def status(ws, approval):
    return ws.parties.state(ws.web01, approval).json()["status"]


def test_alices_finger_approves_web01s_request_shown_on_her_desktop_and_the_notification_goes(ws):
    watcher = start_watcher(ws)
    watcher.wait_for("watching approvals for alice")
    ws.reader.feed(scan_commands("finger-A"), timeout=30)
    asked = ws.parties.request(ws.web01, "alice", service="sudo", rhost="10.0.0.5", tty="ssh")
    assert asked.status == 201, asked.body
    opened = asked.json()
    assert wait_until(lambda: status(ws, opened["id"]) == "approved", 20), watcher.text()
    ws.reader.wait(timeout=30)
    [note] = shown(ws)
    sentence = "alice → sudo on web01, from 10.0.0.5 (ssh), code %s" % opened["code"]
    assert note["body"] == sentence + " — touch the reader to approve"
    assert note["summary"] == "FingerAuth: web01 asks"
    assert note["actions"] == ["not-me", "Not me"]
    # Shown by a process that had become alice: her uid, her gid, no supplementary group.
    assert note["uid"] == USERS["alice"]
    assert (note["gids"], note["groups"]) == ([str(USERS["alice"])] * 4, [])
    assert wait_until(lambda: ws.desktop.notifications()[0]["closed"] == "caller", 5), ws.desktop.notifications()
    watcher.wait_for("alice: approved: web01 may log alice in to sudo")
    lines = watcher.lines()
    assert "alice: asked: " + sentence in lines
    assert "alice: the reader (Virtual device for debugging) is armed for alice's finger" in lines
    approved = rows(ws.authd, "approval_approved", opened["id"])
    assert [(r["user"], r["host"], r["kid"], r["workstation"]) for r in approved] == [
        ("alice", "web01", ws.kid("alice"), WORKSTATION)]
    # Shown once, though the watcher looked it up every second while it was shown.
    assert [r["workstation"] for r in rows(ws.authd, "approval_shown", opened["id"])] == [WORKSTATION]
    assert not any("clock" in line for line in lines), lines


def test_not_me_denies_at_once_and_mutes_alices_next_request(ws):
    watcher = start_watcher(ws)
    watcher.wait_for("watching approvals for alice")
    opened = ws.parties.request(ws.web01, "alice").json()
    [note] = shown(ws)
    watcher.wait_for("alice: the reader (Virtual device for debugging) is armed")
    ws.desktop.invoke(note["id"], "not-me")
    assert wait_until(lambda: status(ws, opened["id"]) == "denied", 10), watcher.text()
    watcher.wait_for("alice: denied: web01 may not log alice in to sudo; alice's requests are muted")
    denied = rows(ws.authd, "approval_denied", opened["id"])
    assert [(r["user"], r["workstation"]) for r in denied] == [("alice", WORKSTATION)]
    muted = ws.parties.request(ws.web01, "alice", tty="pts/4")
    assert (muted.status, muted.json()["error"]) == (429, "approval_muted")
    # The scan was stopped: the reader is free for the next login at once.
    assert not any("no finger" in line for line in watcher.lines()), watcher.text()


@pytest.mark.parametrize("away", [dict(locked=True), dict(remote=True, seat=""), dict(active=False)],
                         ids=["locked", "remote-only", "inactive"])
def test_nothing_is_shown_while_alice_is_not_at_an_unlocked_seat_and_the_next_request_after_unlocking_is(ws, away):
    ws.desktop.set_sessions([session("alice", USERS["alice"], **away)])
    watcher = start_watcher(ws)
    watcher.wait_for("started")
    time.sleep(2.5)
    opened = ws.parties.request(ws.web01, "alice").json()
    time.sleep(3)
    assert ws.desktop.notifications() == []
    assert status(ws, opened["id"]) == "pending"
    assert not any(line.startswith("watching") for line in watcher.lines()), watcher.text()
    assert ws.parties.withdraw(ws.web01, opened["id"]).status == 200
    ws.desktop.set_sessions([ALICE])
    watcher.wait_for("watching approvals for alice", timeout=5)
    started = time.monotonic()
    again = ws.parties.request(ws.web01, "alice", tty="pts/4").json()
    [note] = shown(ws, timeout=5)
    assert time.monotonic() - started < 5
    assert note["body"].endswith("code %s — touch the reader to approve" % again["code"])


def test_locking_the_screen_stops_the_watch_at_once_by_loginds_signal(ws):
    watcher = start_watcher(ws, seats_every=60)
    watcher.wait_for("watching approvals for alice")
    locked = time.monotonic()
    ws.desktop.set_sessions([session("alice", USERS["alice"], locked=True)])
    watcher.wait_for("no longer watching alice", timeout=5)
    # Read again on logind's PropertiesChanged, not at the next round a minute later.
    assert time.monotonic() - locked < 2
    time.sleep(2.5)  # the watch's park (--park 2) ends
    opened = ws.parties.request(ws.web01, "alice").json()
    time.sleep(3)
    assert ws.desktop.notifications() == []
    assert status(ws, opened["id"]) == "pending"


def test_locking_the_screen_while_a_request_is_shown_withdraws_it_and_decides_nothing(ws):
    watcher = start_watcher(ws)
    watcher.wait_for("watching approvals for alice")
    opened = ws.parties.request(ws.web01, "alice").json()
    shown(ws)
    watcher.wait_for("alice: the reader (Virtual device for debugging) is armed")
    ws.desktop.set_sessions([session("alice", USERS["alice"], locked=True)])
    assert wait_until(lambda: ws.desktop.notifications()[0]["closed"] == "caller", 5), watcher.text()
    watcher.wait_for("alice: web01's request (code %s) no longer shown: the seat is locked or the session left; "
                     "nothing decided" % opened["code"])
    assert status(ws, opened["id"]) == "pending"


def test_a_request_withdrawn_or_expired_while_shown_is_closed_and_nothing_is_decided(ws):
    watcher = start_watcher(ws)
    watcher.wait_for("watching approvals for alice")
    opened = ws.parties.request(ws.web01, "alice").json()
    shown(ws)
    watcher.wait_for("alice: the reader (Virtual device for debugging) is armed")
    assert ws.parties.withdraw(ws.web01, opened["id"]).status == 200
    assert wait_until(lambda: ws.desktop.notifications()[0]["closed"] == "caller", 5), watcher.text()
    watcher.wait_for("alice: web01's request (code %s) is no longer pending" % opened["code"])
    assert status(ws, opened["id"]) == "withdrawn"

    brief = ws.parties.request(ws.web01, "alice", tty="pts/5", ttl=3).json()
    shown(ws, count=2)
    assert wait_until(lambda: ws.desktop.notifications()[1]["closed"] == "caller", 8), watcher.text()
    watcher.wait_for("alice: web01's request (code %s) " % brief["code"])
    ended = [line for line in watcher.lines() if line.startswith("alice: web01's request (code %s) " % brief["code"])]
    assert ended and ("expired: nothing decided" in ended[0] or "is no longer pending" in ended[0]), watcher.text()
    assert status(ws, brief["id"]) == "expired"
    assert not any(line.startswith(("alice: approved", "alice: denied")) for line in watcher.lines())


def test_a_request_that_cannot_be_shown_does_not_arm_the_reader(ws):
    """No session bus (a text console): a touch meant for something else must not approve a
    request nobody saw."""
    watcher = Watcher(ws, ws.desktop, ws.conf_path, session_bus=os.path.join(ws.desktop_dir, "none", "%u"))
    ws.watchers.append(watcher)
    watcher.wait_for("watching approvals for alice")
    opened = ws.parties.request(ws.web01, "alice").json()
    watcher.wait_for("alice: not shown (no session bus at %s/none/%d): the reader is not armed for it; it stays "
                     "pending (fingerauth approve shows it on a terminal)" % (ws.desktop_dir, USERS["alice"]))
    time.sleep(1)
    assert not any("armed for alice's finger" in line for line in watcher.lines()), watcher.text()
    assert status(ws, opened["id"]) == "pending"


def test_logind_not_answering_means_no_watch_and_one_line(ws):
    ws.write_conf(system_bus=os.path.join(ws.desktop_dir, "nobody"))
    watcher = start_watcher(ws)
    time.sleep(3.5)
    said = [line for line in watcher.lines() if line.startswith("logind: ")]
    assert len(said) == 1, watcher.text()
    assert "no approvals are watched until it answers" in said[0]
    assert watcher.process.poll() is None


def second_workstation(ws, name="ws-alice2"):
    """Another workstation of alice's on this machine: its own configuration, state folder,
    virtual reader and device key (registered under `name`)."""
    folder = ws.tmp / name
    folder.mkdir()
    os.chmod(folder, 0o755)
    reader = VirtualReader(folder / "reader" / "virtual.sock")
    (folder / "reader").mkdir(mode=0o700)
    token = folder / "token"
    token.write_text(ws.authd.create_token(name) + "\n")
    os.chmod(token, 0o600)
    settings = dict(ws.settings, host_id=name, state_dir=str(folder / "state"), virtual_reader=reader.path,
                    token_file=str(token), attempts_dir=str(folder / "attempts"))
    conf = folder / "fingerauth.conf"
    conf.write_text("".join("%s = %s\n" % item for item in settings.items()))
    reader.feed(enroll_commands("finger-A"), timeout=60)
    try:
        done = subprocess.run([str(ws.build / "fingerauth"), "enroll", "--user", "alice", "--config", str(conf)],
                              env=ws.env, capture_output=True, text=True, timeout=60)
    finally:
        reader.wait(timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return conf, reader


def test_two_workstations_of_alices_the_first_finger_decides_and_the_other_notification_is_withdrawn(ws):
    conf2, reader2 = second_workstation(ws)
    first = start_watcher(ws)
    second = start_watcher(ws, conf2, "watcher2")
    first.wait_for("watching approvals for alice")
    second.wait_for("watching approvals for alice")
    opened = ws.parties.request(ws.web01, "alice").json()
    notes = shown(ws, count=2)
    assert len(notes) == 2
    first.wait_for("alice: the reader (Virtual device for debugging) is armed")
    second.wait_for("alice: the reader (Virtual device for debugging) is armed")
    ws.reader.feed(scan_commands("finger-A"), timeout=20)
    ws.reader.wait(timeout=20)
    assert wait_until(lambda: status(ws, opened["id"]) == "approved", 10), first.text()
    first.wait_for("alice: approved: web01 may log alice in to sudo")
    second.wait_for("alice: web01's request (code %s) is no longer pending" % opened["code"], timeout=10)
    assert wait_until(lambda: all(n["closed"] == "caller" for n in ws.desktop.notifications()), 5), \
        ws.desktop.notifications()
    approved = rows(ws.authd, "approval_approved", opened["id"])
    assert [r["workstation"] for r in approved] == [WORKSTATION]
    assert not any(line.startswith("alice: approved") for line in second.lines()), second.text()


def test_a_revoked_device_key_is_logged_and_retried_and_the_watcher_lives_on(ws):
    watcher = start_watcher(ws)
    watcher.wait_for("watching approvals for alice")
    assert ws.authd.admin("keys", "revoke", "--user", "alice").returncode == 0
    watcher.wait_for("alice: refused by the authenticator: the watch: 401 ", timeout=15)
    line = [x for x in watcher.lines() if x.startswith("alice: refused by the authenticator: the watch: 401 ")][0]
    assert "; retrying in " in line, line
    time.sleep(3)
    assert watcher.process.poll() is None
    assert len([x for x in watcher.lines() if x.startswith("alice: refused")]) >= 2, watcher.text()
    opened = ws.parties.request(ws.web01, "alice").json()
    time.sleep(2)
    assert ws.desktop.notifications() == []
    assert status(ws, opened["id"]) == "pending"


@pytest.mark.skipif(not os.path.exists(FAKETIME), reason="libfaketime is not installed (apt-get install faketime)")
def test_a_workstation_clock_ten_minutes_ahead_approves_by_the_authenticators_clock_and_says_so_once(ws):
    ahead = {"LD_PRELOAD": NSS_WRAPPER + ":" + FAKETIME, "FAKETIME": "+600s", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
             "FAKETIME_NO_CACHE": "1"}
    watcher = start_watcher(ws, env=ahead)
    watcher.wait_for("watching approvals for alice")
    ws.reader.feed(scan_commands("finger-A"), timeout=30)
    opened = ws.parties.request(ws.web01, "alice").json()
    assert wait_until(lambda: status(ws, opened["id"]) == "approved", 20), watcher.text()
    ws.reader.wait(timeout=30)
    watcher.wait_for("alice: approved: web01 may log alice in to sudo")
    notes = [line for line in watcher.lines() if "clock" in line]
    assert len(notes) == 1, watcher.text()
    assert notes[0].startswith("alice: note: this computer's clock is ")
    assert notes[0].endswith(" s ahead of the authenticator's; signing by the authenticator's clock")
    seconds = int(notes[0].split("clock is ")[1].split(" s ")[0])
    assert 595 <= seconds <= 605, notes


@pytest.mark.parametrize("args,said", [
    (["--park", "60"], "--park must be a number of seconds from 0 to 25"),
    (["--retry", "2", "--retry", "3"], "--retry given twice"),
    (["--colour", "red"], "unknown or incomplete option: --colour"),
    (["--session-bus", "unix:path=/run/bus"], "--session-bus must be a socket path (%u for the uid)"),
    (["--config", "/nonexistent/fingerauth.conf"], "configuration: "),
])
def test_a_wrong_option_is_refused_with_the_reason_and_the_usage(args, said):
    done = subprocess.run([os.path.join(build_dir(), "fingerauth-watcher"), *args], capture_output=True, text=True,
                          timeout=10)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("fingerauth-watcher: " + said), done.stderr
    assert "\nusage: fingerauth-watcher" in done.stderr and done.stdout == ""


def test_it_runs_as_root_only():
    done = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--",
                           os.path.join(build_dir(), "fingerauth-watcher")], capture_output=True, text=True, timeout=10)
    assert done.returncode == 1
    assert done.stderr == ("fingerauth-watcher: must run as root: it reads the users' device keys and arms the "
                           "reader\n")
