"""The host's clock floor (issue 45): after a reboot the monotonic clock starts anew, so an
offline grant's hours rest on the wall clock, and a clock set back must not stop them. The
host keeps the latest time it saw (an online answer while holding a grant, a sync, an
offline login) root 0600 in `<state_dir>/clock-floor`; an offline login while the clock is
behind it falls to the password. A reboot with the clock set back is simulated as root by
rewriting the grant's receipt (another boot, arrived a minute ago by the wall clock) and
the floor (the host had already seen two hours later)."""

import json
import os
import time

from test_offline_grants import UNREACHABLE, OFFLINE_TEXT, offline  # noqa: F401  (fixture)


def floor_file(world):
    return world.state / "clock-floor"


def reboot_with_the_clock_set_back(offline, world, seen_ahead):
    """The grant arrived 60 s ago by the wall clock, on another boot; the host had seen
    `seen_ahead` seconds past now before the reboot."""
    receipt = offline.receipt()
    now = int(time.time())
    receipt["wall"] = now - 60
    receipt["boot_id"] = "00000000-0000-0000-0000-000000000000"
    receipt["boot_ms"] = 1000
    offline.grant_file.write_text(json.dumps(receipt))
    os.chmod(offline.grant_file, 0o600)
    floor_file(world).write_text("%d\n" % (now + seen_ahead))
    os.chmod(floor_file(world), 0o600)


def test_an_answer_while_holding_a_grant_and_an_offline_login_raise_the_floor_root_only(offline, world):
    offline.rule(hours=8, uses=3)
    offline.online()
    before = int(time.time())
    offline.online()  # its warm-up is the sync of the grant the first login brought
    st = os.stat(floor_file(world))
    assert (st.st_uid, st.st_mode & 0o777) == (0, 0o600)
    seen = int(floor_file(world).read_text())
    assert before - 1 <= seen <= int(time.time()) + 1
    floor_file(world).write_text("%d\n" % (seen - 3600))  # older: an offline login raises it again
    offline.restart(stop_only=True)
    assert offline.offline().name == "PAM_SUCCESS"
    assert int(floor_file(world).read_text()) >= before - 1


def test_a_reboot_with_the_clock_set_back_behind_the_floor_falls_to_the_password(offline, world):
    offline.rule(hours=1, uses=5)
    offline.online()
    offline.restart(stop_only=True)
    # The host saw two hours past now before the reboot: the grant's hour is over, and the
    # clock set back by two hours must not bring it back.
    reboot_with_the_clock_set_back(offline, world, seen_ahead=2 * 3600)
    login = offline.offline(scans=())
    assert login.name == "PAM_AUTHINFO_UNAVAIL", login
    assert login.errors == [UNREACHABLE] and login.infos == []
    assert "offline: clock behind the last time this host saw (" in world.log_lines()[-1]
    assert not offline.log_file.exists() or offline.log_file.read_text() == ""
    # With the clock at or past the floor the same grant logs in, and the login raises it.
    reboot_with_the_clock_set_back(offline, world, seen_ahead=-10)
    login = offline.offline()
    assert login.name == "PAM_SUCCESS", login
    assert OFFLINE_TEXT.match(login.infos[-1]), login.infos
    assert int(floor_file(world).read_text()) >= int(time.time()) - 5


def test_a_floor_that_may_not_be_trusted_refuses_the_offline_login(offline, world):
    offline.rule(hours=8, uses=3)
    offline.online()
    offline.restart(stop_only=True)
    floor_file(world).write_text("%d\n" % int(time.time()))
    os.chmod(floor_file(world), 0o644)
    assert offline.offline(scans=()).name == "PAM_AUTHINFO_UNAVAIL"
    assert "offline: clock-floor:" in world.log_lines()[-1]
    os.chmod(floor_file(world), 0o600)
    floor_file(world).write_text("yesterday\n")
    assert offline.offline(scans=()).name == "PAM_AUTHINFO_UNAVAIL"
    assert "offline: clock-floor does not hold a time" in world.log_lines()[-1]
