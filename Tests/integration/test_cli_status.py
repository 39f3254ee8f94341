"""`fingerauth status`: the checklist through the built binary, with each blocking line
produced by a real cause (no reader, world-readable key, authenticator down, revoked key)."""

import json
import os
import shutil
import signal
import subprocess
import time

from support.cli import CHECK_NAMES, enroll, run, status_checks, status_lines


def status(world, *extra, user="alice"):
    return run(world, "status", "--user", user, "--pam-dir", str(world.confdir), *extra)


def pam_directory(world, name, files):
    """A pam.d directory of the test's own: {service: text}."""
    pam = world.tmp / name
    pam.mkdir()
    for service, text in files.items():
        (pam / service).write_text(text)
    return pam


def ready_world(world):
    enroll(world)
    world.service("fa-test")


def test_everything_in_place_is_ready(world):
    ready_world(world)
    done = status(world)
    assert done.returncode == 0, done.stdout
    assert done.stderr == ""
    lines = status_lines(done.stdout)
    assert list(lines) == CHECK_NAMES
    assert done.stdout.splitlines()[0] == "fingerauth status for alice"
    assert done.stdout.splitlines()[-1] == "fingerprint login for alice: ready"
    assert lines["reader"] == ("ok", "Virtual device for debugging (driver virtual_device)")
    assert lines["enrolled"] == ("ok", "right-index-finger")
    assert lines["key"][1].endswith("root, mode 600, RSA-3072, kid " + world.kid("alice"))
    assert lines["authenticator"] == ("ok", "%s/healthz answered 200; TLS certificate valid" % world.authd.url)
    assert lines["clock"][0] == "ok" and lines["clock"][1].startswith("skew +0 s against the authenticator's Date")
    assert lines["pam"] == ("ok", "fa-test")
    assert lines["policy"] == ("ok", "the authenticator's policy allows alice's finger at fa-test")
    assert lines["registered"] == ("ok", "key %s is active at the authenticator" % world.kid("alice"))
    assert all(row["event"] != "login" for row in world.authd.audit_rows())  # status never logs in


def test_status_json_is_one_entry_per_check(world):
    ready_world(world)
    done = status(world, "--json")
    assert done.returncode == 0 and done.stderr == ""
    document = json.loads(done.stdout)
    assert document["user"] == "alice" and document["ready"] is True
    assert [c["name"] for c in document["checks"]] == CHECK_NAMES
    for check in document["checks"]:
        assert set(check) == {"name", "status", "detail", "fix"}
        assert check["status"] in ("pass", "warn")


def test_no_reader_fails_the_reader_line(world):
    ready_world(world)
    world.write_conf(virtual_reader=None)
    done = status(world)
    assert done.returncode == 1 and done.stderr == ""
    mark, text = status_lines(done.stdout)["reader"]
    assert mark == "FAIL" and text == "No fingerprint reader found (no reader configured as virtual_reader)"
    assert "fix: connect a fingerprint reader libfprint supports" in done.stdout
    assert done.stdout.splitlines()[-1] == "fingerprint login for alice: blocked by reader"


def test_world_readable_key_fails_the_key_line(world):
    ready_world(world)
    key = world.paths("alice")[2]
    os.chmod(key, 0o644)
    done = status(world, "--json")
    assert done.returncode == 1 and done.stderr == ""
    check = status_checks(done.stdout)["key"]
    assert check["status"] == "fail"
    assert check["detail"] == "%s: mode 644 is too open" % key
    assert check["fix"].startswith("chown root:root %s && chmod 600 %s; if others could read it, replace it" % (key, key))
    assert json.loads(done.stdout)["ready"] is False


def test_authenticator_down_fails_its_line_and_skips_the_clock(world):
    ready_world(world)
    world.authd.stop()
    done = status(world)
    assert done.returncode == 1 and done.stderr == ""
    lines = status_lines(done.stdout)
    assert lines["authenticator"][0] == "FAIL"
    assert lines["authenticator"][1].startswith("%s/healthz: cannot connect to the authenticator" % world.authd.url)
    assert "fix: start the authenticator or correct url" in done.stdout
    assert lines["clock"] == ("skip", "no answer from the authenticator to compare clocks with")
    assert lines["registered"][0] == "warn" and lines["registered"][1].endswith("the authenticator cannot be asked now")


def test_wrong_ca_fails_the_authenticator_line_as_tls(world):
    ready_world(world)
    world.write_conf(cafile="/etc/ssl/certs/ca-certificates.crt")
    done = status(world, "--json")
    assert done.returncode == 1
    check = status_checks(done.stdout)["authenticator"]
    assert check["status"] == "fail" and "TLS failure with the authenticator" in check["detail"]
    assert check["fix"].startswith("set cafile = the CA that signed")


def test_revoked_key_fails_the_registered_line(world):
    ready_world(world)
    kid = world.kid("alice")
    assert run(world, "revoke", "--user", "alice").returncode == 0
    done = status(world)
    assert done.returncode == 1 and done.stderr == ""
    mark, text = status_lines(done.stdout)["registered"]
    assert mark == "FAIL" and text.startswith("key %s was revoked (recorded in " % kid)
    assert "fix: fingerauth key rotate --user alice" in done.stdout


def test_key_revoked_by_the_admin_fails_the_check(world):
    """A revocation made on the authenticator (`fingerauthd keys revoke`) shows here too."""
    ready_world(world)
    kid = world.kid("alice")
    world.authd.revoke(kid)
    done = status(world, "--json")
    assert done.returncode == 1
    check = status_checks(done.stdout)["registered"]
    assert check["status"] == "fail" and check["detail"] == "key %s is revoked at the authenticator" % kid
    assert check["fix"] == "fingerauth key rotate --user alice"


def test_not_enrolled_and_no_pam_service(world):
    done = run(world, "status", "--user", "bob", "--pam-dir", str(world.tmp / "empty-pam.d"))
    assert done.returncode == 1 and done.stderr == ""
    lines = status_lines(done.stdout)
    assert lines["enrolled"] == ("FAIL", "bob has no enrolled fingers")
    assert lines["key"][0] == "FAIL" and lines["key"][1].endswith("device.key does not exist")
    assert lines["registered"] == ("skip", "no usable device key")
    assert lines["pam"][0] == "FAIL"
    # Debian's way first, the by-hand line for chosen services second.
    fix = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith("fix: once")]
    assert fix == ["fix: once `fingerauth test --user USER` succeeds: pam-auth-update --enable fingerauth; or by hand, "
                   "for chosen services: add the line from `fingerauth pam-line sudo` to %s/sudo (before @include common-auth)"
                   % (world.tmp / "empty-pam.d")], done.stdout
    assert done.stdout.splitlines()[-1] == "fingerprint login for bob: blocked by enrolled, key, pam"


def test_pam_services_that_include_a_file_with_the_module_are_listed(world):
    ready_world(world)
    pam = pam_directory(world, "pam-include", {
        "common-auth": "auth sufficient pam_fingerauth.so\nauth required pam_unix.so\n",
        "sudo": "#%PAM-1.0\n@include common-auth\n",
        "login": "# pam_fingerauth.so commented out\nauth required pam_unix.so\n"})
    done = run(world, "status", "--user", "alice", "--pam-dir", str(pam), "--json")
    assert status_checks(done.stdout)["pam"]["detail"] == "common-auth, sudo (via common-auth)"


def test_a_running_fprintd_is_reported(world):
    ready_world(world)
    fake = world.tmp / "fprintd"
    shutil.copy("/bin/sleep", fake)
    proc = subprocess.Popen([str(fake), "30"])
    try:
        time.sleep(0.1)
        done = status(world)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=5)
    mark, text = status_lines(done.stdout)["fprintd"]
    assert mark == "warn" and text.startswith("running (pid %d)" % proc.pid)
    assert done.returncode == 0  # the reader could still be opened: a warning, not a block


def test_broken_configuration_fails_the_config_line_and_skips_the_rest(world):
    world.conf_path.write_text("url = https://example.invalid/v1/login\nbogus = 1\n")
    done = run(world, "status", "--user", "alice", "--json", "--pam-dir", str(world.confdir))
    assert done.returncode == 1 and done.stderr == ""
    checks = status_checks(done.stdout)
    assert checks["config"]["status"] == "fail" and "bogus" in checks["config"]["detail"]
    assert [checks[n]["status"] for n in CHECK_NAMES[1:-3]] == ["skip"] * 12
    assert checks["sessions"]["status"] == "skip" and checks["offline"]["status"] == "skip"


def test_a_typo_in_a_key_names_the_key_meant_and_where_the_keys_are(world):
    """`timout = 5`: the module turns the finger off at sudo (the password still works);
    status fails its config line with the file, line and key, the key meant, and the page
    where every key is."""
    ready_world(world)
    world.conf_path.write_text(world.conf_path.read_text().replace("timeout = 5", "timout = 5"))
    done = status(world)
    assert done.returncode == 1 and done.stderr == ""
    lines = done.stdout.splitlines()
    [at] = [i for i, line in enumerate(lines) if line.startswith("[FAIL] config")]
    line_number = world.conf_path.read_text().splitlines().index("timout = 5") + 1
    assert lines[at] == ("[FAIL] config         configuration: %s:%d: timout: unknown key; did you mean `timeout`? "
                         "(fix it in %s; the keys: fingerauth.conf(5))" % (world.conf_path, line_number, world.conf_path))
    assert lines[at + 1].strip() == ("fix: correct it in %s (every key: man 5 fingerauth.conf); until then the module "
                                     "turns fingerprint login off and logins go on to the password" % world.conf_path)
    assert lines[-1] == "fingerprint login for alice: blocked by config"
    # A word nothing is near: no guess.
    world.conf_path.write_text(world.conf_path.read_text().replace("timout = 5", "colour = blue"))
    detail = status_checks(status(world, "--json").stdout)["config"]["detail"]
    assert detail.endswith(": colour: unknown key (fix it in %s; the keys: fingerauth.conf(5))" % world.conf_path)


def status_as_root(world, *extra, sudo_user=None):
    """`fingerauth status` as root with no --user, with SUDO_USER set to `sudo_user` or unset."""
    env = {k: v for k, v in world.env.items() if k != "SUDO_USER"}
    if sudo_user is not None:
        env["SUDO_USER"] = sudo_user
    return subprocess.run([str(world.build / "fingerauth"), "status", "--pam-dir", str(world.confdir), *extra,
                           "--config", str(world.conf_path)], env=env, capture_output=True, text=True, timeout=60)


def test_root_through_sudo_checks_the_user_who_ran_sudo_and_says_so(world):
    ready_world(world)
    done = status_as_root(world, sudo_user="alice")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "fingerauth status for alice (who ran sudo; --user NAME checks another)"
    assert status_lines(done.stdout)["enrolled"] == ("ok", "right-index-finger")
    assert lines[-1] == "fingerprint login for alice: ready"
    # --user still wins over SUDO_USER, and the first line then says nothing more.
    other = status_as_root(world, "--user", "bob", sudo_user="alice")
    assert other.stdout.splitlines()[0] == "fingerauth status for bob"


def test_root_itself_is_asked_which_user_instead_of_failing_roots_own_login(world):
    """Before: root's own checklist, [FAIL] enrolled and key, "blocked", exit 1 on a host
    where alice's fingerprint login was ready."""
    ready_world(world)
    for sudo_user in (None, "root"):
        done = status_as_root(world, sudo_user=sudo_user)
        assert (done.returncode, done.stdout) == (2, ""), done
        assert done.stderr == (
            "fingerauth: status as root checks one user's fingerprint login: which one? fingerauth status --user NAME\n"
            "  (from that user's account, `sudo fingerauth status` checks them)\n"
            "  users with FingerAuth state here: alice\n"), done.stderr
    # A configuration that cannot be read is said at once, too.
    world.conf_path.write_text(world.conf_path.read_text().replace("timeout = 5", "timout = 5"))
    done = status_as_root(world, "--json")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1].startswith("  and the configuration: %s:" % world.conf_path)
    assert "timout: unknown key; did you mean `timeout`?" in done.stderr


def test_group_writable_configuration_is_unsafe(world):
    ready_world(world)
    os.chmod(world.conf_path, 0o664)
    done = status(world)
    assert done.returncode == 1 and done.stderr == ""
    mark, text = status_lines(done.stdout)["config"]
    assert mark == "FAIL" and text == "configuration: %s: mode 664 is too open; fix: chown root:root %s && chmod 644 %s" % (
        world.conf_path, world.conf_path, world.conf_path)


def test_configuration_without_url_fails_the_config_line(world):
    ready_world(world)
    world.write_conf(url=None)
    done = status(world, "--json")
    checks = status_checks(done.stdout)
    assert done.returncode == 1
    assert checks["config"]["status"] == "fail" and checks["config"]["detail"] == "%s: url is not set" % world.conf_path
    assert [checks[n]["status"] for n in ("registered", "authenticator", "clock", "policy")] == ["skip"] * 4


def test_unknown_user_is_an_error_not_a_checklist(world):
    done = status(world, user="mallory")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "fingerauth: no such user: mallory (check the name, or create the account first)\n"


def test_a_session_stack_without_the_modules_session_line_is_warned_about(world):
    """sshd starts an audit session (pam_loginuid) but does not record it as remote: a sudo in
    it that unsets the SSH variables on a fresh pty would arm the local reader."""
    ready_world(world)
    pam = pam_directory(world, "pam-session", {
        "common-auth": "auth sufficient pam_fingerauth.so\nauth required pam_unix.so\n",
        "common-session": "session required pam_unix.so\n",
        "sshd": "@include common-auth\nsession required pam_loginuid.so\n@include common-session\n",
        "sudo": "@include common-auth\n@include common-session\n"})
    done = run(world, "status", "--user", "alice", "--pam-dir", str(pam), "--json")
    check = status_checks(done.stdout)["pam"]
    assert check["status"] == "warn", check
    assert "but sshd start sessions (pam_loginuid) without the module's session line" in check["detail"], check
    assert check["fix"].startswith("add `session optional pam_fingerauth.so` after pam_loginuid.so in %s/sshd" % pam)
    assert done.returncode == 0  # a warning does not block fingerprint login

    # With the session line in common-session (as pam-auth-update writes it): no warning.
    (pam / "common-session").write_text("session required pam_unix.so\nsession optional pam_fingerauth.so\n")
    done = run(world, "status", "--user", "alice", "--pam-dir", str(pam), "--json")
    assert status_checks(done.stdout)["pam"]["status"] == "pass", done.stdout


def test_parallel_prompt_warns_about_a_password_module_that_would_ask_again(world):
    """prompt = parallel hands the typed password on: pam_unix takes it (with or without
    try_first_pass); another password module without try_first_pass would ask again."""
    ready_world(world)
    pam = pam_directory(world, "pam-parallel", {
        "common-auth": "auth [success=2 default=ignore] pam_unix.so nullok\nauth [success=1 default=ignore] pam_sss.so\n"
                       "auth requisite pam_deny.so\nauth required pam_permit.so\n",
        "sudo": "#%PAM-1.0\nauth sufficient pam_fingerauth.so\n@include common-auth\n"})
    done = run(world, "status", "--user", "alice", "--pam-dir", str(pam), "--json")
    assert status_checks(done.stdout)["pam"]["status"] == "pass", done.stdout  # sequential: nothing to say

    world.write_conf(prompt="parallel")
    done = run(world, "status", "--user", "alice", "--pam-dir", str(pam), "--json")
    check = status_checks(done.stdout)["pam"]
    assert check["status"] == "warn", check
    assert "asked again by sudo: pam_sss (no try_first_pass)" in check["detail"], check
    assert "pam_unix" not in check["detail"].split("asked again by")[1]
    assert check["fix"] == "add try_first_pass to those lines, or set prompt = sequential"
    assert done.returncode == 0

    (pam / "common-auth").write_text((pam / "common-auth").read_text().replace("pam_sss.so", "pam_sss.so use_first_pass"))
    done = run(world, "status", "--user", "alice", "--pam-dir", str(pam), "--json")
    assert status_checks(done.stdout)["pam"]["status"] == "pass", done.stdout


def test_status_says_which_mode_the_local_seat_rule_runs_in(world):
    """No logind here: records mode, a one-line warning that points to where its limits are
    written. With /run/systemd/system present (a /run of the command's own): logind mode."""
    from support.private_run import private_run, run_folder
    ready_world(world)
    done = status(world, "--json")
    check = status_checks(done.stdout)["sessions"]
    assert check["status"] == "warn", check
    assert check["detail"] == ("records mode (no logind on this host): remote logins are told by PAM_RHOST, the session "
                               "records in /run/fingerauth/sessions and utmp; it sees less than logind mode "
                               "(pam_fingerauth(8), LOCAL SEAT)"), check
    assert check["fix"] is None
    assert done.returncode == 0
    lines = status(world).stdout.splitlines()
    [at] = [i for i, line in enumerate(lines) if line.startswith("[warn] sessions")]
    assert len(lines[at].split()) <= 40 and lines[at + 1].startswith("[")  # one line, no fix under it

    run_dir = run_folder(world)
    (run_dir / "systemd" / "system").mkdir(parents=True)
    done = subprocess.run(private_run(run_dir) + [str(world.build / "fingerauth"), "status", "--user", "alice", "--json",
                                                  "--pam-dir", str(world.confdir), "--config", str(world.conf_path)],
                          env=world.env, capture_output=True, text=True, timeout=60)
    check = status_checks(done.stdout)["sessions"]
    assert check["status"] == "pass", check
    assert check["detail"] == ("logind mode: the reader is armed only for a login in an active, local seat session "
                               "(pam_fingerauth(8), LOCAL SEAT)"), check
