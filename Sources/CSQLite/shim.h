#ifndef POSTERN_CSQLITE_SHIM_H
#define POSTERN_CSQLITE_SHIM_H
#include <sqlite3.h>
/* SQLITE_TRANSIENT is a cast macro Swift cannot import. */
static inline void (*postern_sqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }
#endif
