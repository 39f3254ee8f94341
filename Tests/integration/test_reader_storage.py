"""Match-on-chip readers with the direct backend, on libfprint's `virtual_device_storage`
(`virtual_storage_reader`): the template lives on the sensor, FingerAuth keeps the reference
print, and a login is believed only for a print that is one of this user's by identity.

The emulated sensor's memory lasts one open of the device (each program that opens it starts
empty), so each test plays the sensor's memory with `INSERT <id>` before the scan: the
prints every earlier enrollment left on the chip. Real libpam, module, helper, CLI and
fingerauthd over TLS."""

import pytest

from support.vreader import VirtualReader

PLACE_FINGER = "Place your finger on the fingerprint reader"


@pytest.fixture
def chip(world):
    """The world's reader is a match-on-chip one: `world.enroll`/`world.login` feed it."""
    world.reader = VirtualReader(world.tmp / "reader" / "storage.sock")
    world.write_conf(virtual_reader=None, virtual_storage_reader=world.reader.path)
    return world.reader


def on_chip(*identities):
    return ["INSERT %s" % identity for identity in identities]


def only(world):
    return world.service("fa-only", fallback=False)


def enroll(world, user, identity, finger="right-index-finger", held=()):
    done = world.cli("enroll", "--user", user, "--finger", finger,
                     feed=on_chip(*held) + ["SET_ENROLL_STAGES 5"] + ["SCAN %s" % identity] * 5)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_enroll_stores_the_print_on_the_sensor_and_keeps_the_reference(world, chip):
    done = enroll(world, "alice", "alice-R")
    assert "enrolled right-index-finger for alice (the print is stored on the sensor)" in done.stdout
    _, prints, _ = world.paths("alice")
    assert (prints / "right-index-finger.fpt").stat().st_size > 0


def test_verify_logs_in_with_the_users_own_finger(world, chip):
    enroll(world, "alice", "alice-R")
    login = world.login("alice", commands=on_chip("alice-R") + ["SCAN alice-R"], service=only(world))
    assert login.name == "PAM_SUCCESS", login
    assert "finger=right-index-finger" in world.log_lines()[-1]


def test_two_users_on_one_sensor_alices_finger_never_logs_bob_in(world, chip):
    enroll(world, "alice", "alice-R")
    enroll(world, "alice", "alice-L", finger="left-thumb", held=["alice-R"])
    enroll(world, "bob", "bob-R", held=["alice-R", "alice-L"])
    everything = on_chip("alice-R", "alice-L", "bob-R")
    # bob: one print, alice's two fingers on the sensor; each is a no-match for bob.
    login = world.login("bob", commands=everything + ["SCAN alice-R", "SCAN alice-L", "SCAN alice-R"],
                        service=only(world))
    assert login.name == "PAM_MAXTRIES", login
    assert login.infos == [PLACE_FINGER, "No match, try again (2 left)", "No match, try again (1 left)"]
    assert login.errors == ["Fingerprint not recognised; too many tries"]
    # alice: two prints, identified on the sensor; bob's finger is no match, hers is.
    login = world.login("alice", commands=everything + ["SCAN bob-R", "SCAN alice-L"], service=only(world))
    assert login.name == "PAM_SUCCESS", login
    assert login.infos == [PLACE_FINGER, "No match, try again (2 left)"]
    assert "finger=left-thumb" in world.log_lines()[-1]
    # bob with his own finger.
    login = world.login("bob", commands=everything + ["SCAN bob-R"], service=only(world))
    assert login.name == "PAM_SUCCESS", login


def test_a_finger_the_sensor_does_not_know_is_a_no_match_not_a_broken_print(world, chip):
    enroll(world, "alice", "alice-R")
    login = world.login("alice", commands=on_chip("alice-R") + ["SCAN stranger"] * 3, service=only(world))
    assert login.name == "PAM_MAXTRIES", login
    assert login.errors == ["Fingerprint not recognised; too many tries"]


def test_a_finger_the_sensor_holds_for_someone_else_is_refused_with_a_clear_message(world, chip):
    enroll(world, "bob", "bob-R")
    done = world.cli("enroll", "--user", "alice", feed=on_chip("bob-R") + ["SCAN bob-R"])
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("enrollment failed: This finger is already enrolled on the reader: the sensor holds it, for another user "
            "or another system (libfprint: data duplicate); enroll another finger, or delete that print where it was "
            "enrolled (fingerauth remove, fprintd-delete)") in done.stderr, done.stderr
    assert not (world.paths("alice")[1] / "right-index-finger.fpt").exists()


def test_remove_deletes_the_print_from_the_sensor(world, chip):
    enroll(world, "alice", "alice-R")
    enroll(world, "alice", "alice-L", finger="left-thumb", held=["alice-R"])
    done = world.cli("remove", "--user", "alice", "--finger", "left-thumb", feed=on_chip("alice-R", "alice-L"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[:2] == [
        "deleted left-thumb of alice from the sensor (Virtual device with storage and identification for debugging)",
        "removed left-thumb for alice"], done.stdout
    assert done.stderr == ""


def test_reset_deletes_every_print_from_the_sensor(world, chip):
    enroll(world, "alice", "alice-R")
    enroll(world, "alice", "alice-L", finger="left-thumb", held=["alice-R"])
    done = world.cli("reset", "--user", "alice", feed=on_chip("alice-R", "alice-L"))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for finger in ("left-thumb", "right-index-finger"):
        assert "deleted %s of alice from the sensor (Virtual device with storage and identification for debugging)"\
            % finger in lines, lines
    # The finger is free again: the sensor takes it for bob now.
    enroll(world, "bob", "alice-R")


def test_remove_says_so_when_the_sensor_no_longer_held_the_print(world, chip):
    enroll(world, "alice", "alice-R")
    done = world.cli("remove", "--user", "alice", "--finger", "right-index-finger", feed=[])
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == ("the sensor (Virtual device with storage and identification for debugging) "
                                           "no longer held right-index-finger of alice")


def test_remove_without_the_reader_warns_that_the_print_stays_on_the_sensor(world, chip):
    enroll(world, "alice", "alice-R")
    world.write_conf(virtual_storage_reader=None)  # no reader at all
    done = world.cli("remove", "--user", "alice", "--finger", "right-index-finger")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ("fingerauth: warning: right-index-finger of alice may still be stored on the sensor (No "
                           "fingerprint reader found); the sensor refuses that finger for a new enrollment until it is "
                           "deleted there\n")
    assert "removed right-index-finger for alice" in done.stdout
