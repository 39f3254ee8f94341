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
#endif
