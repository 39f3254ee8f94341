"""Remote sessions known from what the caller cannot forge: the module's `session` line
records a session that has PAM_RHOST under its audit session id (pam_loginuid starts one at
login; only root can start another), and every later login in that audit session is remote,
whatever its environment says. Each test starts a fresh audit session by writing
/proc/self/loginuid in a child shell, as pam_loginuid does."""

import grp
import os
import re
import shlex
import subprocess

from support.private_run import USER_PROCESS, private_run, run_folder, write_utmp
from support.vreader import scan_commands

PLACE_FINGER = "Place your finger on the fingerprint reader"


def session_service(world, name="fa-remote", module_args=""):
    """The module alone for auth, and its session line (as in sshd's stack after pam_loginuid)
    followed by pam_permit, as a real stack has other session modules."""
    module = "%s conf=%s %s" % (world.build / "pam_fingerauth.so", world.conf_path, module_args)
    (world.confdir / name).write_text("auth [default=done] %s\nsession optional %s\nsession required pam_permit.so\n"
                                      % (module, module))
    return name


def in_new_audit_session(world, *steps, feed=None, timeout=30):
    """Runs fa-pamtest invocations (lists of extra arguments) one after the other in one new
    audit session; returns their outputs and the session id."""
    harness = [str(world.build / "fa-pamtest"), "--confdir", str(world.confdir), "--user", "alice"]
    script = "echo 0 > /proc/self/loginuid || exit 90; cat /proc/self/sessionid; echo; "
    script += "; ".join("echo ==; " + " ".join(shlex.quote(a) for a in harness + list(step)) for step in steps)
    if feed:
        world.reader.feed(feed, timeout=timeout)
    try:
        done = subprocess.run(["sh", "-c", script], env=world.env, capture_output=True, text=True, timeout=timeout)
    finally:
        if feed:
            world.reader.wait(timeout=timeout)
    assert done.returncode != 90, "cannot start an audit session here: " + done.stderr
    head, *outputs = done.stdout.split("==\n")
    return int(head.strip()), outputs


def record_dir(world):
    return world.tmp / "sessions"


def test_a_remote_session_is_recorded_by_its_audit_session_id(world):
    world.enroll("alice", "finger-A")
    world.write_conf(session_dir=str(record_dir(world)))
    service = session_service(world)
    session, [opened] = in_new_audit_session(world, ["--service", service, "--session-only", "--rhost", "10.1.2.3"])
    assert "SESSION 0 PAM_SUCCESS" in opened, opened
    record = record_dir(world) / str(session)
    st = os.stat(record)
    assert st.st_uid == 0 and st.st_mode & 0o777 == 0o644
    assert record.read_text() == "10.1.2.3\n"


def test_a_login_later_in_that_session_is_remote_without_any_ssh_variable(world):
    """`env -u SSH_CONNECTION … sudo` inside ssh: the environment says local, the record says remote."""
    world.enroll("alice", "finger-A")
    world.write_conf(session_dir=str(record_dir(world)))
    service = session_service(world)
    session, [_, login] = in_new_audit_session(
        world, ["--service", service, "--session-only", "--rhost", "10.1.2.3"], ["--service", service, "--tty", "pts/9"])
    assert "RESULT 25 PAM_IGNORE" in login, login
    assert PLACE_FINGER not in login
    line = world.log_lines()[-1]
    assert 'reason="remote session skipped (audit session %d recorded as remote (10.1.2.3))"' % session in line, line


def test_remote_allow_lets_the_finger_log_in_in_a_recorded_session(world):
    world.enroll("alice", "finger-A")
    world.write_conf(session_dir=str(record_dir(world)))
    service = session_service(world, module_args="remote=allow")
    _, [_, login] = in_new_audit_session(
        world, ["--service", service, "--session-only", "--rhost", "10.1.2.3"], ["--service", service],
        feed=scan_commands("finger-A"))
    assert "RESULT 0 PAM_SUCCESS" in login, login


def test_another_audit_session_is_local(world):
    """A record belongs to one audit session: a new local session is not affected by it."""
    world.enroll("alice", "finger-A")
    world.write_conf(session_dir=str(record_dir(world)))
    service = session_service(world)
    first, _ = in_new_audit_session(world, ["--service", service, "--session-only", "--rhost", "10.1.2.3"])
    second, [login] = in_new_audit_session(world, ["--service", service], feed=scan_commands("finger-A"))
    assert second != first
    assert "RESULT 0 PAM_SUCCESS" in login, login
    assert re.search(r"INFO %s" % PLACE_FINGER, login)


def test_a_local_session_is_not_recorded(world):
    world.enroll("alice", "finger-A")
    world.write_conf(session_dir=str(record_dir(world)))
    service = session_service(world)
    _, [opened] = in_new_audit_session(world, ["--service", service, "--session-only"])
    assert "SESSION 0 PAM_SUCCESS" in opened, opened  # the module ignored it; pam_permit decided
    assert not record_dir(world).exists() or list(record_dir(world).iterdir()) == []


# -- utmp: sshd records the client's address as the host of the session's pty ----------
#
# Debian keeps /run/utmp as root:utmp 0664 (login, sshd and utempter write it through the
# group). The module reads the real /run/utmp: each test lays one out in a /run of its own
# (a private mount namespace around the PAM host).

def test_debians_utmp_root_utmp_0664_makes_the_pty_of_an_ssh_login_remote(world):
    world.enroll("alice", "finger-A")
    run = run_folder(world)
    write_utmp(run / "utmp", [(USER_PROCESS, "pts/77", "192.0.2.7")], mode=0o664, gid=grp.getgrnam("utmp").gr_gid)
    st = os.stat(run / "utmp")
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (0, grp.getgrnam("utmp").gr_gid, 0o664)
    login = world.login("alice", tty="pts/77", service=world.service("fa-only", fallback=False), wrap=private_run(run))
    assert login.name == "PAM_IGNORE", login
    assert login.infos == [] and login.errors == []
    line = world.log_lines()[-1]
    assert 'reason="remote session skipped (utmp: pts/77 from 192.0.2.7)"' in line, line


def test_a_utmp_others_can_write_is_not_believed_and_the_debug_log_says_why(world):
    """A world-writable or user-owned utmp could say anything: it is skipped, not trusted,
    and the finger is asked as on any local pty."""
    world.enroll("alice", "finger-A")
    world.write_conf(debug="yes")
    run = run_folder(world)
    for mode, uid, why in [(0o666, 0, "mode 666 is too open"), (0o644, 5001, "owned by uid 5001, must be owned by root")]:
        write_utmp(run / "utmp", [(USER_PROCESS, "pts/77", "192.0.2.7")], mode=mode, uid=uid)
        login = world.login("alice", tty="pts/77", scans=["finger-A"], service=world.service("fa-only", fallback=False),
                            wrap=private_run(run))
        assert login.name == "PAM_SUCCESS", login
        assert any(line.endswith("utmp skipped: /run/utmp: " + why) for line in world.log_lines()), world.log_lines()[-8:]
