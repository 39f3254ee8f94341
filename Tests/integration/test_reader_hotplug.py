"""A reader that goes away and comes back (libfprint's virtual `UNPLUG`, then a new device):
a login in progress fails over with "reader removed"; the next login, through the module and
through the agent, works without restarting anything (the helper is a fresh process per
login, the agent forks one per client). fprintd's reader unplugged mid-verify fails over the
same way. Real libpam, module, helper, agent, fprintd and fingerauthd."""

import os
import subprocess
import tempfile

from support.agent import Agent
from support.fprintd import PrivateBus
from support.world import PASSWORDS, USERS, World

PLACE_FINGER = "Place your finger on the fingerprint reader"


def only(world):
    return world.service("fa-only", fallback=False)


def test_unplugged_mid_scan_fails_over_and_the_next_login_works(world):
    world.enroll("alice", "finger-A")
    gone = world.login("alice", commands=["UNPLUG"], password=PASSWORDS["alice"])
    assert gone.name == "PAM_SUCCESS", gone  # by the password
    assert gone.infos == [PLACE_FINGER] and gone.errors == ["Fingerprint login unavailable"]
    assert gone.prompts == ["Password: "]
    line = [l for l in world.log_lines() if "result=" in l][-1]
    assert 'reason="reader: removed: reader removed during the scan"' in line, line
    back = world.login("alice", scans=["finger-A"], service=only(world))
    assert back.name == "PAM_SUCCESS", back
    assert back.infos == [PLACE_FINGER]


def test_unplugged_and_back_through_the_agent(ca):
    tmp = tempfile.mkdtemp(prefix="fa-hotplug-test.")
    os.chmod(tmp, 0o755)
    w = World(tmp, ca)
    agent = None
    try:
        w.start_authenticator()
        os.chmod(w.tmp / "passdb", 0o644)
        w.enroll("alice", "finger-A")
        agent = Agent(w).start()
        gone = w.login("alice", as_uid=USERS["alice"], commands=["UNPLUG"], service=only(w))
        assert gone.name == "PAM_AUTHINFO_UNAVAIL", gone
        assert gone.infos == [PLACE_FINGER] and gone.errors == ["Fingerprint login unavailable"]
        assert "reader removed during the scan" in agent.wait_for_log("sent=reader-unavailable")
        back = w.login("alice", as_uid=USERS["alice"], scans=["finger-A"], service=only(w))
        assert back.name == "PAM_SUCCESS", back
        assert agent.alive()  # the same agent process served both
    finally:
        if agent is not None:
            agent.stop()
        w.close()
        subprocess.run(["rm", "-rf", tmp])


def test_fprintds_reader_unplugged_mid_verify_fails_over(world):
    bus = PrivateBus()
    try:
        bus.start()
        bus.start_fprintd()
        bus.enroll("alice", "finger-A")
        for args in (["key", "create", "--user", "alice"], ["register", "--user", "alice"]):
            assert world.cli(*args).returncode == 0
        world.write_conf(system_bus=bus.socket, reader="fprintd", virtual_reader=None)
        bus.reader.feed(["UNPLUG"])
        login = world.login("alice", service=only(world))
        bus.reader.wait()
        assert login.name == "PAM_AUTHINFO_UNAVAIL", login
        assert login.infos == [PLACE_FINGER] and login.errors == ["Fingerprint login unavailable"]
        line = world.log_lines()[-1]
        assert 'reason="reader: removed: reader removed' in line, line + bus.log("monitor")[-3000:]
    finally:
        bus.close()
