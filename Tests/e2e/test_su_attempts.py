"""Real `su` (util-linux, setuid root) looped by one local user against another user's
account: the module counts the target user's failed attempts in its root-only record, and
after five in a row `su` no longer arms the reader — "too many failed attempts, use the
password", PAM_AUTHINFO_UNAVAIL, a log line — until the pause is over; then one attempt, and
a pause twice as long.

`su` reads /etc/pam.d/su, a file of the machine that tests must not change: each `su` runs
in a private mount namespace (made as root, then setpriv to the caller) in which the test's
own stack is bind-mounted over /etc/pam.d/su. The machine's file is never written, and the
mount ends with the namespace."""

import os
import re
import stat
import subprocess
import time

import pytest

from conftest import PLACE_FINGER
from machine import TestUser

TOO_MANY = "Fingerprint login unavailable: too many failed attempts, use the password"

pytestmark = pytest.mark.skipif(subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode != 0,
                                reason="no mount namespaces here")


@pytest.fixture
def caller():
    u = TestUser()
    try:
        yield u
    finally:
        u.remove()


def boot_ms():
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * 1000)


def test_su_looped_by_another_local_user_is_slowed_and_stopped(install, user, caller, tmp_path, observe):
    """another user loops `su <enrolled user>` with no finger: 5 prompts, then the reader stays off; after the pause one more, then a 10 min pause"""
    install.enroll(user, "finger-right")
    install.conf.write_text(install.conf.read_text().replace("timeout = 5\n", "timeout = 1\n"))
    stack = tmp_path / "su-stack"
    stack.write_text("\n".join([
        "# the test's stack for su (bind-mounted over /etc/pam.d/su in a private namespace)",
        install.module_line(control="[default=done]"),
        "account  required  pam_permit.so",
        "session  required  pam_permit.so",
    ]) + "\n")
    os.chmod(stack, 0o644)
    machine_su = open("/etc/pam.d/su", "rb").read()
    script = ('mount --bind "$0" /etc/pam.d/su && exec setpriv --reuid "$1" --regid "$2" --init-groups -- '
              'su "$3" -c true')

    def su():
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(stack),
                               str(caller.uid), str(caller.gid), user.name],
                              env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=60, start_new_session=True)
        return done, done.stdout + done.stderr

    outputs = []
    for n in range(5):
        done, seen = su()
        outputs.append(seen)
        assert done.returncode != 0 and PLACE_FINGER in seen, (n, seen)
        assert "su: Authentication" in seen, seen  # su's words for the module's code
    before = install.reader._inode()
    started = time.monotonic()
    done, seen = su()
    stopped_in = time.monotonic() - started
    assert done.returncode != 0 and TOO_MANY in seen and PLACE_FINGER not in seen, seen
    assert install.reader._inode() == before, "the reader was armed"
    line = install.log_lines()[-1]
    assert "service=su user=%s result=PAM_AUTHINFO_UNAVAIL" % user.name in line, line
    assert "5 failed fingerprint attempts in a row; reader not armed for another" in line, line
    record = install.attempts / user.name
    assert record.read_text().startswith("fingerauth-attempts 1 0005 ")
    st = record.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode), stat.S_IMODE(install.attempts.stat().st_mode)) == (0, 0o600, 0o700)

    # The pause over (the record's time moved back 301 s): one attempt, then twice the pause.
    record.write_text("fingerauth-attempts 1 0005 %019d\n" % (boot_ms() - 301_000))
    done, seen = su()
    assert PLACE_FINGER in seen, seen
    done, seen = su()
    assert TOO_MANY in seen and PLACE_FINGER not in seen, seen
    line = install.log_lines()[-1]
    assert "6 failed fingerprint attempts in a row; reader not armed for another" in line, line
    pause = int(re.search(r"for another (\d+) s", line).group(1))
    assert 570 <= pause <= 600, line  # 10 min from the failure a moment ago
    assert open("/etc/pam.d/su", "rb").read() == machine_su, "the machine's /etc/pam.d/su changed"
    observe("5 armed su prompts, then '%s' without the reader (%.2f s); after the pause 1 more, then %s" % (
        TOO_MANY, stopped_in, line.split('reason="')[1].split('"')[0]))
