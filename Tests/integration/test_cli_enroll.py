"""`fingerauth enroll` through the built binary, the virtual reader and a real fingerauthd."""

import os
import re

from support.cli import active_kids, enroll, run, server_keys
from support.vreader import enroll_commands


def test_enroll_shows_each_stage_creates_and_registers_the_key(world):
    done = enroll(world)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("enrolling right-index-finger for alice on Virtual device for debugging")
    assert lines[1:6] == ["stage %d/5" % n for n in range(1, 6)]
    assert lines[6] == "enrolled right-index-finger for alice"
    kid = re.fullmatch(r"created device key: kid (\S+)", lines[7]).group(1)
    assert lines[8] == "registered key %s at %s/v1/keys: active" % (kid, world.authd.url)
    assert done.stderr == ""
    _, prints, key = world.paths("alice")
    assert (os.stat(prints / "right-index-finger.fpt").st_mode & 0o777) == 0o600
    assert (os.stat(key).st_mode & 0o777) == 0o600
    assert active_kids(world) == [kid]


def test_enroll_with_retries_prints_the_readers_hints_in_plain_words(world):
    feed = ["SET_ENROLL_STAGES 3", "SCAN finger-A", "RETRY 1", "SCAN finger-A", "RETRY 2", "RETRY 3", "SCAN finger-A"]
    done = run(world, "enroll", "--user", "alice", "--no-register", feed=feed)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:7] == [
        "stage 1/3", "Swipe was too short, try again", "stage 2/3",
        "Center your finger on the reader", "Remove your finger and try again", "stage 3/3"]
    assert done.stderr == ""


def test_enroll_refuses_to_overwrite_a_finger_without_force(world):
    enroll(world)
    _, prints, _ = world.paths("alice")
    before = (prints / "right-index-finger.fpt").read_bytes()
    refused = run(world, "enroll", "--user", "alice")
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr == "fingerauth: right-index-finger is already enrolled for alice (use --force to replace it)\n"
    assert (prints / "right-index-finger.fpt").read_bytes() == before

    forced = run(world, "enroll", "--user", "alice", "--force", feed=enroll_commands("finger-B"))
    assert forced.returncode == 0, forced.stderr
    assert "enrolled right-index-finger for alice" in forced.stdout
    assert "created device key" not in forced.stdout  # the key is kept and registered again
    assert re.search(r"registered key \S+ at .*: active", forced.stdout)
    assert (prints / "right-index-finger.fpt").read_bytes() != before
    assert len(active_kids(world)) == 1


def test_enroll_no_register_leaves_the_authenticator_alone(world):
    done = run(world, "enroll", "--user", "alice", "--finger", "left-thumb", "--no-register",
               feed=enroll_commands("finger-A"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "not registered (--no-register); run: fingerauth register --user alice"
    assert done.stderr == ""
    assert server_keys(world) == []


def test_enroll_defaults_to_the_sudo_user(world):
    done = run(world, "enroll", "--no-register", feed=enroll_commands("finger-B"), env={"SUDO_USER": "bob"})
    assert done.returncode == 0, done.stderr
    assert "enrolled right-index-finger for bob" in done.stdout and done.stderr == ""
    assert (world.paths("bob")[1] / "right-index-finger.fpt").exists()


def test_enroll_unknown_finger_is_a_usage_error(world):
    done = run(world, "enroll", "--user", "alice", "--finger", "pinky")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("fingerauth: unknown finger 'pinky'\nusage: fingerauth enroll")


def test_enroll_without_a_reader_says_so(world):
    world.write_conf(virtual_reader=None)
    done = run(world, "enroll", "--user", "alice")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "fingerauth: No fingerprint reader found\n"
    assert not (world.paths("alice")[1] / "right-index-finger.fpt").exists()


def test_enroll_registration_failure_says_how_to_finish(world):
    world.authd.stop()
    done = run(world, "enroll", "--user", "alice", feed=enroll_commands("finger-A"))
    assert done.returncode == 1
    assert "enrolled right-index-finger for alice" in done.stdout
    err = done.stderr.splitlines()
    assert err[0].startswith("fingerauth: enrolled, but the key is not registered: cannot connect to the authenticator")
    assert err[1] == "fingerauth: fix that, then run: fingerauth register --user alice"
