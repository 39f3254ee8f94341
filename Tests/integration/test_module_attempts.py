"""The attempt limit on the module's root path (sudo, su, login: the module starts the helper
itself): each target user's failed attempts in a root-only record under `attempts_dir`, read
and written by the real module through real libpam, with the real helper, the virtual reader
and fingerauthd. A record or a folder that cannot be trusted neither lifts the limit nor
breaks the login: the reader stays off and the log line says why. The same records hold for
the agent (screen lockers), so the limit is per user whichever way the reader is asked."""

import fcntl
import os
import re
import stat
import subprocess
import time

import pytest

from test_agent import ALICE, lw  # noqa: F401  (the agent's fixture)

PLACE_FINGER = "Place your finger on the fingerprint reader"
TOO_MANY = "Fingerprint login unavailable: too many failed attempts, use the password"
UNAVAILABLE = "Fingerprint login unavailable"


def boot_ms():
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * 1000)


def pause_seconds(line):
    return int(re.search(r"reader not armed for another (\d+) s", line).group(1))


def record_line(failures, last):
    return "fingerauth-attempts 1 %04d %019d\n" % (failures, last)


def write_record(path, failures, last, mode=0o600, uid=0):
    path.write_text(record_line(failures, last))
    os.chmod(path, mode)
    os.chown(path, uid, uid)


def only(w):
    """alice's own PAM service: the module alone, so its code is the stack's."""
    return w.service("fa-only", fallback=False)


def fail_once(w, user="alice"):
    login = w.login(user, scans=["finger-B"], service=only(w))
    assert login.name == "PAM_MAXTRIES" and login.infos == [PLACE_FINGER], login
    return login


def assert_not_armed(w, before, errors, reason):
    login = w.login("alice", service=only(w))
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.infos == [] and login.errors == errors, login
    assert w.reader._inode() == before, "the reader was armed"
    line = w.log_lines()[-1]
    assert "user=alice result=PAM_AUTHINFO_UNAVAIL" in line and reason in line, line
    return line


@pytest.fixture
def w(world):
    world.enroll("alice", "finger-A")
    world.write_conf(max_tries="1", timeout="2")
    return world


def test_five_failures_in_a_row_then_the_reader_is_not_armed_for_that_user(w):
    """Before: nothing counted across attempts on the root path; `su alice` in a loop armed
    the reader and tried prints without end."""
    for _ in range(5):
        fail_once(w)
    before = w.reader._inode()
    line = assert_not_armed(w, before, [TOO_MANY], "5 failed fingerprint attempts in a row; reader not armed for another")
    assert 285 <= pause_seconds(line) <= 300, line
    folder, record = w.tmp / "attempts", w.tmp / "attempts" / "alice"
    assert (stat.S_IMODE(folder.stat().st_mode), folder.stat().st_uid) == (0o700, 0)
    assert (stat.S_IMODE(record.stat().st_mode), record.stat().st_uid) == (0o600, 0)
    assert record.read_text().startswith("fingerauth-attempts 1 0005 ")
    # Another user is not held back by alice's count.
    w.enroll("bob", "finger-B")
    assert w.login("bob", scans=["finger-B"], service=only(w)).name == "PAM_SUCCESS"


def test_a_success_clears_the_count(w):
    for _ in range(4):
        fail_once(w)
    assert w.login("alice", scans=["finger-A"], service=only(w)).name == "PAM_SUCCESS"
    assert (w.tmp / "attempts" / "alice").read_text() == record_line(0, 0)


def test_after_the_pause_one_attempt_is_armed_and_the_next_pause_doubles(w):
    """Slowed, then stopped again: the pause after the fifth failure is 5 min, after the
    sixth 10 min (the record's time is moved back instead of waiting)."""
    folder = w.tmp / "attempts"
    folder.mkdir(mode=0o700)
    write_record(folder / "alice", 5, boot_ms() - 301_000)
    fail_once(w)
    assert (folder / "alice").read_text().startswith("fingerauth-attempts 1 0006 ")
    line = assert_not_armed(w, w.reader._inode(), [TOO_MANY], "6 failed fingerprint attempts in a row; reader not armed for another")
    assert 585 <= pause_seconds(line) <= 600, line


def test_a_host_killed_at_the_prompt_leaves_the_attempt_counted(w):
    """The attempt is counted when the helper says READY, before the prompt: killing the host
    (Ctrl-C on su, a closed terminal) cannot take it back."""
    service = only(w)
    for n in range(5):
        seen = w.reader._inode()
        host = subprocess.Popen([str(w.build / "fa-pamtest"), "--confdir", str(w.confdir), "--service", service,
                                 "--user", "alice"], env=w.env, stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 10
        while w.reader._inode() in (None, seen):
            assert time.monotonic() < deadline, "the reader was not armed (%d)" % n
            time.sleep(0.01)
        time.sleep(0.1)
        host.kill()
        host.wait(5)
    assert (w.tmp / "attempts" / "alice").read_text().startswith("fingerauth-attempts 1 0005 ")
    assert_not_armed(w, w.reader._inode(), [TOO_MANY], "5 failed fingerprint attempts in a row")


def make_symlink(entry, tmp):
    target = tmp / "zero-record"
    write_record(target, 0, 0)
    os.symlink(target, entry)
    return target


def make_owned_by_user(entry, tmp):
    write_record(entry, 0, 0, uid=ALICE)


def make_open_mode(entry, tmp):
    write_record(entry, 0, 0, mode=0o644)


def make_directory(entry, tmp):
    entry.mkdir(mode=0o700)


def make_fifo(entry, tmp):
    os.mkfifo(entry, 0o600)


def make_garbage(entry, tmp):
    write_record(entry, 0, 0)
    entry.write_text("fingerauth-attempts 1 0000 0\n")


def make_hard_link(entry, tmp):
    other = tmp / "other-record"
    write_record(other, 0, 0)
    os.link(other, entry)
    return other


HOSTILE = {
    "symlink": (make_symlink, "a symbolic link"),
    "owned-by-a-user": (make_owned_by_user, "owned by uid %d" % ALICE),
    "mode-0644": (make_open_mode, "mode 644"),
    "directory": (make_directory, "a directory"),
    "fifo": (make_fifo, "not a regular file"),
    "garbage": (make_garbage, "content not a record"),
    "hard-link": (make_hard_link, "2 links"),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_record_neither_lifts_nor_breaks_the_limit(w, kind):
    """alice is at the limit; her record is replaced by something that says "no failures"
    (a link to such a record, one owned by a user, an open mode, a folder, a FIFO, torn
    content, a second link). It is not believed: the reader stays off, the entry becomes a
    root 0600 record at the limit, and whatever it pointed to is left as it was."""
    make, why = HOSTILE[kind]
    folder = w.tmp / "attempts"
    folder.mkdir(mode=0o700)
    entry = folder / "alice"
    write_record(entry, 5, boot_ms())
    before = w.reader._inode()
    os.unlink(entry)
    other = make(entry, w.tmp)
    other_before = other.read_bytes() if other is not None else None
    line = assert_not_armed(w, before, [TOO_MANY], "5 failed fingerprint attempts in a row")
    assert "record not trusted: %s; replaced by one at the limit" % why in line, line
    st = os.lstat(entry)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600 and st.st_nlink == 1
    assert entry.read_text().startswith("fingerauth-attempts 1 0005 ")
    if other is not None:
        assert other.read_bytes() == other_before, "the file the entry pointed to was changed"


def hostile_folder_owned_by_a_user(folder):
    folder.mkdir(mode=0o700)
    os.chown(folder, ALICE, ALICE)
    return "%s: not owned by root" % folder


def hostile_folder_open_to_all(folder):
    folder.mkdir(mode=0o700)
    os.chmod(folder, 0o777)
    return "%s: mode 777, must be 0700" % folder


def hostile_folder_symlink(folder):
    real = folder.with_name("real-attempts")
    real.mkdir(mode=0o700)
    os.symlink(real, folder)
    return "%s: not a directory (or a symbolic link)" % folder


@pytest.mark.parametrize("make", [hostile_folder_owned_by_a_user, hostile_folder_open_to_all, hostile_folder_symlink])
def test_a_folder_of_records_that_cannot_be_trusted_keeps_the_reader_off(w, make):
    why = make(w.tmp / "attempts")
    line = assert_not_armed(w, w.reader._inode(), [UNAVAILABLE], "attempt record: %s; reader not armed" % why)
    assert "result=PAM_AUTHINFO_UNAVAIL" in line


def test_a_record_held_by_another_process_is_waited_for_a_bounded_time(w):
    """Concurrent logins for the same user take turns on the record's lock without waiting
    long; one that finds it held for more than 250 ms leaves the reader off."""
    fail_once(w)
    with open(w.tmp / "attempts" / "alice", "r+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        started = time.monotonic()
        assert_not_armed(w, w.reader._inode(), [UNAVAILABLE], "locked by another login for over 250 ms; reader not armed")
        assert time.monotonic() - started < 3
    fail_once(w)
    assert (w.tmp / "attempts" / "alice").read_text().startswith("fingerauth-attempts 1 0002 ")


FULL = r"""
set -e
mount -t tmpfs -o size=8k,mode=0755 fa-full "$FULL"
mkdir -m 0700 "$FULL/attempts"
printf 'fingerauth-attempts 1 0000 0000000000000000000\n' > "$FULL/attempts/alice"
chmod 0600 "$FULL/attempts/alice"
dd if=/dev/zero of="$FULL/filler" bs=4096 count=64 2>/dev/null || true
echo "== bob"
"$PAMTEST" --confdir "$CONFDIR" --service fa-only --user bob || true
echo "== alice"
"$PAMTEST" --confdir "$CONFDIR" --service fa-only --user alice || true
echo "== record"
cat "$FULL/attempts/alice"
"""


@pytest.mark.skipif(subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode != 0,
                    reason="no mount namespaces here")
def test_a_full_run_keeps_the_reader_off_for_a_new_record_and_counts_in_an_existing_one(w):
    """`attempts_dir` on a full tmpfs (in a private mount namespace): a user without a record
    cannot get one, so the reader is not armed for them; a user with one is counted in the
    space the record already has."""
    w.enroll("bob", "finger-B")
    full = w.tmp / "full"
    full.mkdir()
    w.write_conf(attempts_dir=str(full / "attempts"))
    only(w)
    w.reader.feed(["SCAN finger-B"], timeout=30)
    try:
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", FULL],
                              env=dict(w.env, FULL=str(full), PAMTEST=str(w.build / "fa-pamtest"), CONFDIR=str(w.confdir)),
                              capture_output=True, text=True, timeout=60)
    finally:
        w.reader.wait(timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    bob, alice, record = [part.strip().splitlines() for part in done.stdout.split("== ")[1:]]
    assert bob[1:] == ["ERROR " + UNAVAILABLE, "RESULT 9 PAM_AUTHINFO_UNAVAIL"], bob
    assert alice[1:] == ["INFO " + PLACE_FINGER, "ERROR Fingerprint not recognised; too many tries", "RESULT 11 PAM_MAXTRIES"], alice
    assert record[1].startswith("fingerauth-attempts 1 0001 "), record
    bob_line = [l for l in w.log_lines() if "user=bob" in l][-1]
    assert "attempt record: cannot" in bob_line and "No space left on device; reader not armed" in bob_line, bob_line


def test_the_agent_and_the_root_path_share_the_count(lw):  # noqa: F811
    """Three failures under sudo and two in the screen locker make five for alice: both ways
    are then closed to her finger."""
    lw.enroll("alice", "finger-A")
    lw.write_conf(max_tries="1")
    for _ in range(3):
        assert lw.login("alice", scans=["finger-B"], service=only(lw)).name == "PAM_MAXTRIES"
    for _ in range(2):
        locked = lw.login("alice", scans=["finger-B"], as_uid=ALICE, service=lw.service("locker-only", fallback=False))
        assert locked.name == "PAM_MAXTRIES" and locked.infos == [PLACE_FINGER], locked
    before = lw.reader._inode()
    locked = lw.login("alice", as_uid=ALICE, service=lw.service("locker-only", fallback=False))
    assert locked.name == "PAM_AUTHINFO_UNAVAIL" and locked.errors == [TOO_MANY], locked
    root = lw.login("alice", service=only(lw))
    assert root.name == "PAM_AUTHINFO_UNAVAIL" and root.errors == [TOO_MANY], root
    assert lw.reader._inode() == before


def test_a_callers_file_size_limit_keeps_the_reader_off_without_ending_the_host(w):
    """The caller of a setuid host chooses its resource limits: with RLIMIT_FSIZE 0 a record
    write would raise SIGXFSZ and kill the host. The module checks the limit first: the host
    lives, returns PAM_AUTHINFO_UNAVAIL, and the reader is not armed. (No debug_file here:
    the module's own log file is written the same way.)"""
    w.write_conf(debug_file=None)
    service = only(w)
    before = w.reader._inode()
    done = subprocess.run(["prlimit", "--fsize=0", "--", str(w.build / "fa-pamtest"), "--confdir", str(w.confdir),
                           "--service", service, "--user", "alice"], env=w.env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert done.stdout.splitlines() == ["ERROR " + UNAVAILABLE, "RESULT 9 PAM_AUTHINFO_UNAVAIL"], done.stdout
    assert w.reader._inode() == before
    assert not (w.tmp / "attempts" / "alice").exists()


def test_a_host_killed_before_ready_is_counted_and_a_helper_that_gives_up_is_not(w):
    """The attempt is counted when the helper starts (it opens the reader), not when it says
    READY: a host killed in between (the caller of a setuid su may signal it) stays counted.
    A helper that ends on its own before READY (authenticator unreachable) takes it back."""
    record = w.tmp / "attempts" / "alice"
    w.fake_helper("exec sleep 30")
    host = subprocess.Popen([str(w.build / "fa-pamtest"), "--confdir", str(w.confdir), "--service", only(w),
                             "--user", "alice"], env=w.env, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 5
        while not (record.exists() and record.read_text().startswith("fingerauth-attempts 1 0001 ")):
            assert time.monotonic() < deadline, "not counted while the helper runs: %r" % (
                record.read_text() if record.exists() else None)
            time.sleep(0.02)
    finally:
        host.kill()
        host.wait(5)
    assert record.read_text().startswith("fingerauth-attempts 1 0001 ")
    w.fake_helper("echo 'FAIL unreachable cannot connect to the authenticator'")
    login = w.login("alice", service=only(w))
    assert login.name == "PAM_AUTHINFO_UNAVAIL" and login.infos == [], login
    assert record.read_text().startswith("fingerauth-attempts 1 0001 "), "a helper that gave up before READY counted"


def test_concurrent_hosts_for_the_same_user_each_count(w):
    """A sudo and an su (here four hosts) for alice at the same moment, with no record yet:
    each takes the record's lock in turn and each attempt is counted — none lost to
    another's write, and none that opens the record while its creator is still writing it
    takes the empty file for a foreign one and sets alice at the limit (seen before the
    record was made under another name and moved into place). Eight rounds, each from no
    record."""
    folder, record = w.tmp / "attempts", w.tmp / "attempts" / "alice"
    w.fake_helper("exec sleep 30")
    service = only(w)
    for round in range(8):
        if record.exists():
            record.unlink()
        hosts = [subprocess.Popen([str(w.build / "fa-pamtest"), "--confdir", str(w.confdir), "--service", service,
                                   "--user", "alice"], env=w.env, stdout=subprocess.PIPE, text=True) for _ in range(4)]
        try:
            deadline = time.monotonic() + 10
            while not (record.exists() and record.read_text().startswith("fingerauth-attempts 1 0004 ")):
                assert time.monotonic() < deadline, (round, record.read_text() if record.exists() else None)
                time.sleep(0.02)
        finally:
            for host in hosts:
                host.kill()
                host.wait(5)
        assert sorted(p.name for p in folder.iterdir()) == ["alice"], "a draft record was left behind"


def test_the_record_and_its_folder_belong_to_roots_group_whatever_the_hosts_group(w):
    """Inside sudo or su the effective group is the caller's (the host is setuid, not
    setgid), and a folder or file made there takes it. Before: the attempts folder and the
    record were root:4242 when the host ran with group 4242; now they are root:root."""
    login = w.login("alice", scans=["finger-B"], service=only(w),
                    wrap=["setpriv", "--regid", "4242", "--clear-groups", "--"])
    assert login.name == "PAM_MAXTRIES", login
    folder, record = w.tmp / "attempts", w.tmp / "attempts" / "alice"
    assert (folder.stat().st_uid, folder.stat().st_gid) == (0, 0)
    assert (record.stat().st_uid, record.stat().st_gid) == (0, 0)
    assert stat.S_IMODE(record.stat().st_mode) == 0o600


def test_drafts_of_hosts_that_ended_mid_way_are_removed_when_a_record_is_made(w):
    """A record is written as `NAME#new.PID` and moved into place. A caller who kills su
    between the two, again and again, would leave one draft each in the root-only folder;
    the next record made removes the drafts whose process is gone (any user's), and keeps
    those of live processes."""
    folder = w.tmp / "attempts"
    folder.mkdir(mode=0o700, exist_ok=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = [folder / ("bob#new.%d" % dead.pid), folder / "carol#new.2147483646"]
    live = folder / ("bob#new.%d" % os.getpid())
    for path in stale + [live]:
        path.write_text("fingerauth-attempts 1 0000 0000000000000000000\n")
        os.chmod(path, 0o600)
    w.fake_helper("echo 'FAIL unreachable cannot connect to the authenticator'")
    login = w.login("alice", service=only(w))
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert sorted(p.name for p in folder.iterdir()) == sorted(["alice", live.name])

