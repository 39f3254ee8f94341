"""fingerauthd's admin commands and configuration file, as an admin types them:
token create/list/revoke, keys list/approve/revoke, audit with filters, and
/etc/fingerauthd.conf (`--config`) whose every key is also a flag.
"""

import json
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from test_authenticator import AUDIENCE, HOST, OTHER_HOST, DeviceKey, claims  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())

BINARY = os.path.join(build_dir(), "fingerauthd")


def register(authd, token, user, key=None):
    key = key or DeviceKey()
    return authd.post_json("/v1/keys", {"user": user, "host": HOST, "jwk": key.jwk,
                                        "proof": key.proof(claims(sub=user))}, token=token), key


def test_token_list_shows_ids_never_tokens_and_revoke_stops_enrollment(tmp_path):
    with Authd(tmp_path / "t") as authd:
        first = authd.create_token(HOST)
        second = authd.create_token(HOST)
        other = authd.create_token(OTHER_HOST)
        listed = authd.admin("token", "list")
        assert listed.returncode == 0
        for token in (first, second, other):
            assert token not in listed.stdout
        assert listed.stdout.splitlines()[0].split() == ["ID", "HOST", "STATUS", "CREATED", "REVOKED"]
        tokens = json.loads(authd.admin("token", "list", "--json").stdout)
        assert sorted(t["host"] for t in tokens) == sorted([HOST, HOST, OTHER_HOST])
        assert all(t["status"] == "active" and len(t["id"]) == 16 for t in tokens)

        import hashlib
        first_id = hashlib.sha256(first.encode()).hexdigest()[:16]
        result = authd.admin("token", "revoke", "--id", first_id)
        assert result.returncode == 0 and "revoked 1 token" in result.stdout
        assert register(authd, first, "alice")[0].status == 401
        assert register(authd, second, "alice")[0].status == 201
        row = [r for r in authd.audit_rows() if r["event"] == "token_revoke"][-1]
        assert (row["outcome"], row["host"], row["peer"]) == ("accept", HOST, "local")

        result = authd.admin("token", "revoke", "--host", HOST)
        assert result.returncode == 0 and "revoked 1 token" in result.stdout
        assert register(authd, second, "bob")[0].status == 401
        assert register(authd, other, "bob")[0].status == 403  # still valid, for its own host only
        again = authd.admin("token", "revoke", "--host", HOST)
        assert again.returncode == 1 and "no active token" in again.stderr
        assert authd.admin("token", "revoke").returncode == 2
        statuses = {t["id"]: t["status"] for t in json.loads(authd.admin("token", "list", "--json").stdout)}
        assert statuses[first_id] == "revoked"


def test_audit_command_filters_by_user_and_time_and_prints_json(tmp_path):
    with Authd(tmp_path / "a") as authd:
        token = authd.create_token(HOST)
        _, alice = register(authd, token, "alice")
        _, bob = register(authd, token, "bob")
        assert authd.post_json("/v1/login", {"jwt": alice.sign(claims())}).status == 200
        assert authd.post_json("/v1/login", {"jwt": bob.sign(claims(sub="bob"))}).status == 200
        assert authd.post_json("/v1/login", {"jwt": alice.sign(claims(aud="x"))}).status == 401

        rows = json.loads(authd.admin("audit", "--user", "alice", "--json").stdout)
        assert [(r["event"], r["outcome"], r["reason"]) for r in rows] == \
               [("register", "accept", None), ("login", "accept", None), ("login", "deny", "wrong_audience")]
        assert all(r["user"] == "alice" and r["peer"] == "127.0.0.1" for r in rows)
        assert abs(rows[-1]["time"] - time.time()) < 60

        text = authd.admin("audit", "--user", "bob").stdout.splitlines()
        assert text[0].split() == ["TIME", "EVENT", "OUTCOME", "REASON", "USER", "HOST", "SERVICE", "KID", "JTI", "PEER",
                                   "COUNT"]
        assert len(text) == 3 and all(" bob " in line for line in text[1:])

        everything = json.loads(authd.admin("audit", "--json").stdout)
        assert len(everything) == len(authd.audit_rows())
        assert json.loads(authd.admin("audit", "--since", "1h", "--json").stdout) == everything
        future = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        assert json.loads(authd.admin("audit", "--since", future, "--json").stdout) == []
        assert json.loads(authd.admin("audit", "--since", str(int(time.time()) + 3600), "--json").stdout) == []
        assert len(json.loads(authd.admin("audit", "--since", "2020-01-01", "--json").stdout)) == len(everything)
        bad = authd.admin("audit", "--since", "yesterday")
        assert bad.returncode == 2 and "--since" in bad.stderr


def test_keys_list_filters_and_revoke_of_unknown_kid_fails(tmp_path):
    with Authd(tmp_path / "k") as authd:
        token = authd.create_token(HOST)
        _, alice = register(authd, token, "alice")
        register(authd, token, "bob")
        authd.revoke(alice.kid)
        active = json.loads(authd.admin("keys", "list", "--status", "active", "--json").stdout)
        assert [k["user"] for k in active] == ["bob"]
        mine = json.loads(authd.admin("keys", "list", "--user", "alice", "--json").stdout)
        assert [(k["kid"], k["status"]) for k in mine] == [(alice.kid, "revoked")]
        table = authd.admin("keys", "list").stdout
        assert alice.kid in table and "revoked" in table
        unknown = authd.admin("keys", "revoke", "--kid", "nope")
        assert unknown.returncode == 1 and "no key with kid" in unknown.stderr
        assert authd.admin("keys", "list", "--status", "lost").returncode == 2


def write_config(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return str(path)


def test_config_file_sets_every_option_and_flags_win(tmp_path):
    config = write_config(tmp_path / "fingerauthd.conf", (
        "# fingerauthd test configuration\n"
        "approval = manual\n"
        "user-failures = 0\n"
        "address-failures = 0\n"
        "access-token-ttl = 120\n"
        "max-ttl = 60\n"
        "threads = 2\n"
        "shutdown-grace = 5\n"))
    authd = Authd(tmp_path / "c", args=("--config", config))
    with authd:
        token = authd.create_token(HOST)
        answer, key = register(authd, token, "alice")
        assert answer.json()["status"] == "pending"
        authd.admin("keys", "approve", "--kid", key.kid)
        refused = authd.post_json("/v1/login", {"jwt": key.sign(claims(ttl=61))})
        assert refused.status == 401 and refused.json() == {"error": "ttl_too_long"}
        assert "approval=manual" in authd.log_text() and "max-ttl=60" in authd.log_text()
    # A flag wins over the file.
    authd = Authd(tmp_path / "c2", args=("--config", config, "--approval", "automatic"))
    with authd:
        answer, _ = register(authd, authd.create_token(HOST), "bob")
        assert answer.json()["status"] == "active"
    # The admin commands find the database through the file.
    db_config = write_config(tmp_path / "db.conf", "db = %s\naudience = x\n" % authd.db)
    listed = subprocess.run([BINARY, "keys", "list", "--json", "--config", db_config],
                            capture_output=True, text=True, timeout=30)
    assert listed.returncode == 0 and [k["user"] for k in json.loads(listed.stdout)] == ["bob"]


def test_config_file_listen_db_audience_alone_start_the_server(tmp_path):
    config = write_config(tmp_path / "only.conf", "listen = 127.0.0.1:0\ndb = %s\naudience = %s\n"
                          % (tmp_path / "only.db", AUDIENCE))
    proc = subprocess.Popen([BINARY, "serve", "--config", config], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:")
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    assert proc.returncode == 0
    assert os.path.exists(tmp_path / "only.db")


@pytest.mark.parametrize("text,mode,message", [
    ("audience = a\nfrobnicate = 1\n", 0o600, "only.conf:2: unknown key 'frobnicate'"),
    ("audience = a\naudience = b\n", 0o600, "only.conf:2: 'audience' given twice"),
    ("audience\n", 0o600, "only.conf:1: expected 'key = value'"),
    ("audience = a\napproval = sometimes\n", 0o600, "approval must be automatic or manual"),
    ("audience = a\n", 0o666, "too open"),
])
def test_bad_config_files_are_refused_with_the_line_and_key(tmp_path, text, mode, message):
    config = write_config(tmp_path / "only.conf", text, mode)
    result = subprocess.run([BINARY, "serve", "--config", config, "--listen", "127.0.0.1:0",
                             "--db", str(tmp_path / "db")], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2, result
    assert message in result.stderr
    missing = subprocess.run([BINARY, "serve", "--config", str(tmp_path / "nope.conf")],
                             capture_output=True, text=True, timeout=30)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_admin_commands_run_by_root_act_as_the_owner_of_the_database(tmp_path):
    """The service runs as its own user; root's admin commands must not leave root-owned
    database files that the service could no longer write."""
    import pwd
    import shutil
    import tempfile
    if os.geteuid() != 0:
        pytest.skip("needs root")
    nobody = pwd.getpwnam("nobody")
    state = tempfile.mkdtemp(prefix="fa-owner-")
    try:
        os.chmod(state, 0o755)
        os.chown(state, nobody.pw_uid, nobody.pw_gid)
        db = os.path.join(state, "authd.db")
        created = subprocess.run([BINARY, "token", "create", "--host", HOST, "--db", db],
                                 capture_output=True, text=True, timeout=30)
        assert created.returncode == 0, created.stderr
        listed = subprocess.run([BINARY, "token", "list", "--db", db], capture_output=True, text=True, timeout=30)
        assert listed.returncode == 0 and HOST in listed.stdout
        for name in os.listdir(state):
            assert os.stat(os.path.join(state, name)).st_uid == nobody.pw_uid, name
    finally:
        shutil.rmtree(state)


def test_a_version_1_database_is_migrated_and_keeps_its_keys_and_tokens(tmp_path):
    """The walking skeleton's schema (keys active/revoked only) becomes the current one (3) on start."""
    import sqlite3
    db = str(tmp_path / "v1.db")
    key = DeviceKey()
    token = "A" * 43
    import hashlib
    connection = sqlite3.connect(db)
    try:
        connection.executescript("""
            CREATE TABLE keys (kid TEXT PRIMARY KEY NOT NULL, user TEXT NOT NULL, host TEXT NOT NULL,
                jwk TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
                created INTEGER NOT NULL, revoked INTEGER);
            CREATE INDEX keys_user ON keys (user);
            CREATE TABLE host_tokens (sha256 TEXT PRIMARY KEY NOT NULL, host TEXT NOT NULL,
                created INTEGER NOT NULL, revoked INTEGER);
            CREATE TABLE replay (jti TEXT PRIMARY KEY NOT NULL, exp INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, event TEXT NOT NULL,
                user TEXT, host TEXT, kid TEXT, jti TEXT, outcome TEXT NOT NULL, reason TEXT, peer TEXT);
            PRAGMA user_version = 1;
        """)
        connection.execute("INSERT INTO keys VALUES (?, 'alice', ?, ?, 'active', 1, NULL)",
                           (key.kid, HOST, json.dumps(key.jwk)))
        connection.execute("INSERT INTO host_tokens VALUES (?, ?, 1, NULL)",
                           (hashlib.sha256(token.encode()).hexdigest(), HOST))
        connection.commit()
    finally:
        connection.close()
    with Authd(tmp_path / "m", db=db, args=("--approval", "manual")) as authd:
        assert authd.post_json("/v1/login", {"jwt": key.sign(claims())}).status == 200
        answer, _ = register(authd, token, "bob")
        assert answer.status == 201 and answer.json()["status"] == "pending"
    connection = sqlite3.connect(db)
    try:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == 15
        assert connection.execute("SELECT kind FROM keys WHERE kid = ?", (key.kid,)).fetchone()[0] == "software"
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        connection.close()
