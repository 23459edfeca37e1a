#ifndef POSTERN_CHTTPPARSER_SHIM_H
#define POSTERN_CHTTPPARSER_SHIM_H
/* Node's http-parser (Debian libhttp-parser-dev): the HTTP/1.1 request and response parser of the server and
   the upstream client. It has no pkg-config file; the module map links libhttp_parser. */
#include <http_parser.h>
#endif
