"""One user-name rule everywhere (issue 32, point 5): lower case, a `.` only inside,
starting with a letter or `_`, at most 32 bytes — Debian adduser's portable names. `Carol`
and `carol.` are not second spellings of carol: fingerauthd refuses them at registration,
at the TPM challenge, at login, at /oauth2/token, at the policy check and in the policy
commands, with a 400 `invalid_request` that says why; a deny rule for carol cannot be passed
by another spelling. Rows an older release stored stay where they are, vouch for nobody
(login, introspection) and are listed by `fingerauthd doctor`. The host side (module,
helper, CLI) refuses the same names with its own message. On both stores."""

import json
import os
import sqlite3
import subprocess
import sys
import urllib.parse

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from support.postgres import pg_bin  # noqa: E402
from test_authenticator import HOST, DeviceKey, claims  # noqa: E402
from test_policy import db, server  # noqa: E402,F401  (store fixtures: sqlite and postgresql)

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())

GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# name -> what the answer says is wrong with it
REFUSED = {
    "Carol": "upper-case letters",
    "carol.": "ends with '.'",
    ".carol": "must start with a lower-case letter or '_'",
    "ca..rol": "'..' inside",
    "c" * 33: "longer than 32 bytes",
    "\u212aarol": "characters other than a-z, 0-9, '_', '-' and '.'",
}


def execute(authd, statement):
    """Runs one SQL statement on the daemon's database: what an older release left there."""
    if authd.is_postgres:
        subprocess.run([os.path.join(pg_bin(), "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", authd.db,
                        "-c", statement], capture_output=True, text=True, timeout=30, check=True)
        return
    connection = sqlite3.connect(authd.db, timeout=5)
    try:
        connection.execute(statement)
        connection.commit()
    finally:
        connection.close()


def register(authd, token, user, key=None):
    key = key or DeviceKey()
    answer = authd.post_json("/v1/keys", {"user": user, "host": HOST, "jwk": key.jwk,
                                          "proof": key.proof(claims(sub=user))}, token=token)
    return key, answer


def grant(authd, assertion):
    return authd.request("POST", "/oauth2/token", body=urllib.parse.urlencode({"grant_type": GRANT, "assertion": assertion}),
                         headers={"Content-Type": "application/x-www-form-urlencoded"})


def assert_invalid_name(answer, field, name):
    assert answer.status == 400, answer
    body = answer.json()
    assert body["error"] == "invalid_request", body
    assert body["error_description"].startswith("%s is not a valid user name: %s (" % (field, REFUSED[name])), body


def test_other_spellings_of_a_name_are_refused_at_every_door(tmp_path, db):
    with Authd(tmp_path / "a", db=db) as authd:
        token = authd.create_token(HOST)
        carol, created = register(authd, token, "carol")
        assert created.status == 201
        for name in REFUSED:
            _, answer = register(authd, token, name)
            assert_invalid_name(answer, "user", name)
            row = authd.audit_rows()[-1]
            assert (row["event"], row["reason"], row["user"]) == ("register", "invalid_user_name", None)
            assert_invalid_name(authd.post_json("/v1/keys/challenge", {"user": name, "host": HOST}, token=token), "user", name)
            assert_invalid_name(authd.post_json("/v1/policy/check", {"user": name}, token=token), "user", name)
            # A login or a grant for such a name is refused before its key is even looked up.
            assert_invalid_name(authd.post_json("/v1/login", {"jwt": carol.sign(claims(sub=name))}), "sub", name)
            assert_invalid_name(grant(authd, carol.sign(claims(sub=name))), "sub", name)
            row = authd.audit_rows()[-1]
            assert (row["event"], row["reason"], bool(row["verified"])) == ("oauth_token", "invalid_user_name", False)
        assert [k["user"] for k in json.loads(authd.admin("keys", "list", "--json").stdout)] == ["carol"]
        # The refusals count against the address like every other refusal.
        assert "reason=invalid_user_name" in authd.log_text()


def test_a_deny_rule_for_carol_cannot_be_passed_by_another_spelling(tmp_path, db):
    with Authd(tmp_path / "d", db=db) as authd:
        added = authd.admin("policy", "add", "--stage", "registration", "--users", "carol", "--hosts", HOST,
                            "--action", "deny")
        assert added.returncode == 0, added.stderr
        token = authd.create_token(HOST)
        _, denied = register(authd, token, "carol")
        assert denied.status == 403 and denied.json()["error"] == "policy_denied"
        for name in ("Carol", "carol.", "CAROL", "carol.."):
            _, answer = register(authd, token, name)
            assert answer.status == 400 and answer.json()["error"] == "invalid_request", (name, answer)
        assert json.loads(authd.admin("keys", "list", "--json").stdout) == []


def test_policy_commands_refuse_such_names_with_the_reason(tmp_path, db):
    with Authd(tmp_path / "p", db=db) as authd:
        added = authd.admin("policy", "add", "--stage", "login", "--users", "alice,Carol", "--hosts", "*", "--action", "deny")
        assert added.returncode == 2
        assert "--users: 'Carol' is not a user name (upper-case letters; lower-case letters" in added.stderr
        listed = authd.admin("users", "add", "--list", "dba", "--users", "carol.")
        assert listed.returncode == 2 and "'carol.' is not a user name (ends with '.';" in listed.stderr
        tested = authd.admin("policy", "test", "--user", "Carol", "--host", HOST, "--service", "sudo")
        assert tested.returncode == 2 and "'Carol' is not a user name (upper-case letters)" in tested.stderr
        admin = authd.admin("admin", "create", "Ada")
        assert admin.returncode == 2 and "'Ada' is not a name (upper-case letters)" in admin.stderr
        assert authd.admin("policy", "list", "--json").stdout.strip() == "[]"


def test_rows_an_older_release_stored_vouch_for_nobody_and_doctor_lists_them(tmp_path, db):
    with Authd(tmp_path / "o", db=db) as authd:
        clean = authd.admin("doctor")
        assert clean.returncode == 0, clean.stdout + clean.stderr
        assert clean.stdout.startswith("user names: every stored name follows the rule")
        token = authd.create_token(HOST)
        carol, created = register(authd, token, "carol")
        assert created.status == 201
        access = grant(authd, carol.sign(claims(sub="carol"))).json()["access_token"]
        assert authd.admin("policy", "add", "--stage", "login", "--users", "carol", "--hosts", "*",
                           "--action", "allow").returncode == 0
        assert authd.admin("users", "add", "--list", "dba", "--users", "carol,dave").returncode == 0
        # What an older release, with its looser rule, could have stored.
        execute(authd, "UPDATE keys SET \"user\" = 'Carol' WHERE kid = '%s'" % carol.kid)
        execute(authd, "UPDATE access_tokens SET \"user\" = 'Carol'")
        execute(authd, "UPDATE audit SET \"user\" = 'Carol' WHERE \"user\" = 'carol'")
        execute(authd, "UPDATE policy_rules SET users = 'Carol'")
        execute(authd, "UPDATE user_lists SET \"user\" = 'carol.' WHERE \"user\" = 'carol'")
        execute(authd, "INSERT INTO admins (name, created) VALUES ('Ada', 0)")

        # Its key logs nobody in, and its access token is inactive.
        assert_invalid_name(authd.post_json("/v1/login", {"jwt": carol.sign(claims(sub="Carol"))}), "sub", "Carol")
        answer = authd.request("POST", "/oauth2/introspect", body="token=" + access,
                               headers={"Content-Type": "application/x-www-form-urlencoded",
                                        "Authorization": "Bearer " + token})
        assert answer.status == 200 and answer.json() == {"active": False}

        audit_rows = len(authd.audit_rows())
        doctor = authd.admin("doctor", "--json")
        assert doctor.returncode == 1, doctor.stderr
        found = sorted((f["kind"], f["name"], f["problem"]) for f in json.loads(doctor.stdout))
        assert found == [("admin", "Ada", "upper-case letters"), ("audit", "Carol", "upper-case letters"),
                         ("key", "Carol", "upper-case letters"), ("policy", "Carol", "upper-case letters"),
                         ("user-list", "carol.", "ends with '.'")]
        by_kind = {f["kind"]: f for f in json.loads(doctor.stdout)}
        assert by_kind["key"]["kid"] == carol.kid and by_kind["key"]["status"] == "active"
        assert by_kind["user-list"]["list"] == "dba" and by_kind["audit"]["rows"] >= 2
        text = authd.admin("doctor")
        assert text.returncode == 1
        assert "5 stored names break the user-name rule" in text.stdout
        assert "kid=%s host=%s active" % (carol.kid, HOST) in text.stdout
        # Read only: nothing was dropped, fixed or audited.
        assert len(authd.audit_rows()) == audit_rows
        assert [k["user"] for k in json.loads(authd.admin("keys", "list", "--json").stdout)] == ["Carol"]
        # What the admin does about them: revoke the key, remove the member (the old names
        # are accepted where they are only looked up).
        assert authd.admin("keys", "revoke", "--user", "Carol").returncode == 0
        assert authd.admin("users", "remove", "--list", "dba", "--users", "carol.").returncode == 0


# -- the host side: module, helper, command line -----------------------------------------------------

@pytest.fixture
def host(world):
    """The world with `Carol` and `carol.` known to the system (nss_wrapper), as a
    directory-backed host might know them."""
    with open(world.tmp / "passwd", "a") as passwd:
        passwd.write("Carol:x:5013:5013:Carol:/nonexistent:/bin/sh\ncarol.:x:5023:5023:carol.:/nonexistent:/bin/sh\n")
    return world


@pytest.mark.parametrize("name", ["Carol", "carol."])
def test_the_module_refuses_the_name_with_user_unknown(host, name):
    login = host.login(name, service=host.service("fa-only", fallback=False))
    assert login.name == "PAM_USER_UNKNOWN", login
    line = host.log_lines()[-1]
    assert "result=PAM_USER_UNKNOWN" in line and "user name not acceptable (%s)" % REFUSED[name] in line, line
    assert name not in line


@pytest.mark.parametrize("name", ["Carol", "carol."])
def test_the_command_line_refuses_the_name_with_its_reason(host, name):
    done = host.cli("enroll", "--user", name)
    assert done.returncode != 0
    assert "'%s' is not a valid user name: %s; FingerAuth takes lower-case letters" % (name, REFUSED[name]) in done.stderr, done.stderr


def test_the_login_helper_refuses_the_name(host):
    helper = str(host.build / "fingerauth-login")
    done = subprocess.run([helper, "--user", "Carol", "--state-dir", str(host.state)], capture_output=True, text=True,
                          timeout=30, env={})
    assert done.returncode != 0
    assert "--user must be a user name FingerAuth accepts (lower-case letters" in done.stdout + done.stderr
