"""`fingerauth list`, `remove`, `pam-line`, `--help` of every command, usage mistakes and
the root requirement, through the built binary."""

import json

import pytest

from support.cli import enroll, run
from support.vreader import enroll_commands

COMMANDS = ["enroll", "list", "remove", "key", "register", "revoke", "reset", "test", "status", "pam-line"]


def test_list_prints_fingers_as_text_and_json(world):
    enroll(world, "alice", "finger-A", "--no-register")
    run(world, "enroll", "--user", "alice", "--finger", "left-thumb", "--no-register", feed=enroll_commands("finger-A"))
    text = run(world, "list", "--user", "alice")
    assert text.returncode == 0 and text.stderr == ""
    assert text.stdout == "left-thumb\nright-index-finger\n"
    document = run(world, "list", "--user", "alice", "--json")
    assert json.loads(document.stdout) == {"user": "alice", "fingers": ["left-thumb", "right-index-finger"]}
    none = run(world, "list", "--user", "bob")
    assert none.returncode == 0 and none.stderr == ""
    assert none.stdout == "bob has no enrolled fingers (enroll one: fingerauth enroll --user bob)\n"


def test_remove_one_finger_then_all(world):
    enroll(world, "alice", "finger-A", "--no-register")
    run(world, "enroll", "--user", "alice", "--finger", "left-thumb", "--no-register", feed=enroll_commands("finger-A"))
    one = run(world, "remove", "--user", "alice", "--finger", "left-thumb")
    assert one.returncode == 0 and one.stderr == "" and one.stdout == "removed left-thumb for alice\n"
    missing = run(world, "remove", "--user", "alice", "--finger", "left-thumb")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr == "fingerauth: alice has no print for left-thumb (enrolled: right-index-finger)\n"
    everything = run(world, "remove", "--user", "alice", "--all")
    assert everything.returncode == 0 and everything.stderr == ""
    assert everything.stdout == ("removed right-index-finger for alice\n"
                                 "alice has no enrolled fingers left: fingerprint login is off for alice\n")
    assert world.paths("alice")[2].exists()  # the key stays


@pytest.mark.parametrize("args,message", [
    ([], "say which print to remove: --finger NAME or --all"),
    (["--finger", "left-thumb", "--all"], "--finger and --all cannot be used together"),
    (["--finger", "tail"], "unknown finger 'tail'"),
])
def test_remove_usage_mistakes_exit_2(world, args, message):
    done = run(world, "remove", "--user", "alice", *args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("fingerauth: %s\nusage: fingerauth remove" % message)


def test_pam_line_carries_the_configured_url_and_file(world):
    done = run(world, "pam-line", "sudo")
    assert done.returncode == 0 and done.stderr == ""
    line, comment = done.stdout.splitlines()
    assert line == "auth  sufficient  pam_fingerauth.so  url=%s/v1/login  conf=%s" % (world.authd.url, world.conf_path)
    assert comment.startswith("# /etc/pam.d/sudo: put it before the password (@include common-auth)")
    document = json.loads(run(world, "pam-line", "sshd", "--json").stdout)
    assert document["service"] == "sshd" and document["file"] == "/etc/pam.d/sshd" and document["line"] == line
    assert "remote=allow" in document["placement"]
    bad = run(world, "pam-line", "../etc/shadow")
    assert bad.returncode == 2 and bad.stderr.startswith("fingerauth: '../etc/shadow' is not a PAM service name\n")
    extra = run(world, "pam-line", "sudo", "login")
    assert extra.returncode == 2 and extra.stderr.startswith("fingerauth: unexpected argument 'login'\n")


def test_pam_line_without_a_url_says_what_to_configure(world):
    world.write_conf(url=None)
    done = run(world, "pam-line")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("fingerauth: configuration: ") and "url" in done.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_exit_codes(world, command):
    done = run(world, command, "--help")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("usage: fingerauth " + command)
    assert "xit status" in done.stdout


def test_top_level_help_and_unknown_command(world):
    done = run(world, "--help")
    assert done.returncode == 0 and done.stderr == ""
    for command in COMMANDS:
        assert "\n  %s " % command in done.stdout
    unknown = run(world, "frobnicate")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.startswith("fingerauth: unknown command 'frobnicate'\n")
    option = run(world, "list", "--colour")
    assert option.returncode == 2 and option.stderr.startswith("fingerauth: unknown option --colour\nusage: fingerauth list")


# `status` is not among them: run as a user it checks that user's screen-locker path (the
# configuration and fingerauth-agent; test_agent.py::test_cli_status_as_the_user_checks_the_agent).
@pytest.mark.parametrize("args", [["enroll"], ["list"], ["remove", "--all"], ["key", "show"], ["key", "rotate"],
                                  ["register"], ["revoke"], ["reset"], ["test"]])
def test_commands_that_need_root_say_so(world, args):
    done = run(world, *args, "--user", "alice", uid=5001)
    assert done.returncode == 1 and done.stdout == ""
    name = " ".join(args[:2]) if args[0] == "key" else args[0]
    assert done.stderr == ("fingerauth: fingerauth %s must run as root: it reads and writes root-only files under "
                           "the state directory (try: sudo fingerauth %s)\n" % (name, name))


def test_unknown_user_and_bad_state_dir(world):
    done = run(world, "list", "--user", "mallory")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == "fingerauth: no such user: mallory (check the name, or create the account first)\n"
    relative = run(world, "list", "--user", "alice", "--state-dir", "relative/dir")
    assert relative.returncode == 1 and "state_dir" in relative.stderr and "absolute path" in relative.stderr
