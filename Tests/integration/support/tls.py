"""A throw-away certificate authority made with the `openssl` command line at test time.

    ca = make_ca(tmpdir)
    ca.ca_cert      # PEM of the CA, for clients (ssl cafile, curl --cacert, cafile=)
    ca.server_cert  # server certificate for 127.0.0.1 (IP SAN) and localhost (DNS SAN)
    ca.server_key   # its private key, mode 0600

Keys are ECDSA P-256 (what `fingerauthd init` generates and the docs recommend) unless
asked for RSA: `make_ca(tmpdir, server_key="rsa:2048", ca_key="rsa:2048")`.
"""

import os
import re
import socket
import ssl
import subprocess

__all__ = ["TestCA", "make_ca"]


class TestCA:
    """Paths (str) of the files `make_ca` wrote."""

    __test__ = False  # not a pytest test class

    def __init__(self, directory, ca_cert, ca_key, server_cert, server_key):
        self.directory = directory
        self.ca_cert = ca_cert
        self.ca_key = ca_key
        self.server_cert = server_cert
        self.server_key = server_key

    def ssl_context(self):
        """A client context that trusts only this CA and checks the host name."""
        import ssl
        context = ssl.create_default_context(cafile=self.ca_cert)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return context


def _openssl(*args, cwd):
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError("openssl %s failed: %s" % (args[0], result.stderr.strip()))


def _newkey(kind):
    """`openssl req -newkey` arguments for `ec` (P-256) or `rsa:BITS`."""
    if kind == "ec":
        return ["ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    if re.fullmatch(r"rsa:\d+", kind):
        return [kind]
    raise ValueError("key type %r: use 'ec' or 'rsa:BITS'" % kind)


def make_ca(directory, server_key="ec", ca_key="ec"):
    """Create a CA and a server certificate signed by it inside `directory`; each key is
    `ec` (P-256) or `rsa:BITS`."""
    directory = str(directory)
    os.makedirs(directory, exist_ok=True)
    path = lambda name: os.path.join(directory, name)  # noqa: E731
    old_umask = os.umask(0o077)  # keys are born private
    try:
        _openssl("req", "-x509", "-newkey", *_newkey(ca_key), "-nodes", "-sha256", "-days", "2",
                 "-keyout", path("ca.key"), "-out", path("ca.pem"),
                 "-subj", "/CN=FingerAuth Test CA",
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=directory)
        _openssl("req", "-newkey", *_newkey(server_key), "-nodes", "-sha256",
                 "-keyout", path("server.key"), "-out", path("server.csr"),
                 "-subj", "/CN=localhost", cwd=directory)
        with open(path("server.ext"), "w") as ext:
            # keyEncipherment (static RSA key exchange) means nothing for an EC key.
            usage = "digitalSignature" if server_key == "ec" else "digitalSignature,keyEncipherment"
            ext.write("basicConstraints=critical,CA:FALSE\n"
                      "keyUsage=critical,%s\n" % usage +
                      "extendedKeyUsage=serverAuth\n"
                      "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        _openssl("x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"),
                 "-CAkey", path("ca.key"), "-CAcreateserial", "-sha256", "-days", "2",
                 "-extfile", path("server.ext"), "-out", path("server.pem"), cwd=directory)
    finally:
        os.umask(old_umask)
    os.chmod(path("server.key"), 0o600)
    os.chmod(path("ca.key"), 0o600)
    for public in ("ca.pem", "server.pem"):
        os.chmod(path(public), 0o644)
    return TestCA(directory, path("ca.pem"), path("ca.key"), path("server.pem"), path("server.key"))


def https_status(port, path, cafile):
    """The status line of `GET path` on https://127.0.0.1:port, trusting only `cafile`."""
    context = ssl.create_default_context(cafile=str(cafile))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n" % (path, port)).encode())
            answer = b""
            while chunk := tls.recv(4096):
                answer += chunk
    return answer.split(b"\r\n", 1)[0].decode()
