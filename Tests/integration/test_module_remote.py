"""Remote sessions known from what the caller cannot forge: the module's `session` line
records a session that has PAM_RHOST under its audit session id (pam_loginuid starts one at
login; only root can start another), and every later login in that audit session is remote,
whatever its environment says. Each test starts a fresh audit session by writing
/proc/self/loginuid in a child shell, as pam_loginuid does."""

import os
import re
import shlex
import subprocess

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
