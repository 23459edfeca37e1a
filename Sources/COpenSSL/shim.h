#ifndef POSTERN_COPENSSL_SHIM_H
#define POSTERN_COPENSSL_SHIM_H
#include <openssl/sha.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <openssl/err.h>

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

/* SSL_set_tlsext_host_name is a macro; Swift cannot call it directly. */
static inline int postern_ssl_set_sni(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/* The upstream client drives OpenSSL on its own nonblocking socket: a write retried after WANT_WRITE may come
   from a moved buffer and may complete partly; an upstream that closes without close_notify after an answer
   delimited by the close ends the stream (OpenSSL 3 reports it as an error otherwise). Macros, hence the shim. */
static inline void postern_ssl_prepare_nonblocking(SSL *ssl) {
    SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
    SSL_set_options(ssl, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
}
#endif
