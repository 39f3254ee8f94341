"""Remote approval with real sshd and real sudo: the test user logs in over ssh to this
machine (the server, `e2e-host`, no reader in its way: its host key registered), and the
finger that approves is on the user's workstation `ws-alice`, a second configuration on the
same machine with its own virtual reader and the real `fingerauth-watcher`, whose desktop
(logind's seat, the notifications) is a private bus with small fakes (workstation.py). What
runs for real: sshd, sudo, pam_unix, the module, the helper, fingerauthd, the watcher, its
notifier as the user, and the finger scan on the workstation's reader."""

import os
import re
import subprocess
import threading

import pytest

from support.approvals import rows, wait_until
from terminal import Terminal
from test_ssh import UNSET_SSH, ssh_sudo, sshd  # noqa: F401 (fixtures)
from workstation import Workstation

SUDO_ON_THE_SSH_PTY = "echo SESSION $(cat /proc/self/sessionid); " + UNSET_SSH + " sudo -k true; echo SUDO-EXIT $?"


@pytest.fixture
def approval(sshd, ssh_sudo, tmp_path):
    install, user, server, sudo_stack, service = ssh_sudo
    sshd_stack = sshd[3]
    allowed = install.authd.admin("policy", "add", "--stage", "approve", "--users", "*", "--hosts", "*",
                                  "--action", "allow")
    assert allowed.returncode == 0, allowed.stderr
    registered = install.cli("host", "register")
    assert registered.returncode == 0, registered.stdout + registered.stderr
    with open(install.conf, "a") as conf:
        conf.write("approve_timeout = 8\n")
    ws = Workstation(install, user, tmp_path / "ws-alice")
    try:
        ws.start()
        ws.sshd_stack = sshd_stack
        yield install, user, server, sudo_stack, service, ws
    finally:
        ws.close()


def approvals(install, event):
    return rows(install.authd, event)


CODE = re.compile(r"Touch the reader on ws-alice \(code (\d+)\)")


def closed(ws, note, timeout=15):
    """Whether notification `note` was taken off the desktop (by the watcher: "caller")."""
    return wait_until(lambda: [n["closed"] for n in ws.notifications() if n["id"] == note["id"]] == ["caller"],
                      timeout)


def test_sudo_in_ssh_is_approved_by_a_finger_on_the_workstation_with_no_password_typed(approval, observe):
    """ssh -tt, then sudo -k true with remote=approve on sudo's line; the watcher on ws-alice shows who, where, what, from where and the code, the finger touches ws-alice's reader -> sudo runs, the prompt ended by itself on the ssh pty, nothing typed"""
    install, user, server, sudo_stack, service, ws = approval
    sudo_stack("remote=approve")
    ws.touch("finger-right")
    done = server.ssh(user, password=user.password, command=SUDO_ON_THE_SSH_PTY, tty=True, timeout=90)
    ws.touched()
    out = done.stdout.replace("\r", "")
    observe("ssh exit %d; output %r" % (done.returncode, out.strip()))
    assert user.password not in out + done.stderr
    assert re.search(r"^SUDO-EXIT 0$", out, re.M), out + server.log_text() + ws.log_text()
    assert "[sudo] password for" not in out
    code = CODE.search(out).group(1)
    [note] = ws.notifications()
    assert note["body"].startswith("%s \u2192 %s on e2e-host, from 127.0.0.1 (pts/" % (user.name, service)), note
    assert ("code %s \u2014 touch the reader to approve" % code) in note["body"], note
    assert note["actions"] == ["not-me", "Not me"] and note["uid"] == user.uid
    assert closed(ws, note)
    [login] = [r for r in approvals(install, "login") if r["approval"]]
    assert (login["outcome"], login["user"], login["host"], login["workstation"]) == ("accept", user.name,
                                                                                     "e2e-host", "ws-alice")
    line = install.log_lines()[-1]
    assert "service=%s user=%s result=PAM_SUCCESS" % (service, user.name) in line, line


def test_ssh_through_sshds_keyboard_interactive_prompt_is_approved_after_enter(approval, observe):
    """ssh with remote=approve on sshd's own line: the keyboard-interactive prompt says touch then Enter; Enter (an empty answer), the finger on ws-alice -> logged in, no password"""
    install, user, server, sudo_stack, service, ws = approval
    ws.sshd_stack("remote=approve")
    ws.touch("finger-right")
    done = server.ssh(user, password="", timeout=90)  # sshpass answers the prompt with Enter
    ws.touched()
    observe("ssh exit %d; stderr %r" % (done.returncode, done.stderr.strip()))
    assert done.returncode == 0, done.stderr + server.log_text() + ws.log_text()
    [note] = ws.notifications()
    assert note["body"].startswith("%s \u2192 %s on e2e-host, from 127.0.0.1" % (user.name, server.service)), note
    line = install.log_lines()[-1]
    assert "service=%s user=%s result=PAM_SUCCESS" % (server.service, user.name) in line, line


def test_not_me_in_ssh_falls_to_sudos_password_at_once(approval, observe):
    """sudo in ssh, the person answers Not me on ws-alice's notification -> our prompt ends by itself with the reason, sudo's own password prompt follows at once (nobody answers it: timeout ends sudo)"""
    install, user, server, sudo_stack, service, ws = approval
    sudo_stack("remote=approve")
    answer = threading.Thread(target=ws.not_me)
    answer.start()
    command = SUDO_ON_THE_SSH_PTY.replace("sudo -k true", "timeout --foreground 15 sudo -k true")
    done = server.ssh(user, password=user.password, command=command, tty=True, timeout=90)
    answer.join(30)
    out = done.stdout.replace("\r", "")
    observe("output %r" % out.strip())
    assert user.password not in out + done.stderr
    assert 'Not approved: "Not me" on your workstation' in out, out + ws.log_text()
    assert "[sudo] password for %s" % user.name in out, out  # the stack went on to pam_unix
    assert re.search(r"^SUDO-EXIT 124$", out, re.M), out
    line = [entry for entry in install.log_lines() if "service=%s" % service in entry][-1]
    assert "result=PAM_AUTH_ERR" in line and "Not me" in line, line
    milliseconds = int(re.search(r"\bms=(\d+)", line).group(1))
    assert milliseconds < 8000, line  # ended by the denial, not by approve_timeout (8 s)
    [denied] = approvals(install, "approval_denied")
    assert (denied["user"], denied["workstation"]) == (user.name, "ws-alice")


def test_a_finger_withheld_falls_to_sudos_password_after_the_timeout(approval, observe):
    """sudo in ssh, the notification shown on ws-alice but nobody touches the reader -> after approve_timeout (8 s) our prompt ends with the reason, sudo's password prompt follows; the notification is taken off"""
    install, user, server, sudo_stack, service, ws = approval
    sudo_stack("remote=approve")
    command = SUDO_ON_THE_SSH_PTY.replace("sudo -k true", "timeout --foreground 25 sudo -k true")
    done = server.ssh(user, password=user.password, command=command, tty=True, timeout=90)
    out = done.stdout.replace("\r", "")
    observe("output %r" % out.strip())
    assert "Not approved in time on your workstation" in out, out + ws.log_text()
    assert "[sudo] password for %s" % user.name in out, out
    line = [entry for entry in install.log_lines() if "service=%s" % service in entry][-1]
    assert int(re.search(r"\bms=(\d+)", line).group(1)) >= 8000, line
    [note] = ws.notifications()
    assert closed(ws, note)
    assert not approvals(install, "approval_approved")


def ssh_on_a_terminal(server, user, command):
    """`ssh -tt` run by root on a terminal of the test's own: the person at it types ssh's
    password, then answers the remote sudo's prompt, as in a terminal window."""
    return Terminal(user, ["ssh", "-p", str(server.port), "-o", "StrictHostKeyChecking=no",
                           "-o", "UserKnownHostsFile=/dev/null", "-o", "PreferredAuthentications=keyboard-interactive",
                           "-o", "NumberOfPasswordPrompts=1", "-tt", "%s@127.0.0.1" % user.name, command],
                    env={"HOME": str(server.dir)}, as_root=True)


def logged_in_then_asked(term, user):
    """ssh's own password (sshd's stack: pam_unix), then the remote sudo's approval prompt."""
    assert term.wait_for("assword:", timeout=30), term.screen
    term.type(user.password + "\n")
    assert term.wait_for("Touch the reader on ws-alice", timeout=30), term.screen


def test_a_password_typed_at_the_approval_prompt_runs_sudo_and_withdraws_the_request(approval, observe):
    """sudo in ssh: the person types the password at the approval prompt instead -> real pam_unix takes it (one prompt), sudo runs, the workstation stops showing the request"""
    install, user, server, sudo_stack, service, ws = approval
    sudo_stack("remote=approve")
    term = ssh_on_a_terminal(server, user, SUDO_ON_THE_SSH_PTY)
    try:
        logged_in_then_asked(term, user)
        note = ws.shown()
        term.type(user.password + "\n")
        assert term.wait_for("SUDO-EXIT", timeout=30), term.screen
        term.finish()
    finally:
        term.close()
    screen = term.screen.replace("\r", "")
    observe("screen %r" % screen.replace(user.password, "***").strip()[-300:])
    assert re.search(r"^SUDO-EXIT 0$", screen, re.M), screen
    assert "[sudo] password for" not in screen, "pam_unix took the handed-on password: one prompt"
    assert closed(ws, note), "the workstation stops showing a request nobody waits for"
    assert [r["outcome"] for r in approvals(install, "approval_withdrawn")] == ["accept"]
    assert not approvals(install, "approval_approved")
    assert not any(user.password in line for line in install.log_lines())
    line = [entry for entry in install.log_lines() if "service=%s" % service in entry][-1]
    assert "result=PAM_SUCCESS" not in line, "the module did not log this login in: pam_unix did"


def test_ctrl_c_at_the_approval_prompt_is_no_login(approval, observe):
    """sudo in ssh: Ctrl-C at the approval prompt -> sudo ends without running the command, the request is withdrawn, never approved"""
    install, user, server, sudo_stack, service, ws = approval
    sudo_stack("remote=approve")
    # Ctrl-C goes to the remote pty's foreground group: sudo and the shell that runs it,
    # which survives it here to tell sudo's status.
    term = ssh_on_a_terminal(server, user, "trap 'echo GOT-INT' INT; " + SUDO_ON_THE_SSH_PTY + "; echo AFTER")
    try:
        logged_in_then_asked(term, user)
        note = ws.shown()
        term.type("\x03")
        assert term.wait_for("AFTER", timeout=30), term.screen
        term.finish()
    finally:
        term.close()
    screen = term.screen.replace("\r", "")
    observe("screen %r" % screen.replace(user.password, "***").strip()[-300:])
    status = re.search(r"^SUDO-EXIT (\d+)$", screen, re.M)
    assert status and status.group(1) != "0", screen
    assert wait_until(lambda: approvals(install, "approval_withdrawn"), timeout=5), \
        "withdrawn at once, not left to expire"
    assert closed(ws, note)
    assert not approvals(install, "approval_approved")
    assert not any("result=PAM_SUCCESS" in entry for entry in install.log_lines() if "service=%s" % service in entry)


def test_the_authenticator_stopped_means_sudos_password_at_once(approval, observe):
    """sudo in ssh with fingerauthd stopped -> one line why, sudo's own password prompt at once (nobody answers: timeout ends sudo)"""
    install, user, server, sudo_stack, service, ws = approval
    sudo_stack("remote=approve")
    install.authd.stop()
    command = SUDO_ON_THE_SSH_PTY.replace("sudo -k true", "timeout --foreground 10 sudo -k true")
    done = server.ssh(user, password=user.password, command=command, tty=True, timeout=90)
    out = done.stdout.replace("\r", "")
    observe("output %r" % out.strip())
    assert "Fingerprint login unavailable: authenticator not reachable" in out, out
    assert "[sudo] password for %s" % user.name in out, out
    assert "Touch the reader" not in out
    line = [entry for entry in install.log_lines() if "service=%s" % service in entry][-1]
    assert int(re.search(r"\bms=(\d+)", line).group(1)) < 5000, line


def test_scp_and_a_command_without_a_terminal_fall_back_to_the_password(approval, tmp_path, observe):
    """remote=approve on sshd's own line: scp and `ssh host cmd` (no tty) answer the prompt with the password (sshpass) -> logged in through pam_unix, nothing left pending"""
    install, user, server, sudo_stack, service, ws = approval
    ws.sshd_stack("remote=approve")
    source = tmp_path / "payload.txt"
    source.write_text("copied by scp\n")
    os.chmod(tmp_path, 0o755)
    os.chmod(source, 0o644)
    target = "/tmp/fa-e2e-scp-%s.txt" % user.name
    env = {"PATH": "/usr/bin:/bin", "HOME": str(server.dir), "LANG": "C.UTF-8", "SSHPASS": user.password}
    copied = subprocess.run(
        ["sshpass", "-e", "-P", "assword", "scp", "-O", "-P", str(server.port), "-o", "StrictHostKeyChecking=no",
         "-o", "UserKnownHostsFile=/dev/null", "-o", "PreferredAuthentications=keyboard-interactive",
         "-o", "NumberOfPasswordPrompts=1", str(source), "%s@127.0.0.1:%s" % (user.name, target)],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90, start_new_session=True)
    try:
        observe("scp exit %d; stderr %r" % (copied.returncode, copied.stderr.strip()))
        assert copied.returncode == 0, copied.stderr + server.log_text()
        with open(target) as arrived:
            assert arrived.read() == "copied by scp\n"
    finally:
        if os.path.exists(target):
            os.unlink(target)
    done = server.ssh(user, password=user.password, command="echo HELLO-FROM-CMD")
    assert done.returncode == 0 and "HELLO-FROM-CMD" in done.stdout, done.stderr + server.log_text()
    withdrawn = approvals(install, "approval_withdrawn")
    assert len(withdrawn) == 2, withdrawn
    assert not approvals(install, "approval_approved")
    assert wait_until(lambda: all(n["closed"] for n in ws.notifications()), 15), ws.notifications()
