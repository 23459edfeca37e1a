#ifndef POSTERN_CLLHTTP_H
#define POSTERN_CLLHTTP_H
/* llhttp, Node.js's HTTP/1.1 parser (the successor of http-parser), built from the C sources Debian's
   node-llhttp package installs: /usr/share/llhttp/{api,http,llhttp}.c and this header's original in
   /usr/share/include/llhttp/. The three files next to include/ compile those sources into this target
   (they find the header by the name `llhttp.h`, which is this file). No library to link at run time. */
#include "/usr/share/include/llhttp/llhttp.h"
/* Whether the bytes [p, p + n) keep RFC 9112's line breaks: each CR followed by an LF, each LF after a CR. The request
   assembler runs it over every byte of a request outside its body's data (the head, and a chunked body's framing),
   which llhttp, built without its strict mode, does not check. `*pending_cr` carries a CR that ended the bytes before
   (its LF must start these) in and out. 0 when they keep the rule, -1 when not. With SSE2 (x86-64's baseline),
   sixteen bytes a step: the LF bits must be the CR bits moved up by one, the carry from the block before included.
   `static inline`: Clang emits it into the Swift module that calls it (no library symbol). */
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
static inline int postern_check_line_breaks(const unsigned char *p, size_t n, int *pending_cr) {
    unsigned carry = *pending_cr ? 1u : 0u;
    size_t i = 0;
#if defined(__SSE2__)
    const __m128i cr = _mm_set1_epi8('\r'), lf = _mm_set1_epi8('\n');
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        unsigned crs = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, cr));
        unsigned lfs = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, lf));
        if ((((crs << 1) | carry) & 0xFFFFu) != lfs) return -1;
        carry = crs >> 15;
    }
#endif
    for (; i < n; i++) {
        unsigned char b = p[i];
        if (carry) {
            if (b != '\n') return -1;
            carry = 0;
        } else if (b == '\r') {
            carry = 1;
        } else if (b == '\n') {
            return -1;
        }
    }
    *pending_cr = (int)carry;
    return 0;
}
#endif
