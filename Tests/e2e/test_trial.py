"""The README's "Try it without a reader", line by line, on this machine. The commands are
read from README.md, not retyped: `alice` becomes a test user and the package path the
built package ($FINGERAUTH_DEB). Root's lines run one after the other in one shell, in a
private mount namespace whose /etc/pam.d and /var/lib/pam are copies (pam-auth-update
never touches the real common-*); alice's `sudo -k true` runs on a real pty in that
namespace as the test user, through the real /etc/pam.d/sudo, and root's next line plays
the finger. After the purge only what docs/howto/install.md ("Installing from the
package") says the purge keeps is left; its commands for removing the authenticator too
then leave nothing."""

import glob
import hashlib
import json
import os
import pwd
import re
import secrets
import select
import shutil
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from machine import SudoersDropIn
from terminal import Terminal

REPO = Path(__file__).resolve().parents[2]
# The front door, then the docs/ tree: a section is looked up by its `## ` title in each.
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
PLACE = "Place your finger on the fingerprint reader"
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive",
       "HOME": "/root", "TERM": "dumb"}
# Where the package, init and the trial may leave anything: every path with "fingerauth" in
# it under these trees is compared before and after.
TREES = ("/etc", "/usr", "/lib", "/var/lib", "/run", "/opt", "/srv")
PRUNED = ("/var/lib/dpkg", "/var/lib/apt", "/run/user", "/proc")


def section(title):
    """The `## title` section (up to the next `## `) of the one document that has it: the
    README, or the page of docs/ the text moved to."""
    found = []
    for path in DOCUMENTS:
        text = path.read_text()
        start = text.find("\n## " + title + "\n")
        if start >= 0:
            end = text.find("\n## ", start + 1)
            found.append((path, text[start:end if end > 0 else len(text)]))
    assert len(found) == 1, "section %r in %s" % (title, [str(path.relative_to(REPO)) for path, _ in found] or "no document")
    return found[0][1]


def trial_commands():
    """[(who, command)] of the trial's block: `root# …` and `alice$ …` lines."""
    lines = re.findall(r"^    (root#|alice\$) (.+)$", section("Try it without a reader"), re.M)
    assert len(lines) >= 10, lines
    return [(who.rstrip("#$"), command) for who, command in lines]


def kept_by_purge():
    """The paths of the list of what `apt-get purge` keeps ("Installing from the package",
    docs/howto/install.md), and the removal block."""
    text = section("Installing from the package")
    kept = text[text.index("It keeps:"):text.index("To remove the authenticator completely")]
    paths = re.findall(r"^- `(/[^`]+)`", kept, re.M)
    removal = text[text.index("To remove the authenticator completely"):]
    commands = re.findall(r"^    (\S.*)$", removal, re.M)
    return paths, "the system user `fingerauthd`" in kept, commands


def traces():
    """Every path with "fingerauth" in it under TREES."""
    found = set()
    for tree in TREES:
        for directory, subdirectories, files in os.walk(tree):
            subdirectories[:] = [d for d in subdirectories if os.path.join(directory, d) not in PRUNED]
            found.update(p for p in (os.path.join(directory, n) for n in subdirectories + files) if "fingerauth" in p)
    return found


def pam_digest():
    digest = hashlib.sha256()
    for path in sorted(glob.glob("/etc/pam.d/*")):
        digest.update(path.encode() + b"\0" + Path(path).read_bytes())
    return digest.hexdigest()


def account_exists(name):
    return subprocess.run(["getent", "passwd", name], capture_output=True).returncode == 0


def group_exists(name):
    return subprocess.run(["getent", "group", name], capture_output=True).returncode == 0


class RootShell:
    """One bash as root in a mount namespace of its own, fed one command at a time: its jobs
    (`&`, `kill %1`) are the README reader's jobs. Each command's status and output."""

    def __init__(self, tmp):
        self.proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "bash", "--noprofile", "--norc"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV,
                                     start_new_session=True)
        self.transcript = ""
        pamd, varlibpam = tmp / "pam.d", tmp / "varlibpam"
        shutil.copytree("/etc/pam.d", pamd, symlinks=True)
        shutil.copytree("/var/lib/pam", varlibpam, symlinks=True)
        status, out = self.run("mount --bind %s /etc/pam.d && mount --bind %s /var/lib/pam" % (pamd, varlibpam))
        if status != 0:
            self.close()
            pytest.skip("no private mount namespace here: %s" % out)

    def run(self, command, timeout=180, answer=None):
        """`answer`: the line the reader types when the command asks (apt's "Do you want to
        continue? [Y/n]"); otherwise the command reads an empty input."""
        marker = "__fa_e2e_%s__" % secrets.token_hex(6)
        stdin = "/dev/null" if answer is None else "<(printf '%s\\n')" % answer
        self.proc.stdin.write(("{ %s\n} < %s 2>&1; echo \"%s $?\"\n" % (command, stdin, marker)).encode())
        self.proc.stdin.flush()
        self.transcript += "# " + command + "\n"
        output, deadline = b"", time.monotonic() + timeout
        while (marker + " ").encode() not in output:
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(self.proc.stdout.fileno(), 65536) if ready else b""
            if not chunk:
                self.transcript += output.decode("utf-8", "replace")
                raise AssertionError("no end of %r within %d s:\n%s" % (command, timeout, self.transcript[-4000:]))
            output += chunk
        text = output.decode("utf-8", "replace")
        before, _, after = text.partition(marker + " ")
        self.transcript += before
        return int(after.split()[0]), before

    def close(self):
        """Ends the shell and everything it started (its process group: serve, touches)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)


def port_free(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture
def machine(user):
    """Refuses to run where the trial would overwrite something real; puts back what it made."""
    deb = os.environ.get("FINGERAUTH_DEB")
    if not deb:
        pytest.skip("FINGERAUTH_DEB not set (make e2e builds the package and sets it)")
    if subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", "fingerauth"], capture_output=True,
                      text=True).stdout.strip() not in ("", "un", "pn"):
        pytest.skip("the fingerauth package is installed on this machine; not touching it")
    for path in ("/var/lib/fingerauthd", "/etc/fingerauthd", "/etc/fingerauthd.conf", "/etc/security/fingerauth.conf"):
        if os.path.exists(path):
            pytest.skip("%s exists; not touching it" % path)
    if account_exists("fingerauthd") or not port_free(8443):
        pytest.skip("a fingerauthd user or something on port 8443 exists already; not touching it")
    had_run_dir = os.path.exists("/run/fingerauth")
    dropin = SudoersDropIn(user, None)  # sudo's own PAM service: /etc/pam.d/sudo, common-auth
    try:
        yield os.path.abspath(deb)
    finally:
        dropin.remove()
        subprocess.run(["dpkg", "--purge", "fingerauth"], capture_output=True, env=ENV)
        for path in ("/var/lib/fingerauthd", "/etc/fingerauthd") + (() if had_run_dir else ("/run/fingerauth",)):
            shutil.rmtree(path, ignore_errors=True)
        if account_exists("fingerauthd"):
            subprocess.run(["userdel", "fingerauthd"], capture_output=True)
        if group_exists("fingerauthd"):
            subprocess.run(["groupdel", "fingerauthd"], capture_output=True)


def test_the_readme_trial_from_package_to_purge(machine, user, tmp_path, observe):
    """README "Try it without a reader", literally: install, fingerauthd init, the trial's enroll, fingerauth test, a real sudo by finger on a pty, stop, purge -> only what docs/howto/install.md says is kept; its removal commands -> nothing"""
    commands = trial_commands()
    kept_paths, keeps_user, removal = kept_by_purge()
    pam_before, traces_before = pam_digest(), traces()
    shell = RootShell(tmp_path)
    seen = []
    try:
        for index, (who, command) in enumerate(commands):
            command = re.sub(r"\balice\b", user.name, command)
            command = command.replace("./build/fingerauth_0.1.0-1_amd64.deb", machine)
            if who == "alice":
                continue  # run below, with root's next line (the touch) while it waits
            if index > 0 and commands[index - 1][0] == "alice":
                screen, status = sudo_by_finger(shell, user, re.sub(r"\balice\b", user.name, commands[index - 1][1]), command)
                # The prompt to touch the reader, and not one byte more (no NUL, no password prompt).
                assert (status, screen) == (0, PLACE + "\r\n"), (status, repr(screen), shell.transcript[-3000:])
                audit = shell_json(shell, "fingerauthd audit --user %s --json" % user.name)
                logins = [(r.get("service"), r.get("outcome")) for r in audit if r.get("event") == "login"]
                assert logins[-1] == ("sudo", "accept"), audit
                seen.append("sudo on a pty: exit 0, screen %r, audit %s/%s" % ((screen,) + logins[-1]))
                continue
            status, out = shell.run(command, answer="y" if command.startswith("apt-get") else None)
            assert status == 0, "%s -> %d\n%s" % (command, status, shell.transcript[-4000:])
            check_step(command, out, user)
            if "fingerauthd serve" in command:
                wait_for_the_authenticator(shell)
        assert pam_digest() == pam_before, "the real /etc/pam.d changed"

        left = traces() - traces_before
        strays = sorted(p for p in left if not any(p == k or p.startswith(k + "/") for k in kept_paths))
        assert strays == [], strays
        assert kept_paths and all(os.path.exists(k) for k in kept_paths), kept_paths
        assert keeps_user and account_exists("fingerauthd")
        seen.append("purged: left %s and the user fingerauthd, as docs/howto/install.md says" % ", ".join(
            k for k in kept_paths if os.path.exists(k)))

        for command in removal:
            status, out = shell.run(command)
            assert status == 0, "%s -> %d: %s" % (command, status, out)
        assert traces() - traces_before == set()
        assert not account_exists("fingerauthd") and not group_exists("fingerauthd")
        seen.append("docs/howto/install.md's removal: nothing left")
    finally:
        shell.close()
        print(shell.transcript[-6000:])
    observe("; ".join(seen))


def sudo_by_finger(shell, user, sudo, touch):
    """alice's `sudo` on a pty in the shell's mount namespace; root's `touch` once it asks."""
    term = Terminal(user, ["nsenter", "--mount=/proc/%d/ns/mnt" % shell.proc.pid, "--", "setpriv", "--reuid",
                           str(user.uid), "--regid", str(user.gid), "--init-groups", "--"] + sudo.split(), as_root=True)
    try:
        assert term.wait_for(PLACE, timeout=20), repr(term.screen)
        status, out = shell.run(touch)
        assert status == 0 and "touched the virtual reader" in out, out
        status = term.finish()
        return term.screen, status
    finally:
        term.close()


def check_step(command, out, user):
    """What each step of the trial must have done, beyond its exit status."""
    conf = Path("/etc/security/fingerauth.conf")
    if command.startswith("apt-get install"):
        assert "FingerAuth is installed but NOT enabled" in out, out
        # A newcomer never meets a virtual reader unless they ask for the trial.
        assert not re.search(r"^virtual_reader", conf.read_text(), re.M)
    elif command.startswith("fingerauthd init"):
        st = os.stat("/var/lib/fingerauthd")
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (pwd.getpwnam("fingerauthd").pw_uid, 0o700)
        st = os.stat("/etc/fingerauthd/key.pem")
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (pwd.getpwnam("fingerauthd").pw_uid, 0o600)
        assert "ECDSA P-256, self-signed, for the address 127.0.0.1" in out, out
    elif command.startswith("fingerauthd token create"):
        st = os.stat("/etc/security/fingerauth.token")
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o600) and st.st_size > 20, out
    elif "fingerauth enroll" in command:
        assert "stage 5/5" in out and "registered key" in out, out
    elif "fingerauth test" in command:
        assert "accepted by the authenticator for %s" % user.name in out, out
    elif command.startswith("fingerauth trial stop"):
        assert "revoked key" in out and not re.search(r"^virtual_reader", conf.read_text(), re.M), out
    elif command.startswith("apt-get purge"):
        assert "kept /var/lib/fingerauthd" in out and "kept /etc/fingerauthd" in out, out


def wait_for_the_authenticator(shell, timeout=15):
    """serve runs in the background: the next lines need it listening (as a reader would see
    its "listening on" line before going on)."""
    deadline = time.monotonic() + timeout
    while port_free(8443):
        assert time.monotonic() < deadline, "fingerauthd never listened on 8443:\n" + shell.transcript[-3000:]
        time.sleep(0.1)


def shell_json(shell, command):
    status, out = shell.run(command)
    assert status == 0, out
    return json.loads(out[out.index("["):out.rindex("]") + 1])
