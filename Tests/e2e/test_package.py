"""The Debian package built by `make deb` ($FINGERAUTH_DEB): `apt-get install ./….deb`
installs it without enabling anything, the installed programs run with no Swift toolchain
on PATH, libpam finds the module by its bare name, and `apt-get remove` then `purge`
leave nothing of it. /etc/pam.d/common-* must not change at any point."""

import contextlib
import hashlib
import glob
import os
import re
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

PACKAGE = "fingerauth"
MULTIARCH = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip() or "x86_64-linux-gnu"
MODULE = "/lib/%s/security/pam_fingerauth.so" % MULTIARCH
FILES = {  # path: mode
    MODULE: 0o644,
    "/usr/libexec/fingerauth/fingerauth-pam": 0o755,
    "/usr/libexec/fingerauth/fingerauth-login": 0o755,
    "/usr/bin/fingerauth": 0o755,
    "/usr/sbin/fingerauthd": 0o755,
    "/etc/security/fingerauth.conf": 0o644,
    "/usr/share/pam-configs/fingerauth": 0o644,
    "/usr/share/man/man8/pam_fingerauth.8.gz": 0o644,
    "/usr/share/man/man5/fingerauth.conf.5.gz": 0o644,
    "/usr/share/man/man8/fingerauthd.8.gz": 0o644,
    "/usr/libexec/fingerauth/fingerauth-agent": 0o755,
    "/lib/systemd/system/fingerauth-agent.socket": 0o644,
    "/lib/systemd/system/fingerauth-agent.service": 0o644,
    "/lib/systemd/system/fingerauth-sync.service": 0o644,
    "/lib/systemd/system/fingerauth-sync.timer": 0o644,
    "/usr/share/man/man8/fingerauth-agent.8.gz": 0o644,
    "/usr/libexec/fingerauth/fingerauth-watcher": 0o755,
    "/lib/systemd/system/fingerauth-watcher.service": 0o644,
    "/usr/share/man/man8/fingerauth-watcher.8.gz": 0o644,
    # The module's texts in German, French and Spanish (po/*.po).
    "/usr/share/locale/de/LC_MESSAGES/fingerauth.mo": 0o644,
    "/usr/share/locale/fr/LC_MESSAGES/fingerauth.mo": 0o644,
    "/usr/share/locale/es/LC_MESSAGES/fingerauth.mo": 0o644,
    # What Debian policy wants of every package (12.5, 12.7), and lintian's overrides.
    "/usr/share/doc/fingerauth/copyright": 0o644,
    "/usr/share/doc/fingerauth/changelog.Debian.gz": 0o644,
    "/usr/share/lintian/overrides/fingerauth": 0o644,
}
REPO = Path(__file__).resolve().parents[2]
for source, target in (("man/fingerauth.1", "/usr/share/man/man1/fingerauth.1.gz"),
                       ("completion/fingerauth.bash", "/usr/share/bash-completion/completions/fingerauth"),
                       ("packaging/systemd/fingerauthd.service", "/lib/systemd/system/fingerauthd.service"),
                       ("packaging/systemd/fingerauthd.sysusers.conf", "/usr/lib/sysusers.d/fingerauthd.conf"),
                       ("packaging/systemd/fingerauthd.conf", "/etc/fingerauthd.conf")):
    if (REPO / source).exists():  # colleagues' files: installed when the tree has them
        FILES[target] = 0o644
APT_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND": "noninteractive", "LANG": "C.UTF-8"}
PLAIN_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}  # no /opt/swift


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 300), **kw)


CONFFILES = sorted(p for p in FILES if p.startswith("/etc/"))
SYSTEM_USER = "fingerauthd"


def system_user_exists():
    return run(["getent", "passwd", SYSTEM_USER]).returncode == 0


def package_state():
    done = run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", PACKAGE])
    return done.stdout.strip() if done.returncode == 0 else "absent"


def pam_config_digest():
    digest = hashlib.sha256()
    for path in sorted(glob.glob("/etc/pam.d/common-*")):
        digest.update(path.encode() + b"\0" + Path(path).read_bytes())
    return digest.hexdigest()



# A container's own fingerauthd, played by sleep: in a mount namespace of its own, under a
# root of its own (pivot_root onto a tmpfs), at /usr/sbin/fingerauthd there.
CONTAINER = r"""set -e
R=$1
mount -t tmpfs tmpfs "$R"
mkdir -p "$R/usr/sbin" "$R/usr/lib" "$R/lib" "$R/lib64" "$R/old"
mount --rbind /usr/lib "$R/usr/lib"
mount --rbind /lib "$R/lib"
mount --rbind /lib64 "$R/lib64"
cp /usr/bin/sleep "$R/usr/sbin/fingerauthd"
cd "$R"
pivot_root . old
exec /usr/sbin/fingerauthd 300
"""


def same_root(pid):
    here, there = os.stat("/"), os.stat("/proc/%d/root" % pid)
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


@contextlib.contextmanager
def fingerauthd_in_a_container(tmp_path):
    """The pid of a process whose /proc/PID/exe reads /usr/sbin/fingerauthd, as the
    package's does, under another root: not this package's to stop."""
    root = tmp_path / "container-root"
    root.mkdir()
    proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--fork", "sh", "-c", CONTAINER, "sh",
                             str(root)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while True:
            found = [int(name) for name in os.listdir("/proc") if name.isdigit()
                     and os.path.exists("/proc/%s/exe" % name) and os.getpgid(int(name)) == proc.pid
                     and os.readlink("/proc/%s/exe" % name) == "/usr/sbin/fingerauthd"]
            if found:
                assert not same_root(found[0])
                yield found[0]
                break
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture
def deb():
    path = os.environ.get("FINGERAUTH_DEB")
    if not path:
        pytest.skip("FINGERAUTH_DEB not set (make e2e builds the package and sets it)")
    assert os.path.isfile(path), "no package at %s" % path
    if package_state() not in ("absent", "un", "pn"):
        pytest.skip("the fingerauth package is installed on this machine; not touching it")
    for conf in CONFFILES:
        if os.path.exists(conf):
            pytest.skip("%s exists; not touching it" % conf)
    had_user = system_user_exists()
    try:
        yield os.path.abspath(path)
    finally:
        if package_state() not in ("absent", "un", "pn"):
            run(["dpkg", "--purge", PACKAGE], env=APT_ENV)
        if not had_user and system_user_exists():
            # postinst made fingerauthd's system user (Debian keeps such users on purge);
            # this machine did not have it before the test.
            run(["userdel", SYSTEM_USER])
            run(["groupdel", SYSTEM_USER])


def test_package_installs_runs_and_removes_without_a_trace(deb, tmp_path, observe):
    """package: apt-get install ./fingerauth_*.deb -> not enabled, programs and module work; remove + purge -> nothing left"""
    pam_before = pam_config_digest()
    seen = []

    installed = run(["apt-get", "install", "-y", "--no-install-recommends", deb], env=APT_ENV)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert package_state() == "ii"
    assert "FingerAuth is installed but NOT enabled" in installed.stdout
    assert pam_config_digest() == pam_before, "installing must not change /etc/pam.d/common-*"
    for path, mode in FILES.items():
        st = os.stat(path)
        assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (mode, 0, 0), path
    st = os.stat("/var/lib/fingerauth")
    assert (stat.S_IMODE(st.st_mode), st.st_uid) == (0o700, 0)
    listed = set(run(["dpkg", "-L", PACKAGE]).stdout.split())
    assert set(FILES) <= listed
    conffiles = run(["dpkg-query", "-W", "-f=${Conffiles}", PACKAGE]).stdout.split()
    assert sorted(p for p in conffiles if p.startswith("/")) == CONFFILES
    if "/usr/lib/sysusers.d/fingerauthd.conf" in FILES and shutil.which("systemd-sysusers"):
        entry = run(["getent", "passwd", SYSTEM_USER]).stdout.strip().split(":")
        assert entry[0] == SYSTEM_USER and entry[-1] == "/usr/sbin/nologin", entry
        assert int(entry[2]) < 1000  # a system user
    seen.append("installed (ii), conffiles %s, common-* unchanged" % " ".join(CONFFILES))

    # The programs need no Swift toolchain: PATH without /opt/swift, no libswift* loaded.
    for program in ("/usr/bin/fingerauth", "/usr/sbin/fingerauthd", "/usr/libexec/fingerauth/fingerauth-pam",
                    "/usr/libexec/fingerauth/fingerauth-login",
                    "/usr/libexec/fingerauth/fingerauth-agent", "/usr/libexec/fingerauth/fingerauth-watcher", MODULE):
        ldd = run(["ldd", program]).stdout
        assert "not found" not in ldd and "libswift" not in ldd and "/opt/swift" not in ldd, program + ldd
    usage = run(["fingerauth", "--help"], env=PLAIN_ENV)
    assert usage.returncode == 0 and "usage: fingerauth" in usage.stdout, usage.stdout + usage.stderr
    if re.search(r"^\s+status\s", usage.stdout, re.M):  # a command line of the usage
        # Root itself, not under sudo: status asks which user it is to check (exit 2).
        asked = run(["fingerauth", "status"], env=PLAIN_ENV)
        assert asked.returncode == 2, asked.stdout + asked.stderr
        assert "which one? fingerauth status --user NAME" in asked.stderr, asked.stderr
        status = run(["fingerauth", "status", "--user", "root"], env=PLAIN_ENV)
        # A fresh, unconfigured host: status runs and reports (0 all good, 1 something to fix).
        assert status.returncode in (0, 1), status.stdout + status.stderr
        assert status.stdout.strip() and "error while loading" not in status.stderr
        seen.append("fingerauth status -> exit 2 (which user?); --user root -> exit %d" % status.returncode)
    else:
        status = run(["fingerauth", "key", "show", "--help"], env=PLAIN_ENV)
        assert status.returncode == 0, status.stdout + status.stderr
        seen.append("no `fingerauth status` in this build; fingerauth key show --help -> exit 0")
    agent = run(["/usr/libexec/fingerauth/fingerauth-agent", "--version"], env=PLAIN_ENV)
    assert agent.returncode == 0 and "fingerauth-agent 0.1.0 (protocol 1)" in agent.stdout, agent.stdout + agent.stderr
    # Installing enables nothing: no agent socket appeared.
    assert not os.path.exists("/run/fingerauth/agent.sock")
    daemon = run(["fingerauthd", "--help"], env=PLAIN_ENV)
    assert daemon.returncode == 0 and "fingerauthd serve" in daemon.stdout

    # libpam finds the installed module by its bare name (a private service directory).
    confdir = tmp_path / "pam.d"
    confdir.mkdir()
    conf, log = tmp_path / "fingerauth.conf", tmp_path / "module.log"
    conf.write_text("url = https://127.0.0.1:9/v1/login\nstate_dir = %s\ndebug_file = %s\n" % (tmp_path / "state", log))
    os.chmod(conf, 0o644)
    (confdir / "fa-pkg").write_text("auth [default=done] pam_fingerauth.so conf=%s\n" % conf)
    harness = os.path.join(os.environ.get("FINGERAUTH_BUILD", "build"), "fa-pamtest")
    login = run([harness, "--confdir", str(confdir), "--service", "fa-pkg", "--user", "root"], env=PLAIN_ENV, timeout=30)
    assert "RESULT" in login.stdout, login.stdout + login.stderr
    assert 'reason="user not enrolled"' in log.read_text() and "result=PAM_IGNORE" in log.read_text()
    seen.append("libpam loaded pam_fingerauth.so by name (PAM_IGNORE, not enrolled)")

    with fingerauthd_in_a_container(tmp_path) as stranger:
        removed = run(["apt-get", "remove", "-y", PACKAGE], env=APT_ENV)
        assert removed.returncode == 0, removed.stdout + removed.stderr
        # prerm stops what runs from the package's binaries, not a container's fingerauthd.
        assert "pid %d " % stranger not in removed.stdout, removed.stdout
        with open("/proc/%d/stat" % stranger) as f:
            assert f.read().split(") ", 1)[1][0] in "RS", "the container's fingerauthd was stopped"
    seen.append("a container's own /usr/sbin/fingerauthd (another root) kept running through the removal")
    assert package_state() == "rc"  # only the conffile is left, as Debian does on remove
    for path in FILES:
        assert os.path.exists(path) == (path in CONFFILES), path
    assert pam_config_digest() == pam_before

    purged = run(["apt-get", "purge", "-y", PACKAGE], env=APT_ENV)
    assert purged.returncode == 0, purged.stdout + purged.stderr
    assert package_state() == "absent"
    assert run(["dpkg", "-L", PACKAGE]).returncode != 0
    left = [p for p in list(FILES) + ["/var/lib/fingerauth", "/usr/libexec/fingerauth", "/usr/share/doc/fingerauth"]
            if os.path.lexists(p)]
    assert left == []
    assert pam_config_digest() == pam_before
    seen.append("removed (rc: conffiles kept), purged: dpkg -L empty, no file left, common-* unchanged")
    observe("; ".join(seen))


PROFILE = REPO / "packaging" / "pam-configs" / "fingerauth"


def test_pam_auth_update_profile_puts_the_module_before_pam_unix(tmp_path, observe):
    """package: pam-auth-update --enable fingerauth (in a private mount namespace) -> module first, [success=2], then pam_unix; --remove restores common-auth"""
    pamd, state, configs = tmp_path / "pam.d", tmp_path / "varlibpam", tmp_path / "pam-configs"
    for src, dst in (("/etc/pam.d", pamd), ("/var/lib/pam", state), ("/usr/share/pam-configs", configs)):
        assert run(["cp", "-a", src, str(dst)]).returncode == 0
    (configs / "fingerauth").write_bytes(PROFILE.read_bytes())
    original = (pamd / "common-auth").read_text()
    script = ("set -e; mount --bind {p} /etc/pam.d; mount --bind {s} /var/lib/pam; mount --bind {c} /usr/share/pam-configs; "
              "pam-auth-update --package; cp /etc/pam.d/common-auth {t}/after-package; "
              "pam-auth-update --enable fingerauth; cp /etc/pam.d/common-auth {t}/enabled; "
              "pam-auth-update --package --remove fingerauth; cp /etc/pam.d/common-auth {t}/removed"
              ).format(p=pamd, s=state, c=configs, t=tmp_path)
    done = run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], env=APT_ENV)
    if done.returncode != 0 and "Operation not permitted" in done.stderr:
        pytest.skip("no mount namespace here: %s" % done.stderr.strip())
    assert done.returncode == 0, done.stderr

    def auth_lines(name):
        return [l.split() for l in (tmp_path / name).read_text().splitlines() if l.startswith("auth")]

    assert "pam_fingerauth.so" not in (tmp_path / "after-package").read_text()  # Default: no
    enabled = auth_lines("enabled")
    assert enabled[0] == ["auth", "[success=2", "default=ignore]", "pam_fingerauth.so"]
    assert enabled[1][:4] == ["auth", "[success=1", "default=ignore]", "pam_unix.so"]
    # prompt = parallel hands a typed password on as PAM_AUTHTOK: pam_unix must take it.
    assert "try_first_pass" in enabled[1], enabled[1]
    assert (tmp_path / "removed").read_text() == original
    assert (Path("/etc/pam.d/common-auth")).read_text() == original  # the real one never changed
    observe("--package: not enabled; --enable: %s, then %s; --remove: common-auth as before" % (" ".join(enabled[0][1:]), " ".join(enabled[1][1:])))


def test_lintian_finds_no_error_and_no_warning_but_those_the_package_overrides(deb, observe):
    """package: lintian on the built .deb -> no error, no warning left; each override is named in docs/howto/install.md"""
    if shutil.which("lintian") is None:
        pytest.skip("lintian is not installed (make e2e installs it)")
    done = run(["lintian", "--fail-on", "error,warning", "--tag-display-limit", "0", deb])
    assert done.returncode == 0 and not re.search(r"^[EW]: ", done.stdout, re.M), done.stdout + done.stderr
    # Again with the overridden tags shown (lintian then exits 2 for them: not a failure).
    shown = run(["lintian", "--tag-display-limit", "0", "--show-overrides", "--display-info", deb])
    tags = [line for line in shown.stdout.splitlines() if re.match(r"^[EWIPXO]: ", line)]
    assert not [line for line in tags if line[0] in "EW"], shown.stdout
    overridden = sorted({line.split()[2] for line in tags if line.startswith("O: ")})
    overrides = (REPO / "packaging" / "debian" / "lintian-overrides").read_text()
    named = sorted({line.split()[1] for line in overrides.splitlines() if line.startswith("fingerauth: ")})
    assert overridden == named, (overridden, named)  # every override is still needed
    guide = (REPO / "docs" / "howto" / "install.md").read_text()
    assert all("`%s`" % tag in guide for tag in named), named
    observe("lintian: 0 errors, 0 warnings; overridden (docs/howto/install.md says why): %s; %d info tags"
            % (", ".join(named), sum(1 for line in tags if line.startswith("I: "))))


def test_the_install_guide_names_every_package_the_deb_depends_on(deb, observe):
    """package: the Depends of the built .deb (computed from the binaries' NEEDED) -> docs/howto/install.md's list, no more, no less"""
    depends = run(["dpkg-deb", "--field", deb, "Depends"]).stdout
    wanted = sorted({part.split()[0] for part in depends.split(",") if part.strip()})
    guide = (REPO / "docs" / "howto" / "install.md").read_text()
    found = re.search(r"^Depends \(what `make deb` computes\): (.*?)\.$", guide, re.M | re.S)
    assert found, "docs/howto/install.md: no 'Depends (what `make deb` computes): ….' line"
    listed = sorted(re.findall(r"`([a-z0-9][a-z0-9.+-]*)`", found.group(1)))
    assert listed == wanted, (listed, wanted)
    observe("docs/howto/install.md lists the %d packages of Depends" % len(wanted))
