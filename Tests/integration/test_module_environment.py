"""The PAM host's environment belongs to the caller, and the module is Embedded Swift: it
carries no Swift runtime that would read `SWIFT_*` (the old static runtime printed its
help for SWIFT_DEBUG_HELP=YES, in any host, and acted on about twenty others). The only
variables the module itself asks for are the SSH ones (which can only add "remote") and
LC_ALL, LC_MESSAGES and LANG for the translations."""

import pathlib
import re
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]

# Every variable the Swift runtime shipped before (static, inside the module) read.
SWIFT_VARIABLES = {
    "SWIFT_DEBUG_HELP": "YES",
    "SWIFT_BACKTRACE": "enable=yes,interactive=no,output-to=stderr",
    "SWIFT_BINARY_COMPATIBILITY_VERSION": "0x50000",
    "SWIFT_DEBUG_CONCURRENCY_ENABLE_COOPERATIVE_QUEUES": "NO",
    "SWIFT_DEBUG_ENABLE_CACHE_PROTOCOL_CONFORMANCES_BY_TYPE_DESCRIPTOR": "YES",
    "SWIFT_DEBUG_ENABLE_COW_CHECKS": "YES",
    "SWIFT_DEBUG_ENABLE_LIB_PRESPECIALIZED_DESCRIPTOR_LOOKUP": "YES",
    "SWIFT_DEBUG_ENABLE_LIB_PRESPECIALIZED_LOGGING": "YES",
    "SWIFT_DEBUG_ENABLE_LIB_PRESPECIALIZED_METADATA": "YES",
    "SWIFT_DEBUG_ENABLE_MALLOC_SCRIBBLE": "YES",
    "SWIFT_DEBUG_ENABLE_METADATA_ALLOCATION_ITERATION": "YES",
    "SWIFT_DEBUG_ENABLE_METADATA_BACKTRACE_LOGGING": "YES",
    "SWIFT_DEBUG_ENABLE_TASK_SLAB_ALLOCATOR": "NO",
    "SWIFT_DEBUG_FAILED_TYPE_LOOKUP": "YES",
    "SWIFT_DEBUG_IMPLICIT_OBJC_ENTRYPOINT": "3",
    "SWIFT_DEBUG_LIB_PRESPECIALIZED_PATH": "/tmp/fa-caller-prespecialized",
    "SWIFT_DEBUG_VALIDATE_LIB_PRESPECIALIZED_DESCRIPTOR_LOOKUP": "YES",
    "SWIFT_DEBUG_VALIDATE_UNCHECKED_CONTINUATIONS": "YES",
    "SWIFT_DETERMINISTIC_HASHING": "1",
    "SWIFT_DUMP_ACCESSIBLE_FUNCTIONS": "YES",
    "SWIFT_ENABLE_MANGLED_NAME_VERIFICATION": "YES",
    "SWIFT_IS_CURRENT_EXECUTOR_LEGACY_MODE_OVERRIDE": "swift6",
    "SWIFT_ROOT": "/tmp/fa-caller-root",
}
# What the design lets the module read (ARCHITECTURE, "The processes").
ALLOWED = {"SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY", "LC_ALL", "LC_MESSAGES", "LANG"}


def masked(line):
    """A log line without what differs from one login to the next: times and the jti."""
    line = re.sub(r"\b(\w*ms)=\d+", r"\1=N", line)
    return re.sub(r"\bjti=\S+", "jti=J", line)


def test_swift_debug_help_prints_nothing_and_the_login_is_the_same(world):
    world.enroll("alice", "finger-A")
    plain = world.login("alice", scans=["finger-A"])
    plain_line = world.log_lines()[-1]
    cmd_env = dict(SWIFT_VARIABLES)
    swift = world.login("alice", scans=["finger-A"], env=cmd_env)
    swift_line = world.log_lines()[-1]
    assert swift.code == plain.code == 0
    assert (swift.infos, swift.errors, swift.prompts) == (plain.infos, plain.errors, plain.prompts)
    assert masked(swift_line) == masked(plain_line)
    assert "Swift runtime" not in swift.stdout and "SWIFT_" not in swift.stdout, swift.stdout


def test_swift_debug_help_in_a_host_that_only_loads_the_module(world, tmp_path):
    """A program that dlopens the module and nothing more: the old static runtime answered
    SWIFT_DEBUG_HELP=YES with its help on stderr."""
    source = tmp_path / "load.c"
    source.write_text(
        '#include <dlfcn.h>\n#include <stdio.h>\n'
        'int main(int argc, char **argv) {\n'
        '    void *module = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);\n'
        '    if (!module) { fprintf(stderr, "%s\\n", dlerror()); return 2; }\n'
        '    return dlsym(module, "pam_sm_authenticate") ? 0 : 3;\n}\n')
    program = tmp_path / "load"
    subprocess.run(["gcc", "-o", str(program), str(source), "-ldl"], check=True)
    done = subprocess.run([str(program), str(world.build / "pam_fingerauth.so")], capture_output=True, text=True,
                          env=dict(SWIFT_VARIABLES, PATH="/usr/bin:/bin"), timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == "", done.stdout + done.stderr


def test_the_module_reads_only_the_variables_the_design_names(world, tmp_path):
    world.enroll("alice", "finger-A")
    trace_lib = tmp_path / "getenv-trace.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(trace_lib),
                    str(REPO / "Tests" / "harness" / "getenv-trace.c"), "-ldl"], check=True)
    trace = tmp_path / "getenv.trace"
    # Beside the test world's own preloads (nss_wrapper for its users).
    preload = " ".join(filter(None, [str(trace_lib), world.env.get("LD_PRELOAD")]))
    env = dict(SWIFT_VARIABLES, LD_PRELOAD=preload, FA_GETENV_TRACE=str(trace), LANG="de_DE.UTF-8",
               SSLKEYLOGFILE=str(tmp_path / "keys.log"), HOME=str(tmp_path))
    login = world.login("alice", scans=["finger-A"], env=env)
    assert login.code == 0, login.stdout
    read = set(trace.read_text().split()) if trace.exists() else set()
    assert read, "the trace saw no read at all: the test would prove nothing"
    assert read <= ALLOWED, sorted(read - ALLOWED)
    assert {"LC_ALL", "LC_MESSAGES", "LANG"} <= read  # the translations ask, in this order, until one is set
