"""fingerauth-login against libfprint's virtual_device reader.

Run as root with the system Python:
    FINGERAUTH_BUILD=/path/with/fingerauth-login /usr/bin/python3 -m pytest -q Tests/integration/test_login_helper.py

Each test has its own root-owned state directory and reader socket. Prints are enrolled
through the helper's own `--enroll` mode (the library function `fingerauth enroll` uses).
"""

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "support"))
from vreader import VirtualReader, enroll_commands, scan_commands  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("FINGERAUTH_BUILD", os.path.join(REPO, "build"))
HELPER = os.path.join(BUILD, "fingerauth-login")
READER_NAME = "Virtual device for debugging"
USER = "alice"
RIGHT = "alice-right-index"   # identity of alice's enrolled right index finger
LEFT = "alice-left-thumb"

pytestmark = [
    pytest.mark.skipif(not os.access(HELPER, os.X_OK), reason="no fingerauth-login in %s" % BUILD),
    pytest.mark.skipif(os.geteuid() != 0, reason="state files must be root-owned"),
]


class Scan:
    """One test's world: state dir, socket, feeder; runs the helper."""

    def __init__(self, root):
        self.root = root
        self.state = os.path.join(root, "state")
        self.socket = os.path.join(root, "vd.sock")
        self.reader = VirtualReader(self.socket)
        os.mkdir(self.state, 0o755)

    @property
    def user_dir(self):
        return os.path.join(self.state, "users", USER)

    @property
    def prints_dir(self):
        return os.path.join(self.user_dir, "prints")

    def args(self, *extra, virtual=True, user=USER):
        args = [HELPER, "--user", user, "--state-dir", self.state]
        if virtual:
            args += ["--virtual-reader", self.socket]
        return args + list(extra)

    def run(self, *extra, feed=None, env=None, timeout=20, virtual=True, user=USER):
        if feed is not None:
            self.reader.feed(feed)
        started = time.monotonic()
        done = subprocess.run(self.args(*extra, virtual=virtual, user=user), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                              env=env if env is not None else {"PATH": "/usr/bin:/bin"})
        self.elapsed = time.monotonic() - started
        self.stderr = done.stderr.decode("ascii", "replace")
        if feed is not None:
            try:
                self.reader.wait()
            except Exception as error:
                raise AssertionError("feeder failed (%r) after %r; helper exit %d, stdout %r, stderr %r"
                                     % (error, self.reader.sent, done.returncode, done.stdout,
                                        self.stderr[-500:])) from error
        return done.returncode, done.stdout.decode("ascii").splitlines()

    def enroll(self, finger="right-index-finger", identity=RIGHT):
        code, lines = self.run("--enroll", finger, "--timeout", "10", feed=enroll_commands(identity))
        assert (code, lines[-1]) == (0, "ENROLLED " + finger), (lines, self.stderr)
        return os.path.join(self.prints_dir, finger + ".fpt")


@pytest.fixture
def scan():
    root = tempfile.mkdtemp(prefix="fa-scan-")  # short: a socket path holds 107 bytes
    try:
        yield Scan(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def enrolled(scan):
    scan.enroll()
    return scan


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


# -- enrollment --------------------------------------------------------------------------

def test_enroll_reports_each_stage_and_writes_a_private_print(scan):
    code, lines = scan.run("--enroll", "right-index-finger", feed=enroll_commands(RIGHT, stages=3))
    assert code == 0
    assert lines == ["READY " + READER_NAME, "STAGE 1/3", "STAGE 2/3", "STAGE 3/3",
                     "ENROLLED right-index-finger"]
    path = os.path.join(scan.prints_dir, "right-index-finger.fpt")
    assert mode(path) == 0o600 and os.lstat(path).st_uid == 0
    assert mode(scan.prints_dir) == 0o700 and mode(scan.user_dir) == 0o700
    assert open(path, "rb").read(3) == b"FP3"
    assert [n for n in os.listdir(scan.prints_dir)] == ["right-index-finger.fpt"]  # no temp left


def test_enroll_relays_retry_hints_without_counting_a_stage(scan):
    feed = ["SET_ENROLL_STAGES 2", "SCAN " + RIGHT, "RETRY 2", "SCAN " + RIGHT]
    code, lines = scan.run("--enroll", "right-index-finger", feed=feed)
    assert code == 0
    assert lines == ["READY " + READER_NAME, "STAGE 1/2", "RETRY Center your finger on the reader",
                     "STAGE 2/2", "ENROLLED right-index-finger"]


def test_enroll_of_an_unknown_finger_name_is_a_usage_error(scan):
    code, lines = scan.run("--enroll", "nose")
    assert code == 2 and lines[0].startswith("FAIL usage --enroll needs a finger name")


# -- verification ------------------------------------------------------------------------

def test_right_finger_matches(enrolled):
    code, lines = enrolled.run(feed=scan_commands(RIGHT))
    assert (code, lines) == (0, ["READY " + READER_NAME, "MATCH right-index-finger"])


def test_wrong_finger_three_times_ends_with_no_match(enrolled):
    code, lines = enrolled.run(feed=scan_commands("mallory", "mallory", "mallory"))
    assert (code, lines) == (1, ["READY " + READER_NAME, "NOMATCH 2", "NOMATCH 1", "NOMATCH 0"])


def test_wrong_then_right_finger_matches_on_the_second_try(enrolled):
    code, lines = enrolled.run(feed=scan_commands("mallory", RIGHT))
    assert (code, lines) == (0, ["READY " + READER_NAME, "NOMATCH 2", "MATCH right-index-finger"])


def test_scans_queued_before_the_verify_each_count_once(enrolled):
    # SLEEP 300 holds the first verify while the scans queue up in the device.
    code, lines = enrolled.run(feed=["SLEEP 300"] + scan_commands("mallory", "mallory", RIGHT))
    assert (code, lines) == (0, ["READY " + READER_NAME, "NOMATCH 2", "NOMATCH 1", "MATCH right-index-finger"])


def test_max_tries_one_stops_after_the_first_miss(enrolled):
    code, lines = enrolled.run("--max-tries", "1", feed=scan_commands("mallory"))
    assert (code, lines) == (1, ["READY " + READER_NAME, "NOMATCH 0"])


def test_retry_is_relayed_and_the_scan_continues(enrolled):
    code, lines = enrolled.run(feed=["RETRY 1", "RETRY 3"] + scan_commands(RIGHT))
    assert (code, lines) == (0, ["READY " + READER_NAME, "RETRY Swipe was too short, try again",
                                 "RETRY Remove your finger and try again", "MATCH right-index-finger"])


def test_two_fingers_on_a_reader_without_identify_are_verified_in_turn(enrolled):
    enrolled.enroll("left-thumb", LEFT)
    # Prints are tried in name order: left-thumb, then right-index-finger (second scan).
    code, lines = enrolled.run(feed=scan_commands(RIGHT, RIGHT))
    assert (code, lines) == (0, ["READY " + READER_NAME,
                                 "RETRY Place the finger again to try your other enrolled fingers",
                                 "MATCH right-index-finger"])
    code, lines = enrolled.run(feed=scan_commands(LEFT))
    assert (code, lines) == (0, ["READY " + READER_NAME, "MATCH left-thumb"])


def test_ready_is_written_through_the_pipe_before_any_finger(enrolled):
    proc = subprocess.Popen(enrolled.args(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env={})
    try:
        first = proc.stdout.readline()  # no finger yet: only a flushed line can arrive
        assert first == ("READY %s\n" % READER_NAME).encode()
        enrolled.reader.feed(scan_commands(RIGHT))
        assert proc.stdout.readline() == b"MATCH right-index-finger\n"
        assert proc.wait(timeout=10) == 0
        enrolled.reader.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- the reader fails --------------------------------------------------------------------

def test_timeout_without_a_finger(enrolled):
    code, lines = enrolled.run("--timeout", "2", feed=[])
    assert code == 3
    assert lines[0] == "READY " + READER_NAME
    assert lines[1].startswith("FAIL timeout ") and len(lines) == 2
    assert 1.9 <= enrolled.elapsed < 3.0


def test_busy_reader_error_is_fail_busy(enrolled):
    code, lines = enrolled.run(feed=["ERROR 4"])
    assert code == 3 and lines[-1].startswith("FAIL busy ")


def test_unplugged_reader_is_fail_removed(enrolled):
    code, lines = enrolled.run(feed=["UNPLUG"])
    assert code == 3 and lines[-1].startswith("FAIL removed "), (lines, enrolled.stderr)


def test_socket_in_a_missing_directory_is_no_reader(enrolled):
    enrolled.socket = os.path.join(enrolled.root, "missing", "vd.sock")
    code, lines = enrolled.run()
    assert code == 3
    assert lines == [lines[0]] and lines[0].startswith("FAIL no-reader ")


def test_virtual_device_from_the_environment_is_ignored(enrolled):
    """Only --virtual-reader may pick the virtual device: inside sudo the environment is
    the user's, and a socket of their own would let them type SCAN <id>."""
    rogue = os.path.join(enrolled.root, "rogue.sock")
    env = {"FP_VIRTUAL_DEVICE": rogue, "FP_VIRTUAL_IMAGE": rogue + "i",
           "FP_VIRTUAL_DEVICE_STORAGE": rogue + "s", "FP_DEVICE_EMULATION": "1",
           "G_DEBUG": "fatal-warnings"}
    code, lines = enrolled.run(virtual=False, env=env, timeout=10)
    assert (code, lines) == (3, ["FAIL no-reader No fingerprint reader found"])
    assert not any(n.startswith("rogue") for n in os.listdir(enrolled.root))


# -- the prints ----------------------------------------------------------------------------

def test_user_without_prints_is_no_prints(scan):
    code, lines = scan.run()
    assert code == 3 and lines == [lines[0]] and lines[0].startswith("FAIL no-prints ")


def test_empty_prints_directory_is_no_prints(enrolled):
    os.unlink(os.path.join(enrolled.prints_dir, "right-index-finger.fpt"))
    code, lines = enrolled.run()
    assert code == 3 and lines[0].startswith("FAIL no-prints ")


def test_world_readable_print_is_refused(enrolled):
    path = os.path.join(enrolled.prints_dir, "right-index-finger.fpt")
    os.chmod(path, 0o644)
    code, lines = enrolled.run()
    assert (code, lines) == (3, ["FAIL bad-print refused: %s: mode 644 is too open" % path])


def test_symlinked_print_is_refused(enrolled):
    path = os.path.join(enrolled.prints_dir, "right-index-finger.fpt")
    os.rename(path, os.path.join(enrolled.root, "elsewhere.fpt"))
    os.symlink(os.path.join(enrolled.root, "elsewhere.fpt"), path)
    code, lines = enrolled.run()
    assert (code, lines) == (3, ["FAIL bad-print refused: %s: is a symbolic link" % path])


def test_print_owned_by_another_user_is_refused(enrolled):
    path = os.path.join(enrolled.prints_dir, "right-index-finger.fpt")
    os.chown(path, 65534, 65534)
    code, lines = enrolled.run()
    assert code == 3 and lines[0].startswith("FAIL bad-print ") and "must be owned by root" in lines[0]


def test_group_readable_user_directory_is_refused(enrolled):
    os.chmod(enrolled.user_dir, 0o750)
    code, lines = enrolled.run()
    assert (code, lines) == (3, ["FAIL no-prints refused: %s: mode 750 is too open" % enrolled.user_dir])


@pytest.mark.parametrize("content", [b"", b"FP", b"FP3 not a variant at all", b"\x00" * 100])
def test_corrupt_print_is_bad_print(scan, content):
    os.makedirs(scan.prints_dir, 0o700)
    os.chmod(scan.user_dir, 0o700)
    path = os.path.join(scan.prints_dir, "left-thumb.fpt")
    with open(path, "wb") as f:
        f.write(content)
    os.chmod(path, 0o600)
    code, lines = scan.run()
    assert code == 3 and lines == [lines[0]] and lines[0].startswith("FAIL bad-print ")


def test_oversized_print_is_refused(enrolled):
    path = os.path.join(enrolled.prints_dir, "right-index-finger.fpt")
    with open(path, "ab") as f:
        f.write(b"\x00" * 16 * 1024)
    code, lines = enrolled.run()
    assert code == 3 and lines[0].startswith("FAIL bad-print ") and "larger than 16384 bytes" in lines[0]


# -- the command line ----------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    [],
    ["--user", USER],
    ["--user", "-rf", "--state-dir", "/tmp"],
    ["--user", "..", "--state-dir", "/tmp"],
    ["--user", "al/ice", "--state-dir", "/tmp"],
    ["--user", "a" * 33, "--state-dir", "/tmp"],
    ["--user", "", "--state-dir", "/tmp"],
    ["--user", USER, "--state-dir", "relative"],
    ["--user", USER, "--state-dir", "/var/../etc"],
    ["--user", USER, "--state-dir", "/tmp", "--max-tries", "0"],
    ["--user", USER, "--state-dir", "/tmp", "--max-tries", "11"],
    ["--user", USER, "--state-dir", "/tmp", "--timeout", "0"],
    ["--user", USER, "--state-dir", "/tmp", "--timeout", "121"],
    ["--user", USER, "--state-dir", "/tmp", "--timeout", "99999999999999999999999"],
    ["--user", USER, "--state-dir", "/tmp", "--timeout"],
    ["--user", USER, "--user", "bob", "--state-dir", "/tmp"],
    ["--user", USER, "--state-dir", "/tmp", "--virtual-reader", "/" + "s" * 120],
    ["--user", USER, "--state-dir", "/tmp", "--verbose"],
])
def test_bad_usage_is_fail_usage_exit_2(args):
    done = subprocess.run([HELPER] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=10, env={})
    lines = done.stdout.decode("ascii").splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("FAIL usage "), lines
    assert len(lines[0]) <= 256
