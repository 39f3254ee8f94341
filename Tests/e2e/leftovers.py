"""After `make e2e`: nothing of the tests may be left outside their temporary folder.
Checks /etc/passwd (and group, shadow) for test users, /etc/sudoers.d for drop-ins,
/etc/pam.d for fa-e2e-* services, the process table for the test's sshd, fingerauthd,
fingerauth-login and test-user processes, /tmp for the setuid-root host copies of
test_setuid_host.py, and that the fingerauth package is not installed. Prints what it found; exit status 1 when anything is left."""

import glob
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from machine import PAM_DIR, SERVICE_PREFIX, SUDOERS_DIR, USER_PREFIX  # noqa: E402


def ancestors():
    """This process and its parents (the make recipe names the folder on its command line)."""
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        with open("/proc/%d/stat" % pid) as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return pids


def main():
    problems = []
    for path in ("/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow", "/etc/subuid", "/etc/subgid"):
        with open(path) as f:
            left = [line.split(":")[0] for line in f if line.startswith(USER_PREFIX)]
        if left:
            problems.append("%s still names %s" % (path, ", ".join(left)))
    names = os.listdir(SUDOERS_DIR) if os.path.isdir(SUDOERS_DIR) else []  # no sudo installed: no drop-ins
    left = [p for p in names if p.startswith(USER_PREFIX) or p.startswith(".fae2e")]
    if left:
        problems.append("sudoers drop-ins left: %s" % ", ".join(left))
    # test_setuid_host.py's setuid-root fa-pamtest: anyone who can run it runs any PAM stack.
    left = glob.glob("/tmp/fingerauth-e2e-setuid.*")
    if left:
        problems.append("setuid host copies left: %s" % ", ".join(left))
    left = glob.glob(str(PAM_DIR / (SERVICE_PREFIX + "*"))) + glob.glob(str(PAM_DIR / ("." + SERVICE_PREFIX + "*")))
    if left:
        problems.append("PAM service files left: %s" % ", ".join(left))
    # The test's sshd symlink, fingerauthd and fingerauth-login all carry the temporary
    # folder or the service prefix on their command line; test users own the rest.
    # sshd's per-connection processes end (and are reaped) a moment after the client:
    # give them a few seconds before calling them left over.
    mine = ancestors()
    deadline = time.monotonic() + 5
    while True:
        left = {}
        for pattern in (SERVICE_PREFIX + "sshd", "/tmp/fingerauth-e2e", USER_PREFIX):
            found = subprocess.run(["pgrep", "-a", "-f", pattern], capture_output=True, text=True).stdout
            found = [line for line in found.splitlines() if int(line.split()[0]) not in mine]
            if found:
                left[pattern] = found
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for pattern, found in left.items():
        problems.append("processes left (%s): %s" % (pattern, "; ".join(found)))
    if problems:
        print("e2e leftovers:\n  " + "\n  ".join(problems))
        return 1
    print("e2e leftovers: none (no test user, no sudoers drop-in, no /etc/pam.d/fa-e2e-*, no setuid host, no process)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
