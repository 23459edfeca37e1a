#ifndef POSTERN_CHIREDIS_SHIM_H
#define POSTERN_CHIREDIS_SHIM_H
/* Only the reply parser (redisReader) is used: the sockets, TLS included, are Postern's own (RedisSocket). */
#include <hiredis/hiredis.h>
#endif
