/* Name resolution with a deadline: getaddrinfo(3) has none (glibc waits out resolv.conf's
 * own timeouts, 10 s and more with a silent name server). glibc's getaddrinfo_a (in libc
 * since 2.34) runs the lookup on a thread of its own and gai_suspend waits for it with a
 * timeout. Swift's Glibc module is built without _GNU_SOURCE, which hides both: the
 * declarations below match glibc 2.36's, under names of their own. */
#ifndef FINGERAUTH_CSYSTEM_RESOLVE_H
#define FINGERAUTH_CSYSTEM_RESOLVE_H
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct fa_gaicb {
    const char *ar_name;
    const char *ar_service;
    const struct addrinfo *ar_request;
    struct addrinfo *ar_result;
    int return_value;
    int reserved[5];
};
extern int fa_getaddrinfo_a(int mode, struct fa_gaicb *list[], int count, void *sigevent) __asm__("getaddrinfo_a");
extern int fa_gai_suspend(const struct fa_gaicb *const list[], int count, const struct timespec *timeout)
    __asm__("gai_suspend");
extern int fa_gai_error(struct fa_gaicb *request) __asm__("gai_error");
extern int fa_gai_cancel(struct fa_gaicb *request) __asm__("gai_cancel");
#define FA_GAI_NOWAIT 1
#define FA_EAI_INPROGRESS (-100)
#define FA_EAI_CANCELED (-101)
#define FA_EAI_ALLDONE (-103)

/* What fa_resolve returns when the time ran out before an answer. */
#define FA_RESOLVE_TIMED_OUT (-1000)

struct fa_resolve_request {
    struct fa_gaicb request;
    struct addrinfo hints;
    char host[256];
    char port[8];
};

static inline long fa_resolve_now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Addresses of `host` (a numeric address, else a name) for TCP port `port` into *out
 * (freeaddrinfo), waiting at most `timeout_ms`. 0 on success, an EAI_ code, or
 * FA_RESOLVE_TIMED_OUT. A numeric address needs no lookup and no thread. A lookup that
 * ran out is cancelled; when the resolver thread still works on it (gai_cancel cannot stop
 * a lookup in progress), its request is left to that thread rather than freed under it:
 * a few hundred bytes, once per timed-out lookup, in a process that then reports failure.
 * The wait goes in slices of 50 ms: *stalled_ms grows by the time a slice overran, the time
 * this process was not running (frozen, stopped, starved). */
static inline int fa_resolve(const char *host, const char *port, int timeout_ms, struct addrinfo **out,
                             long *stalled_ms) {
    struct addrinfo numeric;
    memset(&numeric, 0, sizeof numeric);
    numeric.ai_socktype = SOCK_STREAM;
    numeric.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    if (getaddrinfo(host, port, &numeric, out) == 0) return 0;
    *out = NULL;
    if (strlen(host) >= sizeof(((struct fa_resolve_request *)0)->host) ||
        strlen(port) >= sizeof(((struct fa_resolve_request *)0)->port))
        return EAI_NONAME;
    struct fa_resolve_request *r = calloc(1, sizeof *r);
    if (r == NULL) return EAI_MEMORY;
    strcpy(r->host, host);
    strcpy(r->port, port);
    r->hints.ai_socktype = SOCK_STREAM;
    r->hints.ai_flags = AI_NUMERICSERV;
    r->request.ar_name = r->host;
    r->request.ar_service = r->port;
    r->request.ar_request = &r->hints;
    struct fa_gaicb *list[1] = {&r->request};
    if (fa_getaddrinfo_a(FA_GAI_NOWAIT, list, 1, NULL) != 0) {
        free(r);
        return EAI_SYSTEM;
    }
    long deadline = fa_resolve_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    int status;
    while ((status = fa_gai_error(&r->request)) == FA_EAI_INPROGRESS) {
        long before = fa_resolve_now_ms();
        long left = deadline - before;
        if (left <= 0) break;
        long slice = left < 50 ? left : 50;
        struct timespec wait = {0, slice * 1000000};
        int waited = fa_gai_suspend((const struct fa_gaicb *const *)list, 1, &wait);
        long overran = fa_resolve_now_ms() - before - slice;
        if (waited == EAI_AGAIN && overran > 10) *stalled_ms += overran;
    }
    if (status == FA_EAI_INPROGRESS) {
        int cancelled = fa_gai_cancel(&r->request);
        if (cancelled == FA_EAI_ALLDONE && r->request.ar_result != NULL) freeaddrinfo(r->request.ar_result);
        if (cancelled == FA_EAI_CANCELED || cancelled == FA_EAI_ALLDONE) free(r);
        return FA_RESOLVE_TIMED_OUT;
    }
    if (status == 0) *out = r->request.ar_result;
    free(r);
    return status;
}

#endif
