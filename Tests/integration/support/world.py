"""A FingerAuth installation in a temporary folder, driven through the real programs:
the built `fingerauth` CLI and `fingerauth-login`, real libpam (pam_start_confdir through
`fa-pamtest`), libfprint's virtual reader, and a real `fingerauthd` over TLS.

Users come from nss_wrapper (a passwd file of the test's own), so nothing on the machine
changes; the password fall-over is pam_wrapper's pam_matrix."""

import os
import re
import subprocess
from pathlib import Path

from support.authd import Authd, build_dir
from support.vreader import VirtualReader, enroll_commands, scan_commands

NSS_WRAPPER = "/usr/lib/x86_64-linux-gnu/libnss_wrapper.so"
PAM_MATRIX = "/usr/lib/x86_64-linux-gnu/pam_wrapper/pam_matrix.so"
AUDIENCE = "fingerauth-test"
HOST_ID = "testhost"

USERS = {"alice": 5001, "bob": 5002, "carol": 5003}

# A stand-in login helper that matches and reports the authenticator's yes for the token the
# module asked for (its jti, read from the request on stdin): the module's side alone.
ACCEPTING_HELPER = ("jti=$(sed -n 's/^jti=//p')\n"
                    "echo 'READY fake reader'\necho 'MATCH right-index-finger'\necho \"ACCEPTED $jti fake-kid\"")
PASSWORDS = {name: name + "-password" for name in USERS}


class Login:
    """What one PAM transaction showed the user, and the code it returned."""

    def __init__(self, stdout):
        self.stdout = stdout
        self.infos, self.errors, self.prompts = [], [], []
        self.code, self.name = None, None
        for line in stdout.splitlines():
            kind, _, text = line.partition(" ")
            if kind == "INFO":
                self.infos.append(text)
            elif kind == "ERROR":
                self.errors.append(text)
            elif kind == "PROMPT":
                self.prompts.append(text)
            elif kind == "RESULT":
                fields = text.split()
                self.code, self.name = int(fields[0]), fields[1]
                self.seconds = int(fields[2]) / 1e6 if len(fields) > 2 else None

    def __repr__(self):
        return "Login(%s, infos=%r, errors=%r, prompts=%r)" % (self.name, self.infos, self.errors, self.prompts)


class World:
    def __init__(self, tmp, ca):
        self.tmp = Path(tmp)
        os.chmod(self.tmp, 0o755)
        self.ca = ca
        self.build = Path(build_dir())
        self.state = self.tmp / "state"
        self.reader = VirtualReader(self.tmp / "reader" / "virtual.sock")
        (self.tmp / "reader").mkdir(mode=0o700)
        self.confdir = self.tmp / "pam.d"
        self.confdir.mkdir()
        self.conf_path = self.tmp / "fingerauth.conf"
        self.token_path = self.tmp / "fingerauth.token"
        self.module_log = self.tmp / "module.log"
        self.authd = None
        self._write_users()
        self.settings = {
            "audience": AUDIENCE,
            "host_id": HOST_ID,
            "cafile": ca.ca_cert,
            "state_dir": str(self.state),
            "login_helper": str(self.build / "fingerauth-login"),
            "pam_helper": str(self.build / "fingerauth-pam"),
            "virtual_reader": self.reader.path,
            "token_file": str(self.token_path),
            "timeout": "5",
            "debug_file": str(self.module_log),
            # Each user's failed attempts (default /run/fingerauth/attempts): in the test's
            # folder, so that no test sees another's count.
            "attempts_dir": str(self.tmp / "attempts"),
        }

    # -- the machine -------------------------------------------------------------------

    def _write_users(self):
        passwd = self.tmp / "passwd"
        passwd.write_text("root:x:0:0:root:/root:/bin/bash\n" + "".join(
            "%s:x:%d:%d:%s:/nonexistent:/bin/sh\n" % (n, uid, uid, n) for n, uid in USERS.items()))
        group = self.tmp / "group"
        group.write_text("root:x:0:\n" + "".join("%s:x:%d:\n" % (n, uid) for n, uid in USERS.items()))
        passdb = self.tmp / "passdb"
        passdb.write_text("".join("%s:%s:fa-test\n" % (n, p) for n, p in PASSWORDS.items()))
        os.chmod(passdb, 0o600)
        self.env = dict(os.environ)
        for name in ("FP_VIRTUAL_DEVICE", "FP_VIRTUAL_IMAGE", "http_proxy", "https_proxy"):
            self.env.pop(name, None)
        self.env.update({
            "LD_PRELOAD": NSS_WRAPPER,
            "NSS_WRAPPER_PASSWD": str(passwd),
            "NSS_WRAPPER_GROUP": str(group),
        })

    def start_authenticator(self, args=()):
        """Starts fingerauthd (`args`: extra `serve` flags) and points the configuration at it."""
        self.authd = Authd(str(self.tmp / "authd"), audience=AUDIENCE, tls=self.ca, args=args)
        self.authd.start()
        self.settings["url"] = self.authd.url + "/v1/login"
        self.token_path.write_text(self.authd.create_token(HOST_ID) + "\n")
        os.chmod(self.token_path, 0o600)
        self.write_conf()

    def write_conf(self, **changes):
        """Writes fingerauth.conf from the settings; a value of None removes a key."""
        for key, value in changes.items():
            if value is None:
                self.settings.pop(key, None)
            else:
                self.settings[key] = value
        self.conf_path.write_text("# FingerAuth configuration, generated for this run\n" + "".join(
            "%s = %s\n" % item for item in self.settings.items()))
        os.chmod(self.conf_path, 0o644)

    def fake_helper(self, script, name="fake-scan"):
        """Configures a stand-in login helper (a shell script, root 0755) for fault tests."""
        path = self.tmp / name
        path.write_text("#!/bin/sh\n" + script + "\n")
        os.chmod(path, 0o755)
        self.write_conf(login_helper=str(path))
        return path

    def paths(self, user):
        """The user's state files: (user dir, prints dir, device key)."""
        user_dir = self.state / "users" / user
        return user_dir, user_dir / "prints", user_dir / "device.key"

    def service(self, name="fa-test", module_args="", fallback=True):
        """A PAM service: the module `sufficient`, then the password (`fallback`); or the
        module alone, `[default=done]`, so that pam_authenticate returns its own code."""
        module = "%s conf=%s %s" % (self.build / "pam_fingerauth.so", self.conf_path, module_args)
        if fallback:
            lines = ["auth sufficient " + module, "auth required %s passdb=%s" % (PAM_MATRIX, self.tmp / "passdb")]
        else:
            lines = ["auth [default=done] " + module]
        (self.confdir / name).write_text("\n".join(lines) + "\n")
        return name

    def close(self):
        try:
            self.reader.wait(timeout=1)
        except Exception:
            pass
        if self.authd is not None:
            self.authd.stop()

    # -- the programs ------------------------------------------------------------------

    def cli(self, *args, feed=None, timeout=60):
        """Runs the built `fingerauth` with this world's configuration."""
        if feed is not None:
            self.reader.feed(feed, timeout=timeout)
        try:
            return subprocess.run([str(self.build / "fingerauth"), *args, "--config", str(self.conf_path)],
                                  env=self.env, capture_output=True, text=True, timeout=timeout)
        finally:
            if feed is not None:
                self.reader.wait(timeout=timeout)

    def enroll(self, user, identity, finger="right-index-finger", register=True):
        args = ["enroll", "--user", user, "--finger", finger] + ([] if register else ["--no-register"])
        done = self.cli(*args, feed=enroll_commands(identity))
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    def kid(self, user):
        done = self.cli("key", "show", "--user", user, "--json")
        assert done.returncode == 0, done.stderr
        return re.search(r'"kid":"([^"]+)"', done.stdout).group(1)

    def login(self, user, scans=(), password=None, service="fa-test", rhost=None, timeout=30, env=None,
              commands=None, as_uid=None, tty=None, wrap=(), ruser=None):
        """One pam_authenticate through real libpam; `scans` are the fingers put on the
        virtual reader, one per verify attempt. `as_uid` runs the PAM host as that
        unprivileged uid (setpriv), as a screen locker runs. `wrap`: a command prefix that
        executes the PAM host in its place (support.private_run)."""
        if not (self.confdir / service).exists():
            self.service(service)
        feed = list(commands) if commands is not None else scan_commands(*scans) if scans else []
        if feed:
            self.reader.feed(feed, timeout=timeout)
        cmd = [str(self.build / "fa-pamtest"), "--timing", "--confdir", str(self.confdir), "--service", service,
               "--user", user]
        if password is not None:
            cmd += ["--password", password]
        if rhost is not None:
            cmd += ["--rhost", rhost]
        if tty is not None:
            cmd += ["--tty", tty]
        if ruser is not None:
            cmd += ["--ruser", ruser]
        if as_uid is not None:
            cmd = ["setpriv", "--reuid", str(as_uid), "--regid", str(as_uid), "--clear-groups", "--"] + cmd
        cmd = list(wrap) + cmd
        try:
            done = subprocess.run(cmd, env=dict(self.env, **(env or {})), capture_output=True, text=True,
                                  timeout=timeout)
        finally:
            if feed:
                self.reader.wait(timeout=timeout)
        assert "RESULT" in done.stdout, done.stdout + done.stderr
        return Login(done.stdout)

    def log_lines(self):
        return self.module_log.read_text().splitlines() if self.module_log.exists() else []
