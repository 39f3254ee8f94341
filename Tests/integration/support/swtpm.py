"""A throwaway software TPM (swtpm) for a test, with an EK certificate from swtpm's local CA.

    with SoftwareTPM() as tpm:
        tpm.tcti                      # "swtpm:host=127.0.0.1,port=PORT" (for key_store = tpm)
        tpm.tools("tpm2_getcap", "properties-fixed")   # tpm2-tools against this TPM
        tpm.ek_certificate_der()      # the EK certificate swtpm_setup wrote into NV
        tpm.clear()                   # tpm2_clear: every key made before is gone
        tpm.stop(); tpm.start()       # same state, same port

`ek_ca_bundle()` is swtpm's local CA (root and issuing certificate) as one PEM file: the
only EK CA the tests trust. Two `SoftwareTPM`s are two machines: a key made in one is
useless in the other. `close()` (the context manager calls it, also when the test fails)
stops swtpm by the PID in its pid file and removes the folder.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

__all__ = ["SoftwareTPM", "available", "ek_ca_bundle", "LOCAL_CA_DIR"]

LOCAL_CA_DIR = "/var/lib/swtpm-localca"


def available():
    """True when swtpm, swtpm_setup and tpm2-tools are installed."""
    return all(shutil.which(tool) for tool in ("swtpm", "swtpm_setup", "tpm2_getekcertificate"))


def ek_ca_bundle(path):
    """Writes swtpm's local CA (root, then issuer) to `path` as one PEM bundle; returns `path`.

    The CA is created by the first `swtpm_setup --create-ek-cert` on this machine, so call
    this after a SoftwareTPM has been set up.
    """
    parts = []
    for name in ("swtpm-localca-rootca-cert.pem", "issuercert.pem"):
        with open(os.path.join(LOCAL_CA_DIR, name)) as f:
            parts.append(f.read().strip() + "\n")
    with open(path, "w") as f:
        f.write("".join(parts))
    return path


def _free_port_pair():
    """Two consecutive free loopback ports (server, control)."""
    for _ in range(64):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port >= 65535:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two consecutive free loopback ports")


class SoftwareTPM:
    """One swtpm in a temporary folder, manufactured with an EK certificate, on loopback TCP."""

    def __init__(self):
        if not available():
            raise RuntimeError("swtpm is not installed (apt-get install swtpm swtpm-tools tpm2-tools)")
        self.dir = tempfile.mkdtemp(prefix="fa-swtpm-")
        self.state = os.path.join(self.dir, "state")
        self.pidfile = os.path.join(self.dir, "swtpm.pid")
        self.logfile = os.path.join(self.dir, "swtpm.log")
        os.makedirs(self.state)
        self.port = _free_port_pair()
        self.tcti = "swtpm:host=127.0.0.1,port=%d" % self.port
        self.running = False

    def __enter__(self):
        try:
            self.manufacture()
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def manufacture(self):
        """swtpm_setup: a fresh TPM state with an EK certificate (and a platform certificate)."""
        subprocess.run(["swtpm_setup", "--tpm2", "--tpmstate", self.state, "--create-ek-cert",
                        "--create-platform-cert", "--lock-nvram", "--overwrite"],
                       capture_output=True, text=True, timeout=60, check=True)

    def start(self):
        """Starts swtpm on its port and waits until it answers a command."""
        subprocess.run(["swtpm", "socket", "--tpm2", "--tpmstate", "dir=" + self.state,
                        "--server", "type=tcp,port=%d,bindaddr=127.0.0.1" % self.port,
                        "--ctrl", "type=tcp,port=%d,bindaddr=127.0.0.1" % (self.port + 1),
                        "--flags", "not-need-init,startup-clear", "--daemon",
                        "--pid", "file=" + self.pidfile, "--log", "file=" + self.logfile],
                       capture_output=True, text=True, timeout=30, check=True)
        self.running = True
        deadline = time.monotonic() + 10
        while True:
            if self.tools("tpm2_getcap", "properties-fixed", check=False).returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("swtpm did not answer on port %d" % self.port)
            time.sleep(0.05)

    def pid(self):
        try:
            with open(self.pidfile) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def stop(self):
        """Stops swtpm by the PID in its pid file (never by name) and waits for it to go."""
        if not self.running:
            return
        self.running = False
        pid = self.pid()
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.02)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def env(self):
        """The environment for tpm2-tools and the tpm2 OpenSSL provider against this TPM."""
        env = dict(os.environ)
        env["TPM2TOOLS_TCTI"] = self.tcti
        env["TPM2OPENSSL_TCTI"] = self.tcti
        return env

    def tools(self, *args, check=True, timeout=60, cwd=None):
        """Runs one tpm2-tools command against this TPM; returns the CompletedProcess."""
        return subprocess.run(list(args), env=self.env(), capture_output=True, timeout=timeout,
                              check=check, cwd=cwd or self.dir)

    def ek_certificate_der(self):
        """The EK certificate (DER) that swtpm_setup stored in the TPM's NV index."""
        path = os.path.join(self.dir, "ek-cert.der")
        self.tools("tpm2_getekcertificate", "-o", path)
        with open(path, "rb") as f:
            return f.read()

    def clear(self):
        """tpm2_clear with the lockout authority: the storage hierarchy's seed changes."""
        self.tools("tpm2_clear", "-c", "p")
