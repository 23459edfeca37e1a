/* llhttp's llhttp.c as Debian's node-llhttp installs it (see include/llhttp.h). */
#include "/usr/share/llhttp/llhttp.c"

/* A quoted-pair (`\` and one character) inside a chunk extension's quoted value is valid (RFC 9112 §7.1.1, RFC 9110
   §5.6.4), but llhttp 8.1 stops on the backslash ("Invalid character in chunk extensions quoted value"). After
   that error, the request assembler checks the character after the backslash itself and calls this to put the
   parser back in the quoted value, then goes on from that character's next byte. Nothing reads chunk extensions
   (no callback is set for them), so no span is carried over. 0 when the parser was stopped by exactly that error,
   else -1 (untouched). Here, in llhttp.c's translation unit, because the state names are private to it. */
int postern_llhttp_resume_quoted_value(llhttp_t *parser) {
  static const char reason[] = "Invalid character in chunk extensions quoted value";
  if (parser->error != HPE_STRICT || parser->reason == NULL || strcmp(parser->reason, reason) != 0) return -1;
  parser->error = HPE_OK;
  parser->reason = NULL;
  parser->error_pos = NULL;
  parser->_span_pos0 = NULL;
  parser->_current = (void *)(intptr_t)s_n_llhttp__internal__n_chunk_extension_quoted_value;
  return 0;
}
