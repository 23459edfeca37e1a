#ifndef POSTERN_CEVENT_SHIM_H
#define POSTERN_CEVENT_SHIM_H
/* These four must precede the event2 headers, or Foundation's fd_set clashes. */
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <event2/http.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>
#include <event2/dns.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

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
