"""fingerauthd answers nothing before it is on disk (issue 13): the commit's fdatasync of
SQLite's write-ahead log comes before the answer's bytes (seen with strace on the real
daemon), and a disk that fills up under a batch of concurrent logins answers every one of
them 503, none 200 — and loses none of their tokens. (The kill -9 test on both stores is
in test_authenticator_load.py.)"""

import concurrent.futures
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd, build_dir  # noqa: E402
from test_authenticator import HOST, DeviceKey, claims  # noqa: E402

pytestmark = pytest.mark.skipif(not os.access(os.path.join(build_dir(), "fingerauthd"), os.X_OK),
                                reason="no fingerauthd in %s" % build_dir())


def register(authd, user="alice"):
    key = DeviceKey()
    answer = authd.post_json("/v1/keys", {"user": user, "host": HOST, "jwk": key.jwk,
                                          "proof": key.proof(claims(sub=user))}, token=authd.create_token(HOST))
    assert answer.status == 201, answer
    return key


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_the_write_ahead_log_is_synced_before_the_answer_leaves(tmp_path):
    with Authd(tmp_path / "s") as authd:
        assert "commits: sqlite WAL synchronous=FULL" in authd.log_text()
        alice = register(authd)
        trace = tmp_path / "trace"
        tracer = subprocess.Popen(["strace", "-f", "-ttt", "-y", "-s", "200", "-o", str(trace), "-p", str(authd.pid),
                                   "-e", "trace=recvfrom,read,fdatasync,fsync,sendto,sendmsg,writev,write"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not (trace.exists() and trace.stat().st_size > 0):
                time.sleep(0.05)
            time.sleep(0.3)
            token = alice.sign(claims())
            answer = authd.post_json("/v1/login", {"jwt": token})
            assert answer.status == 200, answer
        finally:
            tracer.send_signal(signal.SIGINT)
            tracer.wait(timeout=10)
        lines = trace.read_text().splitlines()

        def first(pattern):
            for line in lines:
                if re.search(pattern, line):
                    return float(line.split()[1])
            raise AssertionError("no %r in the trace:\n%s" % (pattern, "\n".join(lines[-40:])))
        received = first(r"(recvfrom|read)\(\d+<(TCP|socket).*\\\"jwt\\\"")
        synced = [float(l.split()[1]) for l in lines if re.search(r"f(data)?sync\(\d+<[^>]*authd\.db-wal>\) += 0", l)]
        answered = first(r"(sendto|sendmsg|writev|write)\(\d+<(TCP|socket).*\\\"ok\\\":true")
        assert any(received < t < answered for t in synced), \
            "no fdatasync of the WAL between the request and its answer:\n%s" % "\n".join(lines[-40:])
        print("\nrequest read at +0, WAL synced at +%.3f ms, answer sent at +%.3f ms"
              % ((min(t for t in synced if t > received) - received) * 1000, (answered - received) * 1000))


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("nsenter") is None,
                    reason="needs root, unshare(1) and nsenter(1) for a small tmpfs in a mount namespace of its own")
def test_a_disk_that_fills_under_a_batch_answers_every_request_503_and_none_200(tmp_path):
    """The database on a 2 MiB tmpfs mounted in a mount namespace of the daemon's own (the
    machine's mounts stay untouched); a filler file takes all but a little of it. Logins
    go on until a commit cannot grow the write-ahead log: from then on every answer is
    503 and none 200; the tokens refused so are not used up, and are accepted once the
    filler is gone."""
    mount = "/tmp/fa-full-%d" % os.getpid()
    wrapper = tmp_path / "fingerauthd-on-a-small-disk"
    wrapper.write_text("#!/bin/sh\n"
                       "exec unshare --mount --propagation private sh -c "
                       "'mkdir -p %s && mount -t tmpfs -o size=2m,mode=0700 fa-full %s && exec \"$0\" \"$@\"' %s \"$@\"\n"
                       % (mount, mount, os.path.join(build_dir(), "fingerauthd")))
    wrapper.chmod(0o755)
    authd = Authd(tmp_path / "full", db=mount + "/authd.db", args=("--user-failures", "0", "--address-failures", "0"))
    authd.binary = str(wrapper)
    try:
        authd.start()
        # Admin commands run in the daemon's mount namespace (SQLite refuses a path through
        # the /proc/PID/root link); this test reaches the tmpfs through that link.
        inside = "/proc/%d/root%s" % (authd.pid, mount)
        admin = tmp_path / "fingerauthd-in-its-namespace"
        admin.write_text("#!/bin/sh\nexec nsenter --target %d --mount -- %s \"$@\"\n"
                         % (authd.pid, os.path.join(build_dir(), "fingerauthd")))
        admin.chmod(0o755)
        authd.binary = str(admin)
        alice = register(authd)
        free = os.statvfs(inside)
        room = free.f_bavail * free.f_frsize
        with open(inside + "/filler", "wb") as filler:
            filler.write(b"\0" * max(0, room - 400 * 1024))

        def login(token):
            return authd.post_json("/v1/login", {"jwt": token}).status

        statuses, refused_tokens = [], []
        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            for _ in range(40):
                tokens = [alice.sign(claims()) for _ in range(16)]
                batch = list(pool.map(login, tokens))
                statuses.append(batch)
                refused_tokens += [t for t, s in zip(tokens, batch) if s == 503]
                if set(batch) == {503}:
                    break
        full_at = next((i for i, batch in enumerate(statuses) if 503 in batch), None)
        print("\nbatches of 16 concurrent logins until the disk was full: %s" % [sorted(set(b)) for b in statuses])
        assert full_at is not None, "the disk never filled"
        assert set(statuses[-1]) == {503}, "a full disk must answer every request 503"
        assert all(set(batch) <= {200, 503} for batch in statuses)
        log = authd.log_text()
        assert re.search(r"batch of \d+ requests not committed: .*(full|disk)", log), log[-2000:]
        assert "status=503 outcome=error reason=" in log
        # A login alone in flight is committed by its worker, not the writer: the full disk
        # answers it 503 all the same, and says so in the log.
        alone = alice.sign(claims())
        assert login(alone) == 503
        assert re.search(r"a lone request's write not committed: .*(full|disk)", authd.log_text()), \
            authd.log_text()[-2000:]
        refused_tokens.insert(0, alone)
        # Room again: the tokens that were answered 503 were not used up.
        os.unlink(inside + "/filler")
        assert [login(t) for t in refused_tokens[:8]] == [200] * min(8, len(refused_tokens))
    finally:
        authd.stop()
    assert authd.returncode == 0, authd.log_text()[-2000:]
