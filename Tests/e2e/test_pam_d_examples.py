"""The example stacks in pam.d/, as an admin would install them, through real libpam
(fa-pamtest over pam_start_confdir) with this machine's real common-* files copied next
to them and a real test user with a real password: the finger logs in without a password,
a wrong finger falls to the password (or, for the fingerprint-only GDM service, fails).
Only the module path and conf= are filled in; nothing in /etc/pam.d is read or changed."""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "pam.d"
# service: (PAM_RHOST, does a wrong finger fall over to the password?)
CASES = {"sudo": (None, True), "sudo-i": (None, True), "login": (None, True),
         "sshd": ("127.0.0.1", True), "gdm-fingerprint": (None, False)}


@pytest.fixture
def confdir(install, user, tmp_path):
    d = tmp_path / "pam.d"
    d.mkdir()
    for common in Path("/etc/pam.d").glob("common-*"):
        shutil.copy(common, d / common.name)
    for name in CASES:
        text = (EXAMPLES / name).read_text()
        assert text.count("pam_fingerauth.so") >= 1
        (d / name).write_text(text.replace(" pam_fingerauth.so", " %s conf=%s" % (install.module, install.conf)))
    install.enroll(user, "finger-right")
    return d


def pam_login(install, confdir, service, user, fingers, rhost):
    install.feed(*fingers)
    cmd = [str(install.build / "fa-pamtest"), "--confdir", str(confdir), "--service", service,
           "--user", user.name, "--password", user.password]
    if rhost:
        cmd += ["--rhost", rhost]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    finally:
        install.fed()
    lines = done.stdout.replace(user.password, "***").splitlines()
    result = [l.split()[2] for l in lines if l.startswith("RESULT")]
    assert result, done.stdout + done.stderr
    return result[-1], [l for l in lines if l.startswith("PROMPT")], lines


@pytest.mark.parametrize("service", sorted(CASES))
def test_example_stack_finger_then_password(confdir, install, user, service, observe):
    """pam.d examples: each stack logs in with the finger and no prompt; a wrong finger goes to the password (gdm-fingerprint: refused)"""
    rhost, falls_over = CASES[service]
    code, prompts, _ = pam_login(install, confdir, service, user, ["finger-right"], rhost)
    assert (code, prompts) == ("PAM_SUCCESS", []), (service, code, prompts)
    wrong, wrong_prompts, lines = pam_login(install, confdir, service, user, ["finger-wrong"] * 3, rhost)
    if falls_over:
        assert wrong == "PAM_SUCCESS" and wrong_prompts == ["PROMPT Password: "], (service, lines)
    else:
        assert wrong == "PAM_MAXTRIES" and wrong_prompts == [], (service, lines)
    observe("%s: finger -> %s, no prompt; wrong finger x3 -> %s %s" % (service, code, wrong, wrong_prompts or "(no prompt)"))
