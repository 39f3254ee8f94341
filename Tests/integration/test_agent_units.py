"""The agent's systemd units as `make install` ships them. No systemd runs here, so they
are checked offline: `systemd-analyze verify` on a staged install (the ExecStart binary
must be there and executable, no unknown keys), the sandbox's exposure score, the socket
path equal to the module's default agent_socket, and nothing enabled by the install.
What this cannot show: systemd itself starting the service with these units (the sandbox's
effect on the helper and the reader included). The LISTEN_FDS path of the agent is tested
with systemd-socket-activate in test_agent.py."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from support.authd import build_dir

REPO = Path(__file__).resolve().parents[2]
UNITS = ["fingerauth-agent.socket", "fingerauth-agent.service", "fingerauth-sync.service", "fingerauth-sync.timer",
         "fingerauth-watcher.service"]
# The targets the units reach (After=, WantedBy=, the defaults), from this machine.
TARGETS = ["sysinit.target", "sockets.target", "basic.target", "shutdown.target", "network-online.target",
           "timers.target", "time-set.target", "time-sync.target", "multi-user.target"]

pytestmark = pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")


@pytest.fixture
def staged(tmp_path):
    root = tmp_path / "root"
    done = subprocess.run(["make", "--no-print-directory", "-C", str(REPO), "install", "NOBUILD=1",
                           "BUILD=" + os.path.abspath(build_dir()), "DESTDIR=" + str(root)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    for target in TARGETS:
        shutil.copy("/lib/systemd/system/" + target, root / "lib/systemd/system" / target)
    return root, done.stdout


def analyze(root, *args):
    return subprocess.run(["systemd-analyze", *args, "--root=%s" % root] + ["/lib/systemd/system/" + u for u in UNITS],
                          capture_output=True, text=True, timeout=60)


def test_units_verify_cleanly_against_the_installed_binary(staged):
    root, _ = staged
    done = analyze(root, "verify", "--man=no")
    assert done.returncode == 0 and done.stderr == "" and done.stdout == "", done.stdout + done.stderr
    # The check is real: a unit naming a binary that is not installed fails it.
    (root / "usr/libexec/fingerauth/fingerauth-agent").unlink()
    broken = analyze(root, "verify", "--man=no")
    assert broken.returncode != 0 and "fingerauth-agent is not executable" in broken.stderr, broken.stderr


@pytest.mark.parametrize("unit, limit", [("fingerauth-agent.service", 4.0), ("fingerauth-sync.service", 4.0),
                                         ("fingerauth-watcher.service", 4.0)])
def test_service_is_sandboxed(staged, unit, limit):
    root, _ = staged
    done = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--root=%s" % root,
                           "/lib/systemd/system/" + unit], capture_output=True, text=True, timeout=60)
    score = re.search(r"Overall exposure level for %s: ([0-9.]+)" % re.escape(unit), done.stdout + done.stderr)
    assert score, done.stdout + done.stderr
    # "OK" on systemd's scale (the agent 2.6 today: root, the network and the reader are
    # needed; fingerauthd.service 1.4).
    assert float(score.group(1)) < limit, done.stdout


def test_socket_matches_the_default_agent_socket_and_every_user_may_connect(staged):
    root, _ = staged
    text = (root / "lib/systemd/system/fingerauth-agent.socket").read_text()
    assert "\nListenStream=/run/fingerauth/agent.sock\n" in text
    assert "\nSocketMode=0666\n" in text and "\nAccept=no\n" in text
    swift = (REPO / "Sources/FingerAuthLoginDomain/Protocol/AgentProtocol.swift").read_text()
    assert 'defaultSocket = "/run/fingerauth/agent.sock"' in swift
    service = (root / "lib/systemd/system/fingerauth-agent.service").read_text()
    assert "ExecStart=/usr/libexec/fingerauth/fingerauth-agent --config /etc/security/fingerauth.conf\n" in service


def test_install_enables_nothing(staged):
    root, out = staged
    assert "fingerauth-agent.socket (not enabled)" in out and "fingerauth-sync.timer (not enabled)" in out
    assert "fingerauth-watcher.service (not enabled)" in out
    assert not (root / "etc/systemd").exists()
    assert not list(root.rglob("*.wants"))
