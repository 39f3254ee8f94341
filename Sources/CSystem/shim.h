/* glibc functions that Swift's Glibc module hides because it is built without
 * _GNU_SOURCE. The prototypes below match glibc 2.36's; each wrapper only forwards. */
#ifndef FINGERAUTH_CSYSTEM_SHIM_H
#define FINGERAUTH_CSYSTEM_SHIM_H
#include <termios.h>
#include <locale.h>
#include <libintl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <fcntl.h>
#include <utmp.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <string.h>
#include <errno.h>
#include <syslog.h>
#include <sys/stat.h>
#include <dirent.h>
#include <pwd.h>
#include <grp.h>
#include <time.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/file.h>

extern size_t strnlen(const char *s, size_t maxlen);
extern int pipe2(int pipefd[2], int flags);
extern ssize_t getrandom(void *buffer, size_t length, unsigned int flags);

/* The calls Swift code would otherwise name through the Glibc module, which the module's
 * Embedded build does not have: errno as a value, the variadic open(2), and the calls
 * whose names a Swift method of the same name hides (close, read, write, poll, kill). */
static inline int fa_errno(void) { return errno; }
static inline int fa_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }
static inline int fa_openat(int dirfd, const char *path, int flags, mode_t mode) {
    return openat(dirfd, path, flags, mode);
}
static inline int fa_close(int fd) { return close(fd); }
static inline ssize_t fa_read(int fd, void *buffer, size_t count) { return read(fd, buffer, count); }
static inline ssize_t fa_write(int fd, const void *buffer, size_t count) { return write(fd, buffer, count); }
static inline int fa_poll(struct pollfd *fds, nfds_t count, int timeout) { return poll(fds, count, timeout); }
static inline int fa_kill(pid_t pid, int signal) { return kill(pid, signal); }
/* flock(2): C names a struct (fcntl.h) and a function (sys/file.h) flock. */
static inline int fa_flock(int fd, int operation) { return flock(fd, operation); }

/* pipe2(2): a pipe whose ends are close-on-exec from the start. */
static inline int fa_pipe2(int fds[2], int flags) { return pipe2(fds, flags); }
/* getrandom(2) from the kernel's CSPRNG. */
static inline ssize_t fa_getrandom(void *buffer, size_t length) { return getrandom(buffer, length, 0); }
/* O_PATH (010000000 on Linux) is hidden without _GNU_SOURCE. */
static inline int fa_o_path(void) { return 010000000; }
/* closefrom(3) (glibc >= 2.34), hidden without _GNU_SOURCE. */
extern void closefrom(int lowfd);
static inline void fa_closefrom(int lowfd) { closefrom(lowfd); }
/* fcntl(fd, F_SETFL, flags): fcntl is variadic. */
static inline int fa_fcntl_setfl(int fd, int flags) { return fcntl(fd, F_SETFL, flags); }
/* strnlen(3): length of a C string from outside, bounded. */
static inline size_t fa_strnlen(const char *s, size_t maxlen) { return strnlen(s, maxlen); }
/* pidfd_open(2) (Linux 5.3): a descriptor that becomes readable when the process ends, so
 * that a parent can wait for a child with poll and a deadline; -1 with errno set when the
 * kernel has no such call or the process is gone. syscall(2) is variadic. */
static inline int fa_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    return (int)syscall(434, pid, 0);
#endif
}
/* pidfd_send_signal(2) (Linux 5.1): `signal` (0: only the check) to exactly the process the
 * pidfd names; -1 with errno ESRCH once it has been reaped, whoever reaped it, even if its
 * pid now belongs to another process. */
static inline int fa_pidfd_send_signal(int pidfd, int signal) {
#ifdef SYS_pidfd_send_signal
    return (int)syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, 0);
#else
    return (int)syscall(424, pidfd, signal, NULL, 0);
#endif
}
/* renameat2(2) with RENAME_NOREPLACE (Linux 3.15; tmpfs, ext4, xfs, btrfs): moves `from` to
 * `to` only when nothing is named `to`, atomically; -1 with errno EEXIST when something is.
 * A new file is thus complete, locked and of its final mode before another process can
 * open it under its name. Through syscall(2), which is variadic. */
static inline int fa_renameat_noreplace(int fromdir, const char *from, int todir, const char *to) {
#ifdef SYS_renameat2
    return (int)syscall(SYS_renameat2, fromdir, from, todir, to, 1U);
#else
    return (int)syscall(316, fromdir, from, todir, to, 1U);
#endif
}
/* PR_SET_DUMPABLE 0: no core file, and /proc/<pid> of this process is root's only. An
 * execve resets it, so the helper sets it itself (prctl(2) is variadic). */
static inline int fa_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
/* Reaps the child that `pidfd` names, if it has ended (waitid(P_PIDFD), Linux 5.4): 1 and
 * `*status` as waitpid(2) would give it, 0 while it runs, -1 with errno set (ECHILD: it was
 * reaped by someone else). Unlike waitpid(pid), it can never reap another child that was
 * given the same pid after the host reaped this one. */
static inline int fa_reap_pidfd(int pidfd, int *status) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid((idtype_t)3 /* P_PIDFD */, (id_t)pidfd, &info, WEXITED | WNOHANG) != 0) return -1;
    if (info.si_pid == 0) return 0;
    *status = info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8 : (info.si_status & 0x7f);
    return 1;
}
/* waitid(P_PID, pid, WEXITED|WNOHANG|WNOWAIT): 0 while `pid` is our child and not yet
 * reaped (running or a zombie), -1 (ECHILD) once someone reaped it. Reaps nothing. */
static inline int fa_child_not_reaped(pid_t pid) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT);
}

/* Unix stream sockets for fingerauth-agent and its clients. sockaddr_un and struct ucred
 * are awkward from Swift (a fixed char array; ucred is hidden without _GNU_SOURCE), so the
 * address is built here. A Unix socket is libc: the PAM module uses fa_unix_connect to
 * reach the agent and nothing else of the network. */

/* A SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK socket connected to `path`; -1 with errno set
 * (ENAMETOOLONG for a path that does not fit). A non-blocking connect to a Unix socket
 * either completes at once or fails (EAGAIN: the listener's backlog is full). */
static inline int fa_unix_connect(const char *path) {
    struct sockaddr_un addr;
    size_t length = strnlen(path, sizeof addr.sun_path);
    if (length >= sizeof addr.sun_path) { errno = ENAMETOOLONG; return -1; }
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, path, length);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* A listening SOCK_STREAM|SOCK_CLOEXEC socket bound to `path` (which must not exist). */
static inline int fa_unix_listen(const char *path, int backlog) {
    struct sockaddr_un addr;
    size_t length = strnlen(path, sizeof addr.sun_path);
    if (length >= sizeof addr.sun_path) { errno = ENAMETOOLONG; return -1; }
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, path, length);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, backlog) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* accept4(2) with SOCK_CLOEXEC|SOCK_NONBLOCK (accept4 is hidden without _GNU_SOURCE). */
extern int accept4(int fd, struct sockaddr *addr, socklen_t *length, int flags);
static inline int fa_accept(int fd) { return accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK); }

/* The peer's credentials (SO_PEERCRED), as the kernel recorded them at connect. */
struct fa_ucred { pid_t pid; uid_t uid; gid_t gid; };
static inline int fa_peer_credentials(int fd, pid_t *pid, uid_t *uid) {
    struct fa_ucred cred;
    socklen_t length = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, 17 /* SO_PEERCRED */, &cred, &length) != 0 || length != sizeof cred) return -1;
    *pid = cred.pid;
    *uid = cred.uid;
    return 0;
}

/* SIGPIPE ignored, for a process that writes to pipes its reader may close (signal(2)'s
 * SIG_IGN is a macro that Embedded Swift cannot import). */
static inline void fa_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

/* send(2) without SIGPIPE when the peer has gone. */
static inline ssize_t fa_send(int fd, const void *buffer, size_t length) {
    return send(fd, buffer, length, MSG_NOSIGNAL);
}

/* SOCK_STREAM listener test for socket activation: 1 when `fd` is a listening stream socket. */
static inline int fa_is_listening_stream(int fd) {
    int type = 0, listening = 0;
    socklen_t length = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM) return 0;
    length = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) != 0) return 0;
    return listening != 0;
}

/* syslog(3) is variadic: one fixed "%s" so that a message is never a format. */
static inline void fa_syslog(int priority, const char *message) { syslog(priority, "%s", message); }
static inline int fa_log_perror(void) { return LOG_PERROR; }
/* The agent's child asks for SIGIO (default action: terminate) when its client's socket
 * becomes readable or is hung up: a locker that goes away mid-scan then ends the login at
 * once (its helper goes with it, PR_SET_PDEATHSIG) instead of holding the reader until the
 * scan's deadline. `on` 0 turns it off again before the verdict is written. */
static inline int fa_signal_on_hangup(int fd, int on) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return -1;
    if (on && fcntl(fd, F_SETOWN, getpid()) != 0) return -1;
    return fcntl(fd, F_SETFL, on ? (flags | O_ASYNC) : (flags & ~O_ASYNC));
}
/* The approval watcher's notifier: from root to the user, for good (no supplementary groups,
 * real, effective and saved ids: setuid as root sets all three), then PR_SET_PDEATHSIG again (a credential change clears
 * it; prctl is variadic). 0, or -1 with errno. */
static inline int fa_become_user(uid_t uid, gid_t gid) {
    if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0) return -1;
    return prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
}
/* fork(2), for the agent's one process per client (the agent has no threads). */
static inline pid_t fa_fork(void) { return fork(); }
/* ioctl(TIOCSTI) of one byte: ioctl is variadic. Root with CAP_SYS_ADMIN may do it on any
 * terminal even where dev.tty.legacy_tiocsti = 0 (the login helper, prompt = parallel). */
static inline int fa_tty_inject_byte(int fd, char byte) { return ioctl(fd, TIOCSTI, &byte); }
/* The terminal's local modes, or -1: for "echo off and canonical" (a password read pending). */
static inline long fa_tty_lflag(int fd) {
    struct termios t;
    if (tcgetattr(fd, &t) != 0) return -1;
    return (long)t.c_lflag;
}
static inline long fa_tty_echo_flag(void) { return (long)ECHO; }
static inline long fa_tty_icanon_flag(void) { return (long)ICANON; }
/* dgettext of `msgid` in `domain` (catalogs under `dir`) for the messages locale
 * `localename`, on this thread only: newlocale + uselocale, so the host's global locale is
 * never changed (bindtextdomain binds our own domain only). A malloc'd copy, or NULL when
 * the locale is not installed. */
static inline char *fa_translate(const char *domain, const char *dir, const char *localename, const char *msgid) {
    locale_t loc = newlocale(LC_MESSAGES_MASK | LC_CTYPE_MASK, localename, (locale_t)0);
    if (loc == (locale_t)0) return NULL;
    bindtextdomain(domain, dir);
    locale_t old = uselocale(loc);
    const char *text = dgettext(domain, msgid);
    char *copy = text != NULL ? strdup(text) : NULL;
    uselocale(old);
    freelocale(loc);
    return copy;
}
#endif
