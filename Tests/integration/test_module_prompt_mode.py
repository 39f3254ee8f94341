"""`prompt = parallel` outside the caller's own terminal: the sequential behaviour,
silently. Real libpam (fa-pamtest, whose standard input is a pipe, as under `sudo -S`, a
display manager or sshd), the real helper, the virtual reader, fingerauthd over TLS. The
terminal cases themselves are end-to-end tests (Tests/e2e/test_sudo_parallel.py)."""

import pytest

PLACE_FINGER = "Place your finger on the fingerprint reader"


@pytest.mark.parametrize("tty", [None, ":0", "ssh", "pts/0", "/dev/tty1"])
def test_parallel_without_the_callers_terminal_stays_sequential(world, tty):
    world.enroll("alice", "finger-A")
    world.write_conf(prompt="parallel", debug="yes")
    login = world.login("alice", scans=["finger-A"], tty=tty)
    assert login.name == "PAM_SUCCESS", login
    assert login.infos == [PLACE_FINGER] and login.prompts == [] and login.errors == []
    assert any("prompt = parallel, but not on the caller's own terminal: sequential" in l for l in world.log_lines())


def test_parallel_wrong_fingers_without_a_terminal_show_the_sequential_texts(world):
    world.enroll("alice", "finger-A")
    world.write_conf(prompt="parallel")
    login = world.login("alice", scans=["finger-B"] * 3, service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_MAXTRIES", login
    assert login.infos == [PLACE_FINGER, "No match, try again (2 left)", "No match, try again (1 left)"]
    assert login.prompts == []


def test_an_unknown_prompt_mode_is_a_configuration_error(world):
    world.enroll("alice", "finger-A")
    world.write_conf(prompt="both")
    login = world.login("alice", service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_SERVICE_ERR", login
    assert login.infos == [] and login.prompts == [] and login.errors == [], login
