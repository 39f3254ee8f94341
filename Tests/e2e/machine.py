"""The real machine, changed only where an end-to-end test must and always put back:
test users (useradd/chpasswd/userdel), a sudoers drop-in for one test user, PAM service
files /etc/pam.d/fa-e2e-*, and an sshd under a program name of its own on a loopback
port. Everything else lives in the test's temporary folder.

Names: users start with USER_PREFIX, PAM services with SERVICE_PREFIX, drop-ins carry the
user's name; leftovers.py looks for exactly these."""

import os
import pwd
import secrets
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

USER_PREFIX = "fae2e"
SERVICE_PREFIX = "fa-e2e-"
PAM_DIR = Path("/etc/pam.d")
SUDOERS_DIR = Path("/etc/sudoers.d")
SSHD = "/usr/sbin/sshd"


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 60)
    return subprocess.run(cmd, **kw)


class TestUser:
    """A real account with a random password; `remove()` deletes it (userdel -r)."""

    __test__ = False

    def __init__(self):
        self.name = "%s-%s" % (USER_PREFIX, secrets.token_hex(3))
        self.password = secrets.token_urlsafe(18)  # never printed
        done = run(["useradd", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/bin/sh",
                    "--comment", "FingerAuth e2e test user", self.name])
        if done.returncode != 0:
            raise RuntimeError("useradd failed: %s" % done.stderr)
        try:
            done = run(["chpasswd"], input="%s:%s\n" % (self.name, self.password))
            if done.returncode != 0:
                raise RuntimeError("chpasswd failed: %s" % done.stderr.replace(self.password, "***"))
            entry = pwd.getpwnam(self.name)
            self.uid, self.gid = entry.pw_uid, entry.pw_gid
        except BaseException:
            self.remove()
            raise

    def remove(self):
        # --force: remove the account even if a process of it were still running (the
        # tests wait for every sudo and ssh they start; leftovers.py would report one).
        done = run(["userdel", "--force", "--remove", self.name])
        # 12: the home folder (/nonexistent) could not be removed; the account is gone.
        if done.returncode not in (0, 12):
            raise RuntimeError("userdel %s failed (%d): %s" % (self.name, done.returncode, done.stderr))
        for leftover in ("/run/sudo/ts/" + self.name, "/var/lib/sudo/lectured/" + self.name,
                         "/var/mail/" + self.name):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass

    def as_user(self, cmd, stdin_text=None, timeout=60, env=None):
        """Runs `cmd` as this user (setpriv: real and effective ids, its groups, a clean
        environment, no controlling terminal). `env`: variables of the caller's choosing,
        on top of (or in place of) the clean ones."""
        clean = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/nonexistent", "USER": self.name,
                 "LOGNAME": self.name, "LANG": "C.UTF-8", "SHELL": "/bin/sh"}
        env = dict(clean, **(env or {}))
        full = ["setpriv", "--reuid", str(self.uid), "--regid", str(self.gid), "--init-groups", "--"] + list(cmd)
        return run(full, env=env, input=stdin_text if stdin_text is not None else "", timeout=timeout,
                   start_new_session=True)


class PamService:
    """/etc/pam.d/<name>, written by the test and always removed."""

    def __init__(self, name, lines):
        assert name.startswith(SERVICE_PREFIX) and "/" not in name
        self.name = name
        self.path = PAM_DIR / name
        if self.path.exists():
            raise RuntimeError("%s already exists; not touching it" % self.path)
        self.write(lines)

    def write(self, lines):
        tmp = self.path.with_name(".%s.tmp" % self.name)
        tmp.write_text("# written by FingerAuth's e2e test; removed when it ends\n" + "\n".join(lines) + "\n")
        os.chmod(tmp, 0o644)
        os.rename(tmp, self.path)

    def remove(self):
        for path in (self.path, self.path.with_name(".%s.tmp" % self.name)):
            try:
                path.unlink()
            except FileNotFoundError:
                pass


class SudoersDropIn:
    """/etc/sudoers.d/<user>: that user's sudo uses PAM service `service` (None: sudo's own,
    /etc/pam.d/sudo), and may run only /usr/bin/true as root, and the commands of
    `nopasswd` (exact command lines) without authenticating. Checked with visudo -cf
    before it goes in place."""

    def __init__(self, user, service, nopasswd=()):
        self.path = SUDOERS_DIR / user.name
        if self.path.exists():
            raise RuntimeError("%s already exists; not touching it" % self.path)
        services = "" if service is None else "pam_service={s}, pam_login_service={s}, ".format(s=service)
        text = ("# FingerAuth e2e test: removed when the test ends\n"
                "Defaults:{u} {p}lecture=never, timestamp_timeout=0\n"
                "{u} ALL=(root) /usr/bin/true, /bin/true\n").format(u=user.name, p=services)
        text += "".join("{u} ALL=(root) NOPASSWD: {c}\n".format(u=user.name, c=command) for command in nopasswd)
        fd, tmp = tempfile.mkstemp(prefix=".fae2e", dir=str(SUDOERS_DIR))  # dot names are ignored by sudo
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.chmod(tmp, 0o440)
            check = run(["visudo", "-cf", tmp])
            if check.returncode != 0:
                raise RuntimeError("visudo -cf refused the drop-in: %s %s" % (check.stdout, check.stderr))
            os.rename(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def remove(self):
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sshd:
    """/usr/sbin/sshd started through a symlink <tmp>/<service> (so PAM reads
    /etc/pam.d/<service>), on a free loopback port, with its own config, host key and pid
    file in `workdir`. `stop()` kills it by its pid file and by its Popen."""

    START_DEADLINE = 10.0

    def __init__(self, workdir, service):
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.service = service
        self.port = free_port()
        self.pidfile = self.dir / "sshd.pid"
        self.config = self.dir / "sshd_config"
        self.log = self.dir / "sshd.log"
        self.hostkey = self.dir / "ssh_host_ed25519_key"
        self.program = self.dir / service
        self.created_run_sshd = False
        self.proc = None
        self._logf = None

    def start(self):
        done = run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.hostkey)])
        if done.returncode != 0:
            raise RuntimeError("ssh-keygen failed: %s" % done.stderr)
        self.config.write_text("\n".join([
            "Port %d" % self.port,
            "ListenAddress 127.0.0.1",
            "HostKey %s" % self.hostkey,
            "PidFile %s" % self.pidfile,
            "UsePAM yes",
            "KbdInteractiveAuthentication yes",
            "PasswordAuthentication no",
            "PubkeyAuthentication no",
            "AuthorizedKeysFile none",
            "PermitRootLogin no",
            "PrintMotd no",
            "PrintLastLog no",
            "X11Forwarding no",
            "LogLevel VERBOSE",
        ]) + "\n")
        os.chmod(self.config, 0o600)
        os.symlink(SSHD, self.program)
        if not os.path.isdir("/run/sshd"):
            os.mkdir("/run/sshd", 0o755)
            self.created_run_sshd = True
        check = run([str(self.program), "-t", "-f", str(self.config)])
        if check.returncode != 0:
            raise RuntimeError("sshd -t: %s" % check.stderr)
        self._logf = open(self.log, "ab")
        self.proc = subprocess.Popen([str(self.program), "-D", "-e", "-f", str(self.config)],
                                     stdin=subprocess.DEVNULL, stdout=self._logf, stderr=self._logf,
                                     start_new_session=True)
        deadline = time.monotonic() + self.START_DEADLINE
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("sshd exited (%d): %s" % (self.proc.returncode, self.log_text()))
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    if s.recv(64).startswith(b"SSH-"):
                        return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("sshd did not listen on %d: %s" % (self.port, self.log_text()))
            time.sleep(0.05)

    def log_text(self):
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self):
        pids = set()
        if self.proc is not None and self.proc.poll() is None:
            # Connection children (each in its own session) go first, by parent pid.
            children = run(["pgrep", "-P", str(self.proc.pid)]).stdout.split()
            pids.update(int(c) for c in children)
        try:
            pids.add(int(self.pidfile.read_text().strip()))
        except (FileNotFoundError, ValueError):
            pass
        if self.proc is not None and self.proc.poll() is None:
            pids.add(self.proc.pid)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
            self.proc = None
        if self._logf is not None:
            self._logf.close()
            self._logf = None
        if self.created_run_sshd:
            try:
                os.rmdir("/run/sshd")
            except OSError:
                pass
            self.created_run_sshd = False
        try:
            os.unlink(self.program)
        except FileNotFoundError:
            pass

    def ssh(self, user, password=None, timeout=60, command="true", tty=False):
        """`ssh … user@127.0.0.1 <command>` as root (`command`: one shell line, run by the
        user's login shell); with `password`, through sshpass (which gives ssh a terminal
        and types the password at the prompt); without, in a new session with no terminal,
        so any prompt fails the login. `tty`: `ssh -tt`, the command runs on a remote pty
        (its output, stdout and stderr merged, with CR LF line ends, on ssh's stdout); ssh's
        own stdin is always /dev/null."""
        cmd = ["ssh", "-p", str(self.port), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
               "-o", "PreferredAuthentications=keyboard-interactive", "-o", "NumberOfPasswordPrompts=1",
               "-o", "ConnectTimeout=10"] + (["-tt"] if tty else []) + ["%s@127.0.0.1" % user.name, command]
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.dir), "LANG": "C.UTF-8"}
        if password is not None:
            env["SSHPASS"] = password  # sshpass -e: the password is not on a command line
            cmd = ["sshpass", "-e", "-P", "assword"] + cmd
        return run(cmd, env=env, stdin=subprocess.DEVNULL, timeout=timeout, start_new_session=True)
