"""A real screen locker end to end: i3lock, which calls PAM as the user, run by a real test
user on an Xvfb display and driven with xdotool; its PAM service `i3lock` is redirected to
the test's own stack by pam_wrapper (LD_PRELOAD), so /etc/pam.d/i3lock is never read. The
module in i3lock asks the real fingerauth-agent (started by hand: no systemd here), which
runs the login helper, the virtual reader and fingerauthd over TLS. i3lock shows no PAM
texts, so the tests assert what the person sees (locked or not: i3lock's exit) and the
agent's own log line. (Debian 12's vlock-main is setuid root: it takes the root path and
is not a test of the agent.)"""

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

PAM_WRAPPER = "/usr/lib/x86_64-linux-gnu/libpam_wrapper.so"

pytestmark = pytest.mark.skipif(not (shutil.which("i3lock") and shutil.which("Xvfb") and shutil.which("xdotool")
                                     and os.path.exists(PAM_WRAPPER)),
                                reason="i3lock, xvfb, xdotool or libpam-wrapper missing (make e2e-deps)")


class Display:
    """Xvfb on a free display number (-displayfd), stopped by its pid."""

    def __init__(self, tmp):
        read, write = os.pipe()
        self.process = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-nolisten", "tcp", "-ac", "-fbdir", str(tmp),
                                         "-screen", "0", "640x480x24"], pass_fds=(write,),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(write)
        number = b""
        deadline = time.monotonic() + 10
        while not number.endswith(b"\n") and time.monotonic() < deadline:
            chunk = os.read(read, 16)
            if not chunk:
                break
            number += chunk
        os.close(read)
        assert number.strip(), "Xvfb did not start"
        self.name = ":" + number.decode().strip()

    def key(self, *args):
        subprocess.run(["xdotool", *args], env={"DISPLAY": self.name, "PATH": "/usr/bin:/bin"}, check=True, timeout=10)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


class Agent:
    def __init__(self, install):
        self.dir = install.tmp / "agent"
        self.dir.mkdir(mode=0o755)
        self.socket = self.dir / "agent.sock"
        with open(install.conf, "a") as conf:
            conf.write("agent_socket = %s\n" % self.socket)
        self.log = self.dir / "agent.log"
        self.process = subprocess.Popen([str(install.build / "fingerauth-agent"), "--config", str(install.conf), "--stderr"],
                                        env=install.env, stdout=subprocess.DEVNULL, stderr=open(self.log, "ab"))
        self.wait_for("listening on")

    def text(self):
        return self.log.read_text(errors="replace")

    def wait_for(self, needle, timeout=15):
        deadline = time.monotonic() + timeout
        while True:
            found = [line for line in self.text().splitlines() if needle in line]
            if found:
                return found[-1]
            assert self.process.poll() is None, self.text()
            assert time.monotonic() < deadline, "no agent line with %r:\n%s" % (needle, self.text())
            time.sleep(0.05)

    def stop(self):
        self.process.terminate()
        self.process.wait(5)


@pytest.fixture
def locker_world(install, user):
    """The user enrolled, the agent running, an X display, and i3lock's PAM stack (the
    module, then the user's real password through pam_unix, which checks it for its own
    caller with unix_chkpwd) in a pam_wrapper service folder."""
    install.enroll(user, "finger-" + user.name)
    # The locker runs as the user: it must reach its PAM stack, the configuration and the
    # agent's socket in the test's folder (pytest makes the folders above it 0700).
    for folder in [install.tmp, *install.tmp.parents]:
        if folder in (Path("/"), Path("/tmp")):
            break
        os.chmod(folder, os.stat(folder).st_mode | 0o011)
    services = install.tmp / "pam-wrapper"
    services.mkdir(mode=0o755)
    (services / "i3lock").write_text("%s\nauth required pam_unix.so\naccount required pam_permit.so\n" % install.module_line())
    os.chmod(services / "i3lock", 0o644)
    agent = Agent(install)
    display = Display(install.tmp)
    lockers = []

    def lock():
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "USER": user.name, "LOGNAME": user.name,
               "DISPLAY": display.name, "LD_PRELOAD": PAM_WRAPPER, "PAM_WRAPPER": "1",
               "PAM_WRAPPER_SERVICE_DIR": str(services)}
        process = subprocess.Popen(["setpriv", "--reuid", str(user.uid), "--regid", str(user.gid), "--init-groups", "--",
                                    "i3lock", "-n"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   start_new_session=True)
        lockers.append(process)
        time.sleep(1.5)  # i3lock grabs the keyboard; it exits at once when it cannot
        assert process.poll() is None, process.stderr.read().decode(errors="replace")
        return process

    try:
        yield install, user, agent, display, lock
    finally:
        for process in lockers:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)
        display.stop()
        agent.stop()


def press_enter_until_the_reader_is_armed(install, display, tries=3):
    """Return until the helper opened the virtual reader (its socket is new): a key sent
    a moment before i3lock's grab would be lost."""
    seen = install.reader._inode()
    for _ in range(tries):
        display.key("key", "Return")
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            if install.reader._inode() not in (None, seen):
                return
            time.sleep(0.02)
    raise AssertionError("Enter never armed the reader")


def test_i3lock_unlocks_with_the_right_finger(locker_world, observe):
    """locker: i3lock as the user, Enter, the right finger -> unlocked (through the agent)"""
    install, user, agent, display, lock = locker_world
    locker = lock()
    install.feed("finger-" + user.name)
    press_enter_until_the_reader_is_armed(install, display)
    install.fed()
    assert locker.wait(15) == 0
    line = agent.wait_for("result=PAM_SUCCESS")
    assert "service=i3lock user=%s" % user.name in line and "uid=%d" % user.uid in line, line
    assert install.login_rows(user)[-1]["outcome"] == "accept"
    observe("i3lock exit 0; agent: " + line.split("]: ", 1)[-1])


def test_i3lock_wrong_finger_then_the_password_unlocks(locker_world, observe):
    """locker: i3lock, the password typed, Enter, the wrong finger 3x -> the password unlocks it"""
    install, user, agent, display, lock = locker_world
    locker = lock()
    display.key("type", "--delay", "15", user.password)
    install.feed("finger-nobody", "finger-nobody", "finger-nobody")
    press_enter_until_the_reader_is_armed(install, display)
    install.fed()
    assert locker.wait(20) == 0
    line = agent.wait_for("result=PAM_MAXTRIES")
    assert "service=i3lock user=%s" % user.name in line, line
    observe("i3lock exit 0 after pam_unix; agent: " + line.split("]: ", 1)[-1])


def test_i3lock_stays_locked_with_the_wrong_finger_and_a_wrong_password(locker_world, observe):
    """locker: i3lock, a wrong password, Enter, the wrong finger 3x -> still locked"""
    install, user, agent, display, lock = locker_world
    locker = lock()
    display.key("type", "--delay", "15", "not-the-password")
    install.feed("finger-nobody", "finger-nobody", "finger-nobody")
    press_enter_until_the_reader_is_armed(install, display)
    install.fed()
    agent.wait_for("result=PAM_MAXTRIES")
    with pytest.raises(subprocess.TimeoutExpired):
        locker.wait(5)  # pam_unix refused: i3lock keeps the screen locked
    observe("i3lock still running 5 s after the refusal")
