#ifndef POSTERN_CJSONSCAN_SHIM_H
#define POSTERN_CJSONSCAN_SHIM_H
/* The JSON transcoder's string scanner, sixteen bytes at a time with real vector compares.

   Swift's SIMD16<UInt8> comparisons compile to byte loops on this toolchain, so the one test the
   transcoder runs on every block of string content is written here with the platform's intrinsics:
   SSE2 on x86-64 (part of the baseline ABI, always present), NEON on arm64, and a plain C loop on
   anything else. The functions are `static inline`: Clang emits them into the Swift module that
   imports this header, and LLVM inlines them into the scanning loops (no call per block).

   A byte is "special" when it ends a plain ASCII run inside a JSON string: '"', '\\', a control
   byte (below 0x20), or a byte above 0x7F (the start or middle of a UTF-8 sequence). */
#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

/* Which of the sixteen bytes at `p` are special, as a mask that is 0 when none is; the first one's
   index is `postern_json_first_flagged(mask)`. The caller keeps `p + 16` within its buffer (the load
   is unaligned). Callers test the mask for 0 and, when it is, advance by a constant 16: the next
   block's load then never waits for this block's compare (an index-based advance would chain them). */
static inline uint64_t postern_json_specials16(const uint8_t *p) {
#if defined(__SSE2__)
    __m128i v = _mm_loadu_si128((const __m128i *)p);
    __m128i backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
    /* One signed compare for the rest: flipping bit 1 maps 0x00-0x1F onto themselves, '"' (0x22) to
       0x20 and every other byte from 0x20 to 0x7F to 0x21 or above, so below 0x21 are exactly the
       control bytes and '"'; bytes 0x80-0xFF stay negative, so below too. */
    __m128i low = _mm_cmplt_epi8(_mm_xor_si128(v, _mm_set1_epi8(0x02)), _mm_set1_epi8(0x21));
    /* One bit per byte. */
    return (uint64_t)(unsigned)_mm_movemask_epi8(_mm_or_si128(backslash, low));
#elif defined(__ARM_NEON)
    uint8x16_t v = vld1q_u8(p);
    uint8x16_t quote = vceqq_u8(v, vdupq_n_u8('"'));
    uint8x16_t backslash = vceqq_u8(v, vdupq_n_u8('\\'));
    /* Signed compare, as for SSE2: control bytes and bytes above 0x7F. */
    uint8x16_t low = vcltq_s8(vreinterpretq_s8_u8(v), vdupq_n_s8(0x20));
    uint8x16_t any = vorrq_u8(vorrq_u8(quote, backslash), low);
    /* NEON has no movemask: narrowing each 16-bit lane by 4 bits leaves four bits per input byte in
       one 64-bit word (all four set for a flagged byte). */
    return vget_lane_u64(vreinterpret_u64_u8(vshrn_n_u16(vreinterpretq_u16_u8(any), 4)), 0);
#else
    uint64_t mask = 0;
    for (unsigned i = 0; i < 16; i++) {
        uint8_t b = p[i];
        if (b == '"' || b == '\\' || b < 0x20 || b > 0x7F) mask |= (uint64_t)1 << i;
    }
    return mask;
#endif
}

/* The index (0 to 15) of the first special byte of a non-zero `postern_json_specials16` mask. */
static inline unsigned postern_json_first_flagged(uint64_t mask) {
#if defined(__ARM_NEON) && !defined(__SSE2__)
    return (unsigned)(__builtin_ctzll(mask) >> 2);
#else
    return (unsigned)__builtin_ctzll(mask);
#endif
}

#endif
