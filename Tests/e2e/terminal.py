"""A program run as a test user on a pseudo-terminal made by the test: the pty's slave is
its standard input, output and error and the controlling terminal of a session of its own
(`setsid --ctty`), as in a terminal window. `screen` is everything the program wrote."""

import os
import select
import subprocess
import time


class Terminal:
    def __init__(self, user, cmd, env=None, as_root=False):
        """`as_root`: the program runs as root (login), not as `user`."""
        self.master, slave = os.openpty()
        self.screen = ""
        clean = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/nonexistent", "USER": user.name,
                 "LOGNAME": user.name, "LANG": "C.UTF-8", "SHELL": "/bin/sh", "TERM": "dumb"}
        if as_root:
            full = ["setsid", "--ctty"] + list(cmd)
        else:
            full = ["setsid", "--ctty", "setpriv", "--reuid", str(user.uid), "--regid", str(user.gid), "--init-groups",
                    "--"] + list(cmd)
        try:
            self.proc = subprocess.Popen(full, stdin=slave, stdout=slave, stderr=slave, env=dict(clean, **(env or {})),
                                         close_fds=True)
        finally:
            os.close(slave)
        self.tty = None

    def _read(self, timeout):
        ready, _, _ = select.select([self.master], [], [], max(0.0, timeout))
        if not ready:
            return False
        try:
            data = os.read(self.master, 4096)
        except OSError:  # EIO: every slave descriptor is closed
            return None
        if not data:
            return None
        self.screen += data.decode("utf-8", "replace")
        return True

    def wait_for(self, text, timeout=20):
        """Reads until `text` has appeared `count` times in all; False when it did not in time."""
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            left = deadline - time.monotonic()
            if left <= 0 or self._read(left) is None:
                return text in self.screen
        return True

    def type(self, text):
        os.write(self.master, text.encode())

    def finish(self, timeout=30):
        """Reads until the program ends (killed after `timeout`); returns its exit status."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        if self.proc.poll() is None:
            self.proc.kill()
        status = self.proc.wait(timeout=10)
        while self._read(0.05):
            pass
        return status

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        try:
            os.close(self.master)
        except OSError:
            pass
