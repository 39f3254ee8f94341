"""Real sudo, as a real test user, through a PAM service of the test's own:
/etc/sudoers.d/<user> says `Defaults:<user> pam_service=fa-e2e-sudo-…`, so /etc/pam.d/sudo
is never read. The stack is the module (absolute path, conf= in the temp folder) then
pam_unix: exactly what an admin adds to /etc/pam.d/sudo.

Debian 12's sudo (1.9.13) calls pam_authenticate with PAM_SILENT. The module still shows
the scan's own prompts (sudo prints them on stdout) — nobody can use a reader they were
not asked to touch — and drops the one-line explanation when the finger path ends: the
user sees sudo's password prompt next, and the reason is in the module's log."""

import time

import pytest

from machine import SUDOERS_DIR, PamService, SudoersDropIn
from terminal import Terminal

SUDO = ["sudo", "-k", "-S", "true"]
PLACE = "Place your finger on the fingerprint reader\n"


@pytest.fixture
def sudo_setup(install, user):
    service = PamService("fa-e2e-sudo-" + user.name.split("-")[-1], [
        "#%PAM-1.0",
        install.module_line(),
        "auth     required  pam_unix.so",
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


def password_prompt(user):
    return "[sudo] password for %s: " % user.name


def test_sudo_with_the_enrolled_finger_asks_no_password(sudo_setup, observe):
    """sudo: enrolled finger on the reader, nothing on stdin -> sudo runs, no password prompt"""
    install, user = sudo_setup
    install.feed("finger-right")
    done = user.as_user(SUDO)  # stdin is empty: a password prompt would fail the command
    install.fed()
    observe("exit %d; stderr %r" % (done.returncode, done.stderr.strip()))
    assert done.returncode == 0, done.stderr
    # The prompt to touch the reader, and no password prompt.
    assert done.stdout == PLACE and done.stderr == ""
    [row] = install.login_rows(user)
    assert row["outcome"] == "accept" and row["host"] == "e2e-host"
    assert row["jti"] == install.last_jti()
    assert "service=%s" % ("fa-e2e-sudo-" + user.name.split("-")[-1]) in install.log_lines()[-1]


def test_sudo_after_three_wrong_fingers_takes_the_password(sudo_setup, observe):
    """sudo: a wrong finger 3 times -> sudo's password prompt; the right password on stdin runs sudo"""
    install, user = sudo_setup
    install.feed("finger-wrong", "finger-wrong", "finger-wrong")
    done = user.as_user(SUDO, stdin_text=user.password + "\n")
    install.fed()
    observe("exit %d; stderr %r" % (done.returncode, done.stderr.replace(user.password, "***").strip()))
    assert done.returncode == 0, done.stderr
    assert done.stdout == PLACE + "No match, try again (2 left)\nNo match, try again (1 left)\n"
    assert done.stderr.strip() == password_prompt(user).strip()  # the prompt and nothing else
    assert install.login_rows(user) == []  # no finger matched: nothing reached the authenticator
    assert "result=PAM_MAXTRIES" in install.log_lines()[-1]


def test_sudo_after_three_wrong_fingers_refuses_a_wrong_password(sudo_setup, observe):
    """sudo: a wrong finger 3 times, then a wrong password -> sudo refuses (exit 1)"""
    install, user = sudo_setup
    install.feed("finger-wrong", "finger-wrong", "finger-wrong")
    done = user.as_user(SUDO, stdin_text="not-the-password\n")
    install.fed()
    observe("exit %d; stderr %r" % (done.returncode, done.stderr.strip()))
    assert done.returncode == 1
    assert password_prompt(user) in done.stderr
    assert "incorrect password" in done.stderr or "Sorry, try again" in done.stderr


def test_sudo_with_the_authenticator_stopped_asks_the_password_at_once(sudo_setup, observe):
    """sudo: authenticator stopped -> nobody is asked for a finger; the password prompt at once (< 5 s); the password runs sudo"""
    install, user = sudo_setup
    rows_before = len(install.authd.audit_rows())
    install.authd.stop()
    started = time.monotonic()
    done = user.as_user(SUDO, stdin_text=user.password + "\n")
    elapsed = time.monotonic() - started
    observe("exit %d after %.1fs; stdout %r; stderr %r" % (done.returncode, elapsed, done.stdout,
                                                          done.stderr.replace(user.password, "***").strip()))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # no "Place your finger": the helper reached nothing, so it never said READY
    assert done.stderr.strip() == password_prompt(user).strip()
    assert elapsed < 5, "the password should be asked at once, not after a timeout"
    assert len(install.authd.audit_rows()) == rows_before  # nothing reached it
    line = install.log_lines()[-1]
    assert "result=PAM_AUTHINFO_UNAVAIL" in line and "cannot connect to the authenticator" in line


def test_sudo_denied_by_the_authenticators_policy_takes_the_password_and_another_service_still_takes_the_finger(
        sudo_setup, observe):
    """sudo: a policy rule denies fingers for this sudo service -> the password runs sudo, the log names the rule; the user's other service still logs in by finger"""
    install, user = sudo_setup
    sudo_service = "fa-e2e-sudo-" + user.name.split("-")[-1]
    added = install.authd.admin("policy", "add", "--stage", "login", "--users", user.name, "--hosts", "*",
                                "--services", sudo_service, "--action", "deny")
    assert added.returncode == 0, added.stderr
    rule = int(added.stdout.split()[2])
    install.feed("finger-right")
    done = user.as_user(SUDO, stdin_text=user.password + "\n")
    install.fed()
    observe("exit %d; stdout %r; stderr %r; rule %d" % (done.returncode, done.stdout,
                                                        done.stderr.replace(user.password, "***").strip(), rule))
    assert done.returncode == 0, done.stderr
    assert done.stdout == PLACE  # the finger was asked for and matched; the authenticator's policy said no
    assert done.stderr.strip() == password_prompt(user).strip()
    [row] = install.login_rows(user)
    assert (row["outcome"], row["reason"], row["rule"]) == ("deny", "policy_denied", rule)
    line = install.log_lines()[-1]
    assert "result=PAM_AUTH_ERR" in line and "policy_denied, rule %d" % rule in line, line

    # The same user, the same finger, through another PAM service: the rule names only the
    # sudo service, so the finger logs in. (sudo reads one pam_service per user: the
    # fixture's drop-in is replaced by one for the other service; both are always removed.)
    login_service = PamService("fa-e2e-login-" + user.name.split("-")[-1], [
        "#%PAM-1.0", install.module_line(), "auth     required  pam_unix.so",
        "account  required  pam_unix.so", "session  required  pam_permit.so"])
    try:
        (SUDOERS_DIR / user.name).unlink()
        dropin = SudoersDropIn(user, login_service.name)
        try:
            install.feed("finger-right")
            other = user.as_user(SUDO)  # stdin empty: a password prompt would fail the command
            install.fed()
        finally:
            dropin.remove()
    finally:
        login_service.remove()
    assert other.returncode == 0 and other.stdout == PLACE and other.stderr == "", other
    assert install.login_rows(user)[-1]["outcome"] == "accept"


def test_sudo_on_a_terminal_in_sequential_mode_shows_the_prompt_and_nothing_else(sudo_setup, observe):
    """sudo on a real pty (a terminal window), default `prompt = sequential`: the screen
    holds the prompt to touch the reader and what the command printed — not a byte from
    the module or the helper beyond that (a NUL was seen after the prompt once)."""
    install, user = sudo_setup
    install.feed("finger-right")
    term = Terminal(user, ["sudo", "-k", "true"])
    try:
        status = term.finish()
    finally:
        term.close()
    install.fed()
    observe("exit %d; screen %r" % (status, term.screen))
    assert status == 0, term.screen
    assert "\x00" not in term.screen, repr(term.screen)
    assert term.screen == "Place your finger on the fingerprint reader\r\n", repr(term.screen)


def test_sudo_offline_within_a_grant_runs_sudo_with_the_message_and_the_audit_catches_up(sudo_setup, observe):
    """sudo: an offline rule and a grant key; one online sudo brings the grant; authenticator stopped -> the finger runs sudo offline, with the message; its record reaches the audit at the next contact; the grant's last use spent -> the password"""
    install, user = sudo_setup
    authd = install.authd
    key = install.tmp / "grant.key"
    import subprocess
    made = subprocess.run([authd.binary, "grants", "new-key", "--out", str(key)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    port = authd.port
    authd.stop()
    authd.listen = "127.0.0.1:%d" % port
    authd.args += ["--grant-key", str(key)]
    authd.start()
    added = authd.admin("policy", "add", "--stage", "offline", "--users", user.name, "--hosts", "*",
                        "--action", "allow", "--offline-hours", "1", "--offline-uses", "1")
    assert added.returncode == 0, added.stderr
    install.feed("finger-right")
    online = user.as_user(SUDO)
    install.fed()
    assert online.returncode == 0 and online.stdout == PLACE, online
    grant = install.state / "users" / user.name / "offline-grant"
    assert grant.exists()

    authd.stop()
    install.feed("finger-right")
    offline = user.as_user(SUDO)  # stdin empty: a password prompt would fail the command
    install.fed()
    observe("offline: exit %d; stdout %r; stderr %r" % (offline.returncode, offline.stdout, offline.stderr.strip()))
    assert offline.returncode == 0, offline.stderr
    # sudo passes PAM_SILENT, yet the offline login says so.
    assert offline.stdout.startswith(PLACE)
    assert "logged in offline with this host's offline grant (expires " in offline.stdout + offline.stderr
    line = install.log_lines()[-1]
    assert "result=PAM_SUCCESS" in line and "offline grant" in line, line

    # Its one use is spent: the password, at once, without a finger.
    spent = user.as_user(SUDO, stdin_text=user.password + "\n")
    assert spent.returncode == 0 and spent.stdout == "", spent
    assert "grant used up (1 of 1 offline logins)" in install.log_lines()[-1]

    authd.start()
    install.feed("finger-right")
    back = user.as_user(SUDO)
    install.fed()
    assert back.returncode == 0, back.stderr
    rows = [r for r in authd.audit_rows() if r["event"] == "offline_login"]
    assert [(r["user"], r["outcome"], r["service"]) for r in rows] == [
        (user.name, "accept", "fa-e2e-sudo-" + user.name.split("-")[-1])]
