#ifndef POSTERN_CHEADSCAN_SHIM_H
#define POSTERN_CHEADSCAN_SHIM_H
/* The byte-class tests of the plain HTTP/1.1 head readers (PlainBytes), sixteen bytes at a time with real vector
   compares: SSE2 on x86-64 (part of the baseline ABI, always present), NEON on arm64, and a plain C loop on anything
   else. Swift's SIMD16<UInt8> comparisons compile to byte loops on this toolchain (see CJSONScan). The functions are
   `static inline`: Clang emits them into the Swift module that imports this header, and LLVM inlines them into the
   scanning loops (no call per block).

   Each test returns a mask of the sixteen bytes at `p` that are outside its class, 0 when none is; the first one's
   index is `JSONWord.firstFlagged16(mask)` (`postern_json_first_flagged` in CJSONScan: the masks have the same
   layout). The caller keeps `p + 16` within its buffer (the load is unaligned). */
#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

#if defined(__ARM_NEON) && !defined(__SSE2__)
/* NEON has no movemask: narrowing each 16-bit lane by 4 bits leaves four bits per input byte in one 64-bit word
   (all four set for a flagged byte). */
static inline uint64_t postern_head_mask(uint8x16_t flagged) {
    return vget_lane_u64(vreinterpret_u64_u8(vshrn_n_u16(vreinterpretq_u16_u8(flagged), 4)), 0);
}
#endif

/* Bytes outside `lowest`-0x7E (`lowest` is 0x20 or 0x21: visible ASCII, with or without the space). */
static inline uint64_t postern_head_outside16(const uint8_t *p, uint8_t lowest) {
#if defined(__SSE2__)
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    /* Signed: bytes 0x80-0xFF are negative, so below `lowest` with the control bytes. */
    __m128i low = _mm_cmplt_epi8(v, _mm_set1_epi8((char)lowest));
    __m128i del = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7F));
    return (uint64_t)(unsigned)_mm_movemask_epi8(_mm_or_si128(low, del));
#elif defined(__ARM_NEON)
    uint8x16_t v = vld1q_u8(p);
    uint8x16_t outside = vorrq_u8(vcltq_u8(v, vdupq_n_u8(lowest)), vcgtq_u8(v, vdupq_n_u8(0x7E)));
    return postern_head_mask(outside);
#else
    uint64_t mask = 0;
    for (unsigned i = 0; i < 16; i++) {
        if (p[i] < lowest || p[i] > 0x7E) mask |= (uint64_t)1 << i;
    }
    return mask;
#endif
}

/* Bytes other than letters, digits and `-` (and `.` when `dot`): the common header names and host names. */
static inline uint64_t postern_head_nonword16(const uint8_t *p, int dot) {
#if defined(__SSE2__)
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    /* An unsigned `x - base < count` as a signed compare: `x - base + 0x80 < count + 0x80`, both sides moved by
       0x80 (so 0x80 - base is added, and the bound is count - 128). With bit 5 set, the capitals are the small
       letters; no byte outside the letters becomes one. */
    __m128i folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
    __m128i letter = _mm_cmplt_epi8(_mm_add_epi8(folded, _mm_set1_epi8(0x80 - 0x61)), _mm_set1_epi8(26 - 128));
    __m128i digit = _mm_cmplt_epi8(_mm_add_epi8(v, _mm_set1_epi8(0x80 - 0x30)), _mm_set1_epi8(10 - 128));
    __m128i inside = _mm_or_si128(_mm_or_si128(letter, digit), _mm_cmpeq_epi8(v, _mm_set1_epi8('-')));
    if (dot) inside = _mm_or_si128(inside, _mm_cmpeq_epi8(v, _mm_set1_epi8('.')));
    return (uint64_t)(~(unsigned)_mm_movemask_epi8(inside) & 0xFFFFu);
#elif defined(__ARM_NEON)
    uint8x16_t v = vld1q_u8(p);
    uint8x16_t folded = vorrq_u8(v, vdupq_n_u8(0x20));
    uint8x16_t letter = vcltq_u8(vsubq_u8(folded, vdupq_n_u8(0x61)), vdupq_n_u8(26));
    uint8x16_t digit = vcltq_u8(vsubq_u8(v, vdupq_n_u8(0x30)), vdupq_n_u8(10));
    uint8x16_t inside = vorrq_u8(vorrq_u8(letter, digit), vceqq_u8(v, vdupq_n_u8('-')));
    if (dot) inside = vorrq_u8(inside, vceqq_u8(v, vdupq_n_u8('.')));
    return postern_head_mask(vmvnq_u8(inside));
#else
    uint64_t mask = 0;
    for (unsigned i = 0; i < 16; i++) {
        uint8_t b = p[i];
        int inside = (uint8_t)((b | 0x20) - 0x61) < 26 || (uint8_t)(b - 0x30) < 10 || b == '-' || (dot && b == '.');
        if (!inside) mask |= (uint64_t)1 << i;
    }
    return mask;
#endif
}

/* Bytes that are CR, LF or NUL: a value holding one would end or split a head's line. */
static inline uint64_t postern_head_breaks16(const uint8_t *p) {
#if defined(__SSE2__)
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i breaks = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_setzero_si128()),
                                  _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\r')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))));
    return (uint64_t)(unsigned)_mm_movemask_epi8(breaks);
#elif defined(__ARM_NEON)
    uint8x16_t v = vld1q_u8(p);
    uint8x16_t breaks = vorrq_u8(vceqq_u8(v, vdupq_n_u8(0)),
                                 vorrq_u8(vceqq_u8(v, vdupq_n_u8('\r')), vceqq_u8(v, vdupq_n_u8('\n'))));
    return postern_head_mask(breaks);
#else
    uint64_t mask = 0;
    for (unsigned i = 0; i < 16; i++) {
        if (p[i] == 0 || p[i] == '\r' || p[i] == '\n') mask |= (uint64_t)1 << i;
    }
    return mask;
#endif
}

/* Non-zero when one of the thirty-two bytes at `p` is 0x0D or below (CR, LF and NUL among them): one test for two
   blocks, whose lane-wise minimum is compared (the caller keeps `p + 32` within its buffer). */
static inline int postern_head_low32(const uint8_t *p) {
#if defined(__SSE2__)
    __m128i least = _mm_min_epu8(_mm_loadu_si128((const __m128i *)p), _mm_loadu_si128((const __m128i *)(p + 16)));
    return _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(least, _mm_set1_epi8(0x0D)), least)) != 0;
#elif defined(__ARM_NEON)
    return vminvq_u8(vminq_u8(vld1q_u8(p), vld1q_u8(p + 16))) <= 0x0D;
#else
    for (unsigned i = 0; i < 32; i++) {
        if (p[i] <= 0x0D) return 1;
    }
    return 0;
#endif
}

#endif
