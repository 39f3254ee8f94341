"""`fingerauthd init` and what `serve` says about its database's directory. init, as root,
makes the state directory owned by the service's user, fills in the configuration, and
makes an ECDSA P-256 certificate (self-signed or signed by a CA) whose key belongs to that
user; `serve` run as that user then answers over TLS with it. `serve` refuses a missing
directory, one of another user (root's serve on the service's directory: the case that
left a root-owned database behind), and a database file of another user, naming the fix.

The service's user is `nobody` (nothing on the machine changes); everything lives in a
folder under /tmp that nobody can reach, removed at the end."""

import datetime
import os
import pwd
import shlex
import shutil
import socket
import ssl
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.x509.oid import ExtendedKeyUsageOID

from support.authd import build_dir
from support.tls import make_ca

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "packaging" / "systemd" / "fingerauthd.conf"
NOBODY = pwd.getpwnam("nobody")


@pytest.fixture
def place():
    """A folder the service's user can reach (pytest's own is root's 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="fingerauth-init."))
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def fingerauthd(*args, as_nobody=False, timeout=60):
    cmd = [os.path.join(build_dir(), "fingerauthd"), *args]
    if as_nobody:
        cmd = ["setpriv", "--reuid", str(NOBODY.pw_uid), "--regid", str(NOBODY.pw_gid), "--clear-groups"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def init(place, *extra):
    return fingerauthd("init", "--config", str(place / "fingerauthd.conf"), "--db", str(place / "state" / "authd.db"),
                       "--tls-cert", str(place / "tls" / "cert.pem"), "--tls-key", str(place / "tls" / "key.pem"),
                       "--user", "nobody", *extra)


def owner_mode(path):
    st = os.lstat(path)
    return st.st_uid, stat.S_IMODE(st.st_mode)


class Served:
    """`fingerauthd serve --config` as nobody on a free loopback port, stopped at the end."""

    def __init__(self, config):
        cmd = ["setpriv", "--reuid", str(NOBODY.pw_uid), "--regid", str(NOBODY.pw_gid), "--clear-groups",
               os.path.join(build_dir(), "fingerauthd"), "serve", "--config", str(config), "--listen", "127.0.0.1:0"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("listening on https://127.0.0.1:"), line + self.stop()
        self.port = int(line.rsplit(":", 1)[1])

    def healthz(self, cafile, server_hostname):
        context = ssl.create_default_context(cafile=str(cafile))
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as raw:
            with context.wrap_socket(raw, server_hostname=server_hostname) as tls:
                tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                answer = b""
                while chunk := tls.recv(4096):
                    answer += chunk
        return answer.split(b"\r\n", 1)[0].decode()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        _, err = self.proc.communicate(timeout=20)
        return err


def test_init_makes_the_state_directory_config_and_a_self_signed_p256_certificate_that_serve_uses(place):
    shutil.copy(SHIPPED, place / "fingerauthd.conf")  # as the package ships it
    done = init(place, "--name", "127.0.0.1", "--self-signed", "--listen", "127.0.0.1:8443")
    assert done.returncode == 0, done.stdout + done.stderr
    assert owner_mode(place / "state") == (NOBODY.pw_uid, 0o700)
    assert owner_mode(place / "tls" / "key.pem") == (NOBODY.pw_uid, 0o600)
    assert owner_mode(place / "tls" / "cert.pem") == (0, 0o644)
    assert owner_mode(place / "fingerauthd.conf") == (0, 0o644)
    conf = (place / "fingerauthd.conf").read_text()
    assert "listen = 127.0.0.1:8443\n" in conf and "audience = https://127.0.0.1:8443/v1/login\n" in conf
    assert "auth.example.com" not in conf and "0.0.0.0" not in conf
    assert "# approval = automatic" in conf  # the shipped comments stay
    for line in ("state directory %s: created, nobody's, mode 0700" % (place / "state"),
                 "certificate %s: ECDSA P-256, self-signed, for the address 127.0.0.1, valid 365 days" % (place / "tls" / "cert.pem"),
                 "            without systemd: runuser -u nobody -- fingerauthd serve --config %s" % (place / "fingerauthd.conf"),
                 "      url = https://127.0.0.1:8443/v1/login"):
        assert line in done.stdout.splitlines(), done.stdout

    cert = x509.load_pem_x509_certificate((place / "tls" / "cert.pem").read_bytes())
    key = cert.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"
    assert cert.issuer == cert.subject
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == x509.ExtendedKeyUsage(
        [ExtendedKeyUsageOID.SERVER_AUTH])
    assert (cert.not_valid_after - cert.not_valid_before) >= datetime.timedelta(days=365)

    served = Served(place / "fingerauthd.conf")
    try:
        assert served.healthz(place / "tls" / "cert.pem", "127.0.0.1") == "HTTP/1.1 200 OK"
    finally:
        served.stop()
    assert owner_mode(place / "state" / "authd.db")[0] == NOBODY.pw_uid

    # init again (as after a reinstall): what is there is kept, and said so once.
    again = init(place, "--name", "127.0.0.1", "--self-signed")
    assert again.returncode == 0, again.stdout + again.stderr
    assert x509.load_pem_x509_certificate((place / "tls" / "cert.pem").read_bytes()) == cert
    expiry = cert.not_valid_after.strftime("%Y-%m-%d")
    for line in ("state directory %s: nobody's already, mode 0700" % (place / "state"),
                 "certificate %s: kept (made before): ECDSA P-256, self-signed, for the address 127.0.0.1, valid until %s; "
                 "--force makes a new one" % (place / "tls" / "cert.pem", expiry),
                 "key %s: kept, nobody's already, mode 0600" % (place / "tls" / "key.pem"),
                 "configuration %s: as it was" % (place / "fingerauthd.conf")):
        assert line in again.stdout.splitlines(), again.stdout
    assert "already, now" not in again.stdout


def test_init_after_a_purge_and_reinstall_reuses_the_kept_certificate_and_fixes_the_shipped_config(place):
    """What a purge keeps (/etc/fingerauthd, the state directory) and a reinstall brings back
    (the shipped configuration): the README's init line works again, as it did the first time."""
    shutil.copy(SHIPPED, place / "fingerauthd.conf")
    first = init(place, "--name", "127.0.0.1", "--self-signed", "--listen", "127.0.0.1:8443")
    assert first.returncode == 0, first.stdout + first.stderr
    cert = (place / "tls" / "cert.pem").read_bytes()
    shutil.copy(SHIPPED, place / "fingerauthd.conf")  # the purge deleted it, the reinstall shipped it
    os.chown(place / "tls" / "key.pem", 0, 0)  # a user made again: the key's owner is stale
    os.chmod(place / "state", 0o755)

    again = init(place, "--name", "127.0.0.1", "--self-signed", "--listen", "127.0.0.1:8443")
    assert again.returncode == 0, again.stdout + again.stderr
    assert (place / "tls" / "cert.pem").read_bytes() == cert
    assert owner_mode(place / "tls" / "key.pem") == (NOBODY.pw_uid, 0o600)
    assert owner_mode(place / "state") == (NOBODY.pw_uid, 0o700)
    lines = again.stdout.splitlines()
    assert "state directory %s: nobody's already, mode now 0700 (was 0755)" % (place / "state") in lines, again.stdout
    assert "key %s: kept, was root's, now nobody's, mode 0600" % (place / "tls" / "key.pem") in lines, again.stdout
    assert any(line.startswith("certificate %s: kept (made before): ECDSA P-256, self-signed, for the address 127.0.0.1"
                               % (place / "tls" / "cert.pem")) for line in lines), again.stdout
    conf = (place / "fingerauthd.conf").read_text()
    assert "listen = 127.0.0.1:8443\n" in conf and "audience = https://127.0.0.1:8443/v1/login\n" in conf
    assert "auth.example.com" not in conf and "0.0.0.0" not in conf
    served = Served(place / "fingerauthd.conf")
    try:
        assert served.healthz(place / "tls" / "cert.pem", "127.0.0.1") == "HTTP/1.1 200 OK"
    finally:
        served.stop()


def test_init_on_a_certificate_for_another_name_stops_and_names_the_one_command_that_continues(place):
    first = init(place, "--name", "127.0.0.1", "--self-signed")
    assert first.returncode == 0, first.stdout + first.stderr
    cert = (place / "tls" / "cert.pem").read_bytes()
    conf = (place / "fingerauthd.conf").read_text()

    other = init(place, "--name", "localhost", "--self-signed")
    # What it did before it stopped (nothing the new name changes), then why and what continues.
    assert other.returncode == 1 and other.stdout == "state directory %s: nobody's already, mode 0700\n" % (
        place / "state"), other.stdout
    message = other.stderr.strip()
    command = ("fingerauthd init --config {p}/fingerauthd.conf --db {p}/state/authd.db --tls-cert {p}/tls/cert.pem "
               "--tls-key {p}/tls/key.pem --user nobody --name localhost --self-signed --force").format(p=place)
    assert message == (
        "fingerauthd: init: %s exists, but it is for '127.0.0.1', not localhost; to make a new key and certificate "
        "(each host's cafile copy must then be replaced too): %s" % (place / "tls" / "cert.pem", command)), message
    assert (place / "tls" / "cert.pem").read_bytes() == cert and (place / "fingerauthd.conf").read_text() == conf

    # The command it names, as written, continues.
    words = shlex.split(command)
    done = fingerauthd(*words[1:])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "certificate %s: ECDSA P-256, self-signed, for the name localhost, valid 365 days" % (
        place / "tls" / "cert.pem") in done.stdout.splitlines(), done.stdout
    renewed = x509.load_pem_x509_certificate((place / "tls" / "cert.pem").read_bytes())
    san = renewed.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    # The audience the hosts' tokens name stays (a flag would replace it); the hosts are told.
    assert "audience = https://127.0.0.1:8443/v1/login\n" in (place / "fingerauthd.conf").read_text()
    assert "      audience = https://127.0.0.1:8443/v1/login" in done.stdout.splitlines(), done.stdout

    # A CA's certificate is not reused for --self-signed, nor an expired or foreign key.
    (place / "tls" / "key.pem").unlink()
    missing = init(place, "--name", "localhost", "--self-signed")
    assert missing.returncode == 1 and "cannot reuse the certificate %s and its key %s" % (
        place / "tls" / "cert.pem", place / "tls" / "key.pem") in missing.stderr, missing.stderr
    assert missing.stderr.rstrip().endswith("--self-signed --force"), missing.stderr


@pytest.mark.parametrize("ca_key", ["ec", "rsa:2048"])
def test_init_signs_with_the_admins_ca_for_a_dns_name(place, tmp_path, ca_key):
    ca = make_ca(tmp_path / "ca", ca_key=ca_key)
    done = init(place, "--name", "localhost", "--ca-cert", ca.ca_cert, "--ca-key", ca.ca_key, "--audience", "fleet-a")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "signed by the CA %s, for the name localhost" % ca.ca_cert in done.stdout
    # What each host's configuration needs: the login URL, the audience (not the URL here), the CA.
    assert done.stdout.splitlines()[-3:] == ["      url = https://localhost:8443/v1/login", "      audience = fleet-a",
                                             "      cafile = %s   (a copy of that file on the host)" % ca.ca_cert]
    cert = x509.load_pem_x509_certificate((place / "tls" / "cert.pem").read_bytes())
    authority = x509.load_pem_x509_certificate(Path(ca.ca_cert).read_bytes())
    assert cert.issuer == authority.subject
    # The CA's signature over the certificate (Debian's python3-cryptography 38 has no
    # verify_directly_issued_by): raises when it does not verify.
    if ca_key == "ec":
        authority.public_key().verify(cert.signature, cert.tbs_certificate_bytes,
                                      ec.ECDSA(cert.signature_hash_algorithm))
    else:
        authority.public_key().verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(),
                                      cert.signature_hash_algorithm)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    # The shipped config was absent: init wrote one; listen stays the default of all addresses.
    conf = (place / "fingerauthd.conf").read_text()
    assert "listen = 0.0.0.0:8443\n" in conf and "audience = fleet-a\n" in conf
    served = Served(place / "fingerauthd.conf")
    try:
        assert served.healthz(ca.ca_cert, "localhost") == "HTTP/1.1 200 OK"
    finally:
        served.stop()


def test_serve_names_a_missing_directory_and_the_wrong_owner(place):
    done = init(place, "--name", "127.0.0.1", "--self-signed", "--listen", "127.0.0.1:0")
    assert done.returncode == 0, done.stderr
    config = str(place / "fingerauthd.conf")

    # root's serve on nobody's directory: it would leave a database nobody cannot open.
    as_root = fingerauthd("serve", "--config", config)
    assert as_root.returncode == 1 and not (place / "state" / "authd.db").exists()
    assert as_root.stderr.strip() == (
        "fingerauthd: serve: %s belongs to nobody, but serve runs as root: a database made now would be root's, and "
        "the service could not open it. Run it as nobody: runuser -u nobody -- fingerauthd serve --config %s"
        % (place / "state", config))

    missing = fingerauthd("serve", "--config", config, "--db", str(place / "nowhere" / "authd.db"), as_nobody=True)
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        "fingerauthd: serve: the database's directory %s does not exist: `fingerauthd init` makes it, owned by the "
        "service's user (under systemd, StateDirectory= in fingerauthd.service does)" % (place / "nowhere"))

    # What an earlier root serve left: a root-owned database in nobody's directory.
    (place / "state" / "authd.db").write_bytes(b"")
    left = fingerauthd("serve", "--config", config, as_nobody=True)
    assert left.returncode == 1
    assert "%s belongs to root, not to nobody who runs serve" % (place / "state" / "authd.db") in left.stderr
    fixed = init(place)
    assert "database file %s: was root's, now nobody's" % (place / "state" / "authd.db") in fixed.stdout, fixed.stdout
    assert owner_mode(place / "state" / "authd.db")[0] == NOBODY.pw_uid
    (place / "state" / "authd.db").unlink()
    served = Served(config)
    try:
        assert served.healthz(place / "tls" / "cert.pem", "127.0.0.1") == "HTTP/1.1 200 OK"
    finally:
        served.stop()


def test_init_leaves_a_shared_directory_alone_and_checks_its_words(place):
    shared = place / "shared"
    shared.mkdir()
    (shared / "notes.txt").write_text("someone else's\n")
    done = fingerauthd("init", "--config", str(place / "c.conf"), "--db", str(shared / "authd.db"), "--user", "nobody")
    assert done.returncode == 1 and "holds other files (notes.txt): give the database a directory of its own" in done.stderr
    assert owner_mode(shared)[0] == 0 and not (place / "c.conf").exists()

    for args, message in (
            (["--self-signed"], "init: a certificate needs --name"),
            (["--name", "127.0.0.1", "--ca-cert", "x.pem"], "init: --ca-cert and --ca-key go together"),
            (["--name", "bad name"], "init: --name must be a DNS name or a numeric IP address"),
            (["--name", "a.example", "--self-signed", "--days", "0"], "init: --days must be a whole number from 1 to 3650")):
        wrong = fingerauthd("init", "--config", str(place / "c.conf"), *args)
        assert wrong.returncode == 2 and message in wrong.stderr, (args, wrong.stderr)

    not_root = fingerauthd("init", "--config", str(place / "c.conf"), as_nobody=True)
    assert not_root.returncode == 1 and "init must run as root" in not_root.stderr
    unknown = fingerauthd("init", "--config", str(place / "c.conf"), "--user", "no-such-user-here")
    assert unknown.returncode == 1 and "no user 'no-such-user-here'" in unknown.stderr
    assert not (place / "c.conf").exists()
