"""The user's workstation `ws-alice` beside the server on this one machine: a configuration
of its own (host_id ws-alice, its own state, token and virtual reader; the same
fingerauthd), the user's finger enrolled there (which registers the device key under
ws-alice), and the real `fingerauth-watcher` watching for the user. The workstation's
desktop is a private bus with small fakes (support.fake_desktop): logind says the user is
at seat0, active and unlocked; the notification daemon records what was shown and lets the
test answer "Not me".

    ws = Workstation(install, user, folder).start()
    ws.touch("finger-right")         # the next verify the watcher arms gets this finger
    ... ws.notifications() ... ws.not_me() ...
    ws.close()                       # the watcher, the desktop, the reader: stopped
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from support.approvals import wait_until
from support.fake_desktop import Desktop, session
from support.vreader import VirtualReader, enroll_commands, scan_commands

NAME = "ws-alice"


class Workstation:
    def __init__(self, install, user, folder):
        self.install = install
        self.user = user
        self.dir = Path(folder)
        self.dir.mkdir(mode=0o700)
        (self.dir / "reader").mkdir(mode=0o700)
        self.reader = VirtualReader(self.dir / "reader" / "virtual.sock")
        self.conf = self.dir / "fingerauth.conf"
        self.token = self.dir / "fingerauth.token"
        self.log = self.dir / "watcher.log"
        # Not under the test's folders (0700): the notifier, as the user, must reach the bus.
        self.desktop_dir = tempfile.mkdtemp(prefix="fa-e2e-desk.")
        os.chmod(self.desktop_dir, 0o755)
        self.desktop = Desktop(os.path.join(self.desktop_dir, "bus"))
        self.watcher = None

    def start(self):
        self.desktop.start()
        self.desktop.set_sessions([session(self.user.name, self.user.uid)])
        self.token.write_text(self.install.authd.create_token(NAME) + "\n")
        os.chmod(self.token, 0o600)
        settings = {}
        for line in self.install.conf.read_text().splitlines():
            if " = " in line and not line.startswith("#"):
                key, value = line.split(" = ", 1)
                settings[key] = value
        settings.update({
            "host_id": NAME, "state_dir": str(self.dir / "state"), "virtual_reader": self.reader.path,
            "token_file": str(self.token), "system_bus": self.desktop.socket,
            "debug_file": str(self.dir / "module.log"),
        })
        self.conf.write_text("".join("%s = %s\n" % kv for kv in settings.items()))
        self.reader.feed(enroll_commands("finger-right"), timeout=60)
        try:
            enrolled = subprocess.run(
                [str(self.install.build / "fingerauth"), "enroll", "--user", self.user.name, "--finger",
                 "right-index-finger", "--config", str(self.conf)],
                env=self.install.env, capture_output=True, text=True, timeout=60)
        finally:
            self.reader.wait(timeout=60)
        assert enrolled.returncode == 0, enrolled.stdout + enrolled.stderr
        with open(self.log, "ab") as log:
            self.watcher = subprocess.Popen(
                [str(self.install.build / "fingerauth-watcher"), "--config", str(self.conf), "--session-bus",
                 self.desktop.socket, "--seats-every", "1", "--park", "2", "--retry", "2"],
                env=self.install.env, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
        assert wait_until(lambda: "watching approvals for %s" % self.user.name in self.log_text(), 20), \
            self.log_text()
        return self

    def log_text(self):
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def touch(self, identity="finger-right", timeout=60):
        """The finger the next armed verify gets (fed in the background)."""
        self.reader.feed(scan_commands(identity), timeout=timeout)

    def touched(self, timeout=60):
        self.reader.wait(timeout=timeout)

    def notifications(self):
        return self.desktop.notifications()

    def shown(self, timeout=30):
        """The first notification, once shown."""
        assert wait_until(lambda: self.notifications(), timeout), self.log_text()
        return self.notifications()[0]

    def not_me(self, timeout=30):
        note = self.shown(timeout)
        self.desktop.invoke(note["id"], "not-me")
        return note

    def close(self):
        if self.watcher is not None and self.watcher.poll() is None:
            self.watcher.terminate()
            try:
                self.watcher.wait(10)
            except subprocess.TimeoutExpired:
                self.watcher.kill()
                self.watcher.wait(10)
        try:
            self.reader.wait(timeout=1)
        except Exception:
            pass
        self.desktop.close()
        shutil.rmtree(self.desktop_dir, ignore_errors=True)
        text = self.log_text()
        assert "eyJ" not in text and "Fatal error" not in text, text
