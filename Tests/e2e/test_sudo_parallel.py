"""`prompt = parallel` with real sudo on a pseudo-terminal made by the test: one prompt,
"Password or place your finger: ", that ends either with the finger (the helper injects
one newline after the authenticator accepted) or with the password (handed to pam_unix
as PAM_AUTHTOK: `try_first_pass`, as pam-auth-update writes it; a by-hand line without it is
tested too). The stack is the module then pam_unix, through a
sudoers drop-in (`pam_service=`), never /etc/pam.d/sudo."""

import os
import subprocess
import time
from pathlib import Path

import pytest

from machine import PamService, SudoersDropIn
from terminal import Terminal

PROMPT = "Password or place your finger:"
SORRY = "Sorry, try again."


@pytest.fixture
def parallel(install, user):
    service = PamService("fa-e2e-par-" + user.name.split("-")[-1], [
        "#%PAM-1.0",
        install.module_line("prompt=parallel", "debug"),
        "auth     required  pam_unix.so try_first_pass",
        "account  required  pam_unix.so",
        "session  required  pam_permit.so",
    ])
    try:
        dropin = SudoersDropIn(user, service.name)
        try:
            install.enroll(user, "finger-right")
            yield install, user
        finally:
            dropin.remove()
    finally:
        service.remove()


@pytest.fixture
def sudo_on_tty(parallel):
    install, user = parallel
    terms = []

    def start(*args):
        t = Terminal(user, ["sudo", "-k", *args, "true"])
        terms.append(t)
        return t
    try:
        yield install, user, start
    finally:
        for t in terms:
            t.close()


def helpers_running(install):
    """Login helpers of this build still alive (by their executable, not their name)."""
    helper = str(install.build / "fingerauth-login")
    alive = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.readlink("/proc/%s/exe" % pid) == helper:
                    alive.append(int(pid))
            except OSError:
                pass
    return alive


def files_containing(root, secret):
    hits = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            try:
                if path.is_file() and not path.is_socket() and secret.encode() in path.read_bytes():
                    hits.append(str(path))
            except OSError:
                pass
    return hits


def test_parallel_finger_without_typing_runs_sudo(sudo_on_tty, observe):
    """parallel: the finger on the reader, nothing typed -> sudo runs; one prompt, no 'Sorry, try again'"""
    install, user, start = sudo_on_tty
    install.feed("finger-right")
    term = start()
    status = term.finish(timeout=30)
    install.fed()
    observe("exit %d; screen %r" % (status, term.screen))
    assert status == 0, term.screen
    assert term.screen.count(PROMPT) == 1 and SORRY not in term.screen
    assert "[sudo] password for" not in term.screen
    assert "result=PAM_SUCCESS" in install.log_lines()[-1]
    [row] = install.login_rows(user)
    assert row["outcome"] == "accept"
    assert helpers_running(install) == []


def test_parallel_password_typed_while_the_reader_waits(sudo_on_tty, observe):
    """parallel: the password typed while the reader waits -> sudo runs with one prompt; pam_unix took it; helper gone; password nowhere"""
    install, user, start = sudo_on_tty
    term = start()
    assert term.wait_for(PROMPT), term.screen
    time.sleep(1.0)  # the helper is up and the reader waits
    assert helpers_running(install), "the helper should be scanning while the prompt is pending"
    term.type(user.password + "\n")
    argv = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    status = term.finish(timeout=30)
    line = install.log_lines()[-1]
    observe("exit %d; screen %r; log %r" % (status, term.screen.replace(user.password, "***"), line))
    assert status == 0, term.screen.replace(user.password, "***")
    assert term.screen.count(PROMPT) == 1 and "[sudo] password for" not in term.screen and SORRY not in term.screen
    assert "result=PAM_AUTHINFO_UNAVAIL" in line and "password typed at the parallel prompt, handed to the next module" in line
    assert helpers_running(install) == []
    assert install.login_rows(user) == []
    assert user.password not in argv
    assert files_containing(install.tmp, user.password) == []
    assert user.password not in term.screen  # echo was off


def test_parallel_wrong_password_then_the_right_one(sudo_on_tty, observe):
    """parallel: a wrong password -> 'Sorry, try again' and the same prompt again; the right one then runs sudo"""
    install, user, start = sudo_on_tty
    term = start()
    assert term.wait_for(PROMPT), term.screen
    term.type("not-the-password\n")
    assert term.wait_for(SORRY), term.screen
    deadline = time.monotonic() + 20
    while term.screen.count(PROMPT) < 2 and time.monotonic() < deadline:
        term._read(0.2)
    assert term.screen.count(PROMPT) == 2, term.screen
    term.type(user.password + "\n")
    status = term.finish(timeout=30)
    observe("exit %d; screen %r" % (status, term.screen.replace(user.password, "***")))
    assert status == 0
    assert term.screen.count(SORRY) == 1 and "[sudo] password for" not in term.screen
    assert helpers_running(install) == []


def test_parallel_empty_line_goes_on_to_the_password_prompt(sudo_on_tty, observe):
    """parallel: Enter on an empty line -> the helper stops, pam_unix asks as today; the password runs sudo"""
    install, user, start = sudo_on_tty
    term = start()
    assert term.wait_for(PROMPT), term.screen
    time.sleep(0.5)
    term.type("\n")
    asked = "[sudo] password for %s:" % user.name
    assert term.wait_for(asked), term.screen
    line = install.log_lines()[-1]
    assert helpers_running(install) == []
    term.type(user.password + "\n")
    status = term.finish(timeout=30)
    observe("exit %d; screen %r; log %r" % (status, term.screen.replace(user.password, "***"), line))
    assert status == 0
    assert term.screen.count(PROMPT) == 1 and term.screen.count(asked) == 1
    assert "result=PAM_AUTHINFO_UNAVAIL" in line and "empty answer at the parallel prompt" in line


def test_parallel_three_wrong_fingers_then_the_password(sudo_on_tty, observe):
    """parallel: a wrong finger 3 times, then the right password -> sudo runs, one prompt"""
    install, user, start = sudo_on_tty
    install.feed("finger-wrong", "finger-wrong", "finger-wrong")
    term = start()
    assert term.wait_for(PROMPT), term.screen
    install.fed()
    time.sleep(0.5)
    term.type(user.password + "\n")
    status = term.finish(timeout=30)
    line = install.log_lines()[-1]
    observe("exit %d; screen %r; log %r" % (status, term.screen.replace(user.password, "***"), line))
    assert status == 0
    assert term.screen.count(PROMPT) == 1 and SORRY not in term.screen
    assert "no match, too many tries" in line
    assert install.login_rows(user) == []


def test_parallel_authenticator_down_still_takes_the_password_at_once(sudo_on_tty, observe):
    """parallel, authenticator stopped: the prompt comes at once and takes the password"""
    install, user, start = sudo_on_tty
    install.authd.stop()
    started = time.monotonic()
    term = start()
    assert term.wait_for(PROMPT), term.screen
    shown = time.monotonic() - started
    term.type(user.password + "\n")
    status = term.finish(timeout=30)
    line = install.log_lines()[-1]
    observe("exit %d; prompt after %.1fs; screen %r; log %r" % (status, shown, term.screen.replace(user.password, "***"), line))
    assert status == 0
    assert shown < 3
    assert "password typed at the parallel prompt" in line
    assert term.screen.count(PROMPT) == 1 and "[sudo] password for" not in term.screen


def test_parallel_reader_absent_still_takes_the_password(sudo_on_tty, observe):
    """parallel, no reader (virtual_reader names a missing socket folder): the prompt takes the password"""
    install, user, start = sudo_on_tty
    text = install.conf.read_text().replace(install.reader.path, str(install.tmp / "no-such-dir" / "virtual.sock"))
    install.conf.write_text(text)
    term = start()
    assert term.wait_for(PROMPT), term.screen
    time.sleep(1.0)
    term.type(user.password + "\n")
    status = term.finish(timeout=30)
    line = install.log_lines()[-1]
    observe("exit %d; screen %r; log %r" % (status, term.screen.replace(user.password, "***"), line))
    assert status == 0
    assert term.screen.count(PROMPT) == 1 and SORRY not in term.screen
    assert "password typed at the parallel prompt, handed to the next module (reader:" in line


def test_parallel_sudo_S_stays_sequential(parallel, observe):
    """parallel configured, `sudo -S` with the password on stdin: the sequential prompts, the password runs sudo"""
    install, user = parallel
    install.feed("finger-wrong", "finger-wrong", "finger-wrong")
    done = user.as_user(["sudo", "-k", "-S", "true"], stdin_text=user.password + "\n")
    install.fed()
    observe("exit %d; stdout %r" % (done.returncode, done.stdout))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Place your finger on the fingerprint reader\n")
    assert PROMPT not in done.stdout + done.stderr
    assert "[sudo] password for %s:" % user.name in done.stderr


def test_parallel_by_hand_stack_without_try_first_pass_asks_once(install, user, observe):
    """parallel, by-hand stack `pam_unix.so nullok` (no try_first_pass): Debian 12's pam_unix still takes the handed-on password, one prompt"""
    service = PamService("fa-e2e-pnt-" + user.name.split("-")[-1], [
        "#%PAM-1.0",
        install.module_line("prompt=parallel"),
        "auth     required  pam_unix.so nullok",
        "account  required  pam_unix.so",
        "session  required  pam_permit.so",
    ])
    dropin = None
    term = None
    try:
        dropin = SudoersDropIn(user, service.name)
        install.enroll(user, "finger-right")
        term = Terminal(user, ["sudo", "-k", "true"])
        assert term.wait_for(PROMPT), term.screen
        time.sleep(0.5)
        term.type(user.password + "\n")
        status = term.finish(timeout=30)
        line = install.log_lines()[-1]
        observe("exit %d; screen %r; log %r" % (status, term.screen.replace(user.password, "***"), line))
        assert status == 0
        assert term.screen.count(PROMPT) == 1 and "password for" not in term.screen and SORRY not in term.screen
        assert "handed to the next module" in line
    finally:
        if term is not None:
            term.close()
        if dropin is not None:
            dropin.remove()
        service.remove()
