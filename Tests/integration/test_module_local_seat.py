"""The local-seat rule through the real module: a login arms the reader only when it is
positively local. Where logind runs, the login's own logind session must be on a seat,
active and not remote; without logind (these machines), a login that is not on a virtual
console is skipped while a remote session of the same user is live. logind is stood in
for by its state files (/run/systemd/system, sessions/<id>, users/<uid>) laid out in a
/run of the PAM host's own (support.private_run); remote sessions are real audit sessions
(written to /proc/self/loginuid, as pam_loginuid does) recorded by the module's own
session line."""

import os
import subprocess

import pytest

from support.private_run import private_run, run_folder
from support.vreader import scan_commands
from support.world import USERS

PLACE_FINGER = "Place your finger on the fingerprint reader"
ALICE = USERS["alice"]


def record_dir(world):
    return world.tmp / "sessions"


def session_service(world, name="fa-seat"):
    """The module alone for auth, and its session line (as in sshd's stack)."""
    module = "%s conf=%s" % (world.build / "pam_fingerauth.so", world.conf_path)
    (world.confdir / name).write_text("auth [default=done] %s\nsession optional %s\nsession required pam_permit.so\n"
                                      % (module, module))
    return name


class RemoteLogin:
    """A remote login of `uid` that stays live: a process in a new audit session (login uid
    `uid`, as pam_loginuid sets it) whose session the module's session line recorded as
    remote (PAM_RHOST `host`), then sleeping, as sshd's session process does."""

    def __init__(self, world, uid=ALICE, host="192.0.2.7"):
        harness = [str(world.build / "fa-pamtest"), "--confdir", str(world.confdir), "--service", session_service(world),
                   "--user", "alice", "--session-only", "--rhost", host]
        script = ("echo %d > /proc/self/loginuid || exit 90; cat /proc/self/sessionid; echo; %s >/dev/null; exec sleep 60"
                  % (uid, " ".join(harness)))
        self.proc = subprocess.Popen(["sh", "-c", script], env=world.env, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        assert line.isdigit(), "cannot start an audit session here: %r" % line
        self.session = int(line)
        deadline = 50
        while not (record_dir(world) / line).exists() and deadline:
            subprocess.run(["sleep", "0.1"])
            deadline -= 1
        assert (record_dir(world) / line).read_text() == host + "\n"

    def end(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def remote_login(world):
    logins = []

    def start(**kw):
        logins.append(RemoteLogin(world, **kw))
        return logins[-1]
    yield start
    for login in logins:
        login.end()


def only(world):
    return world.service("fa-only", fallback=False)


# -- records mode (no logind: these machines) -----------------------------------------

def test_a_login_on_a_pty_is_skipped_while_a_remote_session_of_the_same_user_is_live(world, remote_login):
    """sudo in a tmux pane whose server lives outside the ssh session: the pane's audit
    session has no record, but alice is logged in remotely right now."""
    world.enroll("alice", "finger-A")
    world.write_conf(session_dir=str(record_dir(world)))
    before = world.login("alice", tty="pts/9", scans=["finger-A"], service=only(world))
    assert before.name == "PAM_SUCCESS", before  # nobody remote: the pty is local

    remote = remote_login()
    login = world.login("alice", tty="pts/9", service=only(world))
    assert login.name == "PAM_IGNORE", login
    assert PLACE_FINGER not in login.infos
    line = world.log_lines()[-1]
    assert ('reason="remote session skipped (remote session of alice live (audit session %d from 192.0.2.7); '
            'this one (on no terminal) not positively local)"' % remote.session) in line, line

    remote.end()  # the ssh connection closed: nobody can type from afar any more
    after = world.login("alice", tty="pts/9", scans=["finger-A"], service=only(world))
    assert after.name == "PAM_SUCCESS", after


def test_another_users_live_remote_session_does_not_matter(world, remote_login):
    world.enroll("alice", "finger-A")
    world.write_conf(session_dir=str(record_dir(world)))
    remote_login(uid=USERS["bob"])
    login = world.login("alice", scans=["finger-A"], service=only(world))
    assert login.name == "PAM_SUCCESS", login


def test_remote_allow_lets_a_not_positively_local_login_use_the_finger(world, remote_login):
    world.enroll("alice", "finger-A")
    world.write_conf(session_dir=str(record_dir(world)))
    remote_login()
    login = world.login("alice", scans=["finger-A"], service=world.service("fa-allow", module_args="remote=allow",
                                                                           fallback=False))
    assert login.name == "PAM_SUCCESS", login


# -- logind mode, with logind's state files stood in ------------------------------------

SESSION = ("# This is private data. Do not parse.\nUID={uid}\nUSER=alice\nACTIVE={active}\nSTATE=active\n"
           "REMOTE=0\nTYPE=tty\nCLASS=user\nSEAT={seat}\nTTY=tty2\nSERVICE=login\n")


def logind_run(world, seat="seat0", active=1, session_file=True):
    """A /run where logind runs (systemd/system exists) and, written inside the PAM host's
    namespace once its new audit session id is known, logind's file for that session."""
    run = run_folder(world)
    for d in ("systemd", "systemd/system", "systemd/sessions", "systemd/users"):
        (run / d).mkdir(mode=0o755)
    (run / "session.template").write_text(SESSION.format(uid=ALICE, active=active, seat=seat))
    script = "echo %d > /proc/self/loginuid || exit 90\nid=$(cat /proc/self/sessionid)\n" % ALICE
    if session_file:
        script += "cp /run/session.template /run/systemd/sessions/$id\n"
    return private_run(run, script)


def test_logind_an_active_local_seat_session_arms_the_reader(world):
    world.enroll("alice", "finger-A")
    world.write_conf(debug="yes")
    login = world.login("alice", scans=["finger-A"], service=only(world), wrap=logind_run(world))
    assert login.name == "PAM_SUCCESS", login
    assert any("local seat: logind session" in line and "(audit session id): seat seat0, active true, remote false"
               in line for line in world.log_lines()), world.log_lines()[-10:]


@pytest.mark.parametrize("seat,active,why", [("", 1, "is on no seat"), ("seat0", 0, "is not the active one on seat0")],
                         ids=["no seat", "not active"])
def test_logind_a_session_off_the_seat_or_behind_another_is_not_local(world, seat, active, why):
    world.enroll("alice", "finger-A")
    login = world.login("alice", service=only(world), wrap=logind_run(world, seat=seat, active=active))
    assert login.name == "PAM_IGNORE", login
    line = world.log_lines()[-1]
    assert "reason=\"remote session skipped (logind session " in line and why + ")\"" in line, line


def test_logind_a_process_with_no_session_of_its_own_is_not_local(world):
    """cron, at, a service: logind runs but knows no session of the process."""
    world.enroll("alice", "finger-A")
    login = world.login("alice", service=only(world), wrap=logind_run(world, session_file=False))
    assert login.name == "PAM_IGNORE", login
    line = world.log_lines()[-1]
    assert 'reason="remote session skipped (no logind session of its own (no unit: cron, at, a service))"' in line, line
