"""The query plans of the console's reads on a large audit table, on both stores (issue 18:
"query plans checked by an index test"; the timings are `make bench`'s section 9). The SQL
is AdminTables' (overview sums, the audit page with only the filters given, each key's last
login), run with EXPLAIN on a table of 200,000 rows made by the test, statistics analysed
as a long-running database's would be."""

import os
import sqlite3
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd  # noqa: E402
from support.postgres import Postgres, available as postgres_available  # noqa: E402
from support.world import AUDIENCE  # noqa: E402

ROWS = 200_000
COLUMNS = ('CAST(id AS TEXT), CAST("time" AS TEXT), event, "user", claimed_user, host, kid, outcome, reason, peer, '
           'CAST(count AS TEXT), admin')
HOURS = """SELECT CAST(("time" / 3600) * 3600 AS TEXT),
       CAST(SUM(CASE WHEN outcome = 'accept' THEN count ELSE 0 END) AS TEXT),
       CAST(SUM(CASE WHEN outcome = 'accept' THEN 0 ELSE count END) AS TEXT)
  FROM audit WHERE "time" >= CAST({since} AS BIGINT) AND event = 'login' GROUP BY "time" / 3600 ORDER BY 1"""
REASONS = """SELECT reason, CAST(SUM(count) AS TEXT) FROM audit
 WHERE "time" >= CAST({since} AS BIGINT) AND outcome = 'deny' AND reason IS NOT NULL
 GROUP BY reason ORDER BY SUM(count) DESC, reason LIMIT CAST(10 AS BIGINT)"""
LAST_LOGIN = """SELECT CAST("time" AS TEXT) AS last FROM audit
 WHERE "user" = 'u5' AND kid = 'kid5' AND event = 'login' AND outcome = 'accept' ORDER BY "time" DESC LIMIT 1"""
HOST_LAST_LOGIN = """SELECT CAST(MAX(last) AS TEXT) FROM
  (SELECT (SELECT a."time" FROM audit a
            WHERE a."user" = k."user" AND a.kid = k.kid AND a.event = 'login' AND a.outcome = 'accept'
            ORDER BY a."time" DESC LIMIT 1) AS last
     FROM keys k WHERE k.host = 'h5') AS per_key"""


def audit_page(**filters):
    """The audit page's statement as AdminTables.audit builds it, values inlined."""
    conditions = {"user": "\"user\" = '%s'", "host": "host = '%s'", "event": "event = '%s'", "outcome": "outcome = '%s'",
                  "since": "\"time\" >= CAST(%s AS BIGINT)", "until": "\"time\" < CAST(%s AS BIGINT)"}
    where = " AND ".join(conditions[name] % value for name, value in filters.items())
    return "SELECT %s FROM audit%s ORDER BY id DESC LIMIT CAST(50 AS BIGINT)" % (COLUMNS, " WHERE " + where if where else "")


FILL = """INSERT INTO audit ("time", event, "user", host, kid, jti, outcome, reason, peer)
  SELECT {now} - (CAST(i AS BIGINT) * 2592000 / {rows}), 'login', 'u' || (i % 2000), 'h' || (i % 200), 'kid' || (i % 2000), 'jti' || i,
         CASE WHEN i % 10 = 0 THEN 'deny' ELSE 'accept' END, CASE WHEN i % 10 = 0 THEN 'bad_signature' END, '10.0.0.1'
    FROM {series}"""


def statements(now):
    week, day = now - 7 * 86400, now - 86400
    return {
        "overview hours": HOURS.format(since=week),
        "overview reasons": REASONS.format(since=week),
        "one user": audit_page(user="u7"),
        "one user, refused": audit_page(user="u7", outcome="deny"),
        "one day": audit_page(since=day, until=now),
        "last login": LAST_LOGIN,
        "host's last login": HOST_LAST_LOGIN,
    }


def test_sqlite_plans(tmp_path, ca):
    now = int(time.time())
    with Authd(str(tmp_path / "a"), audience=AUDIENCE, tls=ca) as authd:
        db = authd.db
    connection = sqlite3.connect(db)
    try:
        series = "(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) SELECT i FROM s)" % ROWS
        connection.execute(FILL.format(now=now, rows=ROWS, series=series))
        connection.commit()
        connection.execute("ANALYZE")
        plans = {name: " / ".join(row[3] for row in connection.execute("EXPLAIN QUERY PLAN " + sql))
                 for name, sql in statements(now).items()}
    finally:
        connection.close()
    assert "USING COVERING INDEX audit_time (time>?)" in plans["overview hours"], plans
    assert "USING COVERING INDEX audit_deny_time (time>?)" in plans["overview reasons"], plans
    assert "USING INDEX audit_user (user=?)" in plans["one user"], plans
    assert "USING INDEX audit_user (user=?)" in plans["one user, refused"], plans
    assert "USING INDEX audit_time (time>? AND time<?)" in plans["one day"], plans
    # One seek for a key's last login, however many rows its user has (issue 32).
    last = "SEARCH audit USING COVERING INDEX audit_user (user=? AND kid=? AND event=? AND outcome=?)"
    assert plans["last login"] == last, plans
    assert "SEARCH a USING COVERING INDEX audit_user (user=? AND kid=? AND event=? AND outcome=?)" in plans["host's last login"]
    assert "SEARCH k USING INDEX keys_host (host=?)" in plans["host's last login"], plans


@pytest.mark.skipif(not postgres_available(), reason="PostgreSQL is not installed (apt-get install postgresql)")
def test_postgresql_plans(tmp_path, ca):
    now = int(time.time())
    with Postgres() as pg:
        url = pg.create_database("plans")
        with Authd(str(tmp_path / "a"), audience=AUDIENCE, tls=ca, db=url):
            pass
        pg.psql("plans", FILL.format(now=now, rows=ROWS, series="generate_series(1, %d) AS i" % ROWS))
        pg.psql("plans", "VACUUM ANALYZE audit")
        plans = {name: " / ".join(row[0].strip() for row in pg.psql("plans", "EXPLAIN " + sql))
                 for name, sql in statements(now).items()}
    assert "Index Only Scan using audit_time on audit" in plans["overview hours"], plans
    assert "Index Only Scan using audit_deny_time on audit" in plans["overview reasons"], plans
    assert "audit_user" in plans["one user"] and "Seq Scan" not in plans["one user"], plans
    assert "audit_user" in plans["one user, refused"], plans
    assert "audit_time" in plans["one day"] and "Seq Scan" not in plans["one day"], plans
    assert "Index Only Scan Backward using audit_user on audit" in plans["last login"], plans
    assert "Seq Scan on audit" not in plans["last login"] and "Sort" not in plans["last login"], plans
    assert "Index Only Scan Backward using audit_user on audit a" in plans["host's last login"], plans
