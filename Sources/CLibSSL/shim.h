/* OpenSSL's libssl (3.x) for Swift: the TLS client the login helper and the command line
 * reach the authenticator with. The wrappers give macros and variadic calls one typed
 * call shape each, and do in C the few steps over OpenSSL structures Swift would have to
 * cast its way through. */
#ifndef FINGERAUTH_CLIBSSL_SHIM_H
#define FINGERAUTH_CLIBSSL_SHIM_H
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <string.h>

/* SSL_CTX_set_min_proto_version is a macro over SSL_CTX_ctrl. */
static inline int fa_ssl_ctx_min_tls12(SSL_CTX *ctx) {
    return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
}

/* The client's options: a peer that closes without close_notify ends the stream (every
 * answer read is delimited by its length; libmicrohttpd's TURBO mode sends none), no TLS
 * compression. SSL_OP_* are 64-bit macros Swift cannot import. */
static inline void fa_ssl_ctx_client_options(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION);
}

/* SSL_set_tlsext_host_name (server name indication) is a macro over SSL_ctrl. */
static inline int fa_ssl_set_server_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/* The certificate must name `host`: an IP literal against the IP address entries, else a
 * DNS name (no partial wildcards). 1 when set. */
static inline int fa_ssl_expect_host(SSL *ssl, const char *host, int is_ip) {
    X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
    if (is_ip) return X509_VERIFY_PARAM_set1_ip_asc(param, host);
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return X509_VERIFY_PARAM_set1_host(param, host, 0);
}

/* The DER SubjectPublicKeyInfo of the peer's certificate (in a resumed session, of the
 * certificate the session was made with) into `out`, at most `capacity` bytes. Its
 * length, or -1. */
static inline int fa_ssl_peer_spki(SSL *ssl, unsigned char *out, int capacity) {
    X509 *cert = SSL_get0_peer_certificate(ssl);
    if (cert == NULL) return -1;
    EVP_PKEY *key = X509_get0_pubkey(cert);
    if (key == NULL) return -1;
    int length = i2d_PUBKEY(key, NULL);
    if (length <= 0 || length > capacity) return -1;
    unsigned char *cursor = out;
    return i2d_PUBKEY(key, &cursor) == length ? length : -1;
}

/* The DER SubjectPublicKeyInfo of the public key in a PEM or DER file's bytes, into
 * `out`; its length, or -1. */
static inline int fa_spki_from_key_file(const unsigned char *data, int size, unsigned char *out, int capacity) {
    EVP_PKEY *key = NULL;
    BIO *bio = BIO_new_mem_buf(data, size);
    if (bio == NULL) return -1;
    key = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (key == NULL) {
        const unsigned char *cursor = data;
        key = d2i_PUBKEY(NULL, &cursor, size);
    }
    if (key == NULL) return -1;
    int length = i2d_PUBKEY(key, NULL);
    int result = -1;
    if (length > 0 && length <= capacity) {
        unsigned char *cursor = out;
        result = i2d_PUBKEY(key, &cursor) == length ? length : -1;
    }
    EVP_PKEY_free(key);
    return result;
}

/* SHA-256 of `data` into `out` (32 bytes); 1 on success. */
static inline int fa_sha256(const unsigned char *data, size_t size, unsigned char *out) {
    unsigned int length = 0;
    return EVP_Digest(data, size, out, &length, EVP_sha256(), NULL) == 1 && length == 32;
}

/* The first error on OpenSSL's queue as text (or empty), and the queue cleared. */
static inline void fa_ssl_error_text(char *out, size_t capacity) {
    unsigned long code = ERR_peek_error();
    if (capacity > 0) out[0] = 0;
    if (code != 0 && capacity > 0) ERR_error_string_n(code, out, capacity);
    ERR_clear_error();
}

/* A session as DER bytes (i2d_SSL_SESSION) into `out`; the length, or -1 when it does
 * not fit or cannot be encoded. */
static inline int fa_ssl_session_encode(SSL_SESSION *session, unsigned char *out, int capacity) {
    int length = i2d_SSL_SESSION(session, NULL);
    if (length <= 0 || length > capacity) return -1;
    unsigned char *cursor = out;
    return i2d_SSL_SESSION(session, &cursor) == length ? length : -1;
}

/* A session from DER bytes, or NULL. */
static inline SSL_SESSION *fa_ssl_session_decode(const unsigned char *data, long size) {
    const unsigned char *cursor = data;
    SSL_SESSION *session = d2i_SSL_SESSION(NULL, &cursor, size);
    if (session != NULL && cursor != data + size) {
        SSL_SESSION_free(session);
        return NULL;
    }
    return session;
}

#endif
