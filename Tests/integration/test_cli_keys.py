"""`fingerauth key create|show|rotate`, `register`, `revoke` and `reset` against a real
fingerauthd; the registry is read back with `fingerauthd keys list --json`."""

import json
import os
import re

from support.cli import active_kids, enroll, run, server_keys


def test_key_create_refuses_to_replace_and_show_prints_only_public_parts(world):
    created = run(world, "key", "create", "--user", "bob", "--bits", "2048")
    assert created.returncode == 0, created.stderr
    kid = re.fullmatch(r"created device key for bob: kid (\S+) \(RSA-2048\)", created.stdout.splitlines()[0]).group(1)
    assert created.stdout.splitlines()[1] == "register it with: fingerauth register --user bob"
    assert created.stderr == ""

    again = run(world, "key", "create", "--user", "bob")
    assert again.returncode == 1 and again.stdout == ""
    assert again.stderr == ("fingerauth: bob already has a device key (use --force to replace it, or: fingerauth key rotate)\n")

    shown = run(world, "key", "show", "--user", "bob", "--json")
    assert shown.returncode == 0 and shown.stderr == ""
    document = json.loads(shown.stdout)
    assert document["kid"] == kid and document["bits"] == 2048 and set(document["jwk"]) == {"kty", "n", "e"}
    text = run(world, "key", "show", "--user", "bob")
    assert text.stdout.splitlines()[:3] == ["user: bob", "kid:  " + kid, "size: RSA-2048"]
    assert "PRIVATE" not in text.stdout + shown.stdout


def test_key_bits_and_subcommand_mistakes_are_usage_errors(world):
    bits = run(world, "key", "create", "--user", "bob", "--bits", "1024")
    assert bits.returncode == 2 and bits.stdout == "" and bits.stderr.startswith("fingerauth: --bits must be 3072 or 2048\n")
    unknown = run(world, "key", "frobnicate")
    assert unknown.returncode == 2 and unknown.stderr.startswith("fingerauth: unknown key command 'frobnicate'\nusage:")


def test_register_later_and_without_the_host_token(world):
    enroll(world, "alice", "finger-A", "--no-register")
    kid = world.kid("alice")
    os.rename(world.token_path, str(world.token_path) + ".away")
    missing = run(world, "register", "--user", "alice")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith("fingerauth: host enrollment token: %s: does not exist (create one on the authenticator: "
                                     "fingerauthd token create --host testhost" % world.token_path)
    os.rename(str(world.token_path) + ".away", world.token_path)
    done = run(world, "register", "--user", "alice")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == "registered key %s for alice at %s/v1/keys: active\n" % (kid, world.authd.url)
    assert active_kids(world) == [kid]


def test_rotate_leaves_exactly_one_active_key_at_the_authenticator(world):
    enroll(world)
    old = world.kid("alice")
    done = run(world, "key", "rotate", "--user", "alice")
    assert done.returncode == 0, done.stderr
    new = world.kid("alice")
    assert new != old
    assert done.stdout.splitlines() == [
        "created new key %s (RSA-3072)" % new,
        "registered new key %s: active" % new,
        "new key %s is now in use for alice" % new,
        "revoked old key %s at the authenticator" % old,
        "deleted old key %s" % old,
    ]
    assert done.stderr == ""
    assert active_kids(world) == [new]
    assert {k["kid"]: k["status"] for k in server_keys(world)} == {old: "revoked", new: "active"}
    user_dir = world.paths("alice")[0]
    assert sorted(os.listdir(user_dir)) == ["device.key", "prints", "registration"]
    login = world.login("alice", scans=["finger-A"])
    assert login.name == "PAM_SUCCESS", login


def test_rotate_with_the_authenticator_down_changes_nothing(world):
    enroll(world)
    old = world.kid("alice")
    world.authd.stop()
    done = run(world, "key", "rotate", "--user", "alice")
    assert done.returncode == 1
    assert re.fullmatch(r"created new key \S+ \(RSA-3072\)\n", done.stdout)
    assert done.stderr.startswith("fingerauth: cannot connect to the authenticator")
    assert done.stderr.rstrip().endswith("the old key %s stays in use, nothing changed" % old)
    assert world.kid("alice") == old
    assert sorted(os.listdir(world.paths("alice")[0])) == ["device.key", "prints", "registration"]


def test_revoke_stops_the_key_at_the_authenticator(world):
    enroll(world)
    kid = world.kid("alice")
    done = run(world, "revoke", "--user", "alice")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines() == [
        "revoked key %s for alice at the authenticator" % kid,
        "fingerprint login for alice is off until a new key is registered: fingerauth key rotate --user alice",
    ]
    assert active_kids(world) == []
    assert "status = revoked" in (world.paths("alice")[0] / "registration").read_text()
    login = world.login("alice", scans=["finger-A"], service=world.service("fa-only", fallback=False))
    assert login.name == "PAM_AUTH_ERR", login


def test_revoke_of_an_unknown_kid_and_with_a_wrong_token(world):
    enroll(world)
    unknown = run(world, "revoke", "--user", "alice", "--kid", "no-such-kid")
    assert unknown.returncode == 0 and unknown.stderr == ""
    assert unknown.stdout == "key no-such-kid is not registered at the authenticator; nothing to revoke there\n"
    world.token_path.write_text("not-a-token\n")
    refused = run(world, "revoke", "--user", "alice")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr == "fingerauth: the authenticator refused this host's enrollment token (%s)\n" % world.token_path
    assert len(active_kids(world)) == 1


def test_reset_revokes_and_deletes_everything(world):
    enroll(world)
    kid = world.kid("alice")
    done = run(world, "reset", "--user", "alice")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines() == [
        "revoked key %s at the authenticator" % kid,
        "deleted 1 print(s), the device key and the registration of alice",
    ]
    assert active_kids(world) == []
    assert not world.paths("alice")[0].exists()
    again = run(world, "reset", "--user", "alice")
    assert again.returncode == 0 and again.stdout == "alice had nothing enrolled on this host\n" and again.stderr == ""


def test_reset_with_the_authenticator_down_warns_and_still_deletes(world):
    enroll(world)
    kid = world.kid("alice")
    world.authd.stop()
    done = run(world, "reset", "--user", "alice")
    assert done.returncode == 0
    assert done.stdout == "deleted 1 print(s), the device key and the registration of alice\n"
    err = done.stderr.splitlines()
    assert err[0].startswith("fingerauth: warning: the authenticator is unreachable: cannot connect to the authenticator")
    assert err[1] == ("fingerauth: warning: key %s may still be active; revoke it there: fingerauthd keys revoke --kid %s"
                      % (kid, kid))
    assert not world.paths("alice")[0].exists()


def test_a_key_held_for_approval_says_who_has_to_act(world):
    from support.cli import manual_approval
    from support.vreader import enroll_commands
    manual_approval(world)
    done = run(world, "enroll", "--user", "alice", feed=enroll_commands("finger-A"))
    assert done.returncode == 0 and done.stderr == ""
    kid = world.kid("alice")
    assert done.stdout.splitlines()[-2:] == [
        "registered key %s at %s/v1/keys: pending" % (kid, world.authd.url),
        "the authenticator holds this key until an admin approves it: fingerauthd keys approve --kid %s" % kid]
    status = run(world, "status", "--user", "alice", "--json", "--pam-dir", str(world.confdir))
    [check] = [c for c in json.loads(status.stdout)["checks"] if c["name"] == "registered"]
    assert check["status"] == "warn"
    assert check["fix"] == "on the authenticator: fingerauthd keys approve --kid " + kid


def test_without_the_host_token_the_key_revokes_itself(world):
    enroll(world)
    kid = world.kid("alice")
    os.remove(world.token_path)
    done = run(world, "revoke", "--user", "alice")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines()[0] == "revoked key %s for alice at the authenticator" % kid
    assert active_kids(world) == []
    row = [r for r in world.authd.audit_rows() if r["event"] == "revoke"][-1]
    assert (row["outcome"], row["reason"], row["kid"]) == ("accept", "key_holder", kid)


def test_a_hostile_authenticators_status_reaches_neither_the_registration_file_nor_the_terminal(world):
    """`register` writes the answer's status into root's registration file and prints it:
    a line break could add a second `kid = ` line (the last one wins when it is read), an
    escape sequence would reach root's terminal. Only a plain word is taken."""
    import http.server
    from support.fakeauth import TLSServer
    enroll(world, "alice", "finger-A", "--no-register")
    kid = world.kid("alice")
    answer = {}

    class Hostile(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = json.dumps({"kid": kid, "status": answer["status"]}).encode()
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    registration = world.paths("alice")[0] / "registration"
    with TLSServer(Hostile, world.ca.server_cert, world.ca.server_key) as server:
        world.write_conf(url=server.url + "/v1/login")
        for status in ["active\nkid = forged-kid", "active\x1b]0;owned\x07\x1b[2J", "", "Active", "a" * 33]:
            answer["status"] = status
            done = run(world, "register", "--user", "alice")
            assert done.returncode == 1 and done.stdout == "", done.stdout
            assert done.stderr.startswith("fingerauth: the authenticator registered key %s but answered an unreadable "
                                          "status (" % kid), done.stderr
            assert done.stderr.count("\n") == 1 and "\x1b" not in done.stderr and "\x07" not in done.stderr
            assert not registration.exists()
        answer["status"] = "approved"  # a word it does not know yet: recorded as said
        done = run(world, "register", "--user", "alice")
        assert done.returncode == 0, done.stderr
        assert done.stdout == "registered key %s for alice at %s/v1/keys: approved\n" % (kid, server.url)
    text = registration.read_text()
    assert text.count("kid = ") == 1 and "kid = %s\n" % kid in text and text.endswith("status = approved\n")
