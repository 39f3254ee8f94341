"""A TLS forwarding proxy that records what the module sent: it stands between the module
and the real fingerauthd, so a test can look at the exact JWT that reached the server."""

import http.server
import json
import ssl
import threading
import urllib.error
import urllib.request


class RecordingProxy:
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

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(ca.server_cert, ca.server_key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = "https://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
