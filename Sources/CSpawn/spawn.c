#define _GNU_SOURCE
#include "fa_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

#define MIB (1024UL * 1024UL)

/* One resource limit, soft and hard, with the raw system call (no libc state). Raising a
 * hard limit needs CAP_SYS_RESOURCE: without it, the soft limit goes as far as the hard one
 * allows. */
static void set_limit(int resource, rlim_t soft, rlim_t hard) {
    struct rlimit limit = { soft, hard };
    struct rlimit now;
    if (syscall(SYS_prlimit64, 0, resource, &limit, NULL) == 0) return;
    if (syscall(SYS_prlimit64, 0, resource, NULL, &now) != 0) return;
    limit.rlim_max = now.rlim_max;
    limit.rlim_cur = soft < now.rlim_max ? soft : now.rlim_max;
    (void)syscall(SYS_prlimit64, 0, resource, &limit, NULL);
}

/* What a root helper must not take from an unprivileged caller of a setuid host, who sets
 * their own limits, working directory and priority before running sudo, su or chfn:
 * - the working directory: "/", so that nothing (a core file, a relative path) lands in a
 *   folder of the caller's;
 * - RLIMIT_CORE 0: no core file of a process that holds a key and a fresh token;
 * - RLIMIT_STACK 8 MiB: an unlimited stack selects the legacy memory layout (mmap base
 *   fixed low, less address randomisation), a tiny one crashes the helper;
 * - the limits a caller lowers to make the helper fail midway (open files, address space,
 *   data, file size, CPU time, processes, locked memory, signals, message queues) set back:
 *   its own deadlines bound it;
 * - nice 0, the I/O class derived from it, SCHED_OTHER, the default timer slack: a caller
 *   at nice 19 or SCHED_IDLE would make its deadlines pass for it.
 * Each is a plain system call. Failures are ignored: raising a hard limit needs
 * CAP_SYS_RESOURCE, and a helper started by a non-root caller (fingerauth test) runs with
 * that caller's rights. */
static void reset_inherited_state(void) {
    static const int unlimited[] = { RLIMIT_AS, RLIMIT_DATA, RLIMIT_FSIZE, RLIMIT_CPU, RLIMIT_NPROC,
                                     RLIMIT_MEMLOCK, RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE, RLIMIT_LOCKS, RLIMIT_RSS };
    struct sched_param normal = { 0 };
    if (chdir("/") != 0) _exit(127);
    set_limit(RLIMIT_CORE, 0, 0);
    set_limit(RLIMIT_STACK, 8 * MIB, 8 * MIB);
    set_limit(RLIMIT_NOFILE, 1024, 1024);
    for (size_t i = 0; i < sizeof unlimited / sizeof unlimited[0]; i++) set_limit(unlimited[i], RLIM_INFINITY, RLIM_INFINITY);
    (void)syscall(SYS_setpriority, PRIO_PROCESS, 0, 0);
    (void)syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0, 0 /* IOPRIO_CLASS_NONE: from nice */);
    (void)syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, &normal);
    (void)prctl(PR_SET_TIMERSLACK, 50000UL, 0, 0, 0);
}

/* Only async-signal-safe calls from here on: the host may have other threads (a display
 * manager does), and one of them may have held a lock at the moment of the fork. */
static void child(int exec_fd, char *const argv[], int stdin_fd, int stdout_fd, pid_t parent) {
    struct sigaction dfl;
    sigset_t none;
    char *const empty_environment[] = { NULL };
    int null_fd;

    for (int s = 1; s < NSIG; s++) {
        dfl.sa_handler = SIG_DFL;
        dfl.sa_flags = 0;
        sigemptyset(&dfl.sa_mask);
        (void)sigaction(s, &dfl, NULL); /* SIGKILL, SIGSTOP and libc's own fail: fine */
    }
    sigemptyset(&none);
    if (sigprocmask(SIG_SETMASK, &none, NULL) != 0) _exit(127);

    if (setsid() < 0) _exit(127);
    if (geteuid() == 0) {
        if (setgroups(0, NULL) != 0) _exit(127);
        if (setresgid(0, 0, 0) != 0) _exit(127);
        if (setresuid(0, 0, 0) != 0) _exit(127);
    }
    reset_inherited_state();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) _exit(127);
    if (getppid() != parent) _exit(127);

    /* Move the three descriptors out of the way of 0..3 first: in a daemon-like host the
     * pipes themselves may have been given numbers 0, 1 or 2. */
    exec_fd = fcntl(exec_fd, F_DUPFD, 10);
    stdin_fd = fcntl(stdin_fd, F_DUPFD, 10);
    stdout_fd = fcntl(stdout_fd, F_DUPFD, 10);
    null_fd = open("/dev/null", O_WRONLY);
    if (exec_fd < 0 || stdin_fd < 0 || stdout_fd < 0 || null_fd < 0) _exit(127);
    if (dup2(stdin_fd, 0) < 0 || dup2(stdout_fd, 1) < 0 || dup2(null_fd, 2) < 0 || dup2(exec_fd, 3) < 0) _exit(127);
    if (syscall(SYS_close_range, 4U, ~0U, 0U) != 0) {
        for (int fd = 4; fd < 65536; fd++) (void)close(fd);
    }
    syscall(SYS_execveat, 3, "", argv, empty_environment, AT_EMPTY_PATH);
    _exit(127);
}

pid_t fa_spawn_helper(int exec_fd, char *const argv[], int stdin_fd, int stdout_fd) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) child(exec_fd, argv, stdin_fd, stdout_fd, parent);
    return pid;
}
