"""The peer verifier for `make bench`: what a team would otherwise write for FingerAuth's
`POST /v1/login` contract, in Python — PyJWT + cryptography for RS256, an SQLite registry
and replay table, an audit row per attempt, served by uvicorn (ASGI, uvloop + httptools,
one worker process per core, TLS with the same certificate as fingerauthd).

    PEER_DB=path PEER_AUDIENCE=aud uvicorn bench.peer.verifier:app --workers 2 --ssl-…

It is deliberately lean (a bare ASGI callable, no web framework), so the comparison is
generous to the peer. Keys are read from the `keys` table of PEER_DB (the harness copies
them there from fingerauthd's registry after registering them through the real
`/v1/keys`); parsed public keys are cached per kid, the row is looked up per request.
Durability as fingerauthd's: SQLite in WAL mode with synchronous=FULL, set and read back
on each worker's connection at start-up (the worker refuses to start otherwise); the
replay row and the audit row of a login in one transaction, committed before the answer.
"""

import json
import os
import sqlite3
import sys
import time

import jwt
from jwt.algorithms import RSAAlgorithm

AUDIENCE = os.environ.get("PEER_AUDIENCE", "fingerauth-test")
MAX_TTL = int(os.environ.get("PEER_MAX_TTL", "300"))
SKEW = int(os.environ.get("PEER_SKEW", "30"))
MAX_BODY = 16 * 1024
# 1 (default): the replay row and the audit row in one transaction; 2: two autocommits, as
# fingerauthd did before issue 13 (for the sensitivity check in BENCHMARKS.md)
COMMITS = int(os.environ.get("PEER_COMMITS", "1"))

_db = None
_keys = {}


SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def db():
    """This worker's connection: WAL and synchronous=FULL, set explicitly and read back (a
    commit is fdatasync'd before the answer, as fingerauthd's); refuses to run otherwise and
    says on stderr what it runs with (the harness reads the line from the peer's log)."""
    global _db
    if _db is None:
        connection = sqlite3.connect(os.environ["PEER_DB"], timeout=5, isolation_level=None)
        connection.execute("PRAGMA busy_timeout = 5000")
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = FULL")
        mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = SYNCHRONOUS.get(connection.execute("PRAGMA synchronous").fetchone()[0], "?")
        if mode.lower() != "wal" or synchronous != "FULL":
            raise RuntimeError("peer: sqlite journal_mode=%s synchronous=%s, not wal/FULL: refusing to run"
                               % (mode, synchronous))
        # one write with its newline: the workers share the log, and print's separate write
        # of the end of line (unbuffered stderr) let two workers' lines run together
        sys.stderr.write("peer worker %d: sqlite journal_mode=%s synchronous=%s, %d commit(s) per login\n"
                         % (os.getpid(), mode, synchronous, COMMITS))
        sys.stderr.flush()
        _db = connection
    return _db


def init_db(path, rows):
    """Creates the peer's tables and loads (kid, user, host, jwk_json) rows."""
    connection = sqlite3.connect(path)
    connection.executescript("""
        PRAGMA journal_mode = WAL;
        CREATE TABLE IF NOT EXISTS keys (kid TEXT PRIMARY KEY, user TEXT NOT NULL, host TEXT NOT NULL,
                                         jwk TEXT NOT NULL, status TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS replay (jti TEXT PRIMARY KEY NOT NULL, exp INTEGER NOT NULL) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS replay_exp ON replay (exp);
        CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL,
                                          event TEXT NOT NULL, user TEXT, kid TEXT, jti TEXT,
                                          result TEXT NOT NULL, reason TEXT);
    """)
    connection.executemany("INSERT OR REPLACE INTO keys VALUES (?, ?, ?, ?, 'active')", rows)
    connection.commit()
    connection.close()


class Refused(Exception):
    def __init__(self, reason, status=401):
        super().__init__(reason)
        self.reason = reason
        self.status = status


def public_key(kid):
    row = db().execute("SELECT user, host, jwk, status FROM keys WHERE kid = ?", (kid,)).fetchone()
    if row is None or row[3] != "active":
        raise Refused("unknown_key")
    key = _keys.get(kid)
    if key is None:
        key = _keys[kid] = RSAAlgorithm.from_jwk(row[2])
    return row[0], row[1], key


def verify(body):
    try:
        token = json.loads(body)["jwt"]
        header = jwt.get_unverified_header(token)
    except Exception:
        raise Refused("malformed", 400)
    if not isinstance(token, str) or token.count(".") != 2 or header.get("alg") != "RS256":
        raise Refused("bad_alg")
    kid = header.get("kid")
    user, host, key = public_key(kid)
    try:
        claims = jwt.decode(token, key, algorithms=["RS256"], audience=AUDIENCE, leeway=SKEW,
                            options={"require": ["exp", "iat", "nbf", "sub", "jti", "iss", "aud"]})
    except jwt.InvalidTokenError as error:
        raise Refused("invalid_token: %s" % type(error).__name__)
    if claims["sub"] != user or claims["iss"] != host:
        raise Refused("wrong_subject")
    if claims["exp"] - claims["iat"] > MAX_TTL:
        raise Refused("ttl_too_long")
    return kid, claims


def login(body):
    """(status, document) for one /v1/login body; one transaction: replay insert + audit."""
    now = int(time.time())
    connection = db()
    try:
        kid, claims = verify(body)
    except Refused as refusal:
        connection.execute("INSERT INTO audit (time, event, result, reason) VALUES (?, 'login', 'refused', ?)",
                           (now, refusal.reason))
        return refusal.status, {"error": refusal.reason}
    if COMMITS == 2:
        try:
            connection.execute("INSERT INTO replay (jti, exp) VALUES (?, ?)", (claims["jti"], claims["exp"]))
        except sqlite3.IntegrityError:
            connection.execute("INSERT INTO audit (time, event, user, kid, jti, result, reason) "
                               "VALUES (?, 'login', ?, ?, ?, 'refused', 'replay')",
                               (now, claims["sub"], kid, claims["jti"]))
            return 401, {"error": "replay"}
        connection.execute("INSERT INTO audit (time, event, user, kid, jti, result) VALUES (?, 'login', ?, ?, ?, 'ok')",
                           (now, claims["sub"], kid, claims["jti"]))
        return 200, {"ok": True, "sub": claims["sub"], "kid": kid, "jti": claims["jti"]}
    connection.execute("BEGIN IMMEDIATE")
    try:
        connection.execute("INSERT INTO replay (jti, exp) VALUES (?, ?)", (claims["jti"], claims["exp"]))
        connection.execute("INSERT INTO audit (time, event, user, kid, jti, result) VALUES (?, 'login', ?, ?, ?, 'ok')",
                           (now, claims["sub"], kid, claims["jti"]))
        connection.execute("COMMIT")
    except sqlite3.IntegrityError:
        connection.execute("ROLLBACK")
        connection.execute("INSERT INTO audit (time, event, user, kid, jti, result, reason) "
                           "VALUES (?, 'login', ?, ?, ?, 'refused', 'replay')", (now, claims["sub"], kid, claims["jti"]))
        return 401, {"error": "replay"}
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return 200, {"ok": True, "sub": claims["sub"], "kid": kid, "jti": claims["jti"]}


async def _respond(send, status, document):
    body = json.dumps(document).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                db()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > MAX_BODY:
            return await _respond(send, 413, {"error": "too_large"})
        if not message.get("more_body"):
            break
    path, method = scope["path"], scope["method"]
    if path == "/healthz" and method == "GET":
        return await _respond(send, 200, {"ok": True})
    if path == "/v1/login" and method == "POST":
        status, document = login(body)
        return await _respond(send, status, document)
    return await _respond(send, 404, {"error": "not_found"})
