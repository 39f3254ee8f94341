"""What the module's processes must not inherit from the process that runs the PAM host:
in a setuid host (sudo, su, chfn) that is an unprivileged caller, who chooses the working
directory, the resource limits and the priority. The harness is started here with a hostile
set of them; while the login helper waits for a finger, the /proc entries of fingerauth-pam
(the host's child) and of the helper (its child) say what they got."""

import os
import signal
import subprocess
import time

import pytest

# Soft limits for what must be raised again: a hard limit the caller lowered can only be
# raised with CAP_SYS_RESOURCE, which root lacks in this test's container (real hosts' root
# has it; then the helper gets both back).
HOSTILE = ("ulimit -c unlimited; ulimit -s unlimited; ulimit -S -n 64; ulimit -S -t 30; ulimit -S -v 8000000; "
           "ulimit -S -d 8000000; ulimit -S -f 100000")


def child_of(parent_pid, name, timeout=10):
    """The pid of the child of `parent_pid` whose command is `name` (cut to 15 characters
    as /proc/PID/stat has it), once it runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry) as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == parent_pid and "(%s)" % name[:15] in stat:
                return int(entry)
        time.sleep(0.05)
    return None


def limits(pid):
    """/proc/<pid>/limits as {name: (soft, hard)}."""
    with open("/proc/%d/limits" % pid) as f:
        rows = f.read().splitlines()[1:]
    table = {}
    for row in rows:
        name, soft, hard = row[:26].strip(), row[26:47].strip(), row[47:68].strip()
        table[name] = (soft, hard)
    return table


@pytest.fixture
def waiting_helper(world):
    """The harness in a folder of the caller's, with hostile limits and nice 19; yields the
    pids of fingerauth-pam and of the helper while it waits for a finger (none comes), the
    caller's folder and the harness."""
    world.enroll("alice", "finger-A")
    folder = world.tmp / "caller"
    folder.mkdir()
    service = world.service("fa-only", fallback=False)
    harness = [str(world.build / "fa-pamtest"), "--confdir", str(world.confdir), "--service", service, "--user", "alice"]
    script = "cd %s && %s && exec nice -n 19 \"$@\"" % (folder, HOSTILE)
    proc = subprocess.Popen(["sh", "-c", script, "sh"] + harness, env=world.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        broker = child_of(proc.pid, "fingerauth-pam")
        assert broker is not None, "no fingerauth-pam appeared"
        pid = child_of(broker, "fingerauth-login")
        assert pid is not None, "no helper appeared"
        time.sleep(0.5)  # past its start: the reader armed, waiting for a finger
        yield pid, broker, folder, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
        for leftover in ("/core", "/core.%d" % proc.pid):
            if os.path.exists(leftover):
                os.unlink(leftover)


def test_the_helper_works_in_the_root_folder_with_sane_limits_and_priority(waiting_helper):
    helper, broker, folder, proc = waiting_helper
    for pid in (broker, helper):
        assert os.readlink("/proc/%d/cwd" % pid) == "/"
        table = limits(pid)
        assert table["Max core file size"] == ("0", "0")
        assert table["Max stack size"] == ("8388608", "8388608")
        assert table["Max open files"][0] == "1024"
        for name in ("Max cpu time", "Max file size", "Max data size", "Max address space"):
            assert table[name][0] == "unlimited", (name, table[name])
        with open("/proc/%d/stat" % pid) as f:
            nice = int(f.read().rsplit(")", 1)[1].split()[16])
        assert nice == 0
    # The caller's own limits were the hostile ones (the harness kept them).
    harness = limits(proc.pid)
    assert harness["Max core file size"] == ("unlimited", "unlimited") and harness["Max stack size"][0] == "unlimited"
    assert harness["Max open files"][0] == "64" and harness["Max cpu time"][0] == "30"


def test_a_crashing_helper_leaves_no_core_file_in_the_callers_folder(waiting_helper):
    """core_pattern is `core` here: a dump would land in the working directory."""
    pid, _, folder, proc = waiting_helper
    os.kill(pid, signal.SIGQUIT)
    out, _ = proc.communicate(timeout=30)
    assert "RESULT 9 PAM_AUTHINFO_UNAVAIL" in out, out
    assert [p for p in os.listdir(folder) if p.startswith("core")] == []
    assert not os.path.exists("/core")
