/* Starting the login helper from inside a PAM host: clone(CLONE_VM | CLONE_VFORK), then
 * only async-signal-safe calls in the child, then execveat of a descriptor the module
 * opened and checked. */
#ifndef FINGERAUTH_SPAWN_H
#define FINGERAUTH_SPAWN_H
#include <sys/types.h>

/* Starts (clone, as vfork) and executes the file open as `exec_fd` (O_PATH) with `argv` and an empty
 * environment. In the child: default signal dispositions and an empty mask; a session and
 * process group of its own (setsid); when the host runs with effective uid 0 (a setuid
 * host such as chfn or su), no supplementary groups and root as real, effective and saved
 * uid and gid, so that the caller cannot signal or trace it; the working directory "/",
 * no core files, an 8 MiB stack, 1024 descriptors, no other resource limit, nice 0 and
 * normal scheduling, whatever the caller set; PR_SET_PDEATHSIG(SIGKILL) set
 * after that change (a credential change clears it) and the parent checked to be alive;
 * standard input from `stdin_fd`, standard output to `stdout_fd`, standard error to
 * /dev/null, the executable at descriptor 3 (scripts are run through /dev/fd/3), every
 * other descriptor closed.
 * Returns the child's pid, or -1 with errno set when the clone failed. A child that cannot set
 * itself up exits with status 127 before executing anything. */
pid_t fa_spawn_helper(int exec_fd, char *const argv[], int stdin_fd, int stdout_fd);

#endif
