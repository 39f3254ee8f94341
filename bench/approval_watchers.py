"""Section 10's workstations: N long-poll watches (`GET /v1/approvals/watch`) held open at
once against one fingerauthd, one a user, in one asyncio process (started by
bench/sections/approval.py, ended by it). Each connection binds its own 127.0.0.0/8 source
address, `per_address` connections an address, so that fingerauthd's per-address limits
count as they would for a fleet of workstations.

Input: a JSON file (argv[1]): {"port", "cafile", "tokens": [watch token of user i],
"wait": the watch's S, "per_address", "net": "127.N"}. Like a real watcher, a watch that
answers is asked again at once, with `have` the id it was shown (or `-`).

Output lines on stdout: `OPEN n` once every watch is sent; `DELIVERED i t` when watch i is
answered with an approval (t: time.monotonic(), the clock the bench reads too); on stdin
`STATS` prints `STATS {json}` (answers, heartbeats, reconnects, errors), EOF ends it."""

import asyncio
import json
import resource
import ssl
import sys
import time

CONCURRENT_OPENS = 32  # handshakes in flight at once: fingerauthd's head-timeout counts from the accept


def source_address(net, index, per_address):
    slot = index // per_address
    return "%s.%d.%d" % (net, slot // 250, slot % 250 + 1)


class Watch:
    def __init__(self, index, token, config, context, stats, opened):
        self.index = index
        self.token = token
        self.config = config
        self.context = context
        self.stats = stats
        self.opened = opened
        self.have = "-"

    async def connect(self):
        source = source_address(self.config["net"], self.index, self.config["per_address"])
        return await asyncio.open_connection("127.0.0.1", self.config["port"], ssl=self.context,
                                             server_hostname="127.0.0.1", local_addr=(source, 0))

    def request(self):
        return ("GET /v1/approvals/watch?have=%s&wait=%d HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Authorization: Bearer %s\r\nConnection: keep-alive\r\n\r\n"
                % (self.have, self.config["wait"], self.token)).encode("ascii")

    async def run(self, gate):
        first = True
        while True:
            try:
                async with gate if first else _Nothing():
                    reader, writer = await self.connect()
                    writer.write(self.request())
                    await writer.drain()
                if first:
                    first = False
                    self.opened()
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = 0
                    status = int(head.split(b" ", 2)[1])
                    for line in head.split(b"\r\n"):
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":", 1)[1])
                    body = await reader.readexactly(length)
                    at = time.monotonic()
                    if status != 200:
                        self.stats["errors"] += 1
                        self.stats["last_error"] = "%d %s" % (status, body[:120].decode("utf-8", "replace"))
                        await asyncio.sleep(1)
                    else:
                        approvals = json.loads(body)["approvals"]
                        if approvals:
                            self.have = approvals[0]["id"]
                            self.stats["delivered"] += 1
                            sys.stdout.write("DELIVERED %d %.6f\n" % (self.index, at))
                            sys.stdout.flush()
                        else:
                            self.have = "-"
                            self.stats["heartbeats"] += 1
                    writer.write(self.request())
                    await writer.drain()
            except (OSError, asyncio.IncompleteReadError, ssl.SSLError, ValueError, IndexError) as error:
                self.stats["reconnects"] += 1
                self.stats["last_error"] = repr(error)[:200]
                await asyncio.sleep(0.5)


class _Nothing:
    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False


async def main(config):
    context = ssl.create_default_context(cafile=config["cafile"])
    stats = {"delivered": 0, "heartbeats": 0, "reconnects": 0, "errors": 0, "last_error": ""}
    tokens = config["tokens"]
    count = [0]

    def opened():
        count[0] += 1
        if count[0] == len(tokens):
            sys.stdout.write("OPEN %d\n" % count[0])
            sys.stdout.flush()

    gate = asyncio.Semaphore(CONCURRENT_OPENS)
    tasks = [asyncio.ensure_future(Watch(i, t, config, context, stats, opened).run(gate)) for i, t in enumerate(tokens)]
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    while True:
        line = await stdin.readline()
        if not line:
            break
        if line.strip() == b"STATS":
            sys.stdout.write("STATS %s\n" % json.dumps(stats))
            sys.stdout.flush()
    for task in tasks:
        task.cancel()


if __name__ == "__main__":
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with open(sys.argv[1]) as f:
        settings = json.load(f)
    asyncio.run(main(settings))
