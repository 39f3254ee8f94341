"""A bounded load generator for fingerauthd: many clients, each on its own keep-alive
HTTPS connection (threads; the TLS and socket work releases the GIL), sending prepared
requests and recording every answer.

    work = [Item("/v1/login", "application/json", body, expect=200), ...]
    result = run_load("127.0.0.1", port, ca.ssl_context(), work, clients=50, duration=60)
    result.sent, result.errors, result.rate, result.answers[i] -> (status, body)

Bounded in count (each item is sent at most once) and in time (no request starts after
`duration`; every client has a socket timeout), so it always stops by itself. With
`pace=True` item i is not sent before start + i * duration / len(work): the load is
spread evenly over the whole duration. Tokens are signed before the run (`sign_all`, in
worker processes) so the client is not the bottleneck.
"""

import concurrent.futures
import http.client
import threading
import time

__all__ = ["Item", "LoadResult", "run_load", "sign_all"]


class Item:
    """One request to send, and the status that counts as success."""

    __slots__ = ("path", "content_type", "body", "expect", "headers")

    def __init__(self, path, content_type, body, expect=200, headers=None):
        self.path = path
        self.content_type = content_type
        self.body = body
        self.expect = expect
        self.headers = headers or {}


class LoadResult:
    """What the run did. `answers[i]` is (status, body bytes) or (None, exception text) for
    sent items, None for items never sent; `began[i]` when item i was sent (monotonic)."""

    def __init__(self, count):
        self.answers = [None] * count
        self.began = [None] * count
        self.started = 0.0
        self.elapsed = 0.0
        self.latencies = []

    @property
    def sent(self):
        return sum(1 for a in self.answers if a is not None)

    @property
    def errors(self):
        """Sent items whose answer was not the expected status (or no answer at all)."""
        return [(i, a) for i, a in enumerate(self.answers) if a is not None and a[0] != self._expect[i]]

    @property
    def rate(self):
        return self.sent / self.elapsed if self.elapsed > 0 else 0.0

    def percentile(self, fraction):
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]

    def summary(self):
        return ("%d requests in %.1f s (%.0f/s) by the clients, %d errors, latency p50 %.1f ms p99 %.1f ms"
                % (self.sent, self.elapsed, self.rate, len(self.errors),
                   self.percentile(0.5) * 1000, self.percentile(0.99) * 1000))


def run_load(host, port, ssl_context, work, clients=50, duration=60.0, pace=True, timeout=15.0, stop=None):
    """Sends `work` from `clients` threads for at most `duration` seconds; returns a
    LoadResult. `stop` (a threading.Event) ends the run early."""
    result = LoadResult(len(work))
    result._expect = [item.expect for item in work]
    lock = threading.Lock()
    next_index = [0]
    stop = stop or threading.Event()
    start = time.monotonic()
    result.started = start
    end = start + duration
    spacing = duration / max(1, len(work))

    def take():
        with lock:
            i = next_index[0]
            if i >= len(work):
                return None
            next_index[0] = i + 1
            return i

    def client():
        connection = None
        try:
            while not stop.is_set():
                i = take()
                if i is None:
                    return
                if pace:
                    wait = start + i * spacing - time.monotonic()
                    if wait > 0:
                        stop.wait(wait)
                if stop.is_set() or time.monotonic() >= end:
                    return
                item = work[i]
                if connection is None:
                    connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=ssl_context)
                headers = {"Content-Type": item.content_type}
                headers.update(item.headers)
                began = time.monotonic()
                result.began[i] = began
                try:
                    connection.request("POST", item.path, body=item.body, headers=headers)
                    answer = connection.getresponse()
                    body = answer.read()
                    result.answers[i] = (answer.status, body)
                    result.latencies.append(time.monotonic() - began)
                    if answer.getheader("connection", "").lower() == "close":
                        connection.close()
                        connection = None
                except Exception as error:  # noqa: BLE001 - every failure is a recorded error
                    result.answers[i] = (None, "%s: %s" % (type(error).__name__, error))
                    connection.close()
                    connection = None
        finally:
            if connection is not None:
                connection.close()

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(0.0, end - time.monotonic()) + timeout + 5)
    stop.set()
    result.elapsed = min(time.monotonic(), end) - start
    return result


def _sign_chunk(pem, kid, claim_list):
    import jwt
    from cryptography.hazmat.primitives import serialization
    key = serialization.load_pem_private_key(pem, password=None)
    return [jwt.encode(c, key, algorithm="RS256", headers={"kid": kid}) for c in claim_list]


def sign_all(pem, kid, claim_list, workers=2):
    """RS256 tokens for every claims dict in `claim_list`, signed by the PEM private key
    in `workers` processes; order kept."""
    if not claim_list:
        return []
    size = (len(claim_list) + workers * 4 - 1) // (workers * 4)
    chunks = [claim_list[i:i + size] for i in range(0, len(claim_list), size)]
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
        signed = pool.map(_sign_chunk, [pem] * len(chunks), [kid] * len(chunks), chunks)
        return [token for chunk in signed for token in chunk]
