"""What fingerauthd says where it used to mislead (issue 48): a second `serve` on a taken
address names who listens there, not libmicrohttpd's "Failed to bind to port 0"; an admin
command run by a user who cannot reach the database says so and how to run it, not "no
such database"; the login helper's warm-up GET is no `status=405` line in the log."""

import os
import shutil
import subprocess
import tempfile

import pytest

from support.authd import Authd, build_dir

BINARY = os.path.join(build_dir(), "fingerauthd")
NOBODY = 65534


def serve(tmp_path, ca, listen, name):
    """A second `fingerauthd serve` (a database of its own) on `listen`; it must give up."""
    return subprocess.run([BINARY, "serve", "--listen", listen, "--db", str(tmp_path / (name + ".db")),
                           "--audience", "x", "--tls-cert", ca.server_cert, "--tls-key", ca.server_key],
                          capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


def test_a_second_serve_names_the_fingerauthd_already_listening(tmp_path, ca):
    with Authd(tmp_path / "first", tls=ca) as first:
        second = serve(tmp_path, ca, "127.0.0.1:%d" % first.port, "second")
        assert second.returncode == 1 and second.stdout == "", second
        assert second.stderr == ("fingerauthd: cannot listen on 127.0.0.1:%d: another fingerauthd (pid %d, user root) "
                                 "is listening there\n" % (first.port, first.pid)), second.stderr
        assert first.request("GET", "/healthz").status == 200  # the first one serves on


def test_serve_on_an_address_another_program_holds_names_that_program(tmp_path, ca):
    holder = subprocess.Popen(["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups", "--",
                               "/usr/bin/python3", "-c",
                               "import socket, sys\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\ns.listen(1)\n"
                               "print(s.getsockname()[1], flush=True)\nsys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port = int(holder.stdout.readline())
        done = serve(tmp_path, ca, "127.0.0.1:%d" % port, "other")
        assert done.returncode == 1, done
        assert done.stderr == ("fingerauthd: cannot listen on 127.0.0.1:%d: python3 (pid %d, user nobody) is listening "
                               "there\n" % (port, holder.pid)), done.stderr
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


@pytest.fixture
def closed_database(ca):
    """A database in a directory only root may enter (as /var/lib/fingerauthd is the
    service user's), under a folder everyone may enter."""
    base = tempfile.mkdtemp(prefix="fa-closed-db.")
    os.chmod(base, 0o755)
    state = os.path.join(base, "state")
    os.mkdir(state, 0o700)
    authd = Authd(base + "/authd", tls=ca, db=os.path.join(state, "authd.db"))
    try:
        authd.start()
        authd.stop()
        yield state
    finally:
        authd.stop()
        shutil.rmtree(base, ignore_errors=True)


def as_nobody(*args):
    return subprocess.run(["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups", "--",
                           BINARY, *args], capture_output=True, text=True, timeout=30)


def test_audit_by_a_user_who_cannot_reach_the_database_says_so_and_how(closed_database):
    """Before: "no such database; check --db" for a database that was there."""
    db = os.path.join(closed_database, "authd.db")
    done = as_nobody("audit", "--db", db)
    assert (done.returncode, done.stdout) == (1, ""), done
    assert done.stderr == ("fingerauthd: %s cannot be read by nobody: %s is root's (mode 700). Run it as root: sudo "
                           "fingerauthd audit … (it then acts as the database's owner)\n" % (db, closed_database))
    # The directory open, the file still root's 0600: the file is named.
    os.chmod(closed_database, 0o755)
    done = as_nobody("keys", "list", "--db", db)
    assert done.returncode == 1 and done.stderr == (
        "fingerauthd: %s cannot be read by nobody: %s is root's (mode 600). Run it as root: sudo fingerauthd keys list "
        "… (it then acts as the database's owner)\n" % (db, db)), done.stderr
    # A database that is really not there is still called so.
    missing = as_nobody("audit", "--db", os.path.join(closed_database, "nothing.db"))
    assert missing.returncode == 1 and "no such database" in missing.stderr, missing.stderr
    # Root reads it.
    assert subprocess.run([BINARY, "audit", "--db", db], capture_output=True, text=True, timeout=30).returncode == 0


def test_the_login_helpers_warm_up_is_no_405_line(world):
    """Each login opens the connection with a GET of the login URL while the finger is
    awaited; the server answered it 405 and logged `method=GET path=/v1/login status=405`
    for every login, which read as an error."""
    world.enroll("alice", "finger-A")
    assert world.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"
    assert world.authd.request("GET", "/v1/login").status == 405  # still answered so
    assert world.authd.request("PUT", "/v1/login").status == 405  # a wrong method is still logged
    log = world.authd.log_text()
    assert "method=POST path=/v1/login status=200 outcome=accept" in log, log
    assert "status=405" in log and "method=PUT path=/v1/login status=405" in log, log
    assert "method=GET path=/v1/login" not in log, log
