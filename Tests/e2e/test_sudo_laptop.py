"""Real sudo on a laptop's terms, as a real test user through a PAM service of the test's own
(module, then pam_unix):

- `reader = fprintd`: Debian's fprintd on a private system bus (dbus-daemon, polkitd, the
  virtual reader), the finger enrolled with `fprintd-enroll` for the real user, FingerAuth
  holding only the device key;
- the lid closed (a stand-in ACPI lid file): sudo's password prompt comes at once, without
  "Place your finger", and the module's line says why and in how many milliseconds."""

import re
import time

import pytest

from machine import PamService, SudoersDropIn
from support.fprintd import PrivateBus, device_key
from terminal import Terminal

SUDO = ["sudo", "-k", "-S", "true"]
PLACE = "Place your finger on the fingerprint reader\n"


def pam_service(install, user, tag, *module_args, password="auth     required  pam_unix.so"):
    """/etc/pam.d/fa-e2e-TAG-…: the module, then pam_unix; the user's sudo uses it."""
    service = PamService("fa-e2e-%s-%s" % (tag, user.name.split("-")[-1]), [
        "#%PAM-1.0",
        install.module_line(*module_args),
        password,
        "account  required  pam_unix.so",
        "session  required  pam_permit.so",
    ])
    try:
        dropin = SudoersDropIn(user, service.name)
    except BaseException:
        service.remove()
        raise
    return service, dropin


@pytest.fixture
def sudo_service(install, user):
    service, dropin = pam_service(install, user, "lap")
    try:
        yield service
    finally:
        dropin.remove()
        service.remove()


@pytest.fixture
def fprintd_bus(install, user):
    """fprintd on a private bus, the user's finger enrolled with fprintd-enroll, the device
    key registered, reader = fprintd on that bus."""
    bus = PrivateBus()
    try:
        bus.start()
        bus.start_fprintd()
        bus.enroll(user.name, "finger-right")
        device_key(install.cli, user.name)
        configure(install, reader="fprintd", system_bus=bus.socket)
        yield bus
    finally:
        bus.close()


def configure(install, **settings):
    """Later lines of fingerauth.conf win: the test's own settings go last."""
    with open(install.conf, "a") as conf:
        conf.write("".join("%s = %s\n" % item for item in settings.items()))


def password_prompt(user):
    return "[sudo] password for %s: " % user.name


def test_sudo_with_a_finger_enrolled_in_fprintd(install, user, sudo_service, fprintd_bus, observe):
    """sudo with reader = fprintd: a finger enrolled with fprintd-enroll -> sudo runs, no password"""
    bus = fprintd_bus
    bus.reader.feed(["SCAN finger-right"])
    done = user.as_user(SUDO)  # nothing on stdin: a password prompt would fail it
    bus.reader.wait()
    assert done.returncode == 0, done.stderr
    assert done.stdout == PLACE and done.stderr == ""
    [row] = install.login_rows(user)
    assert row["outcome"] == "accept" and row["jti"] == install.last_jti()
    released, still = bus.claims_released()
    assert released, still

    bus.reader.feed(["SCAN finger-wrong"] * 3)
    wrong = user.as_user(SUDO, stdin_text=user.password + "\n")
    bus.reader.wait()
    assert wrong.returncode == 0, wrong.stderr  # by the password
    assert wrong.stdout == PLACE + "No match, try again (2 left)\nNo match, try again (1 left)\n"
    assert wrong.stderr.strip() == password_prompt(user).strip()
    observe("finger: exit 0, no password prompt, fprintd released the reader; wrong finger x3: the password")


def test_sudo_with_the_lid_closed_asks_for_the_password_at_once(install, user, sudo_service, observe):
    """sudo with the lid closed: the password prompt at once, no finger asked, ms in the log line"""
    install.enroll(user, "finger-right")
    lid = install.tmp / "acpi-lid"
    (lid / "LID0").mkdir(parents=True)
    (lid / "LID0" / "state").write_text("state:      closed\n")
    configure(install, acpi_lid_dir=str(lid), timeout="10")
    done = user.as_user(SUDO, stdin_text=user.password + "\n")
    assert done.returncode == 0, done.stderr.replace(user.password, "***")  # by the password
    assert done.stdout == ""  # no "Place your finger"
    assert done.stderr.strip() == password_prompt(user).strip()
    line = install.log_lines()[-1]
    assert "result=PAM_AUTHINFO_UNAVAIL" in line, line
    assert 'reason="lid closed: lid closed (%s/LID0/state); no reader on an external port' % lid in line, line
    ms = int(re.search(r" ms=(\d+)", line).group(1))
    assert ms < 2000, line  # liveness: not the 10 s finger timeout
    assert install.login_rows(user) == []
    observe("exit 0 by the password; the module skipped in %d ms (lid closed)" % ms)


def test_sudo_parallel_password_while_fprintd_verifies_frees_the_reader(install, user, fprintd_bus, observe):
    """parallel prompt with reader = fprintd: the password typed while fprintd verifies -> sudo runs; fprintd's reader is free for the next login at once"""
    bus = fprintd_bus
    service, dropin = pam_service(install, user, "lpp", "prompt=parallel",
                                  password="auth     required  pam_unix.so try_first_pass")
    terms = []
    try:
        term = Terminal(user, ["sudo", "-k", "true"])
        terms.append(term)
        assert term.wait_for("Password or place your finger:"), term.screen
        bus.reader.wait_for_new_socket(timeout=10)  # fprintd opened the reader for our claim
        term.type(user.password + "\n")
        assert term.finish(timeout=30) == 0, term.screen.replace(user.password, "***")
        assert "password typed at the parallel prompt" in install.log_lines()[-1]
        # The helper was stopped with the prompt; fprintd saw its client go and released.
        bus.reader.feed(["SCAN finger-right"])
        started = time.monotonic()
        again = Terminal(user, ["sudo", "-k", "true"])
        terms.append(again)
        status = again.finish(timeout=30)
        bus.reader.wait()
        took = time.monotonic() - started
        assert status == 0, again.screen
        assert "result=PAM_SUCCESS" in install.log_lines()[-1], install.log_lines()[-1]
        observe("password: exit 0; the next sudo by finger succeeded %.2f s later" % took)
    finally:
        for t in terms:
            t.close()
        dropin.remove()
        service.remove()
