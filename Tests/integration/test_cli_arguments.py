"""One command-line grammar for every program: `fingerauth`, `fingerauthd`,
`fingerauth-agent` and the login helper's own arguments refuse a repeated option, an
unknown one, a switch with a value and a stray word with the same words (each adds only
its own prefix and usage), exit 2 (the helper: `FAIL usage`), and print a command's usage
for `--help` after any command or subcommand."""

import os
import subprocess

import pytest

from support.authd import build_dir

BUILD = build_dir()

# Every fingerauthd command, as its usage names it.
DAEMON_COMMANDS = [["serve"], ["audit"], ["doctor"], ["token", "create"], ["token", "list"], ["token", "revoke"],
                   ["keys", "list"], ["keys", "approve"], ["keys", "revoke"], ["policy", "list"], ["policy", "add"],
                   ["policy", "remove"], ["policy", "move"], ["policy", "test"], ["hosts", "list"], ["hosts", "label"],
                   ["hosts", "unlabel"], ["hosts", "add-ek"], ["hosts", "reset-ek"], ["hosts", "keys"],
                   ["hosts", "revoke-key"], ["users", "list"], ["users", "add"],
                   ["users", "remove"], ["admin", "create"], ["admin", "reset"], ["admin", "remove"], ["admin", "list"]]


def run(program, *args):
    """The built `program` with `args`, an empty environment, no standard input."""
    return subprocess.run([os.path.join(BUILD, program), *args], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=30, env={})


# (program and words, where the refusal is printed, what it says before and after the shared words)
REPEATED = [
    (["fingerauth", "list", "--user", "alice", "--user", "bob"], "stderr", "fingerauth: ", "\nusage: fingerauth list"),
    (["fingerauth", "pam-line", "sudo", "--json", "--json"], "stderr", "fingerauth: ", "\nusage: fingerauth pam-line"),
    (["fingerauth", "enroll", "--finger=left-thumb", "--finger", "right-thumb"], "stderr", "fingerauth: ",
     "\nusage: fingerauth enroll"),
    (["fingerauthd", "keys", "list", "--user", "alice", "--user=bob"], "stderr", "fingerauthd: keys list: ", "\n"),
    (["fingerauthd", "serve", "--listen", "127.0.0.1:0", "--listen", "127.0.0.1:0"], "stderr", "fingerauthd: serve: ", "\n"),
    (["fingerauthd", "hosts", "add-ek", "h", "a" * 64, "--replace", "--replace"], "stderr", "fingerauthd: hosts add-ek: ", "\n"),
    (["fingerauth-agent", "--config", "/etc/a.conf", "--config", "/etc/b.conf"], "stderr", "fingerauth-agent: ",
     "\nusage: fingerauth-agent"),
    (["fingerauth-login", "--user", "alice", "--state-dir", "/tmp", "--state-dir", "/var/tmp"], "stdout", "FAIL usage ", "\n"),
]


@pytest.mark.parametrize("words,stream,before,after", REPEATED, ids=[" ".join(case[0][:2]) for case in REPEATED])
def test_a_repeated_option_is_refused_alike_by_every_program(words, stream, before, after):
    """Which of two values was meant cannot be told: every program refuses the second one
    (the command line used to keep the last one, the agent too) in the same words."""
    done = run(*words)
    name = [w.split("=")[0] for w in words if w.startswith("--")][-1][2:]
    text = getattr(done, stream)
    assert done.returncode == 2, (words, done.stdout, done.stderr)
    assert text.startswith(before + "--%s given twice; give it once" % name + after), text


@pytest.mark.parametrize("words,stream,expected", [
    (["fingerauth", "list", "--colour"], "stderr", "fingerauth: unknown option --colour\nusage: fingerauth list"),
    (["fingerauth", "list", "--json=yes"], "stderr", "fingerauth: --json takes no value\nusage: fingerauth list"),
    (["fingerauth", "list", "--user"], "stderr", "fingerauth: --user needs a value\nusage: fingerauth list"),
    (["fingerauthd", "keys", "list", "--colour"], "stderr",
     "fingerauthd: keys list: unknown option --colour; see 'fingerauthd keys list --help'\n"),
    (["fingerauthd", "keys", "list", "--json=yes"], "stderr", "fingerauthd: keys list: --json takes no value\n"),
    (["fingerauthd", "keys", "list", "alice"], "stderr",
     "fingerauthd: keys list: unexpected argument 'alice'; see 'fingerauthd keys list --help'\n"),
    (["fingerauth-agent", "--colour"], "stderr", "fingerauth-agent: unknown option --colour\nusage: fingerauth-agent"),
    (["fingerauth-agent", "--stderr=yes"], "stderr", "fingerauth-agent: --stderr takes no value\nusage: fingerauth-agent"),
    (["fingerauth-agent", "--config", "etc/fingerauth.conf"], "stderr",
     "fingerauth-agent: --config needs an absolute path\nusage: fingerauth-agent"),
    (["fingerauth-login", "--colour"], "stdout", "FAIL usage unknown option --colour; usage: fingerauth-login --user USER"),
    (["fingerauth-login", "alice"], "stdout", "FAIL usage unexpected argument 'alice'; usage: fingerauth-login --user USER"),
])
def test_other_mistakes_are_worded_alike(words, stream, expected):
    done = run(*words)
    assert done.returncode == 2 and getattr(done, stream).startswith(expected), (done.stdout, done.stderr)


@pytest.mark.parametrize("words", DAEMON_COMMANDS, ids=" ".join)
def test_help_after_every_fingerauthd_command_prints_its_usage(words):
    for tail in (["--help"], ["-h"], ["--db", "/nonexistent/db", "--help"]):
        done = run("fingerauthd", *words, *tail)
        assert done.returncode == 0 and done.stderr == "", (words, tail, done.stderr)
        assert done.stdout.startswith("Usage:\n  fingerauthd " + " ".join(words)), done.stdout
        assert "Exit status: " in done.stdout
    assert "  fingerauthd " + " ".join(words) in run("fingerauthd", "--help").stdout


@pytest.mark.parametrize("group", ["token", "keys", "policy", "hosts", "users", "admin"])
def test_help_after_a_group_prints_each_of_its_commands(group):
    """`fingerauthd admin --help` used to answer "unknown command 'admin --help'"."""
    done = run("fingerauthd", group, "--help")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    for words in DAEMON_COMMANDS:
        assert (("  fingerauthd " + " ".join(words)) in done.stdout) == (words[0] == group), (words, done.stdout)
    assert run("fingerauthd", "help", group).stdout == done.stdout


def test_a_group_without_or_with_an_unknown_command_names_its_commands():
    missing = run("fingerauthd", "keys")
    assert missing.returncode == 2
    assert missing.stderr == "fingerauthd: keys needs a command (keys: list, approve, revoke); see 'fingerauthd keys --help'\n"
    unknown = run("fingerauthd", "keys", "frob")
    assert unknown.returncode == 2
    assert unknown.stderr == ("fingerauthd: unknown command 'keys frob' (keys: list, approve, revoke); "
                              "see 'fingerauthd keys --help'\n")
    assert run("fingerauthd", "frob").stderr == "fingerauthd: unknown command 'frob'; see 'fingerauthd --help'\n"


@pytest.mark.parametrize("words,usage", [
    (["fingerauth", "key", "create", "--help"], "usage: fingerauth key"),
    (["fingerauth", "key", "ek", "-h"], "usage: fingerauth key"),
    (["fingerauth", "list", "--user", "alice", "--help"], "usage: fingerauth list"),
    (["fingerauth", "pam-line", "sudo", "--help"], "usage: fingerauth pam-line"),
    (["fingerauth-agent", "--stderr", "--help"], "usage: fingerauth-agent"),
])
def test_help_after_a_command_of_the_host_programs(words, usage):
    done = run(*words)
    assert done.returncode == 0 and done.stderr == "" and done.stdout.startswith(usage), (done.stdout, done.stderr)
