"""Fingerprint login for PAM hosts that run as the user (screen lockers): the C harness run as
an unprivileged test user (setpriv) loads the module, which asks the real `fingerauth-agent`
(started by hand as root on a socket in the test's folder); the agent runs the real login
helper, the virtual reader and the real fingerauthd over TLS. Each test asserts the PAM
code, what the user saw and the agent's log line."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

from support.agent import Agent
from support.cli import status_lines
from support.world import PASSWORDS, USERS, World

PLACE_FINGER = "Place your finger on the fingerprint reader"
AGENT_MISSING = ("Fingerprint login unavailable: the fingerprint agent is not running "
                 "(fingerauth status says how to start it)")
NOT_YOURS = "Fingerprint login refused: the agent answers only for your own user"
ALICE, BOB = USERS["alice"], USERS["bob"]


@pytest.fixture
def lw(ca):
    """A world whose files an unprivileged user can reach (pytest's own folders are 0700),
    with the authenticator and the agent running. Removed afterwards, also on failure."""
    tmp = tempfile.mkdtemp(prefix="fa-agent-test.")
    os.chmod(tmp, 0o755)
    w = World(tmp, ca)
    agent = None
    try:
        w.start_authenticator()
        # pam_matrix reads its password file as the calling user (test data only).
        os.chmod(w.tmp / "passdb", 0o644)
        agent = Agent(w).start()
        w.agent = agent
        yield w
    finally:
        if agent is not None:
            agent.stop()
        w.close()
        shutil.rmtree(tmp, ignore_errors=True)


def locker(w, user="alice", uid=ALICE, **kw):
    kw.setdefault("service", w.service("locker-only", fallback=False))
    return w.login(user, as_uid=uid, **kw)


def test_locker_right_finger_is_success_through_the_agent(lw):
    lw.enroll("alice", "finger-A")
    login = locker(lw, scans=["finger-A"])
    assert login.name == "PAM_SUCCESS", login
    assert login.infos == [PLACE_FINGER] and login.errors == [] and login.prompts == []
    line = lw.agent.wait_for_log("result=PAM_SUCCESS")
    assert "uid=%d" % ALICE in line and "user=alice" in line and "finger=right-index-finger" in line
    assert "service=locker-only" in line
    rows = [r for r in lw.authd.audit_rows() if r.get("event") == "login"]
    assert rows[-1]["outcome"] == "accept" and rows[-1]["user"] == "alice"


def test_locker_wrong_finger_three_times_is_maxtries(lw):
    lw.enroll("alice", "finger-A")
    login = locker(lw, scans=["finger-B"] * 3)
    assert login.name == "PAM_MAXTRIES", login
    assert login.infos == [PLACE_FINGER, "No match, try again (2 left)", "No match, try again (1 left)"]
    assert login.errors == ["Fingerprint not recognised; too many tries"]
    assert "user=alice" in lw.agent.wait_for_log("result=PAM_MAXTRIES")


def test_locker_with_authenticator_down_is_authinfo_unavail(lw):
    lw.enroll("alice", "finger-A")
    lw.authd.stop()
    login = locker(lw)
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.infos == []
    assert login.errors == ["Fingerprint login unavailable: authenticator not reachable"]
    assert "cannot connect to the authenticator" in lw.agent.wait_for_log("result=PAM_AUTHINFO_UNAVAIL")


def test_locker_with_agent_stopped_is_authinfo_unavail_and_the_password_works(lw):
    lw.enroll("alice", "finger-A")
    lw.agent.stop()
    login = locker(lw)
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.errors == [AGENT_MISSING] and login.infos == []
    login = locker(lw, password=PASSWORDS["alice"], service=lw.service("locker"))
    assert login.name == "PAM_SUCCESS", login
    assert login.errors == [AGENT_MISSING] and len(login.prompts) == 1


def test_locker_not_enrolled_is_ignore(lw):
    login = locker(lw)
    assert login.name == "PAM_IGNORE", login
    assert login.infos == [] and login.errors == []
    assert "user=alice" in lw.agent.wait_for_log('reason="user not enrolled"')


def test_forged_pam_user_is_refused_logged_and_never_arms_the_reader(lw):
    lw.enroll("bob", "finger-B")
    before = lw.reader._inode()
    login = locker(lw, user="bob", uid=ALICE, password=PASSWORDS["bob"], service=lw.service("locker"))
    # bob's password still decides (pam_matrix); the finger path was refused.
    assert login.name == "PAM_SUCCESS" and login.errors == [NOT_YOURS] and login.infos == [], login
    line = lw.agent.wait_for_log("asked for another user")
    assert "uid=%d" % ALICE in line and "(alice) asked for another user (bob); reader not armed" in line
    assert "result=PAM_AUTH_ERR" in line and " user=" not in line
    assert lw.reader._inode() == before
    login = locker(lw, user="bob", uid=ALICE)
    assert login.name == "PAM_AUTH_ERR", login


def test_raw_client_asking_for_another_user_is_refused(lw):
    lw.enroll("bob", "finger-B")
    before = lw.reader._inode()
    answer, _ = lw.agent.raw(b"FINGERAUTH-AGENT 1 LOGIN bob sudo verbose\n", as_uid=ALICE)
    # The client hears a fixed word; the details are in the agent's own log line.
    assert answer.splitlines() == ["ERROR " + NOT_YOURS, "RESULT 7 - - - not-your-user"]
    line = lw.agent.wait_for_log("asked for another user (bob)")
    assert "client_service=sudo" in line and "uid %d (alice) asked for another user (bob); reader not armed" % ALICE in line
    answer, _ = lw.agent.raw(b"FINGERAUTH-AGENT 1 LOGIN root sudo silent\n", as_uid=ALICE)
    assert answer == "RESULT 7 - - - not-your-user\n"
    assert "asked for another user (root)" in lw.agent.wait_for_log("asked for another user (root)")
    assert lw.reader._inode() == before


RAW = {
    "garbage": (b"hello agent\n", False, "not a FINGERAUTH-AGENT 1 line", 1.0),
    "1MB-line": (b"A" * (1024 * 1024), False, "longer than 256 bytes", 1.5),
    "nothing": (b"", False, "none within 2000 ms", 3.5),
    "closed": (b"", True, "closed before a request", 1.0),
}


@pytest.mark.parametrize("case", sorted(RAW))
def test_raw_client_with_garbage_or_nothing_is_closed_in_time_and_the_agent_lives(lw, case):
    data, shut, why, most = RAW[case]
    answer, seconds = lw.agent.raw(data, as_uid=ALICE, shut=shut)
    assert answer == "" and seconds < most, (answer, seconds)
    assert "uid=%d" % ALICE in lw.agent.wait_for_log(why)
    assert lw.agent.alive()
    answer, _ = lw.agent.raw(b"FINGERAUTH-AGENT 1 STATUS\n", as_uid=ALICE)
    assert answer == "STATUS 1 fingerauth-agent/0.1.0\n"


def test_two_users_lockers_at_once_one_is_told_busy_neither_hangs(lw):
    lw.enroll("alice", "finger-A")
    lw.enroll("bob", "finger-B")
    seen = lw.reader._inode()
    results = {}

    def alice():
        results["alice"] = locker(lw, timeout=30)

    first = threading.Thread(target=alice)
    started = time.monotonic()
    first.start()
    # alice's helper has armed the reader once its socket is new.
    deadline = time.monotonic() + 10
    while lw.reader._inode() in (None, seen):
        assert time.monotonic() < deadline, "alice's scan never started"
        time.sleep(0.01)
    bob = locker(lw, user="bob", uid=BOB, timeout=10)
    assert bob.name == "PAM_AUTHINFO_UNAVAIL", bob
    assert bob.errors == ["Fingerprint reader busy: another login is using it"] and bob.infos == []
    assert "uid=%d" % BOB in lw.agent.wait_for_log("reader busy")
    lw.reader.last_inode = seen
    lw.reader.feed(["SCAN finger-A"], timeout=10)
    first.join(20)
    lw.reader.wait()
    assert not first.is_alive()
    assert results["alice"].name == "PAM_SUCCESS", results["alice"]
    assert time.monotonic() - started < 15


def test_failures_past_the_per_uid_limit_stop_arming_the_reader(lw):
    """Wrong fingers and scans with no finger at all count (the reader was armed, nothing
    succeeded): nobody can hold the one reader for others by asking again and again."""
    lw.enroll("alice", "finger-A")
    lw.write_conf(max_tries="1", timeout="1")
    for _ in range(3):
        assert locker(lw, scans=["finger-B"]).name == "PAM_MAXTRIES"
    for _ in range(2):
        login = locker(lw)  # nobody touches the reader
        assert login.name == "PAM_AUTHINFO_UNAVAIL" and login.infos == [PLACE_FINGER], login
    before = lw.reader._inode()
    login = locker(lw)
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.errors == ["Fingerprint login unavailable: too many failed attempts, use the password"]
    line = lw.agent.wait_for_log("reader not armed")
    assert "5 failed fingerprint attempts in a row; reader not armed for another" in line and "sent=too-many-attempts" in line
    assert lw.reader._inode() == before
    # Another user is not held back by alice's failures, and requests that never arm the
    # reader (bob is not enrolled) do not count.
    for _ in range(6):
        assert lw.agent.raw(b"FINGERAUTH-AGENT 1 LOGIN bob x verbose\n", as_uid=BOB)[0] == "RESULT 25 - - - skipped\n"
    assert 'reason="user not enrolled"' in lw.agent.wait_for_log("uid=%d" % BOB)


def test_root_host_still_runs_the_helper_itself(lw):
    """The root path is unchanged: with the agent stopped, a root PAM host logs in."""
    lw.enroll("alice", "finger-A")
    lw.agent.stop()
    login = lw.login("alice", scans=["finger-A"], service=lw.service("root-only", fallback=False))
    assert login.name == "PAM_SUCCESS", login


def user_status(lw, systemd=None):
    """`fingerauth status` as alice; `systemd`: None for this host as it is (no systemd
    here), else a /run of the command's own with (True) or without /run/systemd/system."""
    from support.private_run import private_run, run_folder
    prefix = []
    if systemd is not None:
        run_dir = run_folder(lw, "run-%s" % ("systemd" if systemd else "plain"))
        if systemd:
            (run_dir / "systemd" / "system").mkdir(parents=True)
        prefix = private_run(run_dir)
    return subprocess.run(prefix + ["setpriv", "--reuid", str(ALICE), "--regid", str(ALICE), "--clear-groups", "--",
                                    str(lw.build / "fingerauth"), "status", "--config", str(lw.conf_path)],
                          env=lw.env, capture_output=True, text=True, timeout=20)


def stop_agent(lw):
    """No agent at all: stopped, and its socket gone (a stopped agent leaves it behind)."""
    lw.agent.stop()
    if lw.agent.socket.exists():
        lw.agent.socket.unlink()


def test_cli_status_as_the_user_checks_the_agent(lw):
    done = user_status(lw)
    assert "agent" in done.stdout and "fingerauth-agent/0.1.0" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "fingerprint unlock for alice: the agent answers"
    stop_agent(lw)
    # Where systemd runs, no agent is a failure with systemd's fix.
    done = user_status(lw, systemd=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert status_lines(done.stdout)["agent"] == ("FAIL", "%s does not exist: the agent is not running" % lw.agent.socket)
    assert "fix: as root: systemctl enable --now fingerauth-agent.socket" in done.stdout
    assert done.stdout.splitlines()[-1] == "fingerprint unlock for alice: blocked by agent"


def test_cli_status_as_the_user_on_a_host_without_systemd_does_not_fail_the_agent(lw):
    """Before: [FAIL] agent, "systemctl enable --now fingerauth-agent.socket", exit 1, on a
    host where nothing could run systemctl. Now the agent's line is skipped and says what
    applies there; the exit status is 0."""
    stop_agent(lw)
    for done in (user_status(lw), user_status(lw, systemd=False)):
        assert done.returncode == 0, done.stdout + done.stderr
        assert "systemctl" not in done.stdout, done.stdout
        mark, text = status_lines(done.stdout)["agent"]
        assert (mark, text) == ("skip", "%s does not exist; no systemd on this host to start fingerauth-agent.socket, "
                                        "so screen lockers have no fingerprint unlock (to have it: start it as root "
                                        "from this host's init system: /usr/libexec/fingerauth/fingerauth-agent (it "
                                        "listens on agent_socket; fingerauth-agent(8)))" % lw.agent.socket), text
        assert status_lines(done.stdout)["enrollment"] == (
            "skip", "root-only state; run sudo fingerauth status (it checks alice)")
        assert done.stdout.splitlines()[-1] == ("fingerprint unlock for alice: no agent on this host (sudo and login "
                                                "do not need it)")


FAKE_AGENT = """
import os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o666)
s.listen(4)
print("ready", flush=True)
c, _ = s.accept()
c.recv(512)
c.sendall(b"RESULT 0 right-index-finger k j yes, says the fake\\n")
c.close()
"""


def test_a_socket_not_served_by_root_is_not_the_agent(lw):
    """agent_socket pointed at a socket a user serves: its "RESULT 0" is not believed."""
    lw.enroll("alice", "finger-A")
    fake = lw.tmp / "fake"
    fake.mkdir(mode=0o777)
    os.chmod(fake, 0o777)
    server = subprocess.Popen(["setpriv", "--reuid", str(BOB), "--regid", str(BOB), "--clear-groups", "--",
                               "/usr/bin/python3", "-c", FAKE_AGENT, str(fake / "agent.sock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        lw.write_conf(agent_socket=str(fake / "agent.sock"))
        login = locker(lw)
        assert login.name == "PAM_AUTHINFO_UNAVAIL", login
        assert login.errors == [AGENT_MISSING]
    finally:
        server.kill()
        server.wait(5)


def test_pam_line_for_a_screen_locker_names_the_agent(lw):
    done = subprocess.run([str(lw.build / "fingerauth"), "pam-line", "swaylock", "--config", str(lw.conf_path)],
                          env=lw.env, capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    line, comment = done.stdout.splitlines()
    assert line.startswith("auth  sufficient  pam_fingerauth.so  url=")
    assert comment.startswith("# /etc/pam.d/swaylock: put it first")
    assert "swaylock calls PAM as you" in comment and "systemctl enable --now fingerauth-agent.socket" in comment
    vlock = subprocess.run([str(lw.build / "fingerauth"), "pam-line", "vlock", "--config", str(lw.conf_path)],
                           env=lw.env, capture_output=True, text=True, timeout=20).stdout
    assert "setuid root" in vlock and "fingerauth-agent.socket" not in vlock


def test_socket_activation_passes_the_socket_and_a_locker_logs_in(lw):
    """The LISTEN_FDS path, with systemd's own systemd-socket-activate in place of systemd
    (which does not run here): the agent starts at the first connection on the socket it
    was given, and a locker logs in through it."""
    lw.enroll("alice", "finger-A")
    lw.agent.stop()
    socket_path = lw.tmp / "activated" / "agent.sock"
    socket_path.parent.mkdir(mode=0o755)
    lw.write_conf(agent_socket=str(socket_path))
    log = lw.tmp / "activated" / "agent.log"
    passed = ["-E%s" % name for name in ("LD_PRELOAD", "NSS_WRAPPER_PASSWD", "NSS_WRAPPER_GROUP")]
    activator = subprocess.Popen(["systemd-socket-activate", "-l", str(socket_path), *passed,
                                  str(lw.build / "fingerauth-agent"), "--config", str(lw.conf_path), "--stderr"],
                                 env=lw.env, stdout=subprocess.DEVNULL, stderr=open(log, "ab"))
    try:
        deadline = time.monotonic() + 10
        while not socket_path.exists():
            assert time.monotonic() < deadline and activator.poll() is None, log.read_text()
            time.sleep(0.02)
        os.chmod(socket_path, 0o666)  # what the unit's SocketMode=0666 does
        assert "listening on" not in log.read_text()  # nothing started before a client came
        login = locker(lw, scans=["finger-A"])
        assert login.name == "PAM_SUCCESS", (login, log.read_text())
        text = log.read_text()
        assert "listening on the socket passed by systemd (LISTEN_FDS)" in text
        assert "service=locker-only user=alice result=PAM_SUCCESS" in text
    finally:
        activator.terminate()
        activator.wait(5)


CAPTURE = os.path.join(os.path.dirname(__file__), "support", "syslog_capture.py")
LOG_AUTHPRIV = 10 << 3


@pytest.mark.skipif(subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode != 0,
                    reason="no mount namespaces here")
def test_agent_logs_one_authpriv_line_per_request_without_secrets(lw):
    """The agent's own syslog datagrams (a private /dev/log, support/syslog_capture.py):
    facility LOG_AUTHPRIV, one line for the login, no token in it."""
    lw.enroll("alice", "finger-A")
    lw.agent.stop()
    ready = lw.tmp / "agent-ns.log"
    script = ('"$0" --config "$1" --stderr 2>"$2" & pid=$!\n'
              'for i in $(seq 200); do grep -q "listening on" "$2" && break; sleep 0.05; done\n'
              'setpriv --reuid %d --regid %d --clear-groups -- "$3" --confdir "$4" --service locker-only --user alice\n'
              'kill $pid; wait $pid\n') % (ALICE, ALICE)
    lw.service("locker-only", fallback=False)
    lw.reader.feed(["SCAN finger-A"], timeout=30)
    try:
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", "/usr/bin/python3", CAPTURE, "--",
                               "sh", "-c", script, str(lw.build / "fingerauth-agent"), str(lw.conf_path), str(ready),
                               str(lw.build / "fa-pamtest"), str(lw.confdir)],
                              env=lw.env, capture_output=True, text=True, timeout=120)
    finally:
        lw.reader.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "RESULT 0 PAM_SUCCESS" in report["stdout"], report
    agent = [m for m in report["syslog"] if "fingerauth-agent[" in m]
    logins = [m for m in agent if "service=locker-only" in m]
    assert len(logins) == 1, agent
    priority = int(re.match(r"<(\d+)>", logins[0]).group(1))
    assert priority == LOG_AUTHPRIV | 6, logins[0]  # authpriv.info
    assert "user=alice result=PAM_SUCCESS" in logins[0] and "uid=%d" % ALICE in logins[0]
    assert "eyJ" not in " ".join(report["syslog"])  # no JWT (header or claims) anywhere


def test_a_locker_that_goes_away_mid_scan_frees_the_reader_at_once(lw):
    """alice's locker is killed while the reader waits for her finger: the agent stops that
    scan at once (not at its deadline), logs it, and bob's locker right after gets the reader."""
    lw.enroll("alice", "finger-A")
    lw.enroll("bob", "finger-B")
    seen = lw.reader._inode()
    service = lw.service("locker-only", fallback=False)
    alice = subprocess.Popen(["setpriv", "--reuid", str(ALICE), "--regid", str(ALICE), "--clear-groups", "--",
                              str(lw.build / "fa-pamtest"), "--confdir", str(lw.confdir), "--service", service,
                              "--user", "alice"], env=lw.env, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while lw.reader._inode() in (None, seen):
        assert time.monotonic() < deadline, "alice's scan never started"
        time.sleep(0.01)
    alice.kill()
    alice.wait(5)
    line = lw.agent.wait_for_log("went away", timeout=2)
    assert "uid=%d" % ALICE in line
    bob = locker(lw, user="bob", uid=BOB, scans=["finger-B"])
    assert bob.name == "PAM_SUCCESS" and bob.errors == [], bob
