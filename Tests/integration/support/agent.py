"""The built `fingerauth-agent`, started by hand (no systemd here) on a socket in the test's
folder, with the world's configuration and users (nss_wrapper), its log lines (syslog copied
to stderr with --stderr) in a file. Stopped by its pid."""

import os
import signal
import socket
import subprocess
import time
from pathlib import Path


class Agent:
    def __init__(self, world):
        self.world = world
        self.dir = world.tmp / "agent"
        self.dir.mkdir(mode=0o755, exist_ok=True)
        self.socket = self.dir / "agent.sock"
        self.log_path = self.dir / "agent.log"
        self.process = None
        world.write_conf(agent_socket=str(self.socket))

    def start(self):
        self.log_file = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [str(self.world.build / "fingerauth-agent"), "--config", str(self.world.conf_path), "--stderr"],
            env=self.world.env, stdout=subprocess.DEVNULL, stderr=self.log_file)
        deadline = time.monotonic() + 10
        while "listening on" not in self.log_text():
            assert self.process.poll() is None, self.log_text()
            assert time.monotonic() < deadline, "agent did not start: " + self.log_text()
            time.sleep(0.02)
        return self

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def log_text(self):
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_lines(self):
        return [line for line in self.log_text().splitlines() if "fingerauth-agent" in line]

    def wait_for_log(self, needle, timeout=5.0):
        deadline = time.monotonic() + timeout
        while True:
            lines = [line for line in self.log_lines() if needle in line]
            if lines:
                return lines[-1]
            assert time.monotonic() < deadline, "no agent log line with %r in:\n%s" % (needle, self.log_text())
            time.sleep(0.02)

    def raw(self, data=b"", as_uid=None, timeout=10.0, shut=False):
        """A raw client: connects (as `as_uid` via setpriv and a tiny Python client when set),
        sends `data`, returns (everything the agent answered, seconds until it closed)."""
        if as_uid is not None:
            code = ("import socket,sys,time\n"
                    "s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1]);s.settimeout(%r)\n"
                    "t=time.monotonic()\n"
                    "try:\n s.sendall(sys.stdin.buffer.read())\nexcept OSError: pass\n"
                    "%s"
                    "out=b''\n"
                    "try:\n while True:\n  c=s.recv(65536)\n  if not c: break\n  out+=c\n"
                    "except OSError: pass\n"
                    "sys.stdout.buffer.write(out);sys.stderr.write('%%.3f'%%(time.monotonic()-t))\n") % (
                        timeout, "s.shutdown(socket.SHUT_WR)\n" if shut else "")
            done = subprocess.run(["setpriv", "--reuid", str(as_uid), "--regid", str(as_uid), "--clear-groups", "--",
                                   "/usr/bin/python3", "-c", code, str(self.socket)], input=data,
                                  capture_output=True, timeout=timeout + 5)
            return done.stdout.decode("ascii", "replace"), float(done.stderr.decode().strip().splitlines()[-1])
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(str(self.socket))
            s.settimeout(timeout)
            started = time.monotonic()
            try:
                s.sendall(data)
            except OSError:
                pass
            if shut:
                s.shutdown(socket.SHUT_WR)
            out = b""
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    out += chunk
            except OSError:
                pass
            return out.decode("ascii", "replace"), time.monotonic() - started
