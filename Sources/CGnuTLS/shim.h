/* GnuTLS for Swift: the certificate chain and key fingerauthd hands to each handshake
 * (MHD_OPTION_HTTPS_CERT_CALLBACK), and what its log line says about them. gnutls_free
 * is a macro over a function pointer variable; the wrappers below give it, and the
 * callback's pointer for libmicrohttpd's option list, one typed call shape each. */
#ifndef FINGERAUTH_CGNUTLS_SHIM_H
#define FINGERAUTH_CGNUTLS_SHIM_H
#include <gnutls/gnutls.h>
#include <gnutls/abstract.h>
#include <gnutls/x509.h>

/* Frees what GnuTLS allocated into `datum` (gnutls_x509_crt_get_dn3 and the like). */
static inline void fa_gnutls_free_datum(gnutls_datum_t *datum) {
    if (datum->data != NULL) gnutls_free(datum->data);
    datum->size = 0;
}

/* The retrieve callback as the untyped pointer libmicrohttpd's option array carries. */
static inline void *fa_gnutls_retrieve_function_pointer(gnutls_certificate_retrieve_function2 *function) {
    return (void *)function;
}
/* A server key whose signatures another library makes (gnutls_privkey_import_ext4): the
 * info flags and the algorithm they carry are macros; the signature is returned in
 * memory from gnutls_malloc, a function pointer variable. */
static inline unsigned int fa_gnutls_info_pk_algo(void) { return GNUTLS_PRIVKEY_INFO_PK_ALGO; }
static inline unsigned int fa_gnutls_info_have_sign_algo(void) { return GNUTLS_PRIVKEY_INFO_HAVE_SIGN_ALGO; }
static inline unsigned int fa_gnutls_info_pk_algo_bits(void) { return GNUTLS_PRIVKEY_INFO_PK_ALGO_BITS; }
static inline unsigned int fa_gnutls_flags_to_sign_algo(unsigned int flags) { return GNUTLS_FLAGS_TO_SIGN_ALGO(flags); }
static inline void *fa_gnutls_malloc(size_t size) { return gnutls_malloc(size); }

#endif
