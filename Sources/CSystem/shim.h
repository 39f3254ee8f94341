/* glibc functions that Swift's Glibc module hides because it is built without
 * _GNU_SOURCE. The prototypes below match glibc 2.36's; each wrapper only forwards. */
#ifndef FINGERAUTH_CSYSTEM_SHIM_H
#define FINGERAUTH_CSYSTEM_SHIM_H
#include <sys/types.h>
#include <fcntl.h>
#include <utmp.h>
#include <sys/syscall.h>
#include <unistd.h>

extern size_t strnlen(const char *s, size_t maxlen);
extern int pipe2(int pipefd[2], int flags);
extern ssize_t getrandom(void *buffer, size_t length, unsigned int flags);

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
#endif
