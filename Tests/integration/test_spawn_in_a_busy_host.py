"""The module starts fingerauth-pam with clone(CLONE_VM | CLONE_VFORK): the child runs in
the host's memory until it executes. A host with a thread of its own and a signal handler
(sudo and the display managers have both) is tried while a signal storm hits its process
group, as a terminal being resized does: SIGWINCH every few microseconds, its handler
installed without SA_RESTART. The host's handler must never run in the child (it would
write into the host's memory from another process), every slow call the module makes must
survive EINTR, and each login must end as it does without the storm."""

import subprocess

from support.fakeauth import closed_port_url

# A command prefix for World.login: the harness in a session of its own (the storm goes to
# its process group only), with --signal-storm after its other arguments.
STORM = ("sh", "-c", 'exec setsid --wait "$@" --signal-storm', "sh")


def storm_counts(stdout):
    """(sent, handled in the host, handled in another process) from the STORM line."""
    [line] = [line for line in stdout.splitlines() if line.startswith("STORM ")]
    sent, handled, elsewhere = (int(field) for field in line.split()[1:])
    return sent, handled, elsewhere


def test_a_fingerprint_login_succeeds_in_a_signal_storm(world):
    world.enroll("alice", "finger-A")
    login = world.login("alice", scans=["finger-A"], service=world.service("fa-only", fallback=False),
                        wrap=STORM)
    assert login.name == "PAM_SUCCESS", login.stdout
    sent, handled, elsewhere = storm_counts(login.stdout)
    assert sent > 20 and handled > 0, login.stdout
    assert elsewhere == 0, "the host's signal handler ran in its child %d times" % elsewhere


def test_falling_over_in_a_signal_storm_ends_as_without_it(world):
    """Twenty logins with the authenticator unreachable, in one host: each ends in the
    password fall-over's code, with the module's reason, and the handler stays the host's."""
    world.enroll("alice", "finger-A")
    world.write_conf(url=closed_port_url() + "/v1/login")
    service = world.service("fa-only", fallback=False)
    harness = [str(world.build / "fa-pamtest"), "--confdir", str(world.confdir), "--service", service,
               "--user", "alice", "--repeat", "20"]
    calm = subprocess.run(harness[:-1] + ["1"], env=world.env, capture_output=True, text=True, timeout=60)
    [expected] = [line for line in calm.stdout.splitlines() if line.startswith("RESULT")]
    assert expected != "RESULT 0 PAM_SUCCESS", calm.stdout
    done = subprocess.run(list(STORM) + harness, env=world.env, capture_output=True, text=True, timeout=300)
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert results == [expected] * 20, done.stdout + done.stderr
    sent, handled, elsewhere = storm_counts(done.stdout)
    assert sent > 200 and handled > 0, done.stdout
    assert elsewhere == 0, "the host's signal handler ran in its child %d times" % elsewhere
    unreachable = [line for line in world.log_lines() if "unreachable" in line or "cannot connect" in line]
    assert unreachable, world.log_lines()[-5:]


def test_a_host_without_standard_input_and_error_still_logs_in(world):
    """A daemon-like host runs with descriptors 0 and 2 closed: the module's pipes then get
    those numbers, and the spawn must move them out of the way before it sets up the
    child's 0 to 3 (with /dev/null as standard error)."""
    world.enroll("alice", "finger-A")
    login = world.login("alice", scans=["finger-A"], service=world.service("fa-only", fallback=False),
                        wrap=("sh", "-c", 'exec "$@" 0<&- 2>&-', "sh"))
    assert login.name == "PAM_SUCCESS", login.stdout
    assert any("result=PAM_SUCCESS" in line for line in world.log_lines()), world.log_lines()[-3:]
