"""The operator's path of issue 48 after the README's trial, on this machine, as root in a
shell of test_trial.py's (RootShell: a private mount namespace whose /etc/pam.d and
/var/lib/pam are copies), a new one for each round as a new terminal would be. The README's trial twice: the second time on what the first
purge kept (`fingerauthd init … --self-signed` finds its certificate and reuses it). Then
installed once more up to `fingerauthd serve`: `fingerauthd admin create` says the console
is off and names the line to add and the restart; with both done its setup link answers
over HTTPS on loopback. Then the trial's enrollment, and a purge while serve runs and the
user is enrolled: the daemon is stopped (by prerm, through /proc/PID/exe), the purge names
every thing it keeps, and warns that the user's key is still active at the authenticator
with the command that revokes it. That command, run as printed, revokes it; the purge's
own removal commands then leave nothing."""

import os
import re
import socket
import time
from pathlib import Path

import pytest

from support.authd import build_dir
from support.tls import https_status as tls_status
from test_trial import (RootShell, account_exists, check_step, group_exists, kept_by_purge, machine,  # noqa: F401
                        port_free, shell_json, sudo_by_finger, traces, trial_commands, wait_for_the_authenticator)

PLACE = "Place your finger on the fingerprint reader"
CERT = "/etc/fingerauthd/cert.pem"


@pytest.fixture
def console_port_free(machine):
    if not port_free(8444):
        pytest.skip("something listens on port 8444 already; not touching it")
    return machine


def readme(command, user, deb):
    return re.sub(r"\balice\b", user.name, command).replace("./build/fingerauth_0.1.0-1_amd64.deb", deb)


def run_the_trial(shell, user, deb, label):
    """The README's trial block, line by line, as test_trial.py runs it; init's output."""
    commands = trial_commands()
    init_output = None
    for index, (who, command) in enumerate(commands):
        command = readme(command, user, deb)
        if who == "alice":
            continue
        if index > 0 and commands[index - 1][0] == "alice":
            screen, status = sudo_by_finger(shell, user, readme(commands[index - 1][1], user, deb), command)
            assert (status, screen) == (0, PLACE + "\r\n"), (status, repr(screen), shell.transcript[-3000:])
            continue
        status, out = shell.run(command, answer="y" if command.startswith("apt-get") else None)
        assert status == 0, "%s: %s -> %d\n%s" % (label, command, status, shell.transcript[-4000:])
        check_step(command, out, user)
        if command.startswith("fingerauthd init"):
            init_output = out
        if "fingerauthd serve" in command:
            wait_for_the_authenticator(shell)
    return init_output


def daemon_pids():
    """The processes running the package's fingerauthd (what prerm looks for)."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.readlink("/proc/%s/exe" % name) == "/usr/sbin/fingerauthd":
                    pids.append(int(name))
            except OSError:
                pass
    return pids


def wait_listening(port, timeout=15):
    deadline = time.monotonic() + timeout
    while port_free(port):
        assert time.monotonic() < deadline, "nothing listens on %d" % port
        time.sleep(0.1)


def bindable(port, timeout):
    """Whether 127.0.0.1:port can be bound (waiting up to `timeout` s), as serve will bind it."""
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
                return True
            except OSError:
                if time.monotonic() > deadline:
                    return False
        time.sleep(0.2)


def https_status(url):
    found = re.match(r"https://127\.0\.0\.1:(\d+)(/.*)$", url)
    assert found, url
    return tls_status(int(found.group(1)), found.group(2), CERT)


def test_reinstall_console_link_and_purge_while_serving_and_enrolled(console_port_free, user, tmp_path, observe):
    """operator path: README trial, purge, trial again on what the purge kept; admin create -> the named line + restart -> the link answers; purge while serving and enrolled -> daemon stopped, every kept thing named, the active key's warning and its command"""
    deb = console_port_free
    kept_paths, keeps_user, _ = kept_by_purge()
    traces_before = traces()
    commands = [(who, readme(command, user, deb)) for who, command in trial_commands()]
    serve = next(command for who, command in commands if "fingerauthd serve" in command)
    shells = []

    def new_shell(name):
        (tmp_path / name).mkdir()
        shells.append(RootShell(tmp_path / name))
        return shells[-1]

    seen = []
    try:
        run_the_trial(new_shell("first"), user, deb, "first trial")
        seen.append("trial 1: sudo by finger, purged")
        again = run_the_trial(new_shell("second"), user, deb, "trial after purge and reinstall")
        assert "certificate %s: kept (made before): ECDSA P-256, self-signed, for the address 127.0.0.1" % CERT in again, again
        conf = Path("/etc/fingerauthd.conf")
        assert not conf.exists()  # purged again
        seen.append("trial 2 after purge + reinstall: init kept the certificate, sudo by finger, purged")

        shell = new_shell("third")
        # Installed once more, up to serve (the README's lines before the trial starts).
        for who, command in commands[:[c for _, c in commands].index(serve) + 1]:
            status, out = shell.run(command, answer="y" if command.startswith("apt-get") else None)
            assert status == 0, "%s -> %d\n%s" % (command, status, shell.transcript[-4000:])
            check_step(command, out, user)
            if command == serve:
                wait_for_the_authenticator(shell)
        conf = Path("/etc/fingerauthd.conf").read_text()
        assert "listen = 127.0.0.1:8443\n" in conf and "auth.example.com" not in conf, conf

        # The console: off as shipped; admin create names the line and the restart.
        status, out = shell.run("fingerauthd admin create ada")
        assert status == 0, out
        line = re.search(r"^  1\. add this line to /etc/fingerauthd\.conf:\s+(admin-listen = \S+)$", out, re.M)
        assert "the console is off: /etc/fingerauthd.conf has no admin-listen line" in out, out
        assert line and "(without systemd: stop `fingerauthd serve` and start it again)" in out, out
        link = out.strip().splitlines()[-1]
        assert link.startswith("https://127.0.0.1:8444/setup?token="), out
        assert port_free(8444)  # nothing answers it yet, as the message says
        status, out = shell.run("printf '%%s\\n' '%s' >> /etc/fingerauthd.conf" % line.group(1))
        assert status == 0, out
        shell.run("kill %1; wait %1")
        deadline = time.monotonic() + 15
        while not port_free(8443):
            assert time.monotonic() < deadline, "serve did not stop"
            time.sleep(0.1)
        if not bindable(8444, timeout=30):  # another program took it meanwhile: not this test's to judge
            pytest.skip("port 8444 was taken by another program during the test: %s"
                        % shell.run("ss -tlnp | grep -E ':8444 '")[1])
        status, out = shell.run(serve)
        assert status == 0, out
        try:
            wait_for_the_authenticator(shell)
            wait_listening(8444)
        except AssertionError:
            shell.run("sleep 1; jobs -l; ss -tlnp | grep -E ':844[34] '; ps -eo pid,ppid,lstart,cmd | grep -E 'fingerauthd|runuser'")
            raise
        assert https_status(link) == "HTTP/1.1 200 OK"
        seen.append("admin create: console off, named `%s` and the restart; with them the link answered 200"
                    % line.group(1))

        # A second serve, as the README starts it, while the first runs: it says who holds the port.
        second = serve.rstrip().rstrip("&").strip()
        status, out = shell.run("timeout 20 " + second)
        assert status not in (0, 124), out
        said = re.search(r"cannot listen on 127\.0\.0\.1:8443: another fingerauthd \(pid (\d+), user fingerauthd\) is "
                         r"listening there", out)
        assert said and int(said.group(1)) in daemon_pids(), out
        assert "Failed to bind" not in out, out
        seen.append("a second serve: %r" % said.group(0))

        # The trial's enrollment, then a purge while serve runs and the user is enrolled.
        for who, command in commands:
            if "trial start" in command or "fingerauth enroll" in command:
                status, out = shell.run(command)
                assert status == 0, "%s -> %d\n%s" % (command, status, out)
                check_step(command, out, user)
        registration = Path("/var/lib/fingerauth/users/%s/registration" % user.name).read_text()
        kid = re.search(r"^kid\s*=\s*(\S+)$", registration, re.M).group(1)
        running = daemon_pids()
        assert running, "no fingerauthd from the package runs"
        status, purged = shell.run("apt-get purge fingerauth", answer="y")
        assert status == 0, purged
        assert [pid for pid in running if os.path.exists("/proc/%d" % pid)] == [] and daemon_pids() == []
        assert port_free(8443) and port_free(8444)
        for pid in running:
            assert "fingerauth: pid %d stopped" % pid in purged, purged
        assert re.search(r"fingerauth: pid \d+ \(fingerauthd serve --config /etc/fingerauthd.conf\) runs from this "
                         r"package's binary: stopping it \(TERM\)", purged), purged
        assert "device keys of this host's users are still active at the authenticator" in purged, purged
        assert "fingerauth:   %s: key %s (active)" % (user.name, kid) in purged, purged
        assert "fingerauth:   fingerauthd keys revoke --kid %s" % kid in purged, purged
        for path in kept_paths:
            assert "fingerauth: kept %s: " % path in purged, (path, purged)
        assert keeps_user and "fingerauth: kept the system user fingerauthd: " in purged, purged
        seen.append("purged while serving and enrolled: pid %s stopped, kept %s and the user named, key %s… warned"
                    % (",".join(map(str, running)), ", ".join(kept_paths), kid[:8]))

        # The warned command, as printed (the package's binary is gone: the build's), revokes it.
        revoke = "%s keys revoke --kid %s" % (os.path.join(build_dir(), "fingerauthd"), kid)
        status, out = shell.run(revoke)
        assert status == 0 and "revoked" in out, out
        keys = shell_json(shell, "%s keys list --json" % os.path.join(build_dir(), "fingerauthd"))
        assert [k.get("status") for k in keys if k.get("kid") == kid] == ["revoked"], keys

        # The purge's own removal commands leave nothing.
        removal = purged[purged.index("fingerauth: to delete these too"):]
        lines = re.findall(r"^fingerauth:   (\S.*?)\r?$", removal, re.M)
        assert lines and "rm -rf /run/fingerauth" not in lines, lines  # never blindly
        assert lines == kept_by_purge()[2], "the purge prints the install page's removal lines"
        for command in lines:
            status, out = shell.run(command)
            assert status == 0, "%s -> %d: %s" % (command, status, out)
        assert traces() - traces_before == set()
        assert not account_exists("fingerauthd") and not group_exists("fingerauthd")
        seen.append("the purge's removal commands (%d): nothing left" % len(lines))
    finally:
        for shell in shells:
            shell.close()
            print(shell.transcript[-6000:])
    observe("; ".join(seen))
