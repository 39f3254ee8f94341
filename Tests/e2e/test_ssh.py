"""Real sshd on a loopback port, started through a symlink named fa-e2e-sshd-… so that it
reads /etc/pam.d/fa-e2e-sshd-… (never /etc/pam.d/sshd), with keyboard-interactive
authentication through PAM only. The real ssh client logs in as a real test user."""

import os
import re
import shutil
import stat
import tempfile
import time

import pytest

from conftest import PLACE_FINGER
from machine import PamService, Sshd, SudoersDropIn
from support.vreader import VirtualReaderError
from terminal import Terminal


@pytest.fixture
def sshd(install, user, tmp_path):
    name = "fa-e2e-sshd-" + user.name.split("-")[-1]
    service = PamService(name, ["auth sufficient pam_deny.so"])  # replaced by each test
    server = Sshd(tmp_path / "sshd", name)
    try:
        install.enroll(user, "finger-right")
        server.start()

        def stack(*module_args):
            service.write([
                install.module_line(*module_args),
                "auth      required  pam_unix.so",
                "account   required  pam_unix.so",
                # As in pam.d/sshd: pam_loginuid starts the audit session, then the module
                # records it as remote (session_dir, in the installation's conf).
                "session   required  pam_loginuid.so",
                install.session_line(),
                "session   required  pam_permit.so",
                "password  required  pam_deny.so",
            ])
        yield install, user, server, stack
    finally:
        server.stop()
        service.remove()


def test_ssh_with_remote_allow_logs_in_with_the_finger(sshd, observe):
    """ssh: module line with remote=allow, enrolled finger on the reader -> logged in, no password asked"""
    install, user, server, stack = sshd
    stack("remote=allow")
    install.feed("finger-right")
    done = server.ssh(user)  # no terminal, no sshpass: any password prompt fails the login
    install.fed()
    observe("exit %d; stderr %r" % (done.returncode, done.stderr.strip()))
    assert done.returncode == 0, done.stderr + server.log_text()
    assert PLACE_FINGER in done.stderr  # sshd passes PAM_TEXT_INFO on as an instruction
    assert "assword" not in done.stderr
    [row] = install.login_rows(user)
    assert row["outcome"] == "accept" and row["host"] == "e2e-host"
    assert row["jti"] == install.last_jti()
    line = install.log_lines()[-1]
    assert "service=%s" % server.service in line and "result=PAM_SUCCESS" in line


def test_ssh_without_remote_allow_falls_over_to_the_password(sshd, observe):
    """ssh: module line without remote=allow -> module skipped (PAM_IGNORE), the password logs in"""
    install, user, server, stack = sshd
    stack()
    without_password = server.ssh(user)
    done = server.ssh(user, password=user.password)
    observe("no terminal, no password: exit %d; with sshpass: exit %d" % (without_password.returncode, done.returncode))
    assert without_password.returncode == 255  # the password was asked, nobody answered
    assert done.returncode == 0, done.stderr + server.log_text()
    assert PLACE_FINGER not in done.stderr
    assert install.login_rows(user) == []  # the finger path never ran
    lines = install.log_lines()
    assert len(lines) >= 2 and all('reason="remote session skipped (PAM_RHOST 127.0.0.1)"' in l
                                   and "result=PAM_IGNORE" in l for l in lines), lines


def test_ssh_with_remote_allow_and_a_wrong_finger_takes_the_password(sshd, observe):
    """ssh: remote=allow, a wrong finger 3 times -> the password prompt; the password logs in"""
    install, user, server, stack = sshd
    stack("remote=allow")
    install.feed("finger-wrong", "finger-wrong", "finger-wrong")
    done = server.ssh(user, password=user.password)
    install.fed()
    observe("exit %d; stderr %r" % (done.returncode, done.stderr.replace(user.password, "***").strip()))
    assert done.returncode == 0, done.stderr + server.log_text()
    assert install.login_rows(user) == []
    assert "result=PAM_MAXTRIES" in install.log_lines()[-1]


# -- sudo inside an ssh session: remote, whatever its environment says ------------------
#
# The session's shell runs `sudo` with the SSH variables removed from its environment
# (anyone can do that). What still says "remote" is what the user cannot change: the audit
# session id that pam_loginuid gave the ssh login, recorded by the module's session line
# (<tmp>/sessions/<id>, content the client's address), and, for the ssh pty itself, utmp
# where the system keeps one (sshd writes the client's address there; a machine without
# /run/utmp, as this test VM, has only the record). `script` makes a fresh pty that utmp
# knows nothing of: only the record is left.

UNSET_SSH = "env -u SSH_CONNECTION -u SSH_CLIENT -u SSH_TTY"
# The audit session id as the session's shell sees it, then sudo with nothing to read on
# stdin (a password prompt can only fail), then sudo's exit status.
SUDO_IN_SSH = ("echo SESSION $(cat /proc/self/sessionid); " + UNSET_SSH + " sudo -k -S true </dev/null; "
               "echo SUDO-EXIT $?")
# A fresh pty (script) with no utmp entry; sudo prompts on that terminal, which reads
# /dev/null; -e: script exits with sudo's status.
SUDO_IN_SCRIPT = ("echo SESSION $(cat /proc/self/sessionid); script -eqc '" + UNSET_SSH + " sudo -k true' /dev/null"
                  " </dev/null; echo SUDO-EXIT $?")
REMOTE_RECORDED = re.compile(r'reason="remote session skipped \(audit session (\d+) recorded as remote \(127\.0\.0\.1\)\)"')
NO_AUDIT_SESSION = 4294967295


@pytest.fixture
def ssh_sudo(sshd):
    """The sshd fixture plus sudo for the test user through fa-e2e-sudo-… (the module line
    with `sudo_args`, then pam_unix), as in test_sudo.py."""
    install, user, server, stack = sshd
    stack()  # sshd itself: no remote=allow, the password logs in
    service = PamService("fa-e2e-sudo-" + user.name.split("-")[-1], ["auth sufficient pam_deny.so"])
    try:
        def sudo_stack(*sudo_args):
            service.write([
                "#%PAM-1.0",
                install.module_line(*sudo_args),
                "auth     required  pam_unix.so",
                "account  required  pam_unix.so",
                "session  required  pam_permit.so",
            ])
        sudo_stack()
        dropin = SudoersDropIn(user, service.name)
        try:
            yield install, user, server, sudo_stack, service.name
        finally:
            dropin.remove()
    finally:
        service.remove()


def in_ssh(server, user, command):
    """Logs in with the password (sshpass), runs `command` on a remote pty. Returns (ssh's
    exit status, the session's output with \\n line ends, the audit session id, sudo's exit
    status)."""
    done = server.ssh(user, password=user.password, command=command, tty=True)
    out = done.stdout.replace("\r", "")  # CR LF from the pty (CR CR LF through script's)
    leaked = user.password in out + done.stderr
    assert not leaked, "the password appeared in the session's output"
    session = re.search(r"^SESSION (\d+)$", out, re.M)
    sudo_exit = re.search(r"^SUDO-EXIT (\d+)$", out, re.M)
    assert session and sudo_exit, "ssh exit %d: %r %r\n%s" % (done.returncode, out, done.stderr, server.log_text())
    return done.returncode, out, int(session.group(1)), int(sudo_exit.group(1))


def feed_the_enrolled_finger_to_an_unused_reader(install, timeout=4):
    """Puts the enrolled finger on the reader for `timeout` s (a reader wrongly armed would
    log in with it); returns a function that joins the feeder and says whether the reader
    was never opened (no new socket appeared, nothing was sent)."""
    sent_before = len(install.reader.sent)
    install.feed("finger-right", timeout=timeout)

    def never_opened():
        try:
            install.fed(timeout=timeout + 5)
        except VirtualReaderError as error:
            return str(error).startswith("no new socket") and len(install.reader.sent) == sent_before
        except OSError:
            return False  # a socket appeared (and was closed again): the reader was opened
        return False
    return never_opened


def check_the_record(install, session):
    """<sessions>/<id>: written by the module's session line in sshd's stack."""
    assert session not in (0, NO_AUDIT_SESSION), "pam_loginuid gave the ssh login no audit session"
    st = os.lstat(install.sessions)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) & 0o022 == 0, oct(st.st_mode)
    record = install.sessions / str(session)
    st = os.lstat(record)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o644, oct(st.st_mode)
    assert record.read_text() == "127.0.0.1\n"
    return record


def check_sudo_was_skipped_as_remote(install, user, service, session, rows_before):
    line = install.log_lines()[-1]
    assert "service=%s user=%s result=PAM_IGNORE" % (service, user.name) in line, line
    found = REMOTE_RECORDED.search(line)
    assert found and int(found.group(1)) == session, line
    assert len(install.authd.audit_rows()) == rows_before  # nothing reached the authenticator
    return line


@pytest.mark.parametrize("command", [SUDO_IN_SSH, SUDO_IN_SCRIPT], ids=["same pty", "fresh pty (script)"])
def test_sudo_in_ssh_without_the_ssh_variables_is_still_remote(ssh_sudo, observe, command):
    """ssh -tt, then sudo with SSH_CONNECTION/SSH_CLIENT/SSH_TTY unset (on the session's pty, or on a fresh one from script that utmp does not know), enrolled finger on the reader -> module skipped as remote (audit session record), sudo's password prompt"""
    install, user, server, sudo_stack, service = ssh_sudo
    rows_before = len(install.authd.audit_rows())
    reader_never_opened = feed_the_enrolled_finger_to_an_unused_reader(install)
    status, out, session, sudo_exit = in_ssh(server, user, command)
    observe("sudo exit %d; audit session %d; output %r" % (sudo_exit, session, out.strip()))
    assert reader_never_opened()
    assert PLACE_FINGER not in out
    # The password path: sudo's own prompt, nothing on stdin, sudo refuses.
    assert "[sudo] password for %s: " % user.name in out and "sudo: no password was provided" in out
    assert sudo_exit == 1 and status == 0
    check_sudo_was_skipped_as_remote(install, user, service, session, rows_before)
    check_the_record(install, session)


def test_sudo_in_ssh_with_remote_allow_logs_in_with_the_finger(ssh_sudo, observe):
    """ssh -tt, then sudo (SSH variables unset) with remote=allow on sudo's module line, enrolled finger -> sudo runs, no password asked"""
    install, user, server, sudo_stack, service = ssh_sudo
    sudo_stack("remote=allow")
    install.feed("finger-right")
    status, out, session, sudo_exit = in_ssh(server, user, SUDO_IN_SSH)
    install.fed()
    observe("sudo exit %d; audit session %d; output %r" % (sudo_exit, session, out.strip()))
    assert sudo_exit == 0 and status == 0, out
    assert PLACE_FINGER in out
    assert "assword" not in out  # stdin is /dev/null: a prompt would have failed sudo
    [row] = install.login_rows(user)
    assert row["outcome"] == "accept" and row["host"] == "e2e-host"
    assert row["jti"] == install.last_jti()
    line = install.log_lines()[-1]
    assert "service=%s user=%s result=PAM_SUCCESS" % (service, user.name) in line, line
    check_the_record(install, session)  # recorded as remote, and allowed all the same


# -- sudo in a tmux pane attached from ssh: the pane is not the ssh session's -------------
#
# The tmux server is started by the test user outside any ssh session (as a server left
# running at the desk would be): its panes carry no record of the ssh login, no SSH
# variables, and a pty that no utmp entry names. What still tells is that the same user
# is logged in over ssh right now (a recorded remote session that a process holds): a
# login that is not positively local (not on a virtual console) is then skipped.

TMUX_SUDO = "sudo -k true"
LIVE_REMOTE = re.compile(r'reason="remote session skipped \(remote session of (\S+) live \(audit session (\d+) from '
                         r'127\.0\.0\.1\); this one \(on (pts/\d+)\) not positively local\)"')


@pytest.fixture
def tmux_pane(ssh_sudo):
    """A tmux server of the test user, started outside ssh, with one pane running sh; its
    socket in a folder of the user's (the test's folder is closed to test users)."""
    install, user, server, sudo_stack, service = ssh_sudo
    folder = tempfile.mkdtemp(prefix="fingerauth-e2e-tmux.", dir="/tmp")
    os.chown(folder, user.uid, user.gid)
    socket = os.path.join(folder, "server")

    def tmux(*args):
        return user.as_user(["tmux", "-S", socket, *args], env={"TERM": "xterm"}, timeout=20)
    started = tmux("-f", "/dev/null", "new-session", "-d", "-s", "fa", "-x", "100", "-y", "30", "sh")
    assert started.returncode == 0, started.stderr
    try:
        yield install, user, server, service, socket, tmux
    finally:
        tmux("kill-server")
        shutil.rmtree(folder, ignore_errors=True)


def pane_text(tmux):
    return tmux("capture-pane", "-p", "-t", "fa").stdout


def wait_until(check, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


def holders(session):
    """The processes whose audit session id is `session`."""
    pids = []
    for name in os.listdir("/proc"):
        try:
            with open("/proc/%s/sessionid" % name) as f:
                if name.isdigit() and int(f.read()) == session:
                    pids.append(int(name))
        except (OSError, ValueError):
            pass
    return pids


def test_sudo_in_a_tmux_pane_attached_from_ssh_does_not_arm_the_reader(tmux_pane, observe):
    """tmux server started by the user outside ssh; ssh -tt, `tmux attach`, sudo typed into the pane, enrolled finger on the reader -> module skipped (a remote session of the user is live; the pane is not positively local), sudo's password prompt; after the ssh login ends, the same pane arms the reader again"""
    install, user, server, service, socket, tmux = tmux_pane
    rows_before = len(install.authd.audit_rows())
    ssh = ["sshpass", "-e", "-P", "assword", "ssh", "-tt", "-p", str(server.port), "-o", "StrictHostKeyChecking=no",
           "-o", "UserKnownHostsFile=/dev/null", "-o", "PreferredAuthentications=keyboard-interactive",
           "-o", "NumberOfPasswordPrompts=1", "%s@127.0.0.1" % user.name, "exec tmux -S %s attach -t fa" % socket]
    client = Terminal(user, ssh, env={"TERM": "xterm", "SSHPASS": user.password, "HOME": str(server.dir)}, as_root=True)
    try:
        attached = wait_until(lambda: tmux("list-clients").stdout.strip() != "")
        assert attached, client.screen + server.log_text()
        reader_never_opened = feed_the_enrolled_finger_to_an_unused_reader(install)
        client.type(TMUX_SUDO + "\r")  # typed over ssh, into the attached client
        prompt = "[sudo] password for %s:" % user.name  # capture-pane drops the trailing space
        assert wait_until(lambda: prompt in pane_text(tmux)), pane_text(tmux)
        line = install.log_lines()[-1]
        observe("pane: %r; module: %s" % (pane_text(tmux).strip()[-200:], line.split("reason=")[-1]))
        assert reader_never_opened()
        assert PLACE_FINGER not in pane_text(tmux)
        assert "service=%s user=%s result=PAM_IGNORE" % (service, user.name) in line, line
        found = LIVE_REMOTE.search(line)
        assert found and found.group(1) == user.name, line
        session = int(found.group(2))
        check_the_record(install, session)  # the ssh login's own record, held by its processes
        assert len(install.authd.audit_rows()) == rows_before
        client.type("\x03")  # ends sudo's prompt: the shell's prompt again
        assert wait_until(lambda: pane_text(tmux).rstrip().endswith("\n$")), pane_text(tmux)
    finally:
        client.close()

    # The ssh login is gone (sshd ends its processes once the client hangs up): nobody can
    # type into the pane from afar now, and the same pane arms the reader.
    assert wait_until(lambda: holders(session) == [], timeout=15), holders(session)
    tmux("send-keys", "-t", "fa", "clear", "Enter")
    assert wait_until(lambda: pane_text(tmux).strip() == "$"), pane_text(tmux)
    install.feed("finger-right")
    tmux("send-keys", "-t", "fa", TMUX_SUDO + "; echo SUDO-EXIT $?", "Enter")
    assert wait_until(lambda: "SUDO-EXIT 0" in pane_text(tmux)), pane_text(tmux)
    install.fed()
    assert PLACE_FINGER in pane_text(tmux) and "password for" not in pane_text(tmux)
    assert "service=%s user=%s result=PAM_SUCCESS" % (service, user.name) in install.log_lines()[-1]
