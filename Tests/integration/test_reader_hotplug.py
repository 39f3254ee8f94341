"""A reader that goes away and comes back (libfprint's virtual `UNPLUG`, then a new device):
a login in progress fails over with "reader removed"; the next login, through the module and
through the agent, works without restarting anything (the helper is a fresh process per
login, the agent forks one per client). fprintd's reader unplugged mid-verify fails over the
same way. Real libpam, module, helper, agent, fprintd and fingerauthd."""

from support.fprintd import fprintd_for
from support.world import PASSWORDS, USERS
from test_agent import lw  # noqa: F401  (the agent's fixture)

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


def test_unplugged_and_back_through_the_agent(lw):
    lw.enroll("alice", "finger-A")
    gone = lw.login("alice", as_uid=USERS["alice"], commands=["UNPLUG"], service=only(lw))
    assert gone.name == "PAM_AUTHINFO_UNAVAIL", gone
    assert gone.infos == [PLACE_FINGER] and gone.errors == ["Fingerprint login unavailable"]
    assert "reader removed during the scan" in lw.agent.wait_for_log("sent=reader-unavailable")
    back = lw.login("alice", as_uid=USERS["alice"], scans=["finger-A"], service=only(lw))
    assert back.name == "PAM_SUCCESS", back
    assert lw.agent.alive()  # the same agent process served both


def test_fprintds_reader_unplugged_mid_verify_fails_over(world):
    with fprintd_for(world) as bus:
        bus.reader.feed(["UNPLUG"])
        login = world.login("alice", service=only(world))
        bus.reader.wait()
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.infos == [PLACE_FINGER] and login.errors == ["Fingerprint login unavailable"]
    line = world.log_lines()[-1]
    assert 'reason="reader: removed: reader removed during the scan (fprintd)"' in line, line
