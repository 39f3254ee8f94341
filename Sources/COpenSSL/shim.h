/* OpenSSL's libcrypto (3.x) for Swift: keys, signatures, digests, randomness. */
#ifndef FINGERAUTH_COPENSSL_SHIM_H
#define FINGERAUTH_COPENSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/hmac.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdlib.h>

/* BIO_get_mem_data is a macro over BIO_ctrl. */
static inline long fa_bio_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}
/* EVP_PKEY_PUBLIC_KEY is a composite macro Swift cannot import. */
static inline int fa_evp_pkey_public_key_selection(void) { return EVP_PKEY_PUBLIC_KEY; }

/* SHA-256 fetched once from the default provider: EVP_sha256() makes OpenSSL 3 look it up
 * again at every use. */
static pthread_once_t fa_sha256_once = PTHREAD_ONCE_INIT;
static EVP_MD *fa_sha256_md = NULL;
static inline void fa_sha256_fetch(void) { fa_sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL); }

/* RS256 verification (RSASSA-PKCS1-v1_5 with SHA-256) of `signature` over `data` by `key`:
 * the digest with the pre-fetched SHA-256, then EVP_PKEY_verify on a context taken from
 * `pool`. A context is set up once (verify_init fetches the provider's implementation,
 * then padding and digest) and used again: OpenSSL allows EVP_PKEY_verify more than once
 * on a context with the same parameters, and the set-up cost more than the RSA arithmetic
 * of a 2048-bit verification. A context that saw a failure is freed, not kept. Each thread
 * takes a context of its own from the pool (mutex); at most FA_VERIFY_POOL are kept.
 * 1 when valid. */
#define FA_VERIFY_POOL 4
typedef struct {
    pthread_mutex_t lock;
    EVP_PKEY_CTX *idle[FA_VERIFY_POOL];
    int count;
} fa_verify_pool;

static inline fa_verify_pool *fa_verify_pool_new(void) {
    fa_verify_pool *pool = calloc(1, sizeof(fa_verify_pool));
    if (pool != NULL && pthread_mutex_init(&pool->lock, NULL) != 0) {
        free(pool);
        return NULL;
    }
    return pool;
}

static inline void fa_verify_pool_free(fa_verify_pool *pool) {
    if (pool == NULL) return;
    for (int i = 0; i < pool->count; i++) EVP_PKEY_CTX_free(pool->idle[i]);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

static inline EVP_PKEY_CTX *fa_rs256_context(EVP_PKEY *key, const EVP_MD *md) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(key, NULL);
    if (ctx == NULL) return NULL;
    if (EVP_PKEY_verify_init(ctx) != 1 ||
        EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) != 1 ||
        EVP_PKEY_CTX_set_signature_md(ctx, md) != 1) {
        EVP_PKEY_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static inline int fa_rs256_verify(fa_verify_pool *pool, EVP_PKEY *key, const unsigned char *data, size_t length,
                                  const unsigned char *signature, size_t signature_length) {
    pthread_once(&fa_sha256_once, fa_sha256_fetch);
    const EVP_MD *md = fa_sha256_md != NULL ? fa_sha256_md : EVP_sha256();
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digest_length = 0;
    if (EVP_Digest(data, length, digest, &digest_length, md, NULL) != 1 || digest_length != 32) return 0;
    EVP_PKEY_CTX *ctx = NULL;
    if (pool != NULL) {
        pthread_mutex_lock(&pool->lock);
        if (pool->count > 0) ctx = pool->idle[--pool->count];
        pthread_mutex_unlock(&pool->lock);
    }
    if (ctx == NULL) ctx = fa_rs256_context(key, md);
    if (ctx == NULL) return 0;
    int ok = EVP_PKEY_verify(ctx, signature, signature_length, digest, digest_length) == 1;
    if (ok && pool != NULL) {
        pthread_mutex_lock(&pool->lock);
        if (pool->count < FA_VERIFY_POOL) {
            pool->idle[pool->count++] = ctx;
            ctx = NULL;
        }
        pthread_mutex_unlock(&pool->lock);
    }
    if (ctx != NULL) EVP_PKEY_CTX_free(ctx);
    return ok ? 1 : 0;
}

/* RSA-OAEP with SHA-256 and a label (TPM2_MakeCredential's "IDENTITY" seed encryption):
 * the label is copied into OpenSSL's memory, which EVP_PKEY_CTX_set0_rsa_oaep_label owns.
 * Returns the ciphertext length, or -1. */
static inline long fa_rsa_oaep_sha256_encrypt(EVP_PKEY *key, const unsigned char *label, size_t label_length,
                                              const unsigned char *input, size_t input_length,
                                              unsigned char *output, size_t output_capacity) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(key, NULL);
    if (ctx == NULL) return -1;
    long result = -1;
    unsigned char *owned = OPENSSL_memdup(label, label_length);
    size_t length = output_capacity;
    if (owned != NULL &&
        EVP_PKEY_encrypt_init(ctx) == 1 &&
        EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) == 1 &&
        EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_sha256()) == 1 &&
        EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha256()) == 1) {
        if (EVP_PKEY_CTX_set0_rsa_oaep_label(ctx, owned, (int)label_length) == 1) {
            owned = NULL;
            if (EVP_PKEY_encrypt(ctx, output, &length, input, input_length) == 1) result = (long)length;
        }
    }
    OPENSSL_free(owned);
    EVP_PKEY_CTX_free(ctx);
    return result;
}
/* One X.509 v3 extension from its text form ("IP:127.0.0.1", "critical,CA:FALSE",
 * "keyid:always"…), added to `cert`; `issuer` is the signing certificate (the same one for
 * a self-signed certificate). X509V3_set_ctx_nodb is a macro. 1 when added. */
static inline int fa_x509_add_extension(X509 *cert, X509 *issuer, int nid, const char *value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *extension = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (extension == NULL) return 0;
    int ok = X509_add_ext(cert, extension, -1);
    X509_EXTENSION_free(extension);
    return ok == 1 ? 1 : 0;
}

/* A name entry of ASCII text (MBSTRING_ASC is a composite macro). 1 when added. */
static inline int fa_x509_name_add_ascii(X509_NAME *name, const char *field, const char *value) {
    return X509_NAME_add_entry_by_txt(name, field, MBSTRING_ASC, (const unsigned char *)value, -1, -1, 0);
}
#endif
