"""What an admin sees of a broken or half-read setup, on this machine (issue 48, points 4
and 5): the e2e installation's settings as /etc/security/fingerauth.conf — in a mount
namespace of each command's own, where a copy of /etc/security is bound over the real one
(nothing on the machine changes, and another test installing the package meanwhile does
not see it or change it) — read by a PAM service with the module by its absolute path and
no conf=, and a real sudo by a real test user.

- A typo'd key (`timout`): sudo goes on to the password, the module's syslog line (read
  from a /dev/log of the test's own, support/syslog_capture.py) names file, line, key and
  the key meant, and `fingerauth status` says the same with where the keys are.
- `sudo fingerauth status` by the user checks that user (SUDO_USER) and says so; root's
  own `fingerauth status` asks which user instead of failing root's login.
- `fingerauth status` as the user on this host: without systemd (CI) the agent's line is
  skipped, not failed, and nothing says systemctl."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from machine import PamService, SudoersDropIn

HERE = Path(__file__).resolve().parent
CAPTURE = HERE.parent / "integration" / "support" / "syslog_capture.py"
CONF = Path("/etc/security/fingerauth.conf")


class Setup:
    """The copy of /etc/security with the installation's fingerauth.conf, and the prefix
    that runs a command with it at /etc/security."""

    def __init__(self, install, user, service):
        self.install, self.user, self.service = install, user, service
        self.security = install.tmp / "etc-security"
        shutil.copytree("/etc/security", self.security, symlinks=True)
        self.conf = self.security / "fingerauth.conf"
        self.conf.write_text(install.conf.read_text())
        os.chmod(self.conf, 0o644)

    def inside(self, cmd):
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                'mount --bind "$0" /etc/security || exit 91\nexec "$@"', str(self.security)] + list(cmd)

    def with_typo(self):
        text = self.conf.read_text()
        assert "\ntimeout = 5\n" in text
        self.conf.write_text(text.replace("\ntimeout = 5\n", "\ntimout = 5\n"))
        return self.conf.read_text().splitlines().index("timout = 5") + 1

    def as_user(self, cmd, before=(), **kw):
        """`cmd` as the test user (setpriv, a clean environment), in the namespace; `before`:
        a command prefix that runs as root first (the syslog capture)."""
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/nonexistent", "USER": self.user.name,
               "LOGNAME": self.user.name, "LANG": "C.UTF-8", "SHELL": "/bin/sh"}
        full = self.inside(list(before) + ["setpriv", "--reuid", str(self.user.uid), "--regid", str(self.user.gid),
                                           "--init-groups", "--"] + list(cmd))
        if "input" not in kw:
            kw["stdin"] = subprocess.DEVNULL
        return subprocess.run(full, env=env, capture_output=True, text=True, timeout=120, **kw)

    def root_status(self, *args):
        """`fingerauth status` typed by root: the default configuration, no SUDO_USER."""
        return subprocess.run(self.inside([str(self.install.build / "fingerauth"), "status", *args]),
                              env=self.install.env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def setup(install, user):
    """A PAM service reading /etc/security/fingerauth.conf, the user's sudoers drop-in (sudo
    true through that service; `fingerauth status` without authenticating), the user
    enrolled."""
    service = PamService("fa-e2e-status-" + user.name.split("-")[-1], [
        "#%PAM-1.0",
        "auth     sufficient %s" % install.module,
        "auth     required   pam_unix.so",
        "account  required   pam_unix.so",
        "session  required   pam_permit.so",
    ])
    try:
        dropin = SudoersDropIn(user, service.name, nopasswd=["%s status" % (install.build / "fingerauth")])
        try:
            install.enroll(user, "finger-right")
            yield Setup(install, user, service)
        finally:
            dropin.remove()
    finally:
        service.remove()


def test_a_typo_in_the_installed_configuration(setup, observe):
    """timout = 5 in /etc/security/fingerauth.conf: sudo takes the password, the module's log line and `fingerauth status` name the line and the key meant"""
    user = setup.user
    line = setup.with_typo()
    captured = setup.as_user(["sudo", "-k", "-S", "/usr/bin/true"], before=[sys.executable, str(CAPTURE), "--"],
                             input=user.password + "\n")
    assert captured.returncode == 0, captured.stderr
    report = json.loads(captured.stdout)
    assert report["returncode"] == 0, report["stderr"].replace(user.password, "***")
    assert "Place your finger" not in report["stdout"]  # the finger is off: straight to the password
    assert report["stderr"].strip() == "[sudo] password for %s:" % user.name
    logged = [m for m in report["syslog"] if "pam_fingerauth" in m]
    expected = ("configuration error, fingerprint login disabled: %s:%d: timout: unknown key; did you mean `timeout`?"
                % (CONF, line))
    assert len(logged) == 1 and logged[0].endswith(expected), logged
    assert "pam_fingerauth(%s:auth)" % setup.service.name in logged[0], logged

    done = setup.root_status("--user", user.name)
    assert done.returncode == 1 and done.stderr == "", done.stdout + done.stderr
    lines = done.stdout.splitlines()
    [at] = [i for i, text in enumerate(lines) if text.startswith("[FAIL] config")]
    assert lines[at].endswith("configuration: %s:%d: timout: unknown key; did you mean `timeout`? (fix it in %s; the "
                              "keys: fingerauth.conf(5))" % (CONF, line, CONF)), lines[at]
    assert lines[at + 1].strip().startswith("fix: correct it in %s (every key: man 5 fingerauth.conf)" % CONF)
    assert lines[-1] == "fingerprint login for %s: blocked by config" % user.name
    observe("sudo: password, exit 0; log: ...%s; status: %s" % (expected[-60:], lines[at][-90:]))


def test_status_as_root_checks_the_sudo_caller_or_asks(setup, observe):
    """sudo fingerauth status by the user -> that user's checklist, said so; root's own fingerauth status -> which user? (exit 2), not root's [FAIL] enrolled/key"""
    user = setup.user
    done = setup.as_user(["sudo", "-n", str(setup.install.build / "fingerauth"), "status"])
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines[0] == "fingerauth status for %s (who ran sudo; --user NAME checks another)" % user.name
    marks = {text.split()[1]: text.split()[0] for text in lines if text.startswith("[")}
    assert marks["enrolled"] == marks["key"] == marks["registered"] == marks["config"] == "[ok]", done.stdout
    assert "[FAIL]" not in done.stdout
    assert lines[-1] == "fingerprint login for %s: ready" % user.name

    asked = setup.root_status()
    assert (asked.returncode, asked.stdout) == (2, ""), asked
    assert asked.stderr.startswith("fingerauth: status as root checks one user's fingerprint login: which one? "
                                   "fingerauth status --user NAME\n"), asked.stderr
    assert asked.stderr.splitlines()[-1] == "  users with FingerAuth state here: %s" % user.name
    observe("sudo: %r ... %r; root: %r" % (lines[0], lines[-1], asked.stderr.splitlines()[0]))


def test_status_as_the_user_on_this_host(setup, observe):
    """fingerauth status as the user: without systemd the agent is skipped, not failed, and no systemctl advice; exit 0"""
    done = setup.as_user([str(setup.install.build / "fingerauth"), "status"])
    lines = done.stdout.splitlines()
    agent = [text for text in lines if text.startswith("[") and text.split()[1] == "agent"]
    if os.path.isdir("/run/systemd/system"):
        # A machine run by systemd: no agent is a failure there, with systemd's fix.
        assert done.returncode == 1 and "systemctl enable --now fingerauth-agent.socket" in done.stdout, done.stdout
    else:
        assert done.returncode == 0, done.stdout + done.stderr
        assert "systemctl" not in done.stdout and "[FAIL]" not in done.stdout, done.stdout
        assert agent and agent[0].startswith("[skip] agent") and "no systemd on this host" in agent[0], lines
        assert lines[-1] == ("fingerprint unlock for %s: no agent on this host (sudo and login do not need it)"
                             % setup.user.name)
    observe("exit %d; %s" % (done.returncode, agent[0] if agent else lines))
