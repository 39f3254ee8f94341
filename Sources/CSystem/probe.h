/* Whether a name server answered: after getaddrinfo(3) failed, its code alone cannot tell
 * a resolver's "no such name" (NXDOMAIN) or SERVFAIL from a query that never left the host
 * (no UDP port free, no socket, no memory: EAI_AGAIN and EAI_NONAME cover both). The probe
 * sends one query of its own for the name to each name server of /etc/resolv.conf and
 * waits, within a bound, for a reply from that server's address and port with the query's
 * id. Only such a reply, or the network's own word (no route, port unreachable), is
 * evidence that the network, not this host, is the problem. */
#ifndef FINGERAUTH_CSYSTEM_PROBE_H
#define FINGERAUTH_CSYSTEM_PROBE_H
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* What the probe found; fa_probe_dns's *detail says more. */
#define FA_PROBE_ANSWERED 1 /* a name server answered: *detail its RCODE (0 no address, 2 SERVFAIL, 3 NXDOMAIN…) */
#define FA_PROBE_NO_ROUTE 2 /* no route to any name server, or each said its port is closed: *detail the errno */
#define FA_PROBE_LOCAL 3    /* the query could not leave this host: *detail the errno (0: no usable name) */
#define FA_PROBE_SILENT 4   /* sent, no reply before the bound */

#define FA_PROBE_SERVERS 3
/* *detail for an answer of NOERROR that holds records: the name has addresses. */
#define FA_PROBE_HAS_ADDRESSES 16

static inline long fa_probe_now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* The name servers of /etc/resolv.conf (glibc's default, 127.0.0.1, when none is named;
 * none at all when those named cannot be read here, e.g. a scoped IPv6 address). */
static inline int fa_probe_servers(struct sockaddr_storage *out, socklen_t *lengths) {
    int count = 0, named = 0;
    FILE *file = fopen("/etc/resolv.conf", "re");
    char line[512];
    while (file != NULL && count < FA_PROBE_SERVERS && fgets(line, sizeof line, file) != NULL) {
        char address[128];
        if (sscanf(line, " nameserver %127s", address) != 1) continue;
        named++;
        memset(&out[count], 0, sizeof out[count]);
        struct sockaddr_in *v4 = (struct sockaddr_in *)&out[count];
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&out[count];
        if (inet_pton(AF_INET, address, &v4->sin_addr) == 1) {
            v4->sin_family = AF_INET;
            v4->sin_port = htons(53);
            lengths[count++] = sizeof *v4;
        } else if (inet_pton(AF_INET6, address, &v6->sin6_addr) == 1) {
            v6->sin6_family = AF_INET6;
            v6->sin6_port = htons(53);
            lengths[count++] = sizeof *v6;
        }
    }
    if (file != NULL) fclose(file);
    if (count == 0 && named == 0) {
        struct sockaddr_in *v4 = (struct sockaddr_in *)&out[0];
        memset(&out[0], 0, sizeof out[0]);
        v4->sin_family = AF_INET;
        v4->sin_port = htons(53);
        v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        lengths[count++] = sizeof *v4;
    }
    return count;
}

/* A query (recursion desired) for `host`'s A record; its length, or 0 for a name that is
 * not one (empty label, label over 63 bytes, name over 253). */
static inline int fa_probe_query(const char *host, unsigned short id, unsigned char *out, int size) {
    size_t length = strlen(host);
    if (length > 0 && host[length - 1] == '.') length--;
    if (length == 0 || length > 253 || size < (int)length + 18) return 0;
    unsigned char header[12] = {(unsigned char)(id >> 8), (unsigned char)id, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    memcpy(out, header, 12);
    int at = 12;
    size_t start = 0;
    for (size_t i = 0; i <= length; i++) {
        if (i < length && host[i] != '.') continue;
        size_t label = i - start;
        if (label == 0 || label > 63) return 0;
        out[at++] = (unsigned char)label;
        memcpy(out + at, host + start, label);
        at += (int)label;
        start = i + 1;
    }
    out[at++] = 0;
    unsigned char tail[4] = {0, 1, 0, 1}; /* type A, class IN */
    memcpy(out + at, tail, 4);
    return at + 4;
}

/* The network's own word: no route to the server, or its port closed. */
static inline int fa_probe_is_route(int error) {
    return error == ENETUNREACH || error == EHOSTUNREACH || error == ECONNREFUSED;
}

/* Probes the name servers for `host` within `timeout_ms` (see above). *stalled_ms grows by
 * the time the wait overran its slices: time this process was not running. */
static inline int fa_probe_dns(const char *host, int timeout_ms, int *detail, long *stalled_ms) {
    struct sockaddr_storage servers[FA_PROBE_SERVERS];
    socklen_t lengths[FA_PROBE_SERVERS];
    int count = fa_probe_servers(servers, lengths);
    unsigned short id = (unsigned short)((fa_probe_now_ms() * 7919) ^ getpid());
    unsigned char query[300];
    int size = fa_probe_query(host, id, query, sizeof query);
    *detail = 0;
    if (size == 0 || count == 0) return FA_PROBE_LOCAL;
    struct pollfd fds[FA_PROBE_SERVERS];
    int open = 0, local = 0, route = 0;
    for (int i = 0; i < count; i++) {
        int fd = socket(servers[i].ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int error = 0;
        if (fd < 0) error = errno;
        else if (connect(fd, (struct sockaddr *)&servers[i], lengths[i]) != 0) error = errno;
        else if (send(fd, query, (size_t)size, MSG_NOSIGNAL) != size) error = errno == 0 ? EIO : errno;
        if (error != 0) {
            if (fd >= 0) close(fd);
            if (fa_probe_is_route(error)) route = error;
            else local = error;
            continue;
        }
        fds[open].fd = fd;
        fds[open].events = POLLIN;
        fds[open].revents = 0;
        open++;
    }
    long deadline = fa_probe_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    int result = 0, live = open;
    while (result == 0 && live > 0) {
        long before = fa_probe_now_ms();
        long left = deadline - before;
        if (left <= 0) break;
        int slice = left < 50 ? (int)left : 50;
        int ready = poll(fds, (nfds_t)open, slice);
        long overran = fa_probe_now_ms() - before - slice;
        if (ready == 0 && overran > 10) *stalled_ms += overran;
        if (ready < 0 && errno != EINTR) break;
        for (int i = 0; ready > 0 && i < open && result == 0; i++) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            unsigned char reply[512];
            ssize_t n = recv(fds[i].fd, reply, sizeof reply, 0);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (n < 0) {
                if (fa_probe_is_route(errno)) route = errno;
                else local = errno;
                close(fds[i].fd);
                fds[i].fd = -1;
                live--;
                continue;
            }
            /* This query's id, a response (QR), the question echoed: a name server's answer. */
            if (n >= size && reply[0] == query[0] && reply[1] == query[1] && (reply[2] & 0x80) != 0 &&
                memcmp(reply + 12, query + 12, (size_t)size - 12) == 0) {
                *detail = reply[3] & 0x0f;
                if (*detail == 0 && (reply[6] != 0 || reply[7] != 0)) *detail = FA_PROBE_HAS_ADDRESSES;
                result = FA_PROBE_ANSWERED;
            }
        }
    }
    for (int i = 0; i < open; i++)
        if (fds[i].fd >= 0) close(fds[i].fd);
    if (result != 0) return result;
    if (local != 0) {
        *detail = local;
        return FA_PROBE_LOCAL;
    }
    if (open == 0 || live == 0) {
        *detail = route;
        return route != 0 ? FA_PROBE_NO_ROUTE : FA_PROBE_LOCAL;
    }
    return FA_PROBE_SILENT;
}

#endif
