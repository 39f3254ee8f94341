/* OpenSSL's libcrypto (3.x) for Swift: keys, signatures, digests, randomness. */
#ifndef FINGERAUTH_COPENSSL_SHIM_H
#define FINGERAUTH_COPENSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

/* BIO_get_mem_data is a macro over BIO_ctrl. */
static inline long fa_bio_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}
/* EVP_PKEY_PUBLIC_KEY is a composite macro Swift cannot import. */
static inline int fa_evp_pkey_public_key_selection(void) { return EVP_PKEY_PUBLIC_KEY; }
#endif
