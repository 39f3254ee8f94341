"""A command with a /run of the test's own: a private mount namespace (`unshare --mount`)
in which a folder of the test is bind-mounted over /run, so that the module reads
/run/utmp and /run/systemd/… as the test laid them out, at their real paths. Nothing
outside that one command sees the change."""

import os
import struct

USER_PROCESS = 7


def private_run(folder, script=""):
    """The command prefix: `script` (shell lines) runs inside, after the mount and before
    the command is executed in its place."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind "$0" /run || exit 91\n%s\nexec "$@"' % script, str(folder)]


def run_folder(world, name="run"):
    folder = world.tmp / name
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    return folder


def utmp_entry(ut_type, line, host, pid=4242, user="alice"):
    """One glibc `struct utmp` (x86_64, 384 bytes) as login and sshd write it."""
    return struct.pack("<h2xi32s4s32s256shhiii16s20s", ut_type, pid, line.encode(), line[-4:].encode(),
                       user.encode(), host.encode(), 0, 0, 0, 0, 0, b"", b"")


def write_utmp(path, entries, mode, uid=0, gid=0):
    path.write_bytes(b"".join(utmp_entry(*entry) for entry in entries))
    os.chown(path, uid, gid)
    os.chmod(path, mode)
