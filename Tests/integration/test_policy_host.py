"""The central policy as a host sees it (issue 17): the module's PAM code and text for a
login the policy refuses, the service that still works, and `fingerauth enroll` refused
before it asks for a finger. Real libpam, the virtual reader, fingerauthd over TLS."""

import re

from support.cli import run, status_lines
from support.vreader import enroll_commands
from support.world import HOST_ID, PASSWORDS

NOT_HERE = "Fingerprint login not allowed here by the authenticator's policy"


def admin_ok(world, *args):
    result = world.authd.admin(*args)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def test_a_service_denied_by_policy_falls_through_to_the_password_and_another_still_logs_in(world):
    world.enroll("alice", "finger-A")
    out = admin_ok(world, "policy", "add", "--stage", "login", "--users", "alice", "--hosts", "*",
                   "--services", "fa-sudo", "--action", "deny")
    rule = int(out.split()[2])
    alone = world.login("alice", scans=["finger-A"], service=world.service("fa-sudo", fallback=False))
    assert alone.name == "PAM_AUTH_ERR", alone
    assert alone.errors == [NOT_HERE]
    line = world.log_lines()[-1]
    assert "result=PAM_AUTH_ERR" in line and "authenticator refused (403: policy_denied, rule %d)" % rule in line, line
    row = [r for r in world.authd.audit_rows() if r["event"] == "login"][-1]
    assert (row["outcome"], row["reason"], row["rule"], row["user"]) == ("deny", "policy_denied", rule, "alice")
    # With the password behind it (`sufficient`), the same refusal goes on to the password.
    world.service("fa-sudo2", fallback=True)
    admin_ok(world, "policy", "add", "--stage", "login", "--users", "alice", "--hosts", "*",
             "--services", "fa-sudo2", "--action", "deny")
    fallen = world.login("alice", scans=["finger-A"], password=PASSWORDS["alice"], service="fa-sudo2")
    assert fallen.name == "PAM_SUCCESS" and NOT_HERE in fallen.errors and fallen.prompts, fallen
    # Another service of the same host, same user, same finger: not matched by the rule.
    other = world.login("alice", scans=["finger-A"], service=world.service("fa-login", fallback=False))
    assert other.name == "PAM_SUCCESS" and other.errors == [], other


def test_enroll_refused_by_the_registration_policy_says_so_before_any_finger(world):
    out = admin_ok(world, "policy", "add", "--stage", "registration", "--users", "alice", "--hosts", HOST_ID,
                   "--action", "deny")
    rule = int(out.split()[2])
    # No finger is fed: the reader is never opened.
    done = run(world, "enroll", "--user", "alice")
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr == (
        "fingerauth: the authenticator's policy does not allow a key for alice on %s (rule %d); its admin can see "
        "why: fingerauthd policy test --stage registration --user alice --host %s\n" % (HOST_ID, rule, HOST_ID))
    _, prints, key = world.paths("alice")
    assert not (prints / "right-index-finger.fpt").exists() and not key.exists()
    # bob is not matched: enrolled and registered as before.
    done = run(world, "enroll", "--user", "bob", feed=enroll_commands("finger-B"))
    assert done.returncode == 0 and re.search(r"registered key \S+ at .*: active", done.stdout), done


def test_fingerauth_test_names_the_rule_that_refused(world):
    world.enroll("alice", "finger-A")
    out = admin_ok(world, "policy", "add", "--stage", "login", "--users", "alice", "--hosts", "*", "--action", "deny")
    rule = int(out.split()[2])
    done = run(world, "test", "--user", "alice", feed=["SCAN finger-A"])
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("FAIL authenticator") and
               line.count("authenticator refused (403: policy_denied, rule %d)" % rule) == 1 for line in lines), lines
    assert "     > " + NOT_HERE in lines, lines


def test_status_warns_about_each_service_the_policy_refuses_and_names_the_rule(world):
    world.enroll("alice", "finger-A")
    world.service("fa-test")
    world.service("fa-other")
    out = admin_ok(world, "policy", "add", "--stage", "login", "--users", "alice", "--hosts", "*",
                   "--services", "fa-other", "--action", "deny")
    rule = int(out.split()[2])
    done = run(world, "status", "--user", "alice", "--pam-dir", str(world.confdir))
    assert done.returncode == 0, done.stdout  # a warning: the password still works there
    assert status_lines(done.stdout)["policy"] == (
        "warn", "the authenticator's policy refuses alice's finger at: fa-other (rule %d)" % rule)
    assert all(row["event"] != "login" for row in world.authd.audit_rows())  # status never logs in
