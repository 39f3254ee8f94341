"""What the caller controls: the user name (people type passwords into it), the
environment (inside sudo it is the user's), and whether the session is remote."""

import pytest

from support.fakeauth import closed_port_url


def only_module(world):
    return world.service("fa-only", fallback=False)


@pytest.mark.parametrize("name", ["..", "a/b", "../../etc/shadow", "x" * 300, "-rf", "al ice", "alice\tx"])
def test_malformed_user_name(world, name):
    world.enroll("alice", "finger-A")
    result = world.login(name, service=only_module(world))
    assert result.name == "PAM_USER_UNKNOWN", result
    assert result.infos == [] and result.errors == [] and result.prompts == []
    line = world.log_lines()[-1]
    assert "result=PAM_USER_UNKNOWN" in line and "user=" not in line and name not in line


def test_empty_user_name(world):
    result = world.login("", service=only_module(world))
    assert result.name in ("PAM_USER_UNKNOWN", "PAM_CONV_ERR"), result
    assert result.name != "PAM_SUCCESS"


def test_user_unknown_to_the_system(world):
    result = world.login("nobody-here", service=only_module(world))
    assert result.name == "PAM_USER_UNKNOWN", result
    assert "nobody-here" not in world.log_lines()[-1]


HOSTILE_ENVIRONMENT = {
    "FP_VIRTUAL_DEVICE": "/tmp/attacker.sock",
    "FP_VIRTUAL_IMAGE": "/tmp/attacker-image.sock",
    "FP_DRIVERS_ALLOWLIST": "nothing",
    "PATH": "/tmp/attacker-bin",
    "G_DEBUG": "fatal-warnings,fatal-criticals",
    "G_MESSAGES_DEBUG": "all",
    "G_SLICE": "always-malloc",
    "GIO_MODULE_DIR": "/tmp/attacker-gio",
    "OPENSSL_CONF": "/tmp/attacker-openssl.cnf",
    "OPENSSL_MODULES": "/tmp/attacker-modules",
    "CURL_HOME": "/tmp/attacker-curl",
    "HOME": "/tmp/attacker-home",
}


def test_callers_environment_changes_nothing(world, tmp_path):
    world.enroll("alice", "finger-A")
    (tmp_path / "evil.cnf").write_text("this is not an openssl config [[[\n")
    env = dict(HOSTILE_ENVIRONMENT, OPENSSL_CONF=str(tmp_path / "evil.cnf"),
               LD_PRELOAD=world.env["LD_PRELOAD"] + " /tmp/attacker-lib.so")
    right = world.login("alice", scans=["finger-A"], env=env, service=only_module(world))
    assert right.name == "PAM_SUCCESS", right
    wrong = world.login("alice", scans=["finger-B"] * 3, env=env, service=only_module(world))
    assert wrong.name == "PAM_MAXTRIES", wrong


def test_certificate_variables_do_not_replace_the_configured_trust(world):
    # Without cafile the module trusts the system CAs only; the caller's variables that
    # name our test CA must not make the authenticator's certificate acceptable.
    world.enroll("alice", "finger-A")
    world.write_conf(cafile=None)
    env = {"SSL_CERT_FILE": world.ca.ca_cert, "CURL_CA_BUNDLE": world.ca.ca_cert, "SSL_CERT_DIR": str(world.tmp)}
    result = world.login("alice", env=env, service=only_module(world))  # fails before the finger is asked
    assert result.name == "PAM_AUTHINFO_UNAVAIL" and result.infos == [], result
    assert "TLS failure" in world.log_lines()[-1]


@pytest.mark.parametrize("rhost", ["10.1.2.3", "127.0.0.1", "localhost", "host.example"])
def test_remote_sessions_are_skipped(world, rhost):
    world.enroll("alice", "finger-A")
    result = world.login("alice", rhost=rhost, service=only_module(world))
    assert result.name == "PAM_IGNORE", result
    assert result.infos == [] and result.errors == []
    assert 'reason="remote session skipped (PAM_RHOST %s)"' % rhost in world.log_lines()[-1]


def test_ssh_session_is_skipped(world):
    world.enroll("alice", "finger-A")
    env = {"SSH_CONNECTION": "10.1.2.3 50000 10.1.2.4 22"}
    assert world.login("alice", env=env, service=only_module(world)).name == "PAM_IGNORE"
    assert "remote session skipped (SSH variables in the environment)" in world.log_lines()[-1]


def test_remote_allow_runs_for_remote_sessions(world):
    world.enroll("alice", "finger-A")
    service = world.service("fa-remote", module_args="remote=allow", fallback=False)
    assert world.login("alice", scans=["finger-A"], rhost="10.1.2.3", service=service).name == "PAM_SUCCESS"


def test_disabled_module_is_ignored(world):
    world.enroll("alice", "finger-A")
    service = world.service("fa-off", module_args="disabled", fallback=False)
    result = world.login("alice", service=service)
    assert result.name == "PAM_IGNORE" and result.infos == [], result


def test_arguments_override_the_file(world):
    world.enroll("alice", "finger-A")
    service = world.service("fa-args", module_args="url=%s/v1/login" % closed_port_url(), fallback=False)
    result = world.login("alice", service=service)  # the closed port: no finger is asked
    assert result.name == "PAM_AUTHINFO_UNAVAIL", result
