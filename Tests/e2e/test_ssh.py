"""Real sshd on a loopback port, started through a symlink named fa-e2e-sshd-… so that it
reads /etc/pam.d/fa-e2e-sshd-… (never /etc/pam.d/sshd), with keyboard-interactive
authentication through PAM only. The real ssh client logs in as a real test user."""

import pytest

from conftest import PLACE_FINGER
from machine import PamService, Sshd


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
    assert lines and all('reason="remote session skipped"' in l and "result=PAM_IGNORE" in l for l in lines[-2:])


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
