/* Preloaded into wrk by bench/newconn.py (LD_PRELOAD). wrk reconnects on the same SSL
 * object (SSL_shutdown, SSL_clear, SSL_connect), which keeps the last session: against a
 * server that issues session tickets every reconnect after the first resumes. With
 * FA_NO_RESUME set, the session is dropped before each handshake starts, so that every
 * one is a full handshake, as the login helper (a new process per login) makes it.
 * Counts the handshakes wrk completed and how many resumed, and writes
 * "handshakes N resumed M" to $FA_HANDSHAKES_OUT when wrk exits. wrk's threads call
 * SSL_connect concurrently, hence the atomics; a non-blocking SSL_connect returns 1 once,
 * when its handshake is done. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <openssl/ssl.h>

static long handshakes, resumed;

int SSL_connect(SSL *ssl)
{
    static int (*real)(SSL *);
    if (real == NULL)
        real = (int (*)(SSL *))dlsym(RTLD_NEXT, "SSL_connect");
    if (SSL_in_before(ssl) && getenv("FA_NO_RESUME") != NULL)
        SSL_set_session(ssl, NULL);
    int rc = real(ssl);
    if (rc == 1) {
        __atomic_add_fetch(&handshakes, 1, __ATOMIC_RELAXED);
        if (SSL_session_reused(ssl))
            __atomic_add_fetch(&resumed, 1, __ATOMIC_RELAXED);
    }
    return rc;
}

__attribute__((destructor)) static void report(void)
{
    const char *path = getenv("FA_HANDSHAKES_OUT");
    FILE *out = path ? fopen(path, "w") : NULL;
    if (out == NULL)
        return;
    fprintf(out, "handshakes %ld resumed %ld\n", handshakes, resumed);
    fclose(out);
}
