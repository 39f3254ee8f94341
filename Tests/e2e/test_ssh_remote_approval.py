"""Remote approval with real sshd and real sudo: the test user logs in over ssh to this
machine (the server, `e2e-host`, its host key registered), and the finger that approves
is on the user's workstation `ws-alice`, played here with the user's device key as the
workstation's watcher does it (support.approvals): it watches fingerauthd, and decides on
what it is shown. The real watcher service comes later; what runs here for real is sshd,
sudo, the module, the helper, fingerauthd and the prompt on the session's terminal."""

import os
import re
import subprocess
import threading
import time

import pytest

from support.approvals import Parties, rows, wait_until
from terminal import Terminal
from test_ssh import UNSET_SSH, ssh_sudo, sshd  # noqa: F401 (fixtures)

SUDO_ON_THE_SSH_PTY = "echo SESSION $(cat /proc/self/sessionid); " + UNSET_SSH + " sudo -k true; echo SUDO-EXIT $?"


@pytest.fixture
def approval(sshd, ssh_sudo):
    install, user, server, sudo_stack, service = ssh_sudo
    sshd_stack = sshd[3]
    allowed = install.authd.admin("policy", "add", "--stage", "approve", "--users", "*", "--hosts", "*",
                                  "--action", "allow")
    assert allowed.returncode == 0, allowed.stderr
    registered = install.cli("host", "register")
    assert registered.returncode == 0, registered.stdout + registered.stderr
    with open(install.conf, "a") as conf:
        conf.write("approve_timeout = 8\n")
    parties = Parties(install.authd)
    parties.ws = parties.device_key(user.name, "ws-alice")
    parties.sshd_stack = sshd_stack
    return install, user, server, sudo_stack, service, parties


def workstation(parties, decision="approve", seen=None):
    def run():
        shown = wait_until(lambda: parties.watch(parties.ws, wait=2).json()["approvals"], timeout=30)
        if seen is not None:
            seen.extend(shown)
        if shown and decision is not None:
            time.sleep(0.5)
            parties.decide(parties.ws, shown[0], decision=decision)
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_sudo_in_ssh_is_approved_on_the_workstation_with_no_password_typed(approval, observe):
    """ssh -tt, then sudo -k true with remote=approve on sudo's line; the workstation approves -> sudo runs, the prompt ended by itself on the ssh pty, nothing typed"""
    install, user, server, sudo_stack, service, parties = approval
    sudo_stack("remote=approve")
    seen = []
    thread = workstation(parties, seen=seen)
    done = server.ssh(user, password=user.password, command=SUDO_ON_THE_SSH_PTY, tty=True, timeout=90)
    thread.join(30)
    out = done.stdout.replace("\r", "")
    observe("ssh exit %d; output %r" % (done.returncode, out.strip()))
    assert user.password not in out + done.stderr
    assert re.search(r"^SUDO-EXIT 0$", out, re.M), out + server.log_text()
    [shown] = seen
    assert (shown["host"], shown["service"], shown["rhost"], shown["user"]) == ("e2e-host", service, "127.0.0.1",
                                                                                user.name)
    assert "Touch the reader on ws-alice (code %s)" % shown["code"] in out
    assert "[sudo] password for" not in out
    [login] = rows(install.authd, "login", shown["id"])
    assert (login["outcome"], login["user"], login["host"], login["workstation"]) == ("accept", user.name,
                                                                                     "e2e-host", "ws-alice")
    line = install.log_lines()[-1]
    assert "service=%s user=%s result=PAM_SUCCESS" % (service, user.name) in line, line


def test_ssh_through_sshds_keyboard_interactive_prompt_is_approved_after_enter(approval, observe):
    """ssh with remote=approve on sshd's own line: the keyboard-interactive prompt says touch then Enter; Enter (an empty answer), the workstation approves -> logged in, no password"""
    install, user, server, sudo_stack, service, parties = approval
    parties.sshd_stack("remote=approve")
    seen = []
    thread = workstation(parties, seen=seen)
    done = server.ssh(user, password="", timeout=90)  # sshpass answers the prompt with Enter
    thread.join(30)
    observe("ssh exit %d; stderr %r" % (done.returncode, done.stderr.strip()))
    assert done.returncode == 0, done.stderr + server.log_text()
    [shown] = seen
    assert shown["service"] == server.service and shown["rhost"] == "127.0.0.1"
    line = install.log_lines()[-1]
    assert "service=%s user=%s result=PAM_SUCCESS" % (server.service, user.name) in line, line


def test_not_me_in_ssh_falls_to_sudos_password_at_once(approval, observe):
    """sudo in ssh, the workstation answers Not me -> our prompt ends by itself with the reason, sudo's own password prompt follows at once (nobody answers it: timeout ends sudo)"""
    install, user, server, sudo_stack, service, parties = approval
    sudo_stack("remote=approve")
    thread = workstation(parties, decision="deny")
    command = SUDO_ON_THE_SSH_PTY.replace("sudo -k true", "timeout --foreground 15 sudo -k true")
    done = server.ssh(user, password=user.password, command=command, tty=True, timeout=90)
    thread.join(30)
    out = done.stdout.replace("\r", "")
    observe("output %r" % out.strip())
    assert user.password not in out + done.stderr
    assert 'Not approved: "Not me" on your workstation' in out, out
    assert "[sudo] password for %s" % user.name in out, out  # the stack went on to pam_unix
    assert re.search(r"^SUDO-EXIT 124$", out, re.M), out
    line = [entry for entry in install.log_lines() if "service=%s" % service in entry][-1]
    assert "result=PAM_AUTH_ERR" in line and "Not me" in line, line
    milliseconds = int(re.search(r"\bms=(\d+)", line).group(1))
    assert milliseconds < 8000, line  # ended by the denial, not by approve_timeout (8 s)


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
    install, user, server, sudo_stack, service, parties = approval
    sudo_stack("remote=approve")
    seen = []
    thread = workstation(parties, decision=None, seen=seen)
    term = ssh_on_a_terminal(server, user, SUDO_ON_THE_SSH_PTY)
    try:
        logged_in_then_asked(term, user)
        term.type(user.password + "\n")
        assert term.wait_for("SUDO-EXIT", timeout=30), term.screen
        term.finish()
    finally:
        term.close()
    thread.join(30)
    screen = term.screen.replace("\r", "")
    observe("screen %r" % screen.replace(user.password, "***").strip()[-300:])
    assert re.search(r"^SUDO-EXIT 0$", screen, re.M), screen
    assert "[sudo] password for" not in screen, "pam_unix took the handed-on password: one prompt"
    [shown] = seen
    assert parties.watch(parties.ws).json()["approvals"] == []
    assert [r["outcome"] for r in rows(install.authd, "approval_withdrawn", shown["id"])] == ["accept"]
    assert not rows(install.authd, "approval_approved", shown["id"])
    assert not any(user.password in line for line in install.log_lines())
    line = [entry for entry in install.log_lines() if "service=%s" % service in entry][-1]
    assert "result=PAM_SUCCESS" not in line, "the module did not log this login in: pam_unix did"


def test_ctrl_c_at_the_approval_prompt_is_no_login(approval, observe):
    """sudo in ssh: Ctrl-C at the approval prompt -> sudo ends without running the command, the request is withdrawn, never approved"""
    install, user, server, sudo_stack, service, parties = approval
    sudo_stack("remote=approve")
    seen = []
    thread = workstation(parties, decision=None, seen=seen)
    # Ctrl-C goes to the remote pty's foreground group: sudo and the shell that runs it,
    # which survives it here to tell sudo's status.
    term = ssh_on_a_terminal(server, user, "trap 'echo GOT-INT' INT; " + SUDO_ON_THE_SSH_PTY + "; echo AFTER")
    try:
        logged_in_then_asked(term, user)
        term.type("\x03")
        assert term.wait_for("AFTER", timeout=30), term.screen
        term.finish()
    finally:
        term.close()
    thread.join(30)
    screen = term.screen.replace("\r", "")
    observe("screen %r" % screen.replace(user.password, "***").strip()[-300:])
    status = re.search(r"^SUDO-EXIT (\d+)$", screen, re.M)
    assert status and status.group(1) != "0", screen
    [shown] = seen
    assert wait_until(lambda: rows(install.authd, "approval_withdrawn", shown["id"]), timeout=5), \
        "withdrawn at once, not left to expire"
    assert not rows(install.authd, "approval_approved", shown["id"])
    assert not any("result=PAM_SUCCESS" in entry for entry in install.log_lines() if "service=%s" % service in entry)


def test_the_authenticator_stopped_means_sudos_password_at_once(approval, observe):
    """sudo in ssh with fingerauthd stopped -> one line why, sudo's own password prompt at once (nobody answers: timeout ends sudo)"""
    install, user, server, sudo_stack, service, parties = approval
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
    install, user, server, sudo_stack, service, parties = approval
    parties.sshd_stack("remote=approve")
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
    assert parties.watch(parties.ws).json()["approvals"] == []
    withdrawn = rows(install.authd, "approval_withdrawn")
    assert len(withdrawn) == 2, withdrawn
