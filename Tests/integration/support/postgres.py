"""A throwaway PostgreSQL server from Debian's `postgresql` package for a test.

    with Postgres() as pg:
        url = pg.url("authd")         # postgresql://fa@127.0.0.1:PORT/authd (database created)
        pg.query("authd", "SELECT count(*) FROM audit")
        pg.stop(); pg.start()         # same data, same port

`initdb` runs once a process, in a folder under /tmp owned by the `postgres` user (initdb
refuses root); each server gets a copy of that cluster in a fresh folder of its own. The
server listens on 127.0.0.1 and a socket in that folder only, trust authentication. `close()` (the context manager calls it, also when the test fails) stops
the server and removes the folder.
"""

import atexit
import glob
import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile

__all__ = ["Postgres", "available", "pg_bin", "psql_rows"]

USER = "fa"


def pg_bin():
    """The folder of initdb/pg_ctl/psql (the newest /usr/lib/postgresql/N/bin), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    return os.path.dirname(found[-1]) if found else None


def available():
    """True when PostgreSQL's binaries and the `postgres` user are installed."""
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return False
    return pg_bin() is not None


def psql_rows(url, sql, timeout=30):
    """Rows of `sql` on the database at `url` as dicts, through psql's JSON output."""
    wrapped = "SELECT coalesce(json_agg(t), '[]') FROM (%s) t" % sql
    result = subprocess.run([os.path.join(pg_bin(), "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                             "-d", url, "-c", wrapped], capture_output=True, text=True, timeout=timeout, check=True)
    return json.loads(result.stdout.strip() or "[]")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_TEMPLATE = None


def _template():
    """An empty cluster (initdb, as the `postgres` user) made at the first call in this
    process and removed when it exits; each Postgres copies it."""
    global _TEMPLATE
    if _TEMPLATE is None:
        owner = pwd.getpwnam("postgres")
        folder = tempfile.mkdtemp(prefix="fa-pg-template-")
        atexit.register(shutil.rmtree, folder, True)
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        data = os.path.join(folder, "data")
        subprocess.run([os.path.join(pg_bin(), "initdb"), "-D", data, "-U", USER, "--auth=trust", "-E", "UTF8",
                        "--no-sync"], user=owner.pw_uid, group=owner.pw_gid, capture_output=True, text=True,
                       timeout=60, check=True, cwd=folder)
        _TEMPLATE = data
    return _TEMPLATE


class Postgres:
    """One PostgreSQL cluster in a temporary folder on a free loopback port."""

    def __init__(self):
        self.bin = pg_bin()
        if self.bin is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
        self.owner = pwd.getpwnam("postgres")
        self.dir = tempfile.mkdtemp(prefix="fa-pg-")
        os.chown(self.dir, self.owner.pw_uid, self.owner.pw_gid)
        self.data = os.path.join(self.dir, "data")
        self.logfile = os.path.join(self.dir, "server.log")
        self.port = free_port()
        self.running = False

    def __enter__(self):
        try:
            # A copy of one cluster initdb made for this process: the same empty cluster as
            # initdb's own, in a fraction of its time (the suite starts dozens).
            subprocess.run(["cp", "-a", _template(), self.data], check=True, capture_output=True, timeout=60)
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _run(self, args, check=True, timeout=60):
        return subprocess.run([os.path.join(self.bin, args[0]), *args[1:]], user=self.owner.pw_uid,
                              group=self.owner.pw_gid, capture_output=True, text=True, timeout=timeout,
                              check=check, cwd=self.dir)

    def start(self):
        """Starts the server and waits until it accepts connections."""
        options = "-k %s -p %d -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100" % (self.dir, self.port)
        self._run(["pg_ctl", "start", "-w", "-t", "30", "-D", self.data, "-l", self.logfile, "-o", options])
        self.running = True

    def stop(self, mode="fast"):
        """Stops the server (`fast`: open sessions are disconnected)."""
        if self.running:
            self._run(["pg_ctl", "stop", "-w", "-t", "30", "-m", mode, "-D", self.data], check=False)
            self.running = False

    def close(self):
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, database="postgres"):
        return "postgresql://%s@127.0.0.1:%d/%s" % (USER, self.port, database)

    def create_database(self, name):
        self.psql("postgres", "CREATE DATABASE %s" % name)
        return self.url(name)

    def psql(self, database, sql):
        """Runs `sql` with psql; returns the rows as lists of strings."""
        result = self._run(["psql", "-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1",
                            "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, "-d", database, "-c", sql])
        return [line.split("\t") for line in result.stdout.splitlines() if line]

    def query(self, database, sql):
        """Rows of `sql` as dicts, through psql's JSON output."""
        return psql_rows(self.url(database), sql)
