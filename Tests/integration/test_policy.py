"""The central policy (issue 17) through the real fingerauthd, on both stores: ordered rules,
first match wins, by user (name, list, *), host (name, label, *), PAM service and key kind;
one kind of rule for registration, the other for login. Each case goes through the real
`POST /v1/login` (its status, its JSON, its audit row and the rule that row names) and
through `fingerauthd policy test` (its printed decision and exit status)."""

import json
import os
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from support.postgres import Postgres, available as postgres_available  # noqa: E402
from support.tls import make_ca  # noqa: E402
from test_authenticator import DeviceKey, claims  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())

LABELS = {"web01": "prod", "web02": "prod", "db01": "db", "db02": "db", "lab01": "lab", "web03": None, "build01": None}
USERS = ("alice", "bob", "carol", "dave", "eve")

# name -> (stage, users, hosts, services, action); added in this order, so positions 1..n
RULES = [
    ("build", "registration", "*", "build01", None, "deny"),
    ("dba-home", "registration", "list:dba", "label:db", None, "allow"),
    ("dba-elsewhere", "registration", "list:dba", "*", None, "deny"),
    ("no-sshd", "login", "*", "*", "sshd", "deny"),
    ("dba", "login", "list:dba", "label:db", "*", "allow"),
    ("db-others", "login", "*", "label:db", "*", "deny"),
    ("prod-sudo", "login", "*", "label:prod", "sudo", "require-hardware-key"),
    ("prod-team", "login", "alice,bob", "label:prod", "*", "allow"),
    ("lab", "login", "*", "label:lab", "*", "allow"),
    ("last", "login", "*", "*", "*", "deny"),
]

# (user, host, service, expected status, the rule that decides)
LOGIN_CASES = [
    ("alice", "web01", "sudo", 403, "prod-sudo"),
    ("alice", "web01", "login", 200, "prod-team"),
    ("bob", "web02", "gdm-fingerprint", 200, "prod-team"),
    ("bob", "web02", "sshd", 403, "no-sshd"),
    ("carol", "web01", "login", 403, "last"),
    ("carol", "db01", "sudo", 200, "dba"),
    ("dave", "db02", "login", 200, "dba"),
    ("dave", "db01", "sshd", 403, "no-sshd"),
    ("alice", "db01", "sudo", 403, "db-others"),
    ("bob", "db02", "login", 403, "db-others"),
    ("alice", "lab01", "sudo", 200, "lab"),
    ("carol", "lab01", "sshd", 403, "no-sshd"),
    ("eve", "lab01", "login", 200, "lab"),
    ("eve", "web03", "sudo", 403, "last"),
    ("alice", "web03", "login", 403, "last"),
    ("carol", "web02", "sudo", 403, "prod-sudo"),
    ("dave", "lab01", "su", 200, "lab"),
    ("bob", "web01", "sudo", 403, "prod-sudo"),
    ("eve", "db01", "login", 403, "db-others"),
    ("carol", "db02", "login", 200, "dba"),
    ("alice", "web02", "cron", 200, "prod-team"),
    ("dave", "web03", "login", 403, "last"),
]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request):
    if request.param == "sqlite":
        yield None
        return
    if not postgres_available():
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    with Postgres() as pg:
        yield pg


@pytest.fixture
def db(server):
    if server is None:
        return None
    return server.create_database("p_%d_%d" % (os.getpid(), int(time.monotonic() * 1e6)))


def admin_ok(authd, *args):
    result = authd.admin(*args)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def register(authd, token, user, host):
    key = DeviceKey()
    answer = authd.post_json("/v1/keys", {"user": user, "host": host, "jwk": key.jwk,
                                          "proof": key.proof(claims(sub=user, iss=host))}, token=token)
    return key, answer


def add_rules(authd):
    """The rule set above, through `policy add`; returns name -> rule id."""
    ids = {}
    for name, stage, users, hosts, services, action in RULES:
        args = ["policy", "add", "--stage", stage, "--users", users, "--hosts", hosts, "--action", action]
        if services is not None:
            args += ["--services", services]
        out = admin_ok(authd, *args)
        ids[name] = int(out.split()[2])
    return ids


def audit_of(authd, jti):
    rows = [r for r in authd.audit_rows() if r["jti"] == jti]
    assert len(rows) == 1, rows
    return rows[0]


def test_twenty_two_logins_are_decided_by_the_rule_the_table_names(tmp_path, db):
    with Authd(tmp_path / "a", db=db, args=("--user-failures", "0", "--address-failures", "0")) as authd:
        tokens = {host: authd.create_token(host) for host in LABELS}
        admin_ok(authd, "users", "add", "--list", "dba", "--users", "carol,dave")
        for host, label in LABELS.items():
            if label:
                admin_ok(authd, "hosts", "label", "--host", host, "--labels", label)
        keys = {}
        for user, host, _, _, _ in LOGIN_CASES:
            if (user, host) not in keys:
                key, answer = register(authd, tokens[host], user, host)
                assert answer.status == 201, answer
                keys[(user, host)] = key
        ids = add_rules(authd)
        listed = json.loads(admin_ok(authd, "policy", "list", "--json"))
        assert [r["id"] for r in listed] == [ids[name] for name, *_ in RULES]
        assert [r["position"] for r in listed] == list(range(1, len(RULES) + 1))

        seen = []
        for user, host, service, status, rule in LOGIN_CASES:
            c = claims(sub=user, iss=host, service=service)
            answer = authd.post_json("/v1/login", {"jwt": keys[(user, host)].sign(c)})
            row = audit_of(authd, c["jti"])
            tested = authd.admin("policy", "test", "--user", user, "--host", host, "--service", service)
            seen.append((user, host, service, answer.status, row["rule"], tested.returncode))
            if status == 200:
                assert answer.status == 200, (user, host, service, answer)
                assert row["outcome"] == "accept"
                assert tested.returncode == 0 and tested.stdout.startswith("allow by rule %d" % ids[rule]), tested.stdout
            else:
                assert answer.status == 403 and answer.json() == {"error": "policy_denied", "rule": ids[rule]}, \
                    (user, host, service, answer)
                assert (row["outcome"], row["reason"], row["rule"]) == ("deny", "policy_denied", ids[rule])
                assert tested.returncode == 3 and tested.stdout.startswith("deny by rule %d" % ids[rule]), tested.stdout
        print("\npolicy cases (user, host, service, status, audit rule, policy test rc): %s" % seen)
        # The same prod rule lets a hardware key through (policy test --hardware; TPM keys are not attested yet).
        hw = authd.admin("policy", "test", "--user", "alice", "--host", "web01", "--service", "sudo", "--hardware")
        assert hw.returncode == 0 and hw.stdout.startswith("allow by rule %d (require-hardware-key)" % ids["prod-sudo"])


def test_registration_refused_by_policy_stores_no_key_and_names_the_rule(tmp_path, db):
    with Authd(tmp_path / "a", db=db) as authd:
        tokens = {host: authd.create_token(host) for host in ("web01", "db01", "build01")}
        admin_ok(authd, "users", "add", "--list", "dba", "--users", "dba")
        admin_ok(authd, "hosts", "label", "--host", "db01", "--labels", "db")
        ids = add_rules(authd)
        # root on web01 registers a key for `dba`, who never uses web01: refused.
        for user, host, rule in (("dba", "web01", "dba-elsewhere"), ("alice", "build01", "build")):
            key, answer = register(authd, tokens[host], user, host)
            assert answer.status == 403 and answer.json() == {"error": "policy_denied", "rule": ids[rule]}, answer
            assert authd.sql("SELECT COUNT(*) AS n FROM keys WHERE kid = '%s'" % key.kid)[0]["n"] == 0
            row = [r for r in authd.audit_rows() if r["event"] == "register" and r["kid"] == key.kid][-1]
            assert (row["outcome"], row["reason"], row["rule"], row["user"], row["host"]) == \
                ("deny", "policy_denied", ids[rule], user, host)
            # The refused key cannot log in: it was never stored.
            assert authd.post_json("/v1/login", {"jwt": key.sign(claims(sub=user, iss=host))}).status == 401
        for user, host in (("dba", "db01"), ("alice", "web01")):
            _, answer = register(authd, tokens[host], user, host)
            assert answer.status == 201, answer
        tested = authd.admin("policy", "test", "--stage", "registration", "--user", "dba", "--host", "web01")
        assert tested.returncode == 3 and tested.stdout.startswith("deny by rule %d" % ids["dba-elsewhere"])


def test_a_login_token_without_its_service_is_refused_and_says_why(tmp_path):
    with Authd(tmp_path / "a") as authd:
        key, answer = register(authd, authd.create_token("web01"), "alice", "web01")
        assert answer.status == 201
        for service, reason in ((None, "missing_service"), ("", "missing_service"), ("su do", "bad_service"),
                                ("s" * 65, "bad_service")):
            c = claims(sub="alice", iss="web01", service=service) if service is not None else \
                claims(sub="alice", iss="web01", service=None)
            answer = authd.post_json("/v1/login", {"jwt": key.sign(c)})
            assert (answer.status, answer.json()) == (401, {"error": reason}), service
        assert authd.post_json("/v1/login", {"jwt": key.sign(claims(sub="alice", iss="web01"))}).status == 200


def test_policy_changes_are_audited_with_who_before_and_after(tmp_path, db):
    with Authd(tmp_path / "a", db=db) as authd:
        authd.create_token("web01")
        out = admin_ok(authd, "policy", "add", "--stage", "login", "--users", "alice", "--hosts", "*",
                       "--services", "sshd", "--action", "deny")
        rule = int(out.split()[2])
        admin_ok(authd, "hosts", "label", "--host", "web01", "--labels", "prod")
        admin_ok(authd, "policy", "remove", "--id", str(rule))
        rows = [r for r in authd.audit_rows() if r["event"] == "policy_change"]
        assert [(r["outcome"], r["rule"], r["peer"]) for r in rows] == [("accept", rule, "local"), ("accept", None, "local"),
                                                                         ("accept", rule, "local")]
        assert rows[0]["reason"] == ("by root: (none) -> rule %d at 1: login users=alice hosts=* services=sshd key=* -> deny"
                                     % rule)
        assert rows[1]["reason"] == "by root: labels of web01:  -> labels of web01: prod"
        assert rows[2]["reason"].endswith("-> deny -> (none)")


def test_a_rule_naming_a_list_or_label_nobody_has_is_added_with_a_warning(tmp_path):
    """A deny rule for a misspelt list refuses nobody: the admin is told at once."""
    with Authd(tmp_path / "a") as authd:
        authd.create_token("db01")
        admin_ok(authd, "users", "add", "--list", "dba", "--users", "carol")
        admin_ok(authd, "hosts", "label", "--host", "db01", "--labels", "db")
        quiet = authd.admin("policy", "add", "--stage", "login", "--users", "list:dba", "--hosts", "label:db",
                            "--action", "deny")
        assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
        warned = authd.admin("policy", "add", "--stage", "login", "--users", "list:dbas", "--hosts", "label:dbs",
                             "--action", "deny")
        assert warned.returncode == 0 and warned.stdout.startswith("added rule 2 at position 2"), warned.stdout
        assert warned.stderr.splitlines() == [
            "fingerauthd: warning: there is no user list 'dbas' yet: the rule matches nobody through it until "
            "'fingerauthd users add --list dbas --users …'",
            "fingerauthd: warning: no host has the label 'dbs' yet: the rule matches no host through it until "
            "'fingerauthd hosts label --host HOST --labels dbs'"]


@pytest.mark.parametrize("args, code, message", [
    (("hosts", "label", "--host", "nowhere", "--labels", "prod"), 1, "that host has no enrollment token"),
    (("policy", "add", "--stage", "login", "--users", "a b", "--hosts", "*", "--action", "deny"), 2, "space, a comma"),
    (("policy", "add", "--stage", "login", "--users", "list:", "--hosts", "*", "--action", "deny"), 2, "names no list"),
    (("policy", "add", "--stage", "registration", "--users", "*", "--hosts", "*", "--services", "sudo",
      "--action", "deny"), 2, "a registration rule has no services"),
    (("policy", "add", "--stage", "login", "--users", "*", "--hosts", "*", "--action", "permit"), 2, "--action is allow"),
    (("policy", "remove", "--id", "99"), 1, "no such rule"),
    (("users", "add", "--list", "dba", "--users", "*"), 2, "not a plain name"),
])
def test_admin_mistakes_change_nothing_and_say_what_to_do(tmp_path, args, code, message):
    with Authd(tmp_path / "a") as authd:
        result = authd.admin(*args)
        assert result.returncode == code and message in result.stderr, (result.returncode, result.stderr)
        assert authd.sql("SELECT COUNT(*) AS n FROM policy_rules")[0]["n"] == 0
        assert authd.sql("SELECT COUNT(*) AS n FROM host_labels")[0]["n"] == 0


@pytest.mark.skipif(not postgres_available(), reason="PostgreSQL is not installed (apt-get install postgresql)")
def test_a_rule_changed_for_the_fleet_decides_the_other_instances_next_login(tmp_path):
    ca = make_ca(tmp_path / "ca")
    with Postgres() as pg:
        url = pg.create_database("fleet_policy")
        a = Authd(tmp_path / "a", tls=ca, db=url, args=("--user-failures", "0", "--address-failures", "0"))
        b = Authd(tmp_path / "b", tls=ca, db=url, args=("--user-failures", "0", "--address-failures", "0"))
        try:
            a.start()
            b.start()
            key, answer = register(a, a.create_token("web01"), "alice", "web01")
            assert answer.status == 201

            def login():
                answer = b.post_json("/v1/login", {"jwt": key.sign(claims(sub="alice", iss="web01", service="sudo"))})
                return answer.status, answer.json()

            assert login()[0] == 200
            out = admin_ok(a, "policy", "add", "--stage", "login", "--users", "alice", "--hosts", "*", "--action", "deny")
            deny = int(out.split()[2])
            assert login() == (403, {"error": "policy_denied", "rule": deny})
            out = admin_ok(a, "policy", "add", "--stage", "login", "--users", "*", "--hosts", "*", "--action", "allow")
            allow = int(out.split()[2])
            # Logins on b while a moves the allow rule above the deny one, and back, again and again:
            # every answer is the old rule set's or the new one's, and agrees with its audit row.
            answers = []
            stop = threading.Event()

            def hammer():
                while not stop.is_set():
                    answers.append(login())

            thread = threading.Thread(target=hammer)
            thread.start()
            try:
                for _ in range(6):
                    admin_ok(a, "policy", "move", "--id", str(allow), "--position", "1")
                    admin_ok(a, "policy", "move", "--id", str(allow), "--position", "2")
            finally:
                stop.set()
                thread.join(timeout=30)
            assert answers
            allowed = [body for status, body in answers if status == 200]
            denied = [body for status, body in answers if status == 403]
            assert len(allowed) + len(denied) == len(answers), answers
            assert all(body["ok"] is True and body["sub"] == "alice" for body in allowed)
            assert all(body == {"error": "policy_denied", "rule": deny} for body in denied)
            rules = {r["rule"] for r in b.audit_rows() if r["event"] == "login" and r["outcome"] == "deny"}
            assert rules == {deny}, rules
            admin_ok(a, "policy", "move", "--id", str(allow), "--position", "1")
            assert login()[0] == 200
            print("\nfleet policy: %d logins during 12 moves, %d allowed, %d denied by rule %d"
                  % (len(answers), len(allowed), len(denied), deny))
        finally:
            a.stop()
            b.stop()
