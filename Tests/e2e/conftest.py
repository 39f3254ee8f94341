"""End-to-end fixtures: real users, real sudo and sshd, the built module by absolute path,
the built fingerauth-login, libfprint's virtual reader and a real fingerauthd over TLS.
Reuses Tests/integration/support (Authd, VirtualReader, the test CA)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
sys.path.insert(0, HERE)

from support.authd import Authd, build_dir  # noqa: E402
from support.tls import make_ca  # noqa: E402
from support.vreader import VirtualReader, enroll_commands, scan_commands  # noqa: E402

from machine import TestUser  # noqa: E402

AUDIENCE = "fingerauth-e2e"
HOST_ID = "e2e-host"
PLACE_FINGER = "Place your finger on the fingerprint reader"


def pytest_configure(config):
    if os.geteuid() != 0:
        raise pytest.UsageError("the end-to-end tests run as root (they add users, sudoers and PAM files)")


class Installation:
    """FingerAuth configured in `tmp`: conf, token, state, reader socket, module log."""

    def __init__(self, tmp, ca):
        self.tmp = Path(tmp)
        self.ca = ca
        self.build = Path(build_dir()).resolve()
        self.module = self.build / "pam_fingerauth.so"
        self.conf = self.tmp / "fingerauth.conf"
        self.token = self.tmp / "fingerauth.token"
        self.state = self.tmp / "state"
        self.module_log = self.tmp / "module.log"
        # pam_sm_open_session's records of remote sessions (the default is /run/fingerauth/
        # sessions): in the test's folder, so that no test sees or leaves a record elsewhere.
        self.sessions = self.tmp / "sessions"
        self.attempts = self.tmp / "attempts"
        (self.tmp / "reader").mkdir(mode=0o700)
        self.reader = VirtualReader(self.tmp / "reader" / "virtual.sock")
        self.authd = Authd(str(self.tmp / "authd"), audience=AUDIENCE, tls=ca)
        self.env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}

    def start(self):
        self.authd.start()
        self.token.write_text(self.authd.create_token(HOST_ID) + "\n")
        os.chmod(self.token, 0o600)
        settings = {
            "url": self.authd.url + "/v1/login",
            "audience": AUDIENCE,
            "host_id": HOST_ID,
            "cafile": self.ca.ca_cert,
            "state_dir": str(self.state),
            "login_helper": str(self.build / "fingerauth-login"),
            "pam_helper": str(self.build / "fingerauth-pam"),
            "virtual_reader": self.reader.path,
            "token_file": str(self.token),
            "timeout": "5",
            "debug_file": str(self.module_log),
            "session_dir": str(self.sessions),
            # Each user's failed attempts (default /run/fingerauth/attempts), in the test's folder.
            "attempts_dir": str(self.attempts),
        }
        self.conf.write_text("# FingerAuth e2e configuration\n" + "".join("%s = %s\n" % kv for kv in settings.items()))
        os.chmod(self.conf, 0o644)

    def module_line(self, *args, control="sufficient"):
        return "auth %s %s conf=%s %s" % (control, self.module, self.conf, " ".join(args))

    def session_line(self, *args):
        """The module's `session` line (records a remote session under `sessions`)."""
        return "session optional %s conf=%s %s" % (self.module, self.conf, " ".join(args))

    def cli(self, *args, feed=None, timeout=60):
        if feed is not None:
            self.reader.feed(feed, timeout=timeout)
        try:
            return subprocess.run([str(self.build / "fingerauth"), *args, "--config", str(self.conf)],
                                  env=self.env, capture_output=True, text=True, timeout=timeout)
        finally:
            if feed is not None:
                self.reader.wait(timeout=timeout)

    def enroll(self, user, identity):
        done = self.cli("enroll", "--user", user.name, "--finger", "right-index-finger", feed=enroll_commands(identity))
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    def feed(self, *identities, timeout=30):
        """Puts these fingers on the reader, one per verify, in the background."""
        self.reader.feed(scan_commands(*identities), timeout=timeout)

    def fed(self, timeout=30):
        self.reader.wait(timeout=timeout)

    def login_rows(self, user):
        return [r for r in self.authd.audit_rows() if r.get("event") == "login" and r.get("user") == user.name]

    def log_lines(self):
        """The module's one line per attempt (its `debug:` step lines left out)."""
        lines = self.module_log.read_text().splitlines() if self.module_log.exists() else []
        return [line for line in lines if not line.startswith("pam_fingerauth: debug:")]

    def last_jti(self):
        for line in reversed(self.log_lines()):
            found = re.search(r"\bjti=([A-Za-z0-9_-]+)", line)
            if found:
                return found.group(1)
        return None

    def close(self):
        try:
            self.reader.wait(timeout=1)
        except Exception:
            pass
        self.authd.stop()


@pytest.fixture(scope="session")
def ca(tmp_path_factory):
    return make_ca(str(tmp_path_factory.mktemp("ca")))


@pytest.fixture
def install(tmp_path, ca):
    os.chmod(tmp_path, 0o755)
    inst = Installation(tmp_path, ca)
    try:
        inst.start()
        yield inst
    finally:
        inst.close()


@pytest.fixture
def user():
    u = TestUser()
    try:
        yield u
    finally:
        u.remove()


# -- what ran, with what result: one line per scenario at the end ---------------------

_results = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        doc = (item.function.__doc__ or item.name).strip().splitlines()[0]
        seen = getattr(item, "observed", "")
        where = item.nodeid.split("::")[0].split("/")[-1]
        callspec = getattr(item, "callspec", None)
        if callspec is not None:
            where += "[%s]" % callspec.id
        _results.append((report.outcome.upper(), where, doc, seen))


def pytest_terminal_summary(terminalreporter):
    terminalreporter.section("FingerAuth end-to-end scenarios")
    for outcome, where, doc, seen in _results:
        terminalreporter.write_line("%-7s %s: %s" % (outcome, where, doc))
        if seen:
            terminalreporter.write_line("        observed: %s" % seen)


@pytest.fixture
def observe(request):
    """observe("exit 0, no password prompt") records what the test saw for the summary."""
    def record(text):
        request.node.observed = text
    return record
