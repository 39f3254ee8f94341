"""`make install` and `make uninstall` into a DESTDIR: the layout and modes an admin gets,
an existing configuration never overwritten, and uninstall removing exactly what install
added while keeping an edited configuration (and saying so)."""

import os
import stat
import subprocess
from pathlib import Path

from support.authd import build_dir

REPO = Path(__file__).resolve().parents[2]
MULTIARCH = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip()
EXPECTED = {
    "lib/%s/security/pam_fingerauth.so" % MULTIARCH: 0o644,
    "usr/libexec/fingerauth/fingerauth-pam": 0o755,
    "usr/libexec/fingerauth/fingerauth-login": 0o755,
    "usr/bin/fingerauth": 0o755,
    "usr/sbin/fingerauthd": 0o755,
    "etc/security/fingerauth.conf": 0o644,
    "usr/share/pam-configs/fingerauth": 0o644,
    "usr/share/man/man8/pam_fingerauth.8.gz": 0o644,
    "usr/share/man/man5/fingerauth.conf.5.gz": 0o644,
    "usr/share/man/man8/fingerauthd.8.gz": 0o644,
    "usr/libexec/fingerauth/fingerauth-agent": 0o755,
    "lib/systemd/system/fingerauth-agent.socket": 0o644,
    "lib/systemd/system/fingerauth-agent.service": 0o644,
    "lib/systemd/system/fingerauth-sync.service": 0o644,
    "lib/systemd/system/fingerauth-sync.timer": 0o644,
    "usr/share/man/man8/fingerauth-agent.8.gz": 0o644,
    "usr/libexec/fingerauth/fingerauth-watcher": 0o755,
    "lib/systemd/system/fingerauth-watcher.service": 0o644,
    "usr/share/man/man8/fingerauth-watcher.8.gz": 0o644,
}


def make(target, destdir):
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), target, "NOBUILD=1",
                           "BUILD=" + os.path.abspath(build_dir()), "DESTDIR=" + str(destdir)],
                          capture_output=True, text=True, timeout=120)


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*") if not p.is_dir())


def test_install_then_uninstall_in_a_destdir(tmp_path, observe):
    """install: make install DESTDIR -> FHS layout, root-owned modes, conf kept on reinstall; make uninstall keeps only an edited conf"""
    dest = tmp_path / "root"
    done = make("install", dest)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "The module is NOT enabled" in done.stdout
    for path, mode in EXPECTED.items():
        st = os.stat(dest / path)
        assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (mode, 0, 0), path
    assert stat.S_IMODE(os.stat(dest / "var/lib/fingerauth").st_mode) == 0o700
    assert (dest / "etc/security/fingerauth.conf").read_bytes() == (REPO / "packaging/fingerauth.conf").read_bytes()
    installed = files_under(dest)

    conf = dest / "etc/security/fingerauth.conf"
    conf.write_text(conf.read_text() + "url = https://auth.example.com/v1/login\n")
    again = make("install", dest)
    assert again.returncode == 0 and "keeping the existing /etc/security/fingerauth.conf" in again.stdout
    assert conf.read_text().endswith("url = https://auth.example.com/v1/login\n")

    removed = make("uninstall", dest)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert "kept /etc/security/fingerauth.conf: it differs from the shipped one" in removed.stdout
    assert files_under(dest) == ["etc/security/fingerauth.conf"]

    conf.write_bytes((REPO / "packaging/fingerauth.conf").read_bytes())  # back to the shipped text
    make("install", dest)
    assert make("uninstall", dest).returncode == 0
    assert files_under(dest) == []
    observe("%d files installed; edited conf kept by reinstall and uninstall; unchanged conf removed" % len(installed))
