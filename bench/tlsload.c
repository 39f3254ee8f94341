/* A load client for `make bench` (bench/sections/newconn.py): CONCURRENCY loops, each of them
 * repeating new TCP connection -> TLS handshake -> POST /v1/login with the next unused token
 * of TOKENS_FILE -> read the answer -> close, until the tokens or SECONDS run out. With
 * resumption (the default) a loop offers the session of its own previous connection
 * (SSL_get1_session / SSL_set_session), as a client that keeps its session would; with
 * --no-resume every handshake is a full one. Unlike wrk it times each login from connect()
 * to the answer, the handshake included.
 *
 *   tlsload PORT CAFILE TOKENS_FILE CONCURRENCY SECONDS [--no-resume]
 *
 * Prints one line, TLSLOAD {json}: answers verified (200 with a jti) and refused, failed
 * connections, handshakes and how many resumed, and the latency of the verified logins
 * from connect() to the answer's last byte (p50, p99). The server certificate is checked
 * against CAFILE for 127.0.0.1, as the login helper checks it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static SSL_CTX *ctx;
static int port, resume = 1;
static char **tokens;
static long ntokens, next_token;
static long *latency_us; /* per token; -1: not verified */
static long ok, bad, failed, handshakes, resumed;
static long long deadline_us, first_us, last_us;

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

#define ADD(counter) __atomic_add_fetch(&(counter), 1, __ATOMIC_RELAXED)

/* One login on a new connection; returns its session for the next one (or NULL). */
static SSL_SESSION *login(long index, SSL_SESSION *previous)
{
    char request[8192], answer[16384];
    long long began = now_us();
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    SSL *ssl = NULL;
    SSL_SESSION *session = NULL;
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0)
        goto fail;
    ssl = SSL_new(ctx);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1");
    if (previous != NULL)
        SSL_set_session(ssl, previous);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) != 1)
        goto fail;
    ADD(handshakes);
    if (SSL_session_reused(ssl))
        ADD(resumed);
    int body = (int)strlen(tokens[index]) + 10;
    int length = snprintf(request, sizeof request,
                          "POST /v1/login HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                          "Content-Length: %d\r\nConnection: close\r\n\r\n{\"jwt\":\"%s\"}",
                          port, body, tokens[index]);
    if (length >= (int)sizeof request || SSL_write(ssl, request, length) != length)
        goto fail;
    int have = 0;
    long expected = -1;
    while (have < (int)sizeof answer - 1) {
        int n = SSL_read(ssl, answer + have, (int)sizeof answer - 1 - have);
        if (n <= 0)
            break;
        have += n;
        answer[have] = 0;
        char *end = strstr(answer, "\r\n\r\n");
        if (end != NULL && expected < 0) {
            char *field = strcasestr(answer, "\r\ncontent-length:");
            expected = (field != NULL && field < end) ? (end + 4 - answer) + atol(field + 17) : 1L << 30;
        }
        if (expected >= 0 && have >= expected)
            break;
    }
    answer[have] = 0;
    if (expected < 0 || have < expected)
        goto fail;
    if (strncmp(answer, "HTTP/1.1 200", 12) == 0 && strstr(answer, "\"jti\"") != NULL) {
        long long done = now_us();
        latency_us[index] = (long)(done - began);
        ADD(ok);
        long long last = __atomic_load_n(&last_us, __ATOMIC_RELAXED);
        while (done > last && !__atomic_compare_exchange_n(&last_us, &last, done, 0, __ATOMIC_RELAXED,
                                                           __ATOMIC_RELAXED))
            ;
    } else {
        ADD(bad);
    }
    if (resume)
        session = SSL_get1_session(ssl); /* after the read: a TLS 1.3 ticket arrives after the handshake */
    SSL_shutdown(ssl);
    SSL_free(ssl);
    close(fd);
    return session;
fail:
    ADD(failed);
    if (ssl != NULL)
        SSL_free(ssl);
    close(fd);
    return NULL;
}

static void *loop(void *unused)
{
    (void)unused;
    SSL_SESSION *session = NULL;
    for (;;) {
        long index = __atomic_fetch_add(&next_token, 1, __ATOMIC_RELAXED);
        if (index >= ntokens || now_us() > deadline_us)
            break;
        SSL_SESSION *fresh = login(index, session);
        if (fresh != NULL) {
            SSL_SESSION_free(session);
            session = fresh;
        }
    }
    SSL_SESSION_free(session);
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 6 || (argc == 7 && strcmp(argv[6], "--no-resume") != 0) || argc > 7) {
        fprintf(stderr, "usage: tlsload PORT CAFILE TOKENS_FILE CONCURRENCY SECONDS [--no-resume]\n");
        return 2;
    }
    port = atoi(argv[1]);
    int concurrency = atoi(argv[4]);
    resume = argc == 6;
    ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_load_verify_locations(ctx, argv[2], NULL) != 1) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    FILE *in = fopen(argv[3], "r");
    if (in == NULL) {
        perror(argv[3]);
        return 1;
    }
    char *line = NULL;
    size_t size = 0;
    ssize_t got;
    long capacity = 0;
    while ((got = getline(&line, &size, in)) > 0) {
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
            line[--got] = 0;
        if (got == 0)
            continue;
        if (ntokens == capacity) {
            capacity = capacity ? capacity * 2 : 1024;
            tokens = realloc(tokens, capacity * sizeof *tokens);
        }
        tokens[ntokens++] = strdup(line);
    }
    fclose(in);
    latency_us = malloc((ntokens + 1) * sizeof *latency_us);
    for (long i = 0; i < ntokens; i++)
        latency_us[i] = -1;
    pthread_t *threads = calloc(concurrency, sizeof *threads);
    first_us = now_us();
    deadline_us = first_us + atol(argv[5]) * 1000000LL;
    for (int i = 0; i < concurrency; i++)
        pthread_create(&threads[i], NULL, loop, NULL);
    for (int i = 0; i < concurrency; i++)
        pthread_join(threads[i], NULL);
    long verified = 0;
    for (long i = 0; i < ntokens; i++)
        if (latency_us[i] >= 0)
            latency_us[verified++] = latency_us[i];
    qsort(latency_us, verified, sizeof *latency_us, by_value);
    long p50 = verified ? latency_us[verified / 2] : 0, p99 = verified ? latency_us[verified * 99 / 100] : 0;
    printf("TLSLOAD {\"ok\":%ld,\"bad\":%ld,\"failed\":%ld,\"handshakes\":%ld,\"resumed\":%ld,\"tokens\":%ld,"
           "\"elapsed_us\":%lld,\"p50_us\":%ld,\"p99_us\":%ld,\"resume\":%s}\n",
           ok, bad, failed, handshakes, resumed, ntokens, (last_us ? last_us : now_us()) - first_us, p50, p99,
           resume ? "true" : "false");
    return 0;
}
