#define _GNU_SOURCE
#include "fa_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
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

/* Runs in the child, on a stack of its own but in the parent's memory (CLONE_VM): only
 * async-signal-safe calls, nothing written outside this stack but the calling thread's
 * errno, and the credentials changed with the raw system calls. glibc's setresuid() and
 * setgroups() would ask every thread of the parent to change too (its setxid broadcast);
 * its open() and close() are cancellation points, which act on the parent's thread. */
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
        if (syscall(SYS_setgroups, 0, NULL) != 0) _exit(127);
        if (syscall(SYS_setresgid, 0, 0, 0) != 0) _exit(127);
        if (syscall(SYS_setresuid, 0, 0, 0) != 0) _exit(127);
    }
    reset_inherited_state();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) _exit(127);
    if (getppid() != parent) _exit(127);

    /* Move the three descriptors out of the way of 0..3 first: in a daemon-like host the
     * pipes themselves may have been given numbers 0, 1 or 2. */
    exec_fd = fcntl(exec_fd, F_DUPFD, 10);
    stdin_fd = fcntl(stdin_fd, F_DUPFD, 10);
    stdout_fd = fcntl(stdout_fd, F_DUPFD, 10);
    /* /dev/null above the others too: in a host with 0, 1 or 2 closed it would get one of
     * those numbers, and a dup2 below would replace it before it is used. */
    null_fd = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_WRONLY);
    if (null_fd >= 0) null_fd = fcntl(null_fd, F_DUPFD, 10);
    if (exec_fd < 0 || stdin_fd < 0 || stdout_fd < 0 || null_fd < 0) _exit(127);
    if (dup2(stdin_fd, 0) < 0 || dup2(stdout_fd, 1) < 0 || dup2(null_fd, 2) < 0 || dup2(exec_fd, 3) < 0) _exit(127);
    if (syscall(SYS_close_range, 4U, ~0U, 0U) != 0) {
        for (int fd = 4; fd < 65536; fd++) (void)syscall(SYS_close, fd);
    }
    syscall(SYS_execveat, 3, "", argv, empty_environment, AT_EMPTY_PATH);
    _exit(127);
}

struct spawn_arguments {
    int exec_fd;
    char *const *argv;
    int stdin_fd;
    int stdout_fd;
    pid_t parent;
};

static int child_entry(void *argument) {
    struct spawn_arguments *a = argument;
    child(a->exec_fd, a->argv, a->stdin_fd, a->stdout_fd, a->parent);
    return 127;
}

#define CHILD_STACK_BYTES (64UL * 1024UL)

/* clone(CLONE_VM | CLONE_VFORK), as posix_spawn does: the host's page tables are not
 * copied (a fork of a display manager's 200 MB costs milliseconds), and the calling thread
 * waits until the child has executed the helper or exited. Every signal is blocked around
 * the clone, so that none of the host's handlers can run in the child before it has set
 * them back to the default. */
pid_t fa_spawn_helper(int exec_fd, char *const argv[], int stdin_fd, int stdout_fd) {
    struct spawn_arguments arguments = { exec_fd, argv, stdin_fd, stdout_fd, getpid() };
    sigset_t all, before;
    void *stack = mmap(NULL, CHILD_STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return -1;
    sigfillset(&all);
    if (pthread_sigmask(SIG_BLOCK, &all, &before) != 0) {
        (void)munmap(stack, CHILD_STACK_BYTES);
        return -1;
    }
    pid_t pid = clone(child_entry, (char *)stack + CHILD_STACK_BYTES, CLONE_VM | CLONE_VFORK | SIGCHLD, &arguments);
    int saved = errno;
    (void)pthread_sigmask(SIG_SETMASK, &before, NULL);
    (void)munmap(stack, CHILD_STACK_BYTES);
    errno = saved;
    return pid;
}
