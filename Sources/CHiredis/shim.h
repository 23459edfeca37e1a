#ifndef POSTERN_CHIREDIS_SHIM_H
#define POSTERN_CHIREDIS_SHIM_H
/* These four must precede the event2 headers (pulled in by the libevent adapter), or Foundation's fd_set clashes. */
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
/* Header-only: redisLibeventAttach and its event callbacks are `static` functions compiled into the caller. */
#include <hiredis/adapters/libevent.h>
#endif
