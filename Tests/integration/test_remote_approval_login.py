"""`remote = approve` through real libpam: a remote login (PAM_RHOST set) on this host
(`testhost`, its host key registered with `fingerauth host register`) asks the real
fingerauthd that alice approve it; her workstation ws-alice is played here with her device
key (support.approvals), watching and deciding as the person does. The module's prompt,
its PAM code, its log line and the audit rows are what is checked.

sshd's keyboard-interactive prompt has no terminal of ours, which is what fa-pamtest is:
the prompt says "then press Enter", and the empty answer waits for the decision.
"""

import os
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.approvals import Parties, rows  # noqa: E402
from support.world import HOST_ID, PASSWORDS  # noqa: E402

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(HERE, "..", "..", "build", "fingerauth-pam")),
                                reason="no build")

RHOST = "10.0.0.5"


@pytest.fixture
def setup(world):
    """This host asks with its host key; alice's workstation holds her device key."""
    allowed = world.authd.admin("policy", "add", "--stage", "approve", "--users", "*", "--hosts", "*",
                                "--action", "allow")
    assert allowed.returncode == 0, allowed.stderr
    registered = world.cli("host", "register")
    assert registered.returncode == 0, registered.stdout + registered.stderr
    world.write_conf(remote="approve", approve_timeout="5", debug="yes")
    parties = Parties(world.authd)
    parties.alice = parties.device_key("alice", "ws-alice")
    return world, parties


def workstation(parties, decision="approve", seen=None, delay=0.3, ended=None):
    """alice's workstation: watches, and decides on what it is shown (None: never). Once the
    event `ended` is set (the login returned: nothing can be asked any more) it watches once
    more and stops, instead of watching out its 10 s."""
    def run():
        deadline = time.monotonic() + 10
        shown = []
        while not shown and time.monotonic() < deadline:
            last = ended is not None and ended.is_set()
            shown = parties.watch(parties.alice, wait=2).json()["approvals"]
            if last:
                break
        if seen is not None:
            seen.extend(shown)
        if shown and decision is not None:
            time.sleep(delay)
            parties.decide(parties.alice, shown[0], decision=decision)
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_enter_then_a_finger_on_the_workstation_logs_in(setup):
    world, parties = setup
    seen = []
    thread = workstation(parties, seen=seen)
    login = world.login("alice", password="", rhost=RHOST)
    thread.join(15)
    assert login.name == "PAM_SUCCESS", login
    assert len(seen) == 1
    shown = seen[0]
    assert (shown["host"], shown["service"], shown["rhost"], shown["user"]) == (HOST_ID, "fa-test", RHOST, "alice")
    assert login.prompts == [
        "Touch the reader on ws-alice (code %s), then press Enter \u2014 or type your password: " % shown["code"]]
    approved = rows(world.authd, "login", shown["id"])
    assert [(r["outcome"], r["user"], r["host"], r["service"], r["client_address"], r["workstation"])
            for r in approved] == [("accept", "alice", HOST_ID, "fa-test", RHOST, "ws-alice")]
    requested = rows(world.authd, "approval_requested", shown["id"])[0]
    assert requested["kid"] == world.cli("host", "status", "--json").stdout.split('"kid":"')[1].split('"')[0]
    line = [entry for entry in world.log_lines() if "result=" in entry or "PAM_SUCCESS" in entry]
    assert line and "remote:ws-alice" in line[-1], world.log_lines()[-5:]


def test_not_me_is_refused_with_its_reason_and_the_password_follows(setup):
    world, parties = setup
    thread = workstation(parties, decision="deny")
    login = world.login("alice", password="", rhost=RHOST)
    thread.join(15)
    assert login.name != "PAM_SUCCESS", login
    assert 'Not approved: "Not me" on your workstation' in login.errors
    # The stack's password prompt came next (pam_matrix), answered empty here.
    assert len(login.prompts) == 2, login


def test_no_decision_in_time_falls_to_the_password_and_nothing_stays_shown(setup):
    world, parties = setup
    seen = []
    thread = workstation(parties, decision=None, seen=seen)
    started = time.monotonic()
    login = world.login("alice", password="", rhost=RHOST)
    elapsed = time.monotonic() - started
    thread.join(15)
    assert login.name != "PAM_SUCCESS" and "Not approved in time on your workstation" in login.errors, login
    assert 4 < elapsed < 12, elapsed
    assert parties.watch(parties.alice).json()["approvals"] == []
    ended = [r["event"] for r in rows(world.authd, approval=seen[0]["id"])]
    assert "approval_expired" in ended or "approval_withdrawn" in ended, ended


def test_a_typed_password_logs_in_and_withdraws_the_request_at_once(setup):
    world, parties = setup
    seen = []
    thread = workstation(parties, decision=None, seen=seen)
    login = world.login("alice", password=PASSWORDS["alice"], rhost=RHOST)
    thread.join(15)
    assert login.name == "PAM_SUCCESS", login
    # Handed on as PAM_AUTHTOK (pam_matrix, the test's password module, asks again anyway).
    assert any("password typed at the remote approval prompt, handed to the next module" in entry
               for entry in world.log_lines()), world.log_lines()[-5:]
    assert not any(PASSWORDS["alice"] in entry for entry in world.log_lines())
    assert parties.watch(parties.alice).json()["approvals"] == []
    withdrawn = rows(world.authd, "approval_withdrawn", seen[0]["id"])
    assert [r["outcome"] for r in withdrawn] == ["accept"]
    assert not rows(world.authd, "approval_approved", seen[0]["id"])


def test_the_authenticator_stopped_means_the_password_at_once(setup):
    world, parties = setup
    world.authd.stop()
    started = time.monotonic()
    login = world.login("alice", password="", rhost=RHOST)
    assert time.monotonic() - started < 5
    assert login.name != "PAM_SUCCESS"
    assert "Fingerprint login unavailable: authenticator not reachable" in login.errors, login
    assert not any(p.startswith("Touch the reader") for p in login.prompts)


def test_without_a_host_key_nothing_is_asked(setup):
    world, parties = setup
    os.unlink(world.state / "host" / "host.key")
    login = world.login("alice", password="", rhost=RHOST)
    assert login.name != "PAM_SUCCESS"
    assert not any(p.startswith("Touch the reader") for p in login.prompts), login
    assert "host key" in "\n".join(world.log_lines()), world.log_lines()[-5:]
    assert parties.watch(parties.alice).json()["approvals"] == []


def test_another_users_su_in_a_remote_session_asks_nobody(setup):
    world, parties = setup
    # Another user, in his ssh session, runs a setuid host (su) that asks for alice's login:
    # its real uid decides, whatever PAM_RUSER says. (A real setuid host runs without
    # nss_wrapper, as the kernel's secure execution drops LD_PRELOAD: the caller is a user
    # of the machine's own passwd, nobody.)
    login = world.login("alice", password="", rhost=RHOST, ruser="alice",
                        wrap=["setpriv", "--ruid", "65534", "--"])
    assert not any(p.startswith("Touch the reader") for p in login.prompts), login
    assert login.name != "PAM_SUCCESS", login
    assert parties.watch(parties.alice).json()["approvals"] == []
    assert any("no approval asked: nobody asks for another user's login (approve_callers = self)" in entry
               for entry in world.log_lines()), world.log_lines()[-5:]
    # A root host (no setuid) is believed about PAM_RUSER.
    login = world.login("alice", password="", rhost=RHOST, ruser="carol")
    assert not any(p.startswith("Touch the reader") for p in login.prompts), login
    assert "no approval asked: carol asks" in world.log_lines()[-1], world.log_lines()[-3:]


def test_with_approve_callers_any_the_workstation_sees_who_asks(setup):
    world, parties = setup
    world.write_conf(remote="approve", approve_timeout="5", approve_callers="any")
    seen = []
    thread = workstation(parties, seen=seen)
    login = world.login("alice", password="", rhost=RHOST, ruser="bob")
    thread.join(15)
    assert login.name == "PAM_SUCCESS", login
    assert [(s["user"], s["caller"]) for s in seen] == [("alice", "bob")]
    # The user asking for themself (sudo sets PAM_RUSER so) names no other caller.
    seen.clear()
    thread = workstation(parties, seen=seen)
    login = world.login("alice", password="", rhost=RHOST, ruser="alice")
    thread.join(15)
    assert login.name == "PAM_SUCCESS", login
    assert [s["caller"] for s in seen] == [""]


def test_bobs_login_cannot_be_approved_by_alices_workstation(setup):
    world, parties = setup
    seen = []
    ended = threading.Event()
    thread = workstation(parties, seen=seen, ended=ended)
    login = world.login("bob", password="", rhost=RHOST, timeout=30)
    ended.set()
    thread.join(15)
    assert login.name != "PAM_SUCCESS", login
    assert seen == [], "alice's workstation is never shown bob's request"
