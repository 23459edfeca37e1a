#ifndef POSTERN_COPENSSL_SHIM_H
#define POSTERN_COPENSSL_SHIM_H
#include <openssl/sha.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>

/* SHA-256 of `count` bytes into `out` (32 bytes); 1 on success. OpenSSL 3's one-shot SHA256() goes through
   EVP (a digest fetch and a context allocated per call); the low-level functions keep the context on the
   stack and use the same assembly. They are deprecated in 3.0 but still provided. */
static inline int postern_sha256(const void *data, size_t count, unsigned char *out) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    SHA256_CTX context;
    int ok = SHA256_Init(&context) && SHA256_Update(&context, data, count) && SHA256_Final(out, &context);
#pragma GCC diagnostic pop
    return ok;
}
#endif
