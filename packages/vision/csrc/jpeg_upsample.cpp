#include "jpeg_upsample.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

#include "jpeg_color.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TRIVIUM_UPSAMPLE_X86 1
#else
#define TRIVIUM_UPSAMPLE_X86 0
#endif

namespace trivium {
namespace {

#if TRIVIUM_UPSAMPLE_X86
// The byte order of 16 interleaved RGB pixels (48 bytes) from 16 R, 16 G and 16 B
// bytes, in each 128-bit lane: byte j of part k is channel (16k + j) % 3 of pixel
// (16k + j) / 3, picked from its channel's vector by pshufb (0x80 clears the other
// channels' bytes). A channel's lane holds its even pixels, then its odd ones (the
// order packus gives them in, see convert_block).
using ShuffleMask = std::array<int8_t, 32>;

constexpr ShuffleMask interleave_mask(int part, int channel) {
    ShuffleMask mask{};
    for (int j = 0; j < 32; ++j) {  // the same pattern in both lanes
        const int byte = 16 * part + j % 16, pixel = byte / 3;
        const int at = pixel % 2 == 0 ? pixel / 2 : 8 + pixel / 2;
        mask[j] = byte % 3 == channel ? int8_t(at) : int8_t(-128);
    }
    return mask;
}

constexpr std::array<ShuffleMask, 9> kInterleave = {
    interleave_mask(0, 0), interleave_mask(0, 1), interleave_mask(0, 2),
    interleave_mask(1, 0), interleave_mask(1, 1), interleave_mask(1, 2),
    interleave_mask(2, 0), interleave_mask(2, 1), interleave_mask(2, 2),
};

// jdcolor.c's colour conversion: R - Y = (FIX(1.40200) Cr + ONE_HALF) >> 16 and
// B - Y = (FIX(1.77200) Cb + ONE_HALF) >> 16 are Cr + pmulhrsw(Cr, kCrR) and
// Cb + pmulhrsw(Cb, kCbB) for every centred sample -128..127 (the constants are
// 0.402 and 0.772 * 2^15, rounded; tests/vision/test_jpeg_decode_upsample.py decodes
// every (Cb, Cr) pair).
// G - Y = (-FIX(0.34414) Cb - FIX(0.71414) Cr + ONE_HALF) >> 16 is split as
// libjpeg-turbo's SIMD code splits it to keep each factor in 16 bits:
// (-FIX(0.34414) Cb + FIX(0.28586) Cr + ONE_HALF) >> 16, minus Cr.
constexpr int16_t kCrR = 13173, kCbB = 25297, kMF0344 = -22554, kF0285 = 18734;

#pragma GCC push_options
#pragma GCC target("avx2")

#define TRIVIUM_INLINE inline __attribute__((always_inline))

TRIVIUM_INLINE __m256i widen(const uint8_t* p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

TRIVIUM_INLINE __m256i times3(__m256i v) { return _mm256_add_epi16(_mm256_add_epi16(v, v), v); }

// Chroma columns per strip of a row: each strip's column sums (below) stay in L1.
constexpr int kStrip = 256;

// The column sums of the fancy filter from column c0 - 1 (near and far point at c0):
// `count` of them (rounded up to 16) at `sums`. h2v2 (jdsample.c h2v2_fancy_upsample)
// weighs the nearer chroma row 3:1 against the other, colsum = 3 near + far; h2v1
// (h2v1_fancy_upsample) filters the row as it is.
template <bool kH2V2>
TRIVIUM_INLINE void column_sums(const uint8_t* near, const uint8_t* far, int count,
                                int16_t* sums) {
    for (int j = 0; j < count; j += 16) {
        __m256i v = widen(near - 1 + j);
        if (kH2V2) v = _mm256_add_epi16(times3(v), widen(far - 1 + j));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums + j), v);
    }
}

// The upsampled chroma of 32 output pixels from the column sums of columns c - 1 ..
// c + 16 (`sums` points at c - 1), centred on 0: the even pixels and the odd
// pixels, 16 each.
// h2v2: pixel 2c = (3 colsum[c] + colsum[c - 1] + 8) >> 4,
//       pixel 2c + 1 = (3 colsum[c] + colsum[c + 1] + 7) >> 4.
// h2v1: pixel 2c = (3 s[c] + s[c - 1] + 1) >> 2,
//       pixel 2c + 1 = (3 s[c] + s[c + 1] + 2) >> 2.
// The C code's edge formulas are these with the edge sample repeated. Centring folds
// into the rounding term: (v + bias) >> n, minus 128, is (v + bias - (128 << n)) >> n.
template <bool kH2V2>
TRIVIUM_INLINE void upsample(const int16_t* sums, __m256i* even, __m256i* odd) {
    constexpr int shift = kH2V2 ? 4 : 2;
    constexpr int16_t even_bias = (kH2V2 ? 8 : 1) - (128 << shift);
    constexpr int16_t odd_bias = (kH2V2 ? 7 : 2) - (128 << shift);
    const auto load = [sums](int i) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums + i));
    };
    const __m256i left = load(0), mid3 = times3(load(1)), right = load(2);
    *even = _mm256_srai_epi16(
        _mm256_add_epi16(_mm256_add_epi16(mid3, left), _mm256_set1_epi16(even_bias)), shift);
    *odd = _mm256_srai_epi16(
        _mm256_add_epi16(_mm256_add_epi16(mid3, right), _mm256_set1_epi16(odd_bias)), shift);
}

struct Rgb16 {
    __m256i r, g, b;
};

// 16 pixels of luma (0..255) and centred chroma, each in a 16-bit element, to R, G, B
// (not yet clamped). G's sum of two products is rounded once, in 32 bits (pmaddwd on
// (Cb, Cr) pairs; unpack and pack keep the pixels' order).
TRIVIUM_INLINE Rgb16 ycc_to_rgb(__m256i y, __m256i cb, __m256i cr) {
    const __m256i cr_r = _mm256_mulhrs_epi16(cr, _mm256_set1_epi16(kCrR));
    const __m256i cb_b = _mm256_mulhrs_epi16(cb, _mm256_set1_epi16(kCbB));
    const __m256i g_coef = _mm256_set1_epi32(int32_t(uint32_t(uint16_t(kF0285)) << 16 |
                                                     uint32_t(uint16_t(kMF0344))));
    const __m256i half = _mm256_set1_epi32(1 << 15);
    const __m256i g_low = _mm256_srai_epi32(
        _mm256_add_epi32(_mm256_madd_epi16(_mm256_unpacklo_epi16(cb, cr), g_coef), half), 16);
    const __m256i g_high = _mm256_srai_epi32(
        _mm256_add_epi32(_mm256_madd_epi16(_mm256_unpackhi_epi16(cb, cr), g_coef), half), 16);
    const __m256i g = _mm256_packs_epi32(g_low, g_high);
    Rgb16 out;
    out.r = _mm256_add_epi16(y, _mm256_add_epi16(cr_r, cr));
    out.g = _mm256_add_epi16(y, _mm256_sub_epi16(g, cr));
    out.b = _mm256_add_epi16(y, _mm256_add_epi16(cb_b, cb));
    return out;
}

TRIVIUM_INLINE __m256i mask(int i) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kInterleave[i].data()));
}

TRIVIUM_INLINE __m256i interleave_part(__m256i r, __m256i g, __m256i b, int part) {
    return _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(r, mask(3 * part)),
                                           _mm256_shuffle_epi8(g, mask(3 * part + 1))),
                           _mm256_shuffle_epi8(b, mask(3 * part + 2)));
}

// 32 pixels' R, G and B bytes (each lane: its 8 even pixels, then its 8 odd ones),
// interleaved into 96 bytes at `out`.
TRIVIUM_INLINE void store_rgb(__m256i r, __m256i g, __m256i b, uint8_t* out) {
    const __m256i p0 = interleave_part(r, g, b, 0);
    const __m256i p1 = interleave_part(r, g, b, 1);
    const __m256i p2 = interleave_part(r, g, b, 2);
    // Lane 0 holds pixels 0-15 and lane 1 pixels 16-31, each as three 16-byte parts.
    auto* dst = reinterpret_cast<__m256i*>(out);
    _mm256_storeu_si256(dst, _mm256_permute2x128_si256(p0, p1, 0x20));
    _mm256_storeu_si256(dst + 1, _mm256_permute2x128_si256(p2, p0, 0x30));
    _mm256_storeu_si256(dst + 2, _mm256_permute2x128_si256(p1, p2, 0x31));
}

// 32 output pixels as 96 bytes at `out`, from the chroma column sums at `cb_sums` /
// `cr_sums` (see upsample) and 32 luma samples at `y`. The even and the odd pixels
// are converted apart (luma split by masking and shifting its 16-bit elements), and
// packus joins them per lane as store_rgb expects.
template <bool kH2V2>
TRIVIUM_INLINE void convert_block(const int16_t* cb_sums, const int16_t* cr_sums,
                                  const uint8_t* y_row, uint8_t* out) {
    __m256i cb_even, cb_odd, cr_even, cr_odd;
    upsample<kH2V2>(cb_sums, &cb_even, &cb_odd);
    upsample<kH2V2>(cr_sums, &cr_even, &cr_odd);
    const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y_row));
    const Rgb16 even = ycc_to_rgb(_mm256_and_si256(y, _mm256_set1_epi16(0xFF)), cb_even, cr_even);
    const Rgb16 odd = ycc_to_rgb(_mm256_srli_epi16(y, 8), cb_odd, cr_odd);
    store_rgb(_mm256_packus_epi16(even.r, odd.r), _mm256_packus_epi16(even.g, odd.g),
              _mm256_packus_epi16(even.b, odd.b), out);
}

// The row in strips of kStrip chroma columns (2 * kStrip pixels): the strip's column
// sums, then its pixels 32 at a time (the last ones through a scratch; the reads
// stay in the rows' slack).
template <bool kH2V2>
void row_to_rgb_avx2(const YccRow& row, int width, uint8_t* rgb) {
    alignas(32) int16_t cb_sums[kStrip + 32], cr_sums[kStrip + 32];
    for (int c0 = 0; 2 * c0 < width; c0 += kStrip) {
        const int x0 = 2 * c0, x1 = std::min(width, x0 + 2 * kStrip);
        const int count = (x1 - x0 + 31) / 32 * 16 + 2;  // columns c0 - 1 .. last block's + 16
        column_sums<kH2V2>(row.cb + c0, kH2V2 ? row.cb_far + c0 : nullptr, count, cb_sums);
        column_sums<kH2V2>(row.cr + c0, kH2V2 ? row.cr_far + c0 : nullptr, count, cr_sums);
        for (int x = x0; x < x1; x += 32) {
            const int j = (x - x0) / 2;
            if (x + 32 <= width) {
                convert_block<kH2V2>(cb_sums + j, cr_sums + j, row.y + x, rgb + 3 * ptrdiff_t(x));
            } else {
                uint8_t tail[96];
                convert_block<kH2V2>(cb_sums + j, cr_sums + j, row.y + x, tail);
                std::memcpy(rgb + 3 * ptrdiff_t(x), tail, 3 * size_t(width - x));
            }
        }
    }
}

#undef TRIVIUM_INLINE
#pragma GCC pop_options
#endif  // TRIVIUM_UPSAMPLE_X86

}  // namespace

void ycc_row_to_rgb(const YccRow& row, int width, bool h2v2, uint8_t* rgb) {
#if TRIVIUM_UPSAMPLE_X86
    if (ycc_vectorised()) {
        if (h2v2) {
            row_to_rgb_avx2<true>(row, width, rgb);
        } else {
            row_to_rgb_avx2<false>(row, width, rgb);
        }
        return;
    }
#endif
    (void)row, (void)width, (void)h2v2, (void)rgb;
    std::abort();  // callers check ycc_vectorised() first
}

}  // namespace trivium
