"""What the admin reads: one syslog line per attempt at LOG_AUTHPRIV with user, service,
result, reason, kid and jti; step lines with `debug`; never a key, token or JWT."""

import json
import os
import subprocess

import pytest

from support.module_syslog import LOG_AUTHPRIV, SEVERITY, login_with_syslog, namespaces_work, parse

pytestmark = pytest.mark.skipif(not namespaces_work(), reason="mount namespaces are not allowed here")


def test_one_authpriv_line_per_attempt(world):
    world.enroll("alice", "finger-A")
    world.write_conf(debug_file=None)
    report = login_with_syslog(world, world.service("fa-only", fallback=False), scans=["finger-A"])
    lines = [parse(m) for m in report["syslog"] if "pam_fingerauth" in m]
    assert len(lines) == 1, report["syslog"]
    priority, text = lines[0]
    assert priority == LOG_AUTHPRIV | SEVERITY["info"], priority
    kid = json.loads(world.cli("key", "show", "--user", "alice", "--json").stdout)["kid"]
    for part in ("service=fa-only", "user=alice", "result=PAM_SUCCESS", "kid=" + kid, "jti=", "finger=right-index-finger"):
        assert part in text, text


def test_failure_is_logged_at_notice_with_its_reason(world):
    world.enroll("alice", "finger-A")
    world.write_conf(debug_file=None)
    world.authd.stop()
    report = login_with_syslog(world, world.service("fa-only", fallback=False))
    [(priority, text)] = [parse(m) for m in report["syslog"] if "pam_fingerauth" in m]
    assert priority == LOG_AUTHPRIV | SEVERITY["notice"]
    assert "result=PAM_AUTHINFO_UNAVAIL" in text and "cannot connect to the authenticator" in text


def test_debug_adds_step_lines_without_secrets(world):
    world.enroll("alice", "finger-A")
    world.write_conf(debug_file=None, debug="yes")
    report = login_with_syslog(world, world.service("fa-only", fallback=False), scans=["finger-A"])
    lines = [parse(m) for m in report["syslog"] if "pam_fingerauth" in m]
    steps = [text for priority, text in lines if priority == LOG_AUTHPRIV | SEVERITY["debug"]]
    assert any("login helper: READY" in s for s in steps) and any("enrolled; jti " in s for s in steps), steps
    assert any("login helper: ACCEPTED " in s for s in steps), steps
    everything = "\n".join(text for _, text in lines)
    assert "eyJ" not in everything and "PRIVATE KEY" not in everything  # no JWT, no key
    assert world.token_path.read_text().strip() not in everything


def test_configuration_error_names_the_key(world):
    world.enroll("alice", "finger-A")
    world.write_conf(debug_file=None, max_tries="eleven")
    report = login_with_syslog(world, world.service("fa-only", fallback=False))
    [(priority, text)] = [parse(m) for m in report["syslog"] if "pam_fingerauth" in m]
    assert priority == LOG_AUTHPRIV | SEVERITY["err"]
    assert "max_tries" in text and "configuration error" in text


def test_a_typo_in_a_key_names_the_file_line_key_and_the_key_meant(world):
    """`timout = 5` in fingerauth.conf: the login is PAM_SERVICE_ERR (the stack goes on to
    the password) and the one line says where, which key, and the key meant."""
    world.enroll("alice", "finger-A")
    world.write_conf(debug_file=None)
    world.conf_path.write_text(world.conf_path.read_text().replace("timeout = 5", "timout = 5"))
    line_number = world.conf_path.read_text().splitlines().index("timout = 5") + 1
    report = login_with_syslog(world, world.service("fa-only", fallback=False))
    assert "PAM_SERVICE_ERR" in report["stdout"], report
    [(priority, text)] = [parse(m) for m in report["syslog"] if "pam_fingerauth" in m]
    assert priority == LOG_AUTHPRIV | SEVERITY["err"]
    assert text.endswith("configuration error, fingerprint login disabled: %s:%d: timout: unknown key; "
                         "did you mean `timeout`?" % (world.conf_path, line_number)), text


def test_debug_file_gets_the_steps_instead_of_syslog(world):
    world.enroll("alice", "finger-A")
    report = login_with_syslog(world, world.service("fa-only", fallback=False), scans=["finger-A"])
    syslog_lines = [m for m in report["syslog"] if "pam_fingerauth" in m]
    assert len(syslog_lines) == 1 and "debug:" not in syslog_lines[0]
    file_lines = world.log_lines()
    assert any("debug: login helper: MATCH right-index-finger" in line for line in file_lines), file_lines
    assert "result=PAM_SUCCESS" in file_lines[-1]
    assert os.stat(world.module_log).st_mode & 0o777 == 0o600


def test_a_callers_file_size_limit_never_kills_the_host_through_the_debug_file(world):
    """The caller of a setuid host sets RLIMIT_FSIZE; a debug_file that already holds lines
    would make the module's next append raise SIGXFSZ and end sudo or su with it. Before:
    the host died of SIGXFSZ (signal 25) while appending. Now the line is dropped, the
    login ends with its own code and the file is unchanged."""
    world.enroll("alice", "finger-A")
    world.write_conf()
    world.module_log.write_text("an earlier line\n")
    os.chmod(world.module_log, 0o600)
    size = world.module_log.stat().st_size
    world.authd.stop()
    done = subprocess.run(["prlimit", "--fsize=%d" % size, "--", str(world.build / "fa-pamtest"), "--confdir",
                           str(world.confdir), "--service", world.service("fa-only", fallback=False), "--user", "alice"],
                          env=world.env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert done.stdout.splitlines()[-1] == "RESULT 9 PAM_AUTHINFO_UNAVAIL", done.stdout
    assert world.module_log.stat().st_size == size
