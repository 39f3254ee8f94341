"""`prompt = parallel` with real `login` on a pseudo-terminal made by the test. login
always uses the PAM service `login`; pam_wrapper (LD_PRELOAD, login runs as root, not
setuid) points it at a pam.d folder of the test's own, so /etc/pam.d/login is never read.
login sets PAM_TTY to `pts/N`, without `/dev/`. (su is setuid: pam_wrapper cannot redirect
it, so login stands for the misc_conv hosts.)"""

import time

import pytest

from terminal import Terminal

PAM_WRAPPER = "/usr/lib/x86_64-linux-gnu/libpam_wrapper.so"
PROMPT = "Password or place your finger:"
MARK = "FA-LOGGED-IN-"


@pytest.fixture
def login_stack(install, user):
    pamd = install.tmp / "pam.d"
    pamd.mkdir()
    (pamd / "login").write_text("\n".join([
        install.module_line("prompt=parallel", "debug"),
        "auth     required  pam_unix.so",
        "account  required  pam_unix.so",
        "session  required  pam_permit.so",
    ]) + "\n")
    # pam_wrapper looks for `other` too; deny everything there.
    (pamd / "other").write_text("auth required pam_deny.so\naccount required pam_deny.so\n")
    install.enroll(user, "finger-right")
    env = {"LD_PRELOAD": PAM_WRAPPER, "PAM_WRAPPER": "1", "PAM_WRAPPER_SERVICE_DIR": str(pamd)}
    terms = []

    def start():
        t = Terminal(user, ["login", user.name], env=env, as_root=True)
        terms.append(t)
        return t
    try:
        yield install, user, start
    finally:
        for t in terms:
            t.close()


def logged_in(term):
    """Waits for login to start the user's shell (it says so: the home folder is
    /nonexistent), then asks it for a line only a shell computes."""
    if not term.wait_for("logging in with HOME=/", timeout=20):
        return False
    term.type("echo %s$((6*7)); exit\n" % MARK)
    return term.wait_for(MARK + "42", timeout=20)


def test_login_parallel_finger(login_stack, observe):
    """login, parallel: the finger without typing -> logged in; one prompt"""
    install, user, start = login_stack
    install.feed("finger-right")
    term = start()
    assert term.wait_for(PROMPT), term.screen
    install.fed()
    ok = logged_in(term)
    term.finish(timeout=20)
    line = [l for l in install.log_lines() if "service=login" in l][-1:]
    observe("screen %r; log %r" % (term.screen, line))
    assert ok, term.screen
    assert term.screen.count(PROMPT) == 1 and "Login incorrect" not in term.screen
    assert line and "result=PAM_SUCCESS" in line[0]


def test_login_parallel_password(login_stack, observe):
    """login, parallel: the password typed while the reader waits -> logged in; one prompt; handed to pam_unix"""
    install, user, start = login_stack
    term = start()
    assert term.wait_for(PROMPT), term.screen
    time.sleep(1.0)
    term.type(user.password + "\n")
    ok = logged_in(term)
    term.finish(timeout=20)
    line = [l for l in install.log_lines() if "service=login" in l][-1:]
    observe("screen %r; log %r" % (term.screen.replace(user.password, "***"), line))
    assert ok, term.screen.replace(user.password, "***")
    assert term.screen.count(PROMPT) == 1 and "Password:" not in term.screen
    assert line and "password typed at the parallel prompt, handed to the next module" in line[0]
    assert user.password not in term.screen and user.password not in install.module_log.read_text()
