/* llhttp's api.c as Debian's node-llhttp installs it (see include/llhttp.h), with two of its internal callback
   wrappers wrapped once more: llhttp tells a callback where it fires only through the span callbacks, and the
   request assembler also needs where a message begins and where its head ends (to count every byte of the head,
   the empty lines before it included, and to check the line breaks between the spans). The wrappers store the
   position in `error_pos` before calling llhttp's own; llhttp itself writes `error_pos` only when it stops with an
   error or a pause, after any callback, so the field reads as "where the current callback fires" during one. */
#define llhttp__on_message_begin postern_llhttp__on_message_begin
#define llhttp__on_headers_complete postern_llhttp__on_headers_complete
#include "/usr/share/llhttp/api.c"
#undef llhttp__on_message_begin
#undef llhttp__on_headers_complete

int llhttp__on_message_begin(llhttp_t* s, const char* p, const char* endp) {
  s->error_pos = p;
  return postern_llhttp__on_message_begin(s, p, endp);
}

int llhttp__on_headers_complete(llhttp_t* s, const char* p, const char* endp) {
  s->error_pos = p;
  return postern_llhttp__on_headers_complete(s, p, endp);
}
