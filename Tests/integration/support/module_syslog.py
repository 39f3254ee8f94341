"""One PAM login with the host's syslog captured (support/syslog_capture.py in a mount
namespace of its own): what the module wrote through pam_syslog, priority and text."""

import json
import os
import re
import subprocess

LOG_AUTHPRIV = 10 << 3
SEVERITY = {"info": 6, "notice": 5, "debug": 7, "err": 3}
CAPTURE = os.path.join(os.path.dirname(__file__), "syslog_capture.py")


def namespaces_work():
    return subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode == 0


def login_with_syslog(world, service, scans=(), user="alice", extra=()):
    """fa-pamtest for `user` at `service` (`extra`: more of its options); the report has the
    harness's stdout and the syslog lines."""
    if scans:
        world.reader.feed(["SCAN %s" % s for s in scans], timeout=30)
    cmd = ["unshare", "--mount", "--propagation", "private", "/usr/bin/python3", CAPTURE, "--",
           str(world.build / "fa-pamtest"), "--confdir", str(world.confdir), "--service", service, "--user", user]
    cmd += list(extra)
    try:
        done = subprocess.run(cmd, env=world.env, capture_output=True, text=True, timeout=120)
    finally:
        if scans:
            world.reader.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "RESULT" in report["stdout"], report
    return report


def parse(message):
    match = re.match(r"<(\d+)>(.*)", message)
    return int(match.group(1)), match.group(2)
