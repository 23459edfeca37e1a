#ifndef POSTERN_CLLHTTP_H
#define POSTERN_CLLHTTP_H
/* llhttp, Node.js's HTTP/1.1 parser (the successor of http-parser), built from the C sources Debian's
   node-llhttp package installs: /usr/share/llhttp/{api,http,llhttp}.c and this header's original in
   /usr/share/include/llhttp/. The three files next to include/ compile those sources into this target
   (they find the header by the name `llhttp.h`, which is this file). No library to link at run time. */
#include "/usr/share/include/llhttp/llhttp.h"
#include <sys/socket.h>

/* glibc's accept4 (declared by <sys/socket.h> only under _GNU_SOURCE, which Swift's Glibc module does not
   set): the server accepts sockets already nonblocking and close-on-exec, in one call. */
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
#endif
