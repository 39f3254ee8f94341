"""A stand-in authenticator over real TLS for the module's fault tests: it answers with
the status, body, delay or redirect a test asks for, and can stay silent. Only for the
module's error paths — the real fingerauthd is used everywhere else."""

import base64
import http.server
import json
import os
import socket
import ssl
import subprocess
import threading
import time


def _segment(text):
    return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def _claims(body):
    """The posted token's claims, with its header's `kid` as `_kid` (an answer must echo it)."""
    header, payload = json.loads(body)["jwt"].split(".")[:2]
    claims = _segment(payload)
    claims["_kid"] = _segment(header).get("kid")
    return claims


class TLSServer:
    """An HTTPS server on a loopback port (a free one unless `port`), serving in a thread
    while in a `with`; plain HTTP when `cert` is None."""

    def __init__(self, handler, cert, key, port=0):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        if cert is None:
            self.url = "http://127.0.0.1:%d" % self.port
        else:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.url = "https://127.0.0.1:%d" % self.port
        # shutdown() waits for serve_forever's next poll: 0.5 s by default.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


class FakeAuthenticator(TLSServer):
    """`behaviour(claims) -> (status, headers, body_bytes)`, optionally after `delay` s."""

    def __init__(self, cert, key, behaviour, delay=0.0, get_status=None):
        self.behaviour = behaviour
        self.delay = delay
        self.requests = 0
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                # The login helper's warm-up request; 501 (BaseHTTPRequestHandler's own
                # answer to an unknown method) unless the test asks for another status.
                self.send_response(get_status or 501)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self):
                fake.requests += 1
                length = int(self.headers.get("Content-Length", "0"))
                claims = _claims(self.rfile.read(min(length, 1 << 16)))
                if fake.delay:
                    time.sleep(fake.delay)
                status, headers, body = fake.behaviour(claims)
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        TLSServer.__init__(self, Handler, cert, key)


def answer(status, document=None, raw=None, headers=None):
    """A behaviour that always gives `status` with a JSON `document` (or `raw` bytes)."""
    body = raw if raw is not None else json.dumps(document or {}).encode()
    return lambda claims: (status, dict({"Content-Type": "application/json"}, **(headers or {})), body)


def accept_as(sub=None):
    """200 ok for the token's own jti and kid, and `sub` (default: the token's own subject)."""
    return lambda claims: (200, {"Content-Type": "application/json"},
                           json.dumps({"ok": True, "sub": sub or claims["sub"], "jti": claims["jti"],
                                       "kid": claims["_kid"]}).encode())


class SilentServer:
    """A TCP port that accepts connections and never says a word."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "https://127.0.0.1:%d" % self.sock.getsockname()[1]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()


def closed_port_url():
    """An https URL to a loopback port where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return "https://127.0.0.1:%d" % port


def issue_server_cert(ca, directory, subject_alt_name):
    """A server certificate signed by `ca` for `subject_alt_name` (e.g. DNS:wrong.example)."""
    os.makedirs(directory, exist_ok=True)
    key, csr, ext, pem = (os.path.join(directory, n) for n in ("s.key", "s.csr", "s.ext", "s.pem"))
    run = lambda *a: subprocess.run(["openssl", *a], check=True, capture_output=True, timeout=60)  # noqa: E731
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=wrong")
    with open(ext, "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=%s\n" % subject_alt_name)
    run("x509", "-req", "-in", csr, "-CA", ca.ca_cert, "-CAkey", ca.ca_key, "-CAcreateserial",
        "-CAserial", os.path.join(directory, "ca.srl"), "-days", "2", "-extfile", ext, "-out", pem)
    return pem, key
