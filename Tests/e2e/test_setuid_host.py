"""A setuid-root host that keeps its caller's environment (as chfn, su, a screen locker
helper or a vendor tool do): the caller chooses every variable, the host runs with euid 0.
Closed exploit: libcurl, then inside the module, opened the caller's $SSLKEYLOGFILE as root
(with the caller's umask: a world-writable root file wherever the caller pointed, holding
the TLS keys of the login). The module now links libpam and libc only and starts
fingerauth-login with an empty environment, so nothing the caller names may be opened.

The host is a setuid-root copy of fa-pamtest (it prints the variables it was given and
its uids, then runs pam_authenticate through a PAM service in a confdir of the test's), in
a root-owned directory only the test user may traverse, removed when the test ends. The
caller is the test user (setpriv), with umask 000 and its own environment: each variable
names a path in a fresh root-owned directory (no one but a root process can create or
change anything there), the proxies a closed loopback port, FP_VIRTUAL_DEVICE a reader
socket of the caller's own, fed the enrolled finger. inotify on that directory sees any
open, creation or change, whoever makes it."""

import ctypes
import os
import re
import shutil
import socket
import stat
import struct
import tempfile
from pathlib import Path

import pytest

from conftest import PLACE_FINGER
from support.vreader import VirtualReader, VirtualReaderError, scan_commands

HOST_PREFIX = "/tmp/fingerauth-e2e-setuid."  # leftovers.py looks for these

# What ld.so must let through to a setuid program; the others are recorded, not required
# (ld.so drops LD_LIBRARY_PATH, LOCALDOMAIN, RES_OPTIONS, … for AT_SECURE).
MUST_REACH = ("SSLKEYLOGFILE", "OPENSSL_CONF", "SSL_CERT_FILE", "CURL_CA_BUNDLE", "https_proxy",
              "FP_VIRTUAL_DEVICE", "HOME")


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when this returns: nobody listens there


class Watch:
    """inotify on a few directories: every open, read, creation, change, move or removal
    in them (or of them) after start(), by any process."""

    MASK = 0x0FFF  # IN_ALL_EVENTS: access, modify, attrib, close, open, moved, create, delete, delete_self, move_self
    NAMES = {0x1: "ACCESS", 0x2: "MODIFY", 0x4: "ATTRIB", 0x8: "CLOSE_WRITE", 0x10: "CLOSE_NOWRITE",
             0x20: "OPEN", 0x40: "MOVED_FROM", 0x80: "MOVED_TO", 0x100: "CREATE", 0x200: "DELETE",
             0x400: "DELETE_SELF", 0x800: "MOVE_SELF"}

    def __init__(self, dirs):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.dirs = {}
        for d in dirs:
            wd = self.libc.inotify_add_watch(self.fd, str(d).encode(), self.MASK)
            if wd < 0:
                raise OSError(ctypes.get_errno(), "inotify_add_watch %s" % d)
            self.dirs[wd] = str(d)

    def events(self):
        """["OPEN <path>", …] since the watch began; reading them ends the watch."""
        out, data = [], b""
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
        os.close(self.fd)
        offset = 0
        while offset + 16 <= len(data):
            wd, mask, _cookie, length = struct.unpack_from("iIII", data, offset)
            name = data[offset + 16:offset + 16 + length].rstrip(b"\0").decode(errors="replace")
            offset += 16 + length
            if mask & 0x8000:  # IN_IGNORED: the watch went away (closed by us)
                continue
            what = "|".join(n for bit, n in self.NAMES.items() if mask & bit) or hex(mask)
            out.append("%s %s" % (what, os.path.join(self.dirs.get(wd, "?"), name)))
        return out


def snapshot(path):
    """What a path is now: absent, a file (inode, mtime, content), a directory (listing)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return ("dir", st.st_ino, st.st_mtime_ns, st.st_mode, st.st_uid, sorted(os.listdir(path)))
    data = Path(path).read_bytes() if stat.S_ISREG(st.st_mode) else None
    return ("file", st.st_ino, st.st_mtime_ns, st.st_mode, st.st_uid, data)


@pytest.fixture
def setuid_host(install, user, tmp_path):
    """(install, user, run): `run(extra_args)` runs the setuid host as the user in the
    caller's environment, returns (done, seen, caller) where seen is {NAME: value or None}
    as the host printed it, plus "IDS"."""
    install.enroll(user, "finger-right")
    service = "fa-e2e-setuid-" + user.name.split("-")[-1]
    confdir = tmp_path / "pam.d"
    confdir.mkdir(mode=0o755)
    # [default=done]: the module's own code is the stack's result, whatever it is; the
    # password line is never reached (fa-pamtest would refuse a prompt anyway).
    (confdir / service).write_text("\n".join([
        install.module_line(control="[default=done]"),
        "auth     required  pam_unix.so",
        "account  required  pam_unix.so",
    ]) + "\n")

    # The caller's world: a fresh directory nobody but root can write.
    caller = tmp_path / "caller"
    caller.mkdir(mode=0o755)
    (caller / "home").mkdir(mode=0o755)
    (caller / "ossl-modules").mkdir(mode=0o755)
    (caller / "lib").mkdir(mode=0o755)
    (caller / "ssl-cert.pem").write_text("the caller's CA bundle (not a certificate)\n")
    (caller / "curl-ca-bundle.pem").write_text("the caller's curl CA bundle (not a certificate)\n")
    # Honoured, this configuration would stop every TLS handshake with the authenticator.
    (caller / "openssl.cnf").write_text(
        "openssl_conf = init\n[init]\nssl_conf = ssl\n[ssl]\nsystem_default = sys\n"
        "[sys]\nMinProtocol = TLSv1.3\nMaxProtocol = TLSv1\n")
    for f in ("ssl-cert.pem", "curl-ca-bundle.pem", "openssl.cnf"):
        os.chmod(caller / f, 0o644)
    proxy = "http://127.0.0.1:%d" % closed_port()
    env = {
        "SSLKEYLOGFILE": str(caller / "sslkeys.log"),
        "SSL_CERT_FILE": str(caller / "ssl-cert.pem"),
        "CURL_CA_BUNDLE": str(caller / "curl-ca-bundle.pem"),
        "OPENSSL_CONF": str(caller / "openssl.cnf"),
        "OPENSSL_MODULES": str(caller / "ossl-modules"),
        "http_proxy": proxy,
        "https_proxy": proxy,
        "ALL_PROXY": proxy,
        "LD_LIBRARY_PATH": str(caller / "lib"),
        "GLIBC_TUNABLES": "glibc.malloc.perturb=85:glibc.malloc.check=3",
        "FP_VIRTUAL_DEVICE": str(caller / "caller-reader.sock"),
        "TZ": ":" + str(caller / "zoneinfo"),
        "HOME": str(caller / "home"),
        "LOCALDOMAIN": "fa-e2e.invalid",
        "RES_OPTIONS": "ndots:15 attempts:1 timeout:1",
    }
    paths = [v.lstrip(":") for k, v in env.items() if v.lstrip(":").startswith(str(caller))]

    host_dir = tempfile.mkdtemp(prefix=os.path.basename(HOST_PREFIX), dir=os.path.dirname(HOST_PREFIX))
    try:
        # root:<the user's group> 0710: the test user (and only it) may reach the host.
        os.chown(host_dir, 0, user.gid)
        os.chmod(host_dir, 0o710)
        host = os.path.join(host_dir, "fa-pamtest")
        shutil.copyfile(install.build / "fa-pamtest", host)
        os.chown(host, 0, 0)
        os.chmod(host, 0o4755)

        def run(*args, extra_env=None):
            before = {p: snapshot(p) for p in paths}
            module_log_before = install.module_log.exists()
            watch = Watch([caller, caller / "home", caller / "ossl-modules", caller / "lib"])
            # The caller's own reader at FP_VIRTUAL_DEVICE, with the enrolled finger ready:
            # a host that used it would log in whatever finger is on the real one.
            theirs = VirtualReader(env["FP_VIRTUAL_DEVICE"]).feed(scan_commands("finger-right"), timeout=2)
            argv = [host, "--confdir", str(confdir), "--service", service, "--user", user.name]
            for name in env:
                argv += ["--print-env", name]
            done = user.as_user(["sh", "-c", 'umask 000; exec "$0" "$@"'] + argv + list(args),
                                 env=dict(env, **(extra_env or {})))
            try:
                theirs.wait(timeout=5)
                theirs_fed = theirs.sent
            except VirtualReaderError as error:
                # "no new socket": no reader was ever opened there
                theirs_fed = [] if str(error).startswith("no new socket") else [repr(error)]
            except OSError as error:
                theirs_fed = ["a reader socket appeared: %r" % error]
            events = watch.events()
            after = {p: snapshot(p) for p in paths}
            seen = {}
            for line in done.stdout.splitlines():
                if line.startswith("ENV "):
                    rest = line[4:]
                    if rest.endswith(" unset"):
                        seen[rest[:-6]] = None
                    else:
                        name, _, value = rest.partition("=")
                        seen[name] = value
                elif line.startswith("IDS "):
                    seen["IDS"] = tuple(int(x) for x in line.split()[1:])
            return done, seen, {"env": env, "before": before, "after": after, "events": events,
                                "their_reader_fed": theirs_fed, "module_log_before": module_log_before}

        yield install, user, run
    finally:
        shutil.rmtree(host_dir, ignore_errors=True)
        assert not os.path.exists(host_dir), "the setuid copy must not outlive the test: %s" % host_dir


def check_the_host_ran_as_setuid_with_the_callers_environment(seen, caller, user):
    """Returns what reached the host: {"reached": [...], "unset": [...], "changed": {...}}."""
    env = caller["env"]
    assert seen.get("IDS") == (user.uid, 0), "the host must run with ruid = the user, euid 0: %r" % (seen.get("IDS"),)
    got = {"reached": sorted(n for n in env if seen.get(n) == env[n]),
           "unset": sorted(n for n in env if n in seen and seen[n] is None),
           "changed": {n: seen[n] for n in sorted(env) if seen.get(n) not in (None, env[n])}}
    missing = [name for name in MUST_REACH if name not in got["reached"]]
    assert not missing, "these never reached the setuid host, the test proves nothing for them: %s" % missing
    return got


def check_nothing_the_caller_named_was_touched(caller):
    assert caller["events"] == [], "files the caller named were opened or changed: %s" % caller["events"]
    for path, before in caller["before"].items():
        assert caller["after"][path] == before, "%s changed: %r -> %r" % (path, before, caller["after"][path])
    assert caller["their_reader_fed"] == [], "the caller's FP_VIRTUAL_DEVICE reader was opened"


def summary(done, reached, caller):
    result = [l for l in done.stdout.splitlines() if l.startswith("RESULT")]
    return "%s; reached the host: %s; dropped by ld.so: %s; cut by ld.so: %s; opened/changed: %d" % (
        result[-1] if result else "no RESULT (exit %d)" % done.returncode, ",".join(reached["reached"]),
        ",".join(reached["unset"]) or "-",
        ",".join("%s=%s" % kv for kv in reached["changed"].items()) or "-", len(caller["events"]))


def test_setuid_host_with_the_enrolled_finger_logs_in_and_touches_nothing_the_caller_named(setuid_host, observe):
    """setuid host, caller's env (SSLKEYLOGFILE, OPENSSL_CONF, proxies, FP_VIRTUAL_DEVICE…), enrolled finger -> PAM_SUCCESS, no caller-named file opened"""
    install, user, run = setuid_host
    install.feed("finger-right")
    done, seen, caller = run()
    install.fed()
    reached = check_the_host_ran_as_setuid_with_the_callers_environment(seen, caller, user)
    observe(summary(done, reached, caller))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-2:] == ["INFO " + PLACE_FINGER, "RESULT 0 PAM_SUCCESS"], done.stdout
    [row] = install.login_rows(user)  # through the TLS the caller's OPENSSL_CONF would have broken
    assert row["outcome"] == "accept" and row["host"] == "e2e-host"
    assert row["jti"] == install.last_jti()
    line = install.log_lines()[-1]
    assert "service=fa-e2e-setuid-" in line and "user=%s" % user.name in line and "result=PAM_SUCCESS" in line
    check_nothing_the_caller_named_was_touched(caller)
    # The module's own log, created inside the setuid host under umask 000: root, 0600.
    assert not caller["module_log_before"]
    st = os.stat(install.module_log)
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o600)


def test_setuid_host_with_a_wrong_finger_is_refused_even_with_the_callers_own_reader(setuid_host, observe):
    """setuid host, caller's env, a wrong finger 3 times (the enrolled one on the caller's own reader) -> PAM_MAXTRIES, nothing touched"""
    install, user, run = setuid_host
    rows_before = len(install.authd.audit_rows())
    install.feed("finger-wrong", "finger-wrong", "finger-wrong")
    done, seen, caller = run()
    install.fed()
    reached = check_the_host_ran_as_setuid_with_the_callers_environment(seen, caller, user)
    observe(summary(done, reached, caller))
    assert done.stdout.splitlines()[-1] == "RESULT 11 PAM_MAXTRIES", done.stdout + done.stderr
    assert "INFO " + PLACE_FINGER in done.stdout
    assert len(install.authd.audit_rows()) == rows_before  # no finger matched: nothing was sent
    assert "result=PAM_MAXTRIES" in install.log_lines()[-1]
    check_nothing_the_caller_named_was_touched(caller)


# Every variable the Swift runtime read when the module carried one (statically, 8 MB):
# SWIFT_DEBUG_HELP=YES printed its help from inside the setuid host.
SWIFT_VARIABLES = {name: "YES" for name in (
    "SWIFT_DEBUG_HELP", "SWIFT_DEBUG_ENABLE_COW_CHECKS", "SWIFT_DEBUG_ENABLE_MALLOC_SCRIBBLE",
    "SWIFT_DEBUG_ENABLE_METADATA_ALLOCATION_ITERATION", "SWIFT_DEBUG_ENABLE_METADATA_BACKTRACE_LOGGING",
    "SWIFT_DEBUG_ENABLE_LIB_PRESPECIALIZED_METADATA", "SWIFT_DEBUG_ENABLE_LIB_PRESPECIALIZED_LOGGING",
    "SWIFT_DEBUG_FAILED_TYPE_LOOKUP", "SWIFT_DEBUG_VALIDATE_UNCHECKED_CONTINUATIONS", "SWIFT_DUMP_ACCESSIBLE_FUNCTIONS",
    "SWIFT_ENABLE_MANGLED_NAME_VERIFICATION")}
SWIFT_VARIABLES.update({"SWIFT_DETERMINISTIC_HASHING": "1", "SWIFT_BINARY_COMPATIBILITY_VERSION": "0x50000",
                        "SWIFT_BACKTRACE": "enable=yes,interactive=no", "SWIFT_ROOT": "/tmp/fa-caller-root",
                        "SWIFT_DEBUG_LIB_PRESPECIALIZED_PATH": "/tmp/fa-caller-prespecialized"})


def _masked(line):
    """A log line without what differs from one login to the next: times and the jti."""
    line = re.sub(r"\b(\w*ms)=\d+", r"\1=N", line)
    return re.sub(r"\bjti=\S+", "jti=J", line)


def test_setuid_host_with_every_swift_variable_set_behaves_the_same(setuid_host, observe):
    """setuid host, caller's env plus every SWIFT_* the old runtime read -> the same conversation and log line, no runtime output"""
    install, user, run = setuid_host
    install.feed("finger-right")
    plain, _, _ = run()
    install.fed()
    plain_line = install.log_lines()[-1]
    install.feed("finger-right")
    swift, _, caller = run(extra_env=SWIFT_VARIABLES)
    install.fed()
    swift_line = install.log_lines()[-1]
    observe("without SWIFT_*: %s; with: %s" % (plain.stdout.splitlines()[-1], swift.stdout.splitlines()[-1]))
    shown = [l for l in plain.stdout.splitlines() if not l.startswith(("ENV ", "IDS "))]
    assert [l for l in swift.stdout.splitlines() if not l.startswith(("ENV ", "IDS "))] == shown
    assert shown[-1] == "RESULT 0 PAM_SUCCESS", plain.stdout
    assert _masked(swift_line) == _masked(plain_line) and "result=PAM_SUCCESS" in swift_line
    assert "Swift runtime" not in swift.stderr and "SWIFT_" not in swift.stderr, swift.stderr
    check_nothing_the_caller_named_was_touched(caller)
