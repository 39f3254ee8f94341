"""Files that must not be trusted: the device key, the prints, the state directory and
the configuration, each a link, someone else's, too open, truncated, empty or huge."""

import os

import pytest

UNAVAILABLE = "Fingerprint login unavailable"


def only_module(world):
    return world.service("fa-only", fallback=False)


@pytest.fixture
def enrolled(world):
    world.enroll("alice", "finger-A")
    return world


def login(world, scans=("finger-A",)):
    # A broken print is found before the reader opens: no finger is fed then.
    return world.login("alice", scans=list(scans), service=only_module(world))


def expect_unavailable(world, result, reason):
    assert result.name == "PAM_AUTHINFO_UNAVAIL", result
    assert result.errors == [UNAVAILABLE], result
    assert reason in world.log_lines()[-1], world.log_lines()[-1]


# -- the device key ---------------------------------------------------------------------

def test_key_that_is_a_symlink(enrolled):
    _, _, key = enrolled.paths("alice")
    real = key.with_name("real.key")
    key.rename(real)
    key.symlink_to(real)
    expect_unavailable(enrolled, login(enrolled, ()), "is a symbolic link")


def test_key_owned_by_another_user(enrolled):
    _, _, key = enrolled.paths("alice")
    os.chown(key, 5001, 5001)
    expect_unavailable(enrolled, login(enrolled, ()), "must be owned by root")


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644])
def test_key_readable_or_writable_by_others(enrolled, mode):
    _, _, key = enrolled.paths("alice")
    os.chmod(key, mode)
    expect_unavailable(enrolled, login(enrolled, ()), "is too open")


@pytest.mark.parametrize("content", [b"", b"-----BEGIN PRIVATE KEY-----\nMIIG\n", b"\x00" * 100])
def test_key_truncated_empty_or_garbage(enrolled, content):
    _, _, key = enrolled.paths("alice")
    key.write_bytes(content)
    expect_unavailable(enrolled, login(enrolled, ()), "not a usable RSA private key")


def test_key_oversized(enrolled):
    _, _, key = enrolled.paths("alice")
    key.write_bytes(b"A" * (65 * 1024))
    expect_unavailable(enrolled, login(enrolled, ()), "larger than 65536 bytes")


# -- prints and the state directory ----------------------------------------------------

def test_print_that_is_a_symlink(enrolled):
    _, prints, _ = enrolled.paths("alice")
    print_file = prints / "right-index-finger.fpt"
    real = enrolled.tmp / "elsewhere.fpt"
    real.write_bytes(print_file.read_bytes())
    os.chmod(real, 0o600)
    print_file.unlink()
    print_file.symlink_to(real)
    expect_unavailable(enrolled, login(enrolled, ()), "reader: bad-print")


def test_print_readable_by_others(enrolled):
    _, prints, _ = enrolled.paths("alice")
    os.chmod(prints / "right-index-finger.fpt", 0o644)
    expect_unavailable(enrolled, login(enrolled, ()), "reader: bad-print")


def test_print_truncated(enrolled):
    _, prints, _ = enrolled.paths("alice")
    print_file = prints / "right-index-finger.fpt"
    print_file.write_bytes(print_file.read_bytes()[:20])
    expect_unavailable(enrolled, login(enrolled, ()), "reader: bad-print")


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o701])
def test_user_state_directory_open_to_others(enrolled, mode):
    user_dir, _, _ = enrolled.paths("alice")
    os.chmod(user_dir, mode)
    expect_unavailable(enrolled, login(enrolled, ()), "is too open")


def test_user_state_directory_that_is_a_symlink(enrolled):
    user_dir, _, _ = enrolled.paths("alice")
    moved = enrolled.tmp / "moved-alice"
    user_dir.rename(moved)
    user_dir.symlink_to(moved)
    expect_unavailable(enrolled, login(enrolled, ()), "is a symbolic link")


# -- the configuration -------------------------------------------------------------------

def service_error_then_password(world):
    result = world.login("alice", service=only_module(world))
    assert result.name == "PAM_SERVICE_ERR", result
    assert result.infos == [] and result.errors == [], result
    fallback = world.login("alice", password="alice-password")
    assert fallback.name == "PAM_SUCCESS" and fallback.prompts == ["Password: "], fallback


def test_config_with_an_unknown_key(enrolled):
    enrolled.write_conf(colour="blue")
    service_error_then_password(enrolled)


@pytest.mark.parametrize("key,value", [("timeout", "0"), ("timeout", "ten"), ("max_tries", "11"), ("ttl", "301"),
                                       ("state_dir", "relative/path"), ("remote", "sometimes"), ("url", "ftp://x/")])
def test_config_with_a_bad_value(enrolled, key, value):
    enrolled.write_conf(**{key: value})
    service_error_then_password(enrolled)


@pytest.mark.parametrize("mode", [0o666, 0o664, 0o646])
def test_config_writable_by_others(enrolled, mode):
    os.chmod(enrolled.conf_path, mode)
    service_error_then_password(enrolled)


def test_config_owned_by_another_user(enrolled):
    os.chown(enrolled.conf_path, 5001, 5001)
    service_error_then_password(enrolled)


def test_config_that_is_a_symlink(enrolled):
    real = enrolled.tmp / "real.conf"
    enrolled.conf_path.rename(real)
    enrolled.conf_path.symlink_to(real)
    service_error_then_password(enrolled)


def test_named_config_that_does_not_exist(enrolled):
    enrolled.conf_path.unlink()
    service_error_then_password(enrolled)
