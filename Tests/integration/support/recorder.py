"""A TLS forwarding proxy that records what the module sent: it stands between the module
and the real fingerauthd, so a test can look at the exact JWT that reached the server, and
at every request as it arrived (method, path, headers, body)."""

import http.server
import json
import ssl
import urllib.error
import urllib.request

from support.fakeauth import TLSServer


class RecordingProxy(TLSServer):
    def __init__(self, upstream, ca):
        self.upstream = upstream
        self.requests = []  # (path, parsed JSON body) of each POST
        self.seen = []      # (method, path, {lower-case header: value}, body bytes) of every request
        upstream_context = ssl.create_default_context(cafile=ca.ca_cert)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep the connection, as fingerauthd does

            def forward(self, body):
                proxy.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                headers = {"Content-Type": "application/json"} if self.command == "POST" else {}
                request = urllib.request.Request(proxy.upstream + self.path, data=body if self.command == "POST" else None,
                                                 method=self.command, headers=headers)
                try:
                    with urllib.request.urlopen(request, context=upstream_context, timeout=5) as answer:
                        status, data = answer.status, answer.read()
                except urllib.error.HTTPError as error:
                    status, data = error.code, error.read()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self.forward(b"")

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(min(length, 1 << 20))
                proxy.requests.append((self.path, json.loads(body)))
                self.forward(body)

            def log_message(self, *args):
                pass

        TLSServer.__init__(self, Handler, ca.server_cert, ca.server_key)
