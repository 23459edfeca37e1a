#ifndef POSTERN_CLLHTTP_H
#define POSTERN_CLLHTTP_H
/* llhttp, Node.js's HTTP/1.1 parser (the successor of http-parser), built from the C sources Debian's
   node-llhttp package installs: /usr/share/llhttp/{api,http,llhttp}.c and this header's original in
   /usr/share/include/llhttp/. The three files next to include/ compile those sources into this target
   (they find the header by the name `llhttp.h`, which is this file). No library to link at run time. */
#include "/usr/share/include/llhttp/llhttp.h"
/* Puts a parser stopped on a backslash in a chunk extension's quoted value back into that value (llhttp.c). */
int postern_llhttp_resume_quoted_value(llhttp_t *parser);
/* Whether the bytes [p, p + n) keep RFC 9112's line breaks (each CR followed by an LF, each LF after a CR) and have
   no obs-fold (no line starts with SP or HTAB: §5.2, a server refuses it, as nginx and Node do). The request
   assembler runs it over every byte of a request outside its body's data (the head, and a chunked body's
   framing), which llhttp, built without its strict mode, does not check. `*state` carries, in and out, bit 0: the
   bytes before ended with a CR (its LF must start these); bit 1: they ended with an LF. 0 when they keep the rules,
   -1 for a line break, -2 for an obs-fold. With SSE2 (x86-64's baseline), sixteen bytes a step: the LF bits must be
   the CR bits moved up by one, and no SP or HTAB bit may be an LF bit moved up by one, the carries from the block
   before included. `static inline`: Clang emits it into the Swift module that calls it (no library symbol). */
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
static inline int postern_check_head_bytes(const unsigned char *p, size_t n, int *state) {
    unsigned carry = (*state & 1) ? 1u : 0u;
    unsigned lf_carry = (*state & 2) ? 1u : 0u;
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i cr = _mm_set1_epi8('\r'), lf = _mm_set1_epi8('\n');
    const __m128i sp = _mm_set1_epi8(' '), ht = _mm_set1_epi8('\t');
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        unsigned crs = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, cr));
        unsigned lfs = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, lf));
        if ((((crs << 1) | carry) & 0xFFFFu) != lfs) return -1;
        unsigned ws = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, ht)));
        if (((lfs << 1) | lf_carry) & ws) return -2;
        carry = crs >> 15;
        lf_carry = lfs >> 15;
    }
#endif
    for (; i < n; i++) {
        unsigned char b = p[i];
        if (lf_carry && (b == ' ' || b == '\t')) return -2;
        lf_carry = 0;
        if (carry) {
            if (b != '\n') return -1;
            carry = 0;
            lf_carry = 1;
        } else if (b == '\r') {
            carry = 1;
        } else if (b == '\n') {
            return -1;
        }
    }
    *state = (int)(carry | (lf_carry << 1));
    return 0;
}
#endif
