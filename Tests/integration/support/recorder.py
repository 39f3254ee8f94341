"""A TLS forwarding proxy that records what the module sent: it stands between the module
and the real fingerauthd, so a test can look at the exact JWT that reached the server."""

import http.server
import json
import ssl
import urllib.error
import urllib.request

from support.fakeauth import TLSServer


class RecordingProxy(TLSServer):
    def __init__(self, upstream, ca):
        self.upstream = upstream
        self.requests = []
        upstream_context = ssl.create_default_context(cafile=ca.ca_cert)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(min(length, 1 << 20))
                proxy.requests.append((self.path, json.loads(body)))
                request = urllib.request.Request(proxy.upstream + self.path, data=body, method="POST",
                                                 headers={"Content-Type": "application/json"})
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

            def log_message(self, *args):
                pass

        TLSServer.__init__(self, Handler, ca.server_cert, ca.server_key)
