"""Runs a command in a private mount namespace whose /dev/log is a socket of ours, and
prints every syslog datagram the command sent, one JSON line each — so a test can read
exactly what pam_syslog wrote, with its facility and priority, without a syslog daemon
and without touching the machine's /dev.

    unshare --mount --propagation private python3 syslog_capture.py -- COMMAND...
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading


def main():
    command = sys.argv[sys.argv.index("--") + 1:]
    keep = tempfile.mkdtemp(prefix="fa-devlog.")
    old_dev = os.path.join(keep, "dev")
    os.mkdir(old_dev)
    subprocess.run(["mount", "--bind", "/dev", old_dev], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "fa-dev", "/dev"], check=True)
    for node in ("null", "zero", "random", "urandom", "full", "tty"):
        if os.path.exists(os.path.join(old_dev, node)):
            open(os.path.join("/dev", node), "w").close()
            subprocess.run(["mount", "--bind", os.path.join(old_dev, node), os.path.join("/dev", node)], check=True)
    for link, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, os.path.join("/dev", link))
    log = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    log.bind("/dev/log")
    os.chmod("/dev/log", 0o666)
    # Read while the command runs, as a syslog daemon would: a datagram socket queues only
    # net.unix.max_dgram_qlen messages (10 here), and a sender past that waits in syslog(3).
    messages = []
    reading = threading.Event()
    reading.set()

    def drain():
        log.settimeout(0.05)
        while True:
            try:
                messages.append(log.recv(65536).decode("utf-8", "replace"))
            except socket.timeout:
                if not reading.is_set():
                    return

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    finally:
        reading.clear()
        reader.join()
    print(json.dumps({"stdout": done.stdout, "stderr": done.stderr, "returncode": done.returncode,
                      "syslog": messages}))


if __name__ == "__main__":
    main()
