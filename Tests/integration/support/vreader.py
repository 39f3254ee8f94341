"""Feeder for libfprint's `virtual_device` test reader (FP_VIRTUAL_DEVICE=<socket>).

Protocol (libfprint's `virtual_device` driver, as `fingerauth trial touch` speaks it too;
docs/tutorial/trial.md): a Unix stream socket, one command per connection, no
trailing newline (`SCAN <id>` puts finger <id> on the reader, `SET_ENROLL_STAGES <n>`,
`RETRY <n>`, `ERROR <n>`, `UNPLUG`); the device reads one chunk and closes the connection,
so wait for EOF before the next one. Each open of the device re-creates the socket, so a
feeder waits for a *new* socket (another inode or creation time than the one it fed
last) before sending.

    reader = VirtualReader(path)
    reader.feed(scan_commands("alice"))   # background thread, waits for the socket
    ...run the program that opens the device...
    reader.wait()                          # joins, re-raises the feeder's error

Observed with libfprint 1.94.5: plain `SCAN <id>` commands queue in the device and each one
is used by exactly one verify or enroll stage, whether it arrives before or after the
operation started. `SLEEP 0` + `SCAN <id>` pairs are NOT safe when several are queued
before the operation reads them: a `SLEEP` right behind a processed `SCAN` makes the driver
finish that operation after the sleep and swallow the next `SCAN` (a verify loses the
scan, an enroll counts a stage twice). So the helpers below send plain `SCAN`s.
Nor is a command safe that *arrives* while an operation has finished but libfprint has not
yet completed it (it does so from an idle callback): the driver runs that operation again
on it. An identify then takes a second scan (fprintd's duplicate check before an enrollment
on the match-on-chip reader: the enrollment never ends), an open drops it. On a loaded
machine that window is wide enough to hit; `feed(..., ready=...)` sends each command only
once the device asked for it.
"""

import os
import socket
import stat
import threading
import time

__all__ = ["VirtualReader", "VirtualReaderError", "enroll_commands", "scan_commands"]


class VirtualReaderError(Exception):
    """The feeder could not deliver its commands in time."""


def enroll_commands(identity, stages=5):
    """Commands for a whole enrollment of `identity` in `stages` scans."""
    return ["SET_ENROLL_STAGES %d" % stages] + ["SCAN %s" % identity] * stages


def scan_commands(*identities):
    """Commands for one finger per identity, one verify (attempt) each."""
    return ["SCAN %s" % identity for identity in identities]


class VirtualReader:
    """One virtual reader socket, fed from a background thread."""

    def __init__(self, socket_path, connect_timeout=2.0):
        self.path = str(socket_path)
        self.connect_timeout = connect_timeout
        self.last_inode = None
        self._thread = None
        self._error = None
        self._unasked = threading.Event()  # wait(drop_unasked=True): the reading program ended
        self.sent = []

    # -- one command -------------------------------------------------------------------

    def send(self, command, timeout=None):
        """Sends one command on its own connection and waits until the device closed it."""
        timeout = self.connect_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(self.path)
            sock.sendall(command.encode("ascii"))
            reply = b""
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise VirtualReaderError("no EOF after %r within %.1fs" % (command, timeout))
                sock.settimeout(left)
                chunk = sock.recv(4096)
                if not chunk:
                    break
                reply += chunk
        self.sent.append(command)
        return reply.decode("ascii", "replace")

    # -- the socket ----------------------------------------------------------------------

    def _inode(self):
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return None
        if not stat.S_ISSOCK(st.st_mode):
            return None
        # Inode numbers are reused at once when a socket is unlinked and bound again:
        # the creation time tells two sockets apart.
        return (st.st_dev, st.st_ino, st.st_ctime_ns)

    def wait_for_new_socket(self, timeout=10.0, give_up=None):
        """Waits until the socket exists and is not the one fed last; returns its inode
        (None when the event `give_up` is set first)."""
        deadline = time.monotonic() + timeout
        while True:
            inode = self._inode()
            if inode is not None and inode != self.last_inode:
                self.last_inode = inode
                return inode
            if give_up is not None and give_up.is_set():
                return None
            if time.monotonic() >= deadline:
                raise VirtualReaderError("no new socket at %s within %.1fs" % (self.path, timeout))
            time.sleep(0.005)

    # -- background feeding --------------------------------------------------------------

    def feed(self, commands, timeout=10, delay=0.0, after=0.0, ready=None):
        """Starts a thread that waits for a new socket, then `after` seconds more (a finger
        that comes late), then sends `commands` in order (`delay` seconds apart). With
        `ready`, command i goes only once `ready(i)` is true (polled): a caller that can see
        when the device asks for the next finger (PrivateBus.feed_enrollment) sends none
        early. Returns self; call wait() to join it."""
        if self._thread is not None:
            raise VirtualReaderError("a feed is still running; wait() first")
        commands = list(commands)
        self._error = None
        self._unasked.clear()

        def run():
            try:
                deadline = time.monotonic() + timeout
                if self.wait_for_new_socket(timeout, give_up=self._unasked) is None:
                    return
                if after:
                    time.sleep(after)
                for index, command in enumerate(commands):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise VirtualReaderError("feed timed out before %r" % command)
                    if ready is not None and not self._wait_until_ready(ready, index, command, deadline, timeout):
                        return
                    self._send_retrying(command, deadline)
                    if delay:
                        time.sleep(delay)
            except BaseException as error:  # re-raised by wait()
                self._error = error

        self._thread = threading.Thread(target=run, name="vreader-feed", daemon=True)
        self._thread.start()
        return self

    def _wait_until_ready(self, ready, index, command, deadline, timeout):
        """True once `ready(index)`; False when wait(drop_unasked=True) gave up on the rest."""
        while not ready(index):
            if self._unasked.is_set():
                return False
            if time.monotonic() >= deadline:
                raise VirtualReaderError("the device did not ask for command %d (%r) within %.1fs"
                                         % (index + 1, command, timeout))
            time.sleep(0.01)
        return True

    def _send_retrying(self, command, deadline):
        # The socket can exist a moment before the device listens on it.
        while True:
            try:
                self.send(command, timeout=max(0.1, min(self.connect_timeout, deadline - time.monotonic())))
                return
            except (ConnectionRefusedError, FileNotFoundError):
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)

    def wait(self, timeout=15, drop_unasked=False):
        """Joins the feeding thread and re-raises its error, if any. `drop_unasked`: the
        program that read the device has ended, so what the device never asked for (the
        rest of a `ready` feed; all of it when the device was not opened) is dropped, not
        waited for: what that program printed tells more."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        if drop_unasked:
            self._unasked.set()
        thread.join(timeout)
        if thread.is_alive():
            raise VirtualReaderError("feeder still running after %.1fs" % timeout)
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def __repr__(self):
        return "VirtualReader(%r)" % self.path
