#define _GNU_SOURCE
#include "fa_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

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
