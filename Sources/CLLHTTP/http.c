/* llhttp's http.c as Debian's node-llhttp installs it (see include/llhttp.h). */
#include "/usr/share/llhttp/http.c"
