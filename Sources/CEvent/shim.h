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
/* The loop (event_base, events, event_active) and its pthreads locking (evthread_use_pthreads): all of libevent
   that is called. The server, the upstream client and Redis read and write their own nonblocking sockets. */
#include <event2/event.h>
#include <event2/thread.h>

/* glibc's accept4 (declared by <sys/socket.h> only under _GNU_SOURCE, which Swift's Glibc module does not
   set): the server accepts sockets already nonblocking and close-on-exec, in one call. */
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);

/* The kernel's CSPRNG (glibc 2.25+), which refills each loop's buffer of random words for request and trace ids
   (PosternIO/KernelRandom.swift); not in Swift's Glibc module. */
#include <sys/random.h>
#endif
