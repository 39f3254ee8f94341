"""Remote approval with real sshd and real sudo: the test user logs in over ssh to this
machine (the server, `e2e-host`, its host key registered), and the finger that approves
is on the user's workstation `ws-alice`, played here with the user's device key as the
workstation's watcher does it (support.approvals): it watches fingerauthd, and decides on
what it is shown. The real watcher service comes later; what runs here for real is sshd,
sudo, the module, the helper, fingerauthd and the prompt on the session's terminal."""

import re
import threading
import time

import pytest

from support.approvals import Parties, rows, wait_until
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
