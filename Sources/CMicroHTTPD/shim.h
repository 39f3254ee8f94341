/* libmicrohttpd for Swift. MHD_start_daemon, MHD_get_connection_info and
 * MHD_get_daemon_info are variadic, and the response memory modes are enum values Swift
 * sees fine but the call sites read better typed: each wrapper below fixes one call shape.
 * The TCP_INFO read sits here too: it only ever looks at a connection's socket. */
#ifndef FINGERAUTH_CMICROHTTPD_SHIM_H
#define FINGERAUTH_CMICROHTTPD_SHIM_H
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>
#include <stddef.h>
#include <microhttpd.h>

/* Everything fingerauthd sets on its daemon, as plain typed fields. */
struct fa_mhd_config {
    unsigned int flags;                      /* MHD_USE_* */
    const struct sockaddr *address;          /* where to bind (MHD_OPTION_SOCK_ADDR) */
    MHD_AccessHandlerCallback handler;
    void *handler_cls;
    MHD_AcceptPolicyCallback accept_policy;  /* asked at each accept, before any TLS; NULL: all */
    void *accept_policy_cls;
    MHD_RequestCompletedCallback completed;  /* MHD_OPTION_NOTIFY_COMPLETED */
    void *completed_cls;
    MHD_NotifyConnectionCallback notify_connection; /* MHD_OPTION_NOTIFY_CONNECTION */
    void *notify_connection_cls;
    unsigned int thread_pool_size;           /* MHD_OPTION_THREAD_POOL_SIZE (0: none) */
    unsigned int connection_timeout;         /* seconds, MHD_OPTION_CONNECTION_TIMEOUT */
    unsigned int connection_limit;           /* MHD_OPTION_CONNECTION_LIMIT */
    unsigned int per_ip_connection_limit;    /* MHD_OPTION_PER_IP_CONNECTION_LIMIT */
    size_t connection_memory_limit;          /* bytes, MHD_OPTION_CONNECTION_MEMORY_LIMIT */
    /* MHD_OPTION_HTTPS_CERT_CALLBACK, a gnutls_certificate_retrieve_function2; NULL: plain HTTP */
    void *https_cert_callback;
    const char *https_priorities;            /* GnuTLS priority string, NULL: library default */
};

/* MHD percent-decodes the request path by default, and a "%00" becomes a NUL that cuts the
 * path short where Swift reads it: "/v1/keys/<kid>%00" would be served as "/v1/keys/<kid>".
 * fingerauthd's paths never need decoding (fixed words and base64url kids), so they are
 * left as sent: such a path is a path of its own, and unknown (404). */
static inline size_t fa_mhd_keep_escaped(void *cls, struct MHD_Connection *connection, char *text) {
    (void)cls;
    (void)connection;
    return strlen(text);
}

/* MHD_start_daemon is variadic: one typed call with the option list built here. */
static inline struct MHD_Daemon *fa_mhd_start_daemon(const struct fa_mhd_config *c) {
    struct MHD_OptionItem ops[16];
    int i = 0;
    ops[i++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, (void *)c->address };
    ops[i++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)c->completed, c->completed_cls };
    if (c->notify_connection != NULL)
        ops[i++] = (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)c->notify_connection,
                                            c->notify_connection_cls };
    ops[i++] = (struct MHD_OptionItem){ MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)fa_mhd_keep_escaped, NULL };
    ops[i++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)c->connection_timeout, NULL };
    ops[i++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, (intptr_t)c->connection_limit, NULL };
    ops[i++] = (struct MHD_OptionItem){ MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)c->per_ip_connection_limit, NULL };
    ops[i++] = (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)c->connection_memory_limit, NULL };
    if (c->thread_pool_size > 0)
        ops[i++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)c->thread_pool_size, NULL };
    if (c->https_cert_callback != NULL) {
        ops[i++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_CERT_CALLBACK, 0, c->https_cert_callback };
        if (c->https_priorities != NULL)
            ops[i++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)c->https_priorities };
    }
    ops[i++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
    /* The NOTIFY_* items in an option array carry the function in `value` and its closure
     * in `ptr_value`; the certificate callback travels in `ptr_value` (daemon.c,
     * parse_options_va, MHD_OPTION_ARRAY). At most 11 items are used. */
    return MHD_start_daemon(c->flags, 0, c->accept_policy, c->accept_policy_cls, c->handler, c->handler_cls,
                            MHD_OPTION_ARRAY, ops, MHD_OPTION_END);
}

/* MHD_get_daemon_info is variadic: the port actually bound (useful with port 0); 0 on error. */
static inline uint16_t fa_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/* MHD_get_connection_info is variadic: the peer's address as text into `out`
 * (at least INET6_ADDRSTRLEN bytes). Returns 0 on success, -1 when unknown. */
static inline int fa_mhd_peer_address(struct MHD_Connection *connection, char *out, size_t size) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || size == 0) return -1;
    const struct sockaddr *sa = info->client_addr;
    const void *raw = NULL;
    if (sa->sa_family == AF_INET) raw = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    else if (sa->sa_family == AF_INET6) raw = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    else return -1;
    return inet_ntop(sa->sa_family, raw, out, (socklen_t)size) == NULL ? -1 : 0;
}

/* MHD_get_connection_info is variadic: the peer's address, or NULL. It lives as long as
 * the connection; only AF_INET and AF_INET6 are read from it. */
static inline const struct sockaddr *fa_mhd_peer_sockaddr(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

/* MHD_get_connection_info is variadic: the connection's socket, or -1. The socket stays
 * open until MHD_CONNECTION_NOTIFY_CLOSED has returned (daemon.c, MHD_cleanup_connections). */
static inline int fa_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/* MHD_get_connection_info is variadic: the connection's GnuTLS session (a
 * gnutls_session_t), or NULL on a plain-HTTP connection. It exists from before
 * NOTIFY_CONNECTION STARTED until after NOTIFY_CONNECTION CLOSED. */
static inline void *fa_mhd_tls_session(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return info == NULL ? NULL : info->tls_session;
}

/* MHD_get_connection_info is variadic: what NOTIFY_CONNECTION stored in the connection's
 * socket context, or NULL. */
static inline void *fa_mhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/* Milliseconds since the socket last received data (TCP_INFO tcpi_last_data_recv), or -1. */
static inline long long fa_tcp_ms_since_receive(int fd) {
    struct tcp_info info;
    socklen_t length = sizeof(info);
    memset(&info, 0, sizeof(info));
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return -1;
    if (length < offsetof(struct tcp_info, tcpi_last_data_recv) + sizeof(info.tcpi_last_data_recv)) return -1;
    return (long long)info.tcpi_last_data_recv;
}

/* A response whose body MHD copies (MHD_RESPMEM_MUST_COPY), so Swift's buffer may go. */
static inline struct MHD_Response *fa_mhd_response_copy(const void *data, size_t size) {
    return MHD_create_response_from_buffer(size, (void *)data, MHD_RESPMEM_MUST_COPY);
}
#endif
