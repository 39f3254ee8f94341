"""`fingerauth test`: the module's login path (the login helper: reader, key, libcurl,
fingerauthd) run by the command line, one timed line per step; exit status 0 only when the
authenticator accepted."""

import re

from support.cli import enroll, run

STEP = re.compile(r"^(ok  |FAIL) (\S+(?: \S+)?) {2,}(.*) \((\d+) ms\)$")


def steps(stdout):
    """[(mark, step, detail, ms)] of the step lines (the user's messages start with spaces)."""
    out = []
    for line in stdout.splitlines():
        if line.startswith("     >"):
            continue
        match = STEP.match(line)
        assert match, "not a step line: %r" % line
        out.append((match.group(1).strip(), match.group(2), match.group(3), int(match.group(4))))
    return out


def test_accepted_login_prints_every_step_and_exits_0(world):
    enroll(world)
    kid = world.kid("alice")
    done = run(world, "test", "--user", "alice", feed=["SCAN finger-A"])
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    lines = steps(done.stdout)
    assert [(m, s) for m, s, _, _ in lines] == [
        ("ok", "config"), ("ok", "enrollment"), ("ok", "prepare"), ("ok", "scan"), ("ok", "authenticator"),
        ("ok", "result")], done.stdout
    url = world.authd.url + "/v1/login"
    assert lines[2][2] == "Virtual device for debugging open, device key loaded, %s reached" % url, lines[2]
    assert lines[3][2] == "right-index-finger matched on Virtual device for debugging via %s" % world.settings["login_helper"]
    assert lines[4][2] == "POST %s accepted, kid %s" % (url, kid)
    assert lines[5][2] == "accepted by the authenticator for alice (PAM_SUCCESS)"
    assert "     > Place your finger on the fingerprint reader" in done.stdout.splitlines()
    assert all(ms >= 0 for _, _, _, ms in lines) and lines[-1][3] >= lines[3][3]
    row = [r for r in world.authd.audit_rows() if r["event"] == "login"][-1]
    assert row["outcome"] == "accept" and row["user"] == "alice" and row["kid"] == kid


def test_wrong_finger_exits_1_with_the_scan_step_failed(world):
    enroll(world)
    done = run(world, "test", "--user", "alice", feed=["SCAN finger-B"] * 3)
    assert done.returncode == 1 and done.stderr == ""
    lines = steps(done.stdout)
    assert lines[3][:3] == ("FAIL", "scan", "no match in 3 tries")
    assert lines[-1][:2] == ("FAIL", "result")
    assert lines[-1][2].startswith("PAM_MAXTRIES: no match after 3 tries")
    assert "     > No match, try again (2 left)" in done.stdout


def test_revoked_key_is_refused_by_the_authenticator(world):
    enroll(world)
    world.authd.revoke(world.kid("alice"))
    done = run(world, "test", "--user", "alice", feed=["SCAN finger-A"])
    assert done.returncode == 1 and done.stderr == ""
    lines = steps(done.stdout)
    assert lines[4][:2] == ("FAIL", "authenticator"), done.stdout
    assert lines[4][2].startswith("POST %s/v1/login: authenticator refused (401" % world.authd.url), lines[4]
    assert lines[-1][2].startswith("PAM_AUTH_ERR: authenticator refused (401")
    assert lines[-1][2].endswith("check the key: fingerauth status --user alice (register or rotate it)")


def test_authenticator_down_fails_before_the_finger_is_asked(world):
    enroll(world)
    world.authd.stop()
    done = run(world, "test", "--user", "alice")  # nobody is asked for a finger
    assert done.returncode == 1 and done.stderr == ""
    lines = steps(done.stdout)
    assert [s for m, s, _, _ in lines if m == "FAIL"] == ["prepare", "result"], done.stdout
    assert "cannot connect to the authenticator" in lines[2][2]
    assert lines[-1][2].startswith("PAM_AUTHINFO_UNAVAIL: cannot connect")
    assert "Place your finger" not in done.stdout
    assert "     > Fingerprint login unavailable: authenticator not reachable" in done.stdout.splitlines()


def test_not_enrolled_user_stops_at_the_enrollment_step(world):
    done = run(world, "test", "--user", "bob")
    assert done.returncode == 1 and done.stderr == ""
    lines = steps(done.stdout)
    assert [(m, s) for m, s, _, _ in lines] == [("ok", "config"), ("FAIL", "enrollment"), ("FAIL", "result")]
    assert lines[-1][2] == "PAM_IGNORE: user not enrolled; enroll: fingerauth enroll --user bob"


def test_no_reader_fails_the_prepare_step(world):
    enroll(world)
    world.write_conf(virtual_reader=None)
    done = run(world, "test", "--user", "alice")
    assert done.returncode == 1 and done.stderr == ""
    lines = steps(done.stdout)
    assert lines[2][:2] == ("FAIL", "prepare") and lines[2][2].startswith("reader: no-reader"), done.stdout


def audit_table(world, *args):
    """`fingerauthd audit` as an admin reads it: [{column: cell}], cut at the header's columns."""
    done = world.authd.admin("audit", *args)
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    names = header.split()
    starts = [header.index(" " + name + " ") + 1 if i else 0 for i, name in enumerate(names[:-1])]
    starts.append(header.rindex(names[-1]))
    return [{name: row[start:end].strip() for name, start, end in zip(names, starts, starts[1:] + [len(row)])}
            for row in rows]


def test_the_audit_tells_a_fingerauth_test_from_a_real_sudo(world):
    """Both are logins of alice's key on this host; before, the audit table showed the two
    rows alike (the service was only in --json)."""
    enroll(world)
    assert run(world, "test", "--user", "alice", feed=["SCAN finger-A"]).returncode == 0
    assert world.login("alice", scans=["finger-A"], service="sudo").name == "PAM_SUCCESS"
    rows = [r for r in audit_table(world, "--user", "alice") if r["EVENT"] == "login"]
    assert [(r["OUTCOME"], r["USER"], r["HOST"], r["SERVICE"]) for r in rows] == [
        ("accept", "alice", "testhost", "fingerauth-test"), ("accept", "alice", "testhost", "sudo")], rows
    assert rows[0]["KID"] == rows[1]["KID"] == world.kid("alice")
