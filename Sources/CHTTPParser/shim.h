#ifndef POSTERN_CHTTPPARSER_SHIM_H
#define POSTERN_CHTTPPARSER_SHIM_H
/* Node's http-parser (Debian libhttp-parser-dev): the HTTP/1.1 request and response parser of the server and
   the upstream client. It has no pkg-config file; the module map links libhttp_parser. */
#include <http_parser.h>
#include <sys/socket.h>

/* glibc's accept4 (declared by <sys/socket.h> only under _GNU_SOURCE, which Swift's Glibc module does not
   set): the server accepts sockets already nonblocking and close-on-exec, in one call. */
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
#endif
