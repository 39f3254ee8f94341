"""What the root login helper must not inherit from the process that runs the PAM host:
in a setuid host (sudo, su, chfn) that is an unprivileged caller, who chooses the working
directory, the resource limits and the priority. The harness is started here with a hostile
set of them; while the helper waits for a finger, its /proc entries say what it got."""

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


def helper_of(harness_pid, timeout=10):
    """The pid of fingerauth-login started by the harness (its child), once it runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % name) as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == harness_pid and "(fingerauth-logi" in stat:
                return int(name)
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
    helper's pid while it waits for a finger (none comes), and the caller's folder."""
    world.enroll("alice", "finger-A")
    folder = world.tmp / "caller"
    folder.mkdir()
    service = world.service("fa-only", fallback=False)
    harness = [str(world.build / "fa-pamtest"), "--confdir", str(world.confdir), "--service", service, "--user", "alice"]
    script = "cd %s && %s && exec nice -n 19 \"$@\"" % (folder, HOSTILE)
    proc = subprocess.Popen(["sh", "-c", script, "sh"] + harness, env=world.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        pid = helper_of(proc.pid)
        assert pid is not None, "no helper appeared"
        time.sleep(0.5)  # past its start: the reader armed, waiting for a finger
        yield pid, folder, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
        for leftover in ("/core", "/core.%d" % proc.pid):
            if os.path.exists(leftover):
                os.unlink(leftover)


def test_the_helper_works_in_the_root_folder_with_sane_limits_and_priority(waiting_helper):
    pid, folder, _ = waiting_helper
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
    harness = limits(int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1]))
    assert harness["Max core file size"] == ("unlimited", "unlimited") and harness["Max stack size"][0] == "unlimited"
    assert harness["Max open files"][0] == "64" and harness["Max cpu time"][0] == "30"


def test_a_crashing_helper_leaves_no_core_file_in_the_callers_folder(waiting_helper):
    """core_pattern is `core` here: a dump would land in the working directory."""
    pid, folder, proc = waiting_helper
    os.kill(pid, signal.SIGQUIT)
    out, _ = proc.communicate(timeout=30)
    assert "RESULT 9 PAM_AUTHINFO_UNAVAIL" in out, out
    assert [p for p in os.listdir(folder) if p.startswith("core")] == []
    assert not os.path.exists("/core")
