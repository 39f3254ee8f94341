"""What an admin sees of a broken or half-read setup, on this machine (issue 48, points 4
and 5): the e2e installation's settings written to the real /etc/security/fingerauth.conf
(put back as it was afterwards), a PAM service of the test's own with the module by its
absolute path and no conf= (so it reads that file), and a real sudo by a real test user.

- A typo'd key (`timout`): sudo goes on to the password, the module's syslog line (read
  from a /dev/log of the test's own, support/syslog_capture.py) names file, line, key and
  the key meant, and `fingerauth status` says the same with where the keys are.
- `sudo fingerauth status` by the user checks that user (SUDO_USER) and says so; root's
  own `fingerauth status` asks which user instead of failing root's login.
- `fingerauth status` as the user on this host: without systemd (CI) the agent's line is
  skipped, not failed, and nothing says systemctl."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from machine import PamService, SudoersDropIn

HERE = Path(__file__).resolve().parent
CAPTURE = HERE.parent / "integration" / "support" / "syslog_capture.py"
CONF = Path("/etc/security/fingerauth.conf")
MARKER = "# FingerAuth e2e test_operator_status: removed when the test ends\n"


@pytest.fixture
def setup(install, user):
    """The real configuration file, a PAM service reading it, the user's sudoers drop-in
    (sudo true through that service; `fingerauth status` without authenticating), the
    user enrolled."""
    if CONF.exists() or CONF.is_symlink():
        pytest.skip("%s exists; not touching it" % CONF)
    made_dir = not CONF.parent.exists()
    service = None
    dropin = None
    try:
        CONF.parent.mkdir(mode=0o755, exist_ok=True)
        CONF.write_text(MARKER + install.conf.read_text())
        os.chmod(CONF, 0o644)
        service = PamService("fa-e2e-status-" + user.name.split("-")[-1], [
            "#%PAM-1.0",
            "auth     sufficient %s" % install.module,
            "auth     required   pam_unix.so",
            "account  required   pam_unix.so",
            "session  required   pam_permit.so",
        ])
        dropin = SudoersDropIn(user, service.name, nopasswd=["%s status" % (install.build / "fingerauth")])
        install.enroll(user, "finger-right")
        yield install, user, service
    finally:
        if dropin is not None:
            dropin.remove()
        if service is not None:
            service.remove()
        if CONF.exists() and CONF.read_text().startswith(MARKER):
            CONF.unlink()
        if made_dir:
            try:
                CONF.parent.rmdir()
            except OSError:
                pass


def with_typo():
    text = CONF.read_text()
    assert "\ntimeout = 5\n" in text
    CONF.write_text(text.replace("\ntimeout = 5\n", "\ntimout = 5\n"))
    return CONF.read_text().splitlines().index("timout = 5") + 1


def user_command(user, cmd):
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/nonexistent", "USER": user.name, "LOGNAME": user.name,
           "LANG": "C.UTF-8", "SHELL": "/bin/sh"}
    return env, ["setpriv", "--reuid", str(user.uid), "--regid", str(user.gid), "--init-groups", "--"] + list(cmd)


def root_status(install, *args):
    """`fingerauth status` typed by root: the default configuration, no SUDO_USER."""
    return subprocess.run([str(install.build / "fingerauth"), "status", *args], env=install.env, capture_output=True,
                          text=True, timeout=60)


def test_a_typo_in_the_installed_configuration(setup, observe):
    """timout = 5 in /etc/security/fingerauth.conf: sudo takes the password, the module's log line and `fingerauth status` name the line and the key meant"""
    install, user, service = setup
    line = with_typo()
    env, cmd = user_command(user, ["sudo", "-k", "-S", "/usr/bin/true"])
    captured = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, str(CAPTURE), "--"]
                              + cmd, env=env, input=user.password + "\n", capture_output=True, text=True, timeout=120)
    assert captured.returncode == 0, captured.stderr
    report = json.loads(captured.stdout)
    assert report["returncode"] == 0, report["stderr"].replace(user.password, "***")
    assert "Place your finger" not in report["stdout"]  # the finger is off: straight to the password
    assert report["stderr"].strip() == "[sudo] password for %s:" % user.name
    logged = [m for m in report["syslog"] if "pam_fingerauth" in m]
    expected = ("configuration error, fingerprint login disabled: %s:%d: timout: unknown key; did you mean `timeout`?"
                % (CONF, line))
    assert len(logged) == 1 and logged[0].endswith(expected), logged
    assert "pam_fingerauth(%s:auth)" % service.name in logged[0], logged

    done = root_status(install, "--user", user.name)
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
    install, user, _ = setup
    env, cmd = user_command(user, ["sudo", "-n", str(install.build / "fingerauth"), "status"])
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines[0] == "fingerauth status for %s (who ran sudo; --user NAME checks another)" % user.name
    marks = {text.split()[1]: text.split()[0] for text in lines if text.startswith("[")}
    assert marks["enrolled"] == marks["key"] == marks["registered"] == marks["config"] == "[ok]", done.stdout
    assert "[FAIL]" not in done.stdout
    assert lines[-1] == "fingerprint login for %s: ready" % user.name

    asked = root_status(install)
    assert (asked.returncode, asked.stdout) == (2, ""), asked
    assert asked.stderr.startswith("fingerauth: status as root checks one user's fingerprint login: which one? "
                                   "fingerauth status --user NAME\n"), asked.stderr
    assert asked.stderr.splitlines()[-1] == "  users with FingerAuth state here: %s" % user.name
    observe("sudo: %r ... %r; root: %r" % (lines[0], lines[-1], asked.stderr.splitlines()[0]))


def test_status_as_the_user_on_this_host(setup, observe):
    """fingerauth status as the user: without systemd the agent is skipped, not failed, and no systemctl advice; exit 0"""
    install, user, _ = setup
    env, cmd = user_command(user, [str(install.build / "fingerauth"), "status"])
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    lines = done.stdout.splitlines()
    agent = [text for text in lines if text.startswith("[") and text.split()[1] == "agent"]
    if os.path.isdir("/run/systemd/system"):
        # A machine run by systemd: no agent is a failure there, with systemd's fix.
        assert done.returncode == 1 and "systemctl enable --now fingerauth-agent.socket" in done.stdout, done.stdout
    else:
        assert done.returncode == 0, done.stdout + done.stderr
        assert "systemctl" not in done.stdout and "[FAIL]" not in done.stdout, done.stdout
        assert agent and agent[0].startswith("[skip] agent") and "no systemd on this host" in agent[0], lines
        assert lines[-1] == "fingerprint unlock for %s: no agent on this host (sudo and login do not need it)" % user.name
    observe("exit %d; %s" % (done.returncode, agent[0] if agent else lines))
