"""`fingerauth active-keys` (issue 48, point 1), what the package's prerm runs before the
binaries go: against a real fingerauthd over TLS, the keys of this host's users still
active there, each with the command that revokes it; nothing once they are revoked; and
with the authenticator gone, the keys it could not ask about, within its bounded wait."""

import time

from support.cli import active_kids, enroll, run


def test_active_keys_names_each_active_key_with_its_command_and_nothing_once_revoked(world):
    enroll(world, "alice", "finger-A")
    enroll(world, "bob", "finger-B")
    alice, bob = world.kid("alice"), world.kid("bob")
    done = run(world, "active-keys")
    assert done.returncode == 1 and done.stderr == "", done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "fingerauth: warning: device keys of this host's users are still active at the authenticator (%s/v1/login); "
        "removing the package does not revoke them, and a purge deletes this host's copy:" % world.authd.url,
        "fingerauth:   alice: key %s (active)" % alice,
        "fingerauth:   bob: key %s (active)" % bob,
        "fingerauth: revoke them on the authenticator:",
        "fingerauth:   fingerauthd keys revoke --kid %s" % alice,
        "fingerauth:   fingerauthd keys revoke --kid %s" % bob,
        "fingerauth: (or from this host, before removing the package: fingerauth revoke --user alice; "
        "fingerauth revoke --user bob)",
    ]

    # The command it names, run on the authenticator, is the end of it.
    assert world.authd.admin("keys", "revoke", "--kid", alice).returncode == 0
    assert active_kids(world, "alice") == []
    left = run(world, "active-keys")
    assert left.returncode == 1 and "fingerauth:   bob: key %s (active)" % bob in left.stdout
    assert alice not in left.stdout, left.stdout
    assert run(world, "revoke", "--user", "bob").returncode == 0
    none = run(world, "active-keys")
    assert (none.returncode, none.stdout, none.stderr) == (0, "", "")


def test_active_keys_with_the_authenticator_gone_names_what_it_could_not_ask_within_its_wait(world):
    enroll(world, "alice", "finger-A")
    kid = world.kid("alice")
    world.authd.stop()
    started = time.monotonic()
    done = run(world, "active-keys", "--wait", "2")
    took = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("fingerauth: could not learn within 2 s from %s/v1/login whether these keys are still "
                               "active: " % world.authd.url), lines
    assert lines[1:] == ["fingerauth:   alice: key %s; if active, on the authenticator: fingerauthd keys revoke --kid %s"
                         % (kid, kid)], lines
    assert took < 4, took


def test_active_keys_names_this_hosts_own_key_from_its_record(world):
    """No user enrolled, but the host key of remote approval registered: named with the
    command that revokes it on the authenticator (its status there is not asked)."""
    assert (run(world, "active-keys").returncode) == 0
    registered = world.cli("host", "register")
    assert registered.returncode == 0, registered.stdout + registered.stderr
    kid = world.cli("host", "status", "--json").stdout.split('"kid":"')[1].split('"')[0]
    done = run(world, "active-keys")
    assert done.returncode == 1 and done.stderr == "", done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "fingerauth: this host's own key (it signs remote-approval requests), %s, is registered at the authenticator "
        "by this host's record (not asked); a purge deletes it here. Unless revoked there already, revoke it on the "
        "authenticator: fingerauthd hosts revoke-key --kid %s" % (kid, kid)]
    revoked = world.authd.admin("hosts", "revoke-key", "--kid", kid)
    assert revoked.returncode == 0, revoked.stdout + revoked.stderr
