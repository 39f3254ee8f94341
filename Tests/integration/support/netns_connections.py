"""Runs inside a network namespace of its own (`unshare --net --map-root-user`), where a
test may give the loopback interface addresses of a documentation prefix without touching
the machine: several IPv6 addresses of one /64 (2001:db8:1::/64) and one of another
(2001:db8:2::1). Starts the real fingerauthd on [::1] with `--max-connections-per-address
2` and connects from those addresses; prints what it saw as one JSON line. The namespace,
its addresses and the daemon are gone when the script ends.

    python3 netns_connections.py FINGERAUTHD WORKDIR
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

binary, workdir = sys.argv[1], sys.argv[2]
NET, OTHER = "2001:db8:1::", "2001:db8:2::1"


def sh(*args):
    subprocess.run(args, check=True, capture_output=True)


sh("ip", "link", "set", "lo", "up")
for address in [NET + str(i) for i in range(1, 5)] + [OTHER]:
    sh("ip", "-6", "addr", "add", address + "/64", "dev", "lo", "nodad")

stderr = open(os.path.join(workdir, "authd.stderr"), "wb")
daemon = subprocess.Popen([binary, "serve", "--listen", "[::1]:0", "--db", os.path.join(workdir, "authd.db"),
                           "--audience", "netns", "--max-connections-per-address", "2", "--connection-rate", "0"],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr)
try:
    line = daemon.stdout.readline().decode()
    assert line.startswith("listening on "), line
    port = int(line.strip().rsplit(":", 1)[1])

    def connect(source):
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.settimeout(5)
        s.bind((source, 0))
        s.connect(("::1", port))
        return s

    def answers(s, path="/healthz"):
        """The first line of the answer to a GET on `s`, or "closed"."""
        try:
            s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: netns\r\n\r\n")
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            return data.split(b"\r\n", 1)[0].decode() if data else "closed"
        except OSError:
            return "closed"

    result = {}
    held = [connect(NET + "1"), connect(NET + "2")]
    time.sleep(0.2)
    result["held"] = [answers(s) for s in held]
    third, elsewhere = connect(NET + "3"), connect(OTHER)
    result["third_of_the_64"] = answers(third)
    result["another_64"] = answers(elsewhere)
    held[0].close()
    time.sleep(0.3)
    result["after_one_closed"] = answers(connect(NET + "4"))
    metrics = connect("::1")
    metrics.sendall(b"GET /metrics HTTP/1.1\r\nHost: netns\r\nConnection: close\r\n\r\n")
    text = b""
    while True:
        chunk = metrics.recv(65536)
        if not chunk:
            break
        text += chunk
    result["metrics"] = [line for line in text.decode().splitlines() if line.startswith("fingerauthd_connections_refused_total")]
finally:
    daemon.send_signal(signal.SIGTERM)
    try:
        daemon.wait(timeout=10)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()
    stderr.close()
print(json.dumps(result))
