"""Runs the real `fingerauthd` on a loopback port for a test.

    with Authd(tmpdir, tls=make_ca(tmpdir / "ca")) as authd:
        token = authd.create_token("host1")
        status, body = authd.post_json("/v1/login", {"jwt": jwt}).status, ...
        authd.audit_rows()[-1]["reason"]

`start()` waits for the one `listening on URL` line and a 200 from /healthz; `stop()`
sends SIGTERM, waits, and SIGKILLs only past the deadline. It is always called by the
context manager, also when the test fails.
"""

import http.client
import json
import os
import select
import signal
import sqlite3
import subprocess
import time

__all__ = ["Authd", "Response", "build_dir"]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def build_dir():
    """Where the built binaries are: $FINGERAUTH_BUILD, else <repo>/build."""
    return os.environ.get("FINGERAUTH_BUILD", os.path.join(REPO, "build"))


class Response:
    """An HTTP answer: status, headers (lower-case names), body bytes."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def __repr__(self):
        return "Response(%d, %r)" % (self.status, self.body[:200])


class Authd:
    """One fingerauthd process with its own database under `workdir`."""

    START_DEADLINE = 15.0
    STOP_DEADLINE = 10.0

    def __init__(self, workdir, audience="fingerauth-test", tls=None, args=(), db=None, listen="127.0.0.1:0",
                 connection_rate=False):
        """`args`: extra `serve` flags (e.g. ("--user-failures", "0")); `db`: another
        database path (default <workdir>/authd.db) or a postgresql:// URL; `listen`: the
        address and port (default a free loopback port). Tests open a new TLS connection
        per request, faster than the daemon's default `--connection-rate` (20 a second per
        address) lets one address: it is turned off unless `args` set it or
        `connection_rate` is true (the daemon's own default)."""
        self.workdir = str(workdir)
        os.makedirs(self.workdir, exist_ok=True)
        self.audience = audience
        self.tls = tls
        self.db = db or os.path.join(self.workdir, "authd.db")
        self.args = list(args)
        self.connection_rate = connection_rate
        self.listen = listen
        self.binary = os.path.join(build_dir(), "fingerauthd")
        self.stderr_path = os.path.join(self.workdir, "authd.stderr")
        self.url = None
        self.port = None
        self.returncode = None
        self.env = None  # the daemon's environment (None: this process's)
        self._proc = None
        self._stderr = None

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        if not os.access(self.binary, os.X_OK):
            raise RuntimeError("no fingerauthd at %s (set FINGERAUTH_BUILD)" % self.binary)
        args = [self.binary, "serve", "--listen", self.listen, "--db", self.db, "--audience", self.audience]
        if "--config" not in self.args:
            # Not the machine's /etc/fingerauthd.conf, which an installed package provides.
            config = os.path.join(self.workdir, "fingerauthd.conf")
            if not os.path.exists(config):
                with open(config, "w") as f:
                    f.write("# the test's own: every setting comes from the command line\n")
                os.chmod(config, 0o600)
            args += ["--config", config]
        if self.tls is not None:
            args += ["--tls-cert", self.tls.server_cert, "--tls-key", self.tls.server_key]
        args += self.args
        if not self.connection_rate and "--connection-rate" not in self.args:
            args += ["--connection-rate", "0"]
        self._stderr = open(self.stderr_path, "ab")
        self._proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=self._stderr, close_fds=True, env=self.env)
        deadline = time.monotonic() + self.START_DEADLINE
        line = self._read_line(deadline)
        prefix = "listening on "
        if not line.startswith(prefix):
            raise RuntimeError("fingerauthd did not start: %r\n%s" % (line, self.log_text()))
        self.url = line[len(prefix):].strip()
        self.port = int(self.url.rsplit(":", 1)[1])
        self.console_url = None
        if "--admin-listen" in self.args:
            line = self._read_line(deadline)
            if not line.startswith("console on "):
                raise RuntimeError("fingerauthd started no console: %r\n%s" % (line, self.log_text()))
            self.console_url = line[len("console on "):].strip()
            self.console_port = int(self.console_url.rsplit(":", 1)[1])
        while True:
            try:
                if self.request("GET", "/healthz", timeout=2).status == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("fingerauthd /healthz never answered 200\n" + self.log_text())
            time.sleep(0.05)

    def _read_line(self, deadline):
        data = b""
        fd = self._proc.stdout.fileno()
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                break
            chunk = os.read(fd, 1)  # one byte: the next line (the console's) stays in the pipe
            if not chunk:
                break
            data += chunk
        return data.decode("utf-8", "replace")

    @property
    def pid(self):
        return self._proc.pid if self._proc is not None else None

    def kill(self):
        """SIGKILL, as a crash would; the process is reaped. `start()` may follow."""
        proc = self._proc
        if proc is not None:
            proc.kill()
            proc.wait(timeout=self.STOP_DEADLINE)
        self.stop()

    def stop(self):
        """SIGTERM, wait up to STOP_DEADLINE, then SIGKILL. Safe to call twice."""
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=self.STOP_DEADLINE)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=self.STOP_DEADLINE)
            self.returncode = proc.returncode
            if proc.stdout is not None:
                proc.stdout.close()
            self._proc = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    # -- admin commands ---------------------------------------------------------------

    def admin(self, *args):
        """Runs `fingerauthd ARGS… --db DB`; returns the CompletedProcess."""
        return subprocess.run([self.binary, *args, "--db", self.db], capture_output=True, text=True, timeout=30)

    def create_token(self, host):
        """A new enrollment token for `host` (fingerauthd token create)."""
        result = self.admin("token", "create", "--host", host)
        if result.returncode != 0:
            raise RuntimeError("token create failed: %s" % result.stderr)
        return result.stdout.strip()

    def revoke(self, kid):
        """Revokes `kid` with the admin command (fingerauthd keys revoke)."""
        result = self.admin("keys", "revoke", "--kid", kid)
        if result.returncode != 0:
            raise RuntimeError("keys revoke failed: %s" % result.stderr)
        return result.stdout

    # -- observation ---------------------------------------------------------------

    @property
    def is_postgres(self):
        return self.db.startswith(("postgresql://", "postgres://"))

    def sql(self, query):
        """Rows of `query` on the daemon's database as dicts (sqlite3, or psql for PostgreSQL)."""
        if self.is_postgres:
            from support.postgres import psql_rows
            return psql_rows(self.db, query)
        connection = sqlite3.connect(self.db, timeout=5)
        try:
            connection.row_factory = sqlite3.Row
            return [dict(row) for row in connection.execute(query)]
        finally:
            connection.close()

    def audit_rows(self):
        """The audit table, oldest first, as dicts."""
        if self.is_postgres:
            return self.sql("SELECT * FROM audit ORDER BY id")
        connection = sqlite3.connect(self.db, timeout=5)
        try:
            connection.row_factory = sqlite3.Row
            return [dict(row) for row in connection.execute("SELECT * FROM audit ORDER BY id")]
        finally:
            connection.close()

    def log_text(self):
        """Everything fingerauthd wrote on stderr so far."""
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    # -- HTTP ------------------------------------------------------------------------

    def connection(self, timeout=5, source=None):
        """A connection to the daemon, from loopback address `source` (e.g. 127.0.0.2) if given."""
        bind = (source, 0) if source else None
        if self.url.startswith("https://"):
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                               context=self.tls.ssl_context(), source_address=bind)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout, source_address=bind)

    def request(self, method, path, body=None, headers=None, timeout=5, source=None):
        """One request on a fresh connection (from `source`, if given); returns a Response."""
        connection = self.connection(timeout, source)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            answer = connection.getresponse()
            return Response(answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read())
        finally:
            connection.close()

    def post_json(self, path, document, token=None, raw=None, source=None):
        """POST `document` as JSON (or `raw` bytes) with an optional Bearer token, from `source`."""
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = "Bearer " + token
        body = raw if raw is not None else json.dumps(document).encode("utf-8")
        return self.request("POST", path, body=body, headers=headers, source=source)

    def wait_for_rows(self, predicate, timeout=5.0):
        """The audit rows once `predicate(rows)` holds (refusals are counted into their row
        about once a second); the last rows read when it never does."""
        deadline = time.monotonic() + timeout
        while True:
            rows = self.audit_rows()
            if predicate(rows) or time.monotonic() > deadline:
                return rows
            time.sleep(0.1)
