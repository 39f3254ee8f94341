"""The biometric step failing in every way it can: the scan helper missing, broken,
crashing, hanging or talking nonsense, and the reader busy, removed or asking for a retry.
Each must end in PAM_AUTHINFO_UNAVAIL (password next) — never PAM_SUCCESS."""

import os
import time

UNAVAILABLE = "Fingerprint login unavailable"


def running(*argv):
    """True when a process with exactly this command line exists."""
    wanted = "\0".join(argv) + "\0"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid) as f:
                if f.read() == wanted:
                    return True
        except OSError:
            pass
    return False


def only_module(world):
    return world.service("fa-only", fallback=False)


def assert_unavailable(world, login, reason):
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.errors == [UNAVAILABLE], login
    assert reason in world.log_lines()[-1], world.log_lines()[-1]


def test_missing_helper(world):
    world.enroll("alice", "finger-A")
    world.write_conf(login_helper=str(world.tmp / "no-such-helper"))
    assert_unavailable(world, world.login("alice", service=only_module(world)), "No such file or directory")


def test_helper_not_executable(world):
    world.enroll("alice", "finger-A")
    helper = world.fake_helper("echo MATCH right-index-finger")
    os.chmod(helper, 0o644)
    assert_unavailable(world, world.login("alice", service=only_module(world)), "not executable")


def test_helper_writable_by_others_is_not_run(world):
    world.enroll("alice", "finger-A")
    helper = world.fake_helper("echo MATCH right-index-finger")
    os.chmod(helper, 0o777)
    assert_unavailable(world, world.login("alice", service=only_module(world)), "writable by group or others")


def test_helper_killed_by_a_signal(world):
    world.enroll("alice", "finger-A")
    world.fake_helper("echo 'READY fake'\nkill -SEGV $$")
    login = world.login("alice", service=only_module(world))
    assert_unavailable(world, login, "killed by signal 11")
    assert login.infos == ["Place your finger on the fingerprint reader"]


def test_helper_that_hangs_is_killed_at_the_deadline(world):
    world.enroll("alice", "finger-A")
    marker = world.tmp / "grandchild-alive"
    world.fake_helper("echo 'READY fake'\n(sleep 29.31; touch %s) &\nexec sleep 59.71" % marker)
    world.write_conf(timeout="1")
    login = world.login("alice", service=only_module(world))
    assert_unavailable(world, login, "no finger within 1 s")
    assert login.seconds < 1 + 2 + 1, login.seconds  # timeout + start-up grace + margin
    time.sleep(0.2)
    assert not running("sleep", "59.71"), "helper left running"
    assert not running("sleep", "29.31"), "helper's child left running"


def test_helper_printing_garbage(world):
    world.enroll("alice", "finger-A")
    world.fake_helper("echo 'MATCHED right-index-finger'")
    assert_unavailable(world, world.login("alice", service=only_module(world)), "unreadable line")


def test_helper_flooding_output(world):
    world.enroll("alice", "finger-A")
    world.fake_helper("head -c 100000 /dev/zero | tr '\\\\0' 'A'")
    assert_unavailable(world, world.login("alice", service=only_module(world)), "malformed output")


def test_match_line_without_a_clean_exit_is_not_a_match(world):
    world.enroll("alice", "finger-A")
    world.fake_helper("echo 'MATCH right-index-finger'\nexit 1")
    assert_unavailable(world, world.login("alice", service=only_module(world)),
                       "login helper ended after a match without a verdict (exit status 1)")


def test_helper_silent_exit(world):
    world.enroll("alice", "finger-A")
    world.fake_helper("exit 0")
    assert_unavailable(world, world.login("alice", service=only_module(world)), "without a verdict (exit status 0)")


def test_reader_busy(world):
    world.enroll("alice", "finger-A")
    login = world.login("alice", commands=["ERROR 4"], service=only_module(world))
    assert_unavailable(world, login, "reader: busy")


def test_reader_removed_mid_scan(world):
    world.enroll("alice", "finger-A")
    login = world.login("alice", commands=["UNPLUG"], service=only_module(world))
    assert_unavailable(world, login, "reader: removed")


def test_reader_retry_is_relayed_and_the_scan_goes_on(world):
    world.enroll("alice", "finger-A")
    login = world.login("alice", commands=["RETRY 1", "SCAN finger-A"], service=only_module(world))
    assert login.name == "PAM_SUCCESS", login
    assert len(login.infos) == 2 and login.infos[0] == "Place your finger on the fingerprint reader", login
    assert "short" in login.infos[1].lower(), login


def test_no_finger_before_the_timeout(world):
    world.enroll("alice", "finger-A")
    world.write_conf(timeout="1")
    login = world.login("alice", service=only_module(world))
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.seconds < 1 + 2 + 1, login.seconds
