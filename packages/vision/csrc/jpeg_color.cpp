#include "jpeg_color.h"

#include "vectorize.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TRIVIUM_YCC_X86 1
#else
#define TRIVIUM_YCC_X86 0
#endif

namespace trivium {
namespace {

// libjpeg's fixed-point coefficients (jccolor.c: FIX(x) = x * 2^16 rounded) and its
// rounding terms: ONE_HALF for luma, CBCR_OFFSET + ONE_HALF - 1 for chroma.
constexpr int kYr = 19595, kYg = 38470, kYb = 7471;  // 0.29900, 0.58700, 0.11400
constexpr int kCbR = 11059, kCbG = 21709;            // 0.16874, 0.33126 (negated)
constexpr int kCrG = 27439, kCrB = 5329;             // 0.41869, 0.08131 (negated)
constexpr int kHalf = 32768;                         // FIX(0.5), also ONE_HALF
constexpr int kChromaRound = (128 << 16) + kHalf - 1;

struct Rows {
    const uint8_t* top;
    const uint8_t* bottom;
    ptrdiff_t ahead = 0;  // bytes to the rows an MCU row (16 rows) below, 0 past the end
};

#if TRIVIUM_YCC_X86
// Pixel x of a row (x clamped to the image): the channel offsets of the layout.
inline void pixel(const RgbImage& image, const uint8_t* row_r, int x, int* r, int* g, int* b) {
    x = std::min(x, image.width - 1);
    if (image.planar) {
        const ptrdiff_t off = row_r - image.r;
        *r = image.r[off + x];
        *g = image.g[off + x];
        *b = image.b[off + x];
    } else {
        *r = row_r[3 * x];
        *g = row_r[3 * x + 1];
        *b = row_r[3 * x + 2];
    }
}

// The 32 pixels of a row from column x0 (past the image: its last pixel), interleaved.
void copy_tail(const RgbImage& image, const uint8_t* row_r, int x0, uint8_t* rgb) {
    const int inside = std::min(32, image.width - x0);
    if (image.planar) {
        for (int i = 0; i < inside; ++i) {
            int r, g, b;
            pixel(image, row_r, x0 + i, &r, &g, &b);
            rgb[3 * i] = uint8_t(r), rgb[3 * i + 1] = uint8_t(g), rgb[3 * i + 2] = uint8_t(b);
        }
    } else {
        std::memcpy(rgb, row_r + 3 * ptrdiff_t(x0), 3 * size_t(inside));
    }
    for (int i = inside; i < 32; ++i) std::memcpy(rgb + 3 * i, rgb + 3 * (inside - 1), 3);
}

// Everything down to the #endif is compiled for AVX2 (no lambdas here: they would not
// be) and runs only where ycc_vectorised() says the CPU has it.
#pragma GCC push_options
#pragma GCC target("avx2")
#define TRIVIUM_INLINE inline __attribute__((always_inline))

// Two 16-bit multipliers for _mm256_madd_epi16 on (low, high) sample pairs.
TRIVIUM_INLINE __m256i weights(int low, int high) {
    return _mm256_set1_epi32(static_cast<int>((uint32_t(uint16_t(high)) << 16) | uint16_t(low)));
}

// Luma, Cb and Cr (32-bit) of 8 pixels given as (R, G) and (G, B) 16-bit pairs. The
// sums are libjpeg's integers with the weights regrouped to fit 16-bit multipliers:
// G's luma weight as 22086 + 16384, and the chroma sums negated so that the 0.5
// weights become -32768.
struct Ycc8 {
    __m256i y, cb, cr;
};

TRIVIUM_INLINE Ycc8 convert8(__m256i rg, __m256i gb) {
    const __m256i round = _mm256_set1_epi32(kChromaRound);
    const __m256i y_sum = _mm256_add_epi32(_mm256_madd_epi16(rg, weights(kYr, kYg - 16384)),
                                           _mm256_madd_epi16(gb, weights(16384, kYb)));
    const __m256i cb_neg = _mm256_add_epi32(_mm256_madd_epi16(rg, weights(kCbR, kCbG)),
                                            _mm256_madd_epi16(gb, weights(0, -kHalf)));
    const __m256i cr_neg = _mm256_add_epi32(_mm256_madd_epi16(rg, weights(-kHalf, kCrG)),
                                            _mm256_madd_epi16(gb, weights(0, kCrB)));
    return {_mm256_srli_epi32(_mm256_add_epi32(y_sum, _mm256_set1_epi32(kHalf)), 16),
            _mm256_srai_epi32(_mm256_sub_epi32(round, cb_neg), 16),
            _mm256_srai_epi32(_mm256_sub_epi32(round, cr_neg), 16)};
}

// Two 8-pixel groups' values packed to 16 bits (lane by lane, as packs_epi32 does).
TRIVIUM_INLINE Ycc8 pack(const Ycc8& lo, const Ycc8& hi) {
    return {_mm256_packs_epi32(lo.y, hi.y), _mm256_packs_epi32(lo.cb, hi.cb),
            _mm256_packs_epi32(lo.cr, hi.cr)};
}

// A row's 32 pixels are converted in 8-pixel groups: pixels 0-3 | 16-19, 4-7 | 20-23,
// 8-11 | 24-27 and 12-15 | 28-31 (low | high 128-bit lane). `ab` holds the first two
// groups packed, `cd` the last two; storing packus(ab.y, cd.y) gives the luma in pixel
// order. The chroma goes on to be downsampled.
struct Ycc32 {
    Ycc8 ab, cd;
};

// Shuffles from 12 interleaved bytes at offset 0 or 4 of a lane to 4 pixels' (R, G) or
// (G, B) 16-bit pairs (-1: a zero byte).
alignas(16) constexpr int8_t kPairs[2][2][16] = {
    {{0, -1, 1, -1, 3, -1, 4, -1, 6, -1, 7, -1, 9, -1, 10, -1},
     {1, -1, 2, -1, 4, -1, 5, -1, 7, -1, 8, -1, 10, -1, 11, -1}},
    {{4, -1, 5, -1, 7, -1, 8, -1, 10, -1, 11, -1, 13, -1, 14, -1},
     {5, -1, 6, -1, 8, -1, 9, -1, 11, -1, 12, -1, 14, -1, 15, -1}},
};

TRIVIUM_INLINE __m256i pairs_mask(int offset4, int gb) {
    return _mm256_broadcastsi128_si256(
        _mm_load_si128(reinterpret_cast<const __m128i*>(kPairs[offset4][gb])));
}

// Bytes lo..lo+15 of 48-byte chunk 0 in the low lane and of chunk 1 in the high lane.
TRIVIUM_INLINE __m256i load_lanes(const uint8_t* p, int lo) {
    const auto* q = reinterpret_cast<const __m128i*>(p + lo);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(q)),
                                   _mm_loadu_si128(q + 3), 1);
}

TRIVIUM_INLINE Ycc8 convert_window(__m256i window, int offset4) {
    return convert8(_mm256_shuffle_epi8(window, pairs_mask(offset4, 0)),
                    _mm256_shuffle_epi8(window, pairs_mask(offset4, 1)));
}

// 32 interleaved pixels (96 bytes): each lane's 48 bytes as windows of 4 pixels, each
// shuffled straight into its (R, G) and (G, B) pairs.
TRIVIUM_INLINE Ycc32 convert_interleaved(const uint8_t* p) {
    const __m256i a = load_lanes(p, 0), m = load_lanes(p, 16), c = load_lanes(p, 32);
    const Ycc8 g0 = convert_window(a, 0);                            // bytes 0-11
    const Ycc8 g1 = convert_window(_mm256_alignr_epi8(m, a, 12), 0);  // bytes 12-23
    const Ycc8 g2 = convert_window(_mm256_alignr_epi8(c, m, 8), 0);   // bytes 24-35
    const Ycc8 g3 = convert_window(c, 1);                            // bytes 36-47
    return {pack(g0, g1), pack(g2, g3)};
}

TRIVIUM_INLINE __m256i load32(const uint8_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// 16 pixels' pairs as bytes (R G R G ..., G B G B ...): two groups, zero-extended.
TRIVIUM_INLINE Ycc8 convert_byte_pairs(__m256i rg8, __m256i gb8) {
    const __m256i zero = _mm256_setzero_si256();
    return pack(convert8(_mm256_unpacklo_epi8(rg8, zero), _mm256_unpacklo_epi8(gb8, zero)),
                convert8(_mm256_unpackhi_epi8(rg8, zero), _mm256_unpackhi_epi8(gb8, zero)));
}

// 32 pixels of three planes: R, G and B bytes interleaved into pairs by unpacks.
TRIVIUM_INLINE Ycc32 convert_planar(const uint8_t* r8, const uint8_t* g8, const uint8_t* b8) {
    const __m256i r = load32(r8), g = load32(g8), b = load32(b8);
    return {convert_byte_pairs(_mm256_unpacklo_epi8(r, g), _mm256_unpacklo_epi8(g, b)),
            convert_byte_pairs(_mm256_unpackhi_epi8(r, g), _mm256_unpackhi_epi8(g, b))};
}

TRIVIUM_INLINE Ycc32 convert32(const RgbImage& image, const uint8_t* row_r, int x,
                               uint8_t* y_out) {
    Ycc32 out;
    if (image.planar) {
        const ptrdiff_t off = row_r - image.r + x;
        out = convert_planar(image.r + off, image.g + off, image.b + off);
    } else {
        out = convert_interleaved(row_r + 3 * ptrdiff_t(x));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y_out), _mm256_packus_epi16(out.ab.y, out.cd.y));
    return out;
}

// The 2x2 sums of a chroma plane's 16-bit values, (sum + bias) >> 2, 32-bit: chroma
// columns 0-3 | 8-11 from `ab`, 4-7 | 12-15 from `cd`.
TRIVIUM_INLINE __m256i downsample(__m256i top, __m256i bottom) {
    const __m256i bias = _mm256_setr_epi32(1, 2, 1, 2, 1, 2, 1, 2);
    const __m256i sums = _mm256_madd_epi16(_mm256_add_epi16(top, bottom), _mm256_set1_epi16(1));
    return _mm256_srli_epi32(_mm256_add_epi32(sums, bias), 2);
}

// Asks for the pixels the next MCU row converts at column x while this one is
// converted: between the two, libjpeg's DCT and Huffman coding leave the hardware
// prefetchers nothing to follow, so each MCU row would start on cache misses.
TRIVIUM_INLINE void prefetch_ahead(const RgbImage& image, const Rows& rows, int x) {
    for (const uint8_t* row : {rows.top, rows.bottom}) {
        if (image.planar) {
            const ptrdiff_t off = row - image.r + rows.ahead + x;
            for (const uint8_t* plane : {image.r, image.g, image.b}) {
                _mm_prefetch(reinterpret_cast<const char*>(plane + off), _MM_HINT_T0);
            }
        } else {
            const uint8_t* p = row + rows.ahead + 3 * ptrdiff_t(x);
            _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(p + 64), _MM_HINT_T0);
        }
    }
}

// Every whole group of 32 columns inside the image; returns the columns done.
int convert_avx2(const RgbImage& image, Rows rows, uint8_t* y0, uint8_t* y1, uint8_t* cb,
                 uint8_t* cr) {
    int x = 0;
    for (; x + 32 <= image.width; x += 32) {
        if (rows.ahead != 0) prefetch_ahead(image, rows, x);
        const Ycc32 top = convert32(image, rows.top, x, y0 + x);
        const Ycc32 bottom = convert32(image, rows.bottom, x, y1 + x);
        const __m256i cb16 = _mm256_packs_epi32(downsample(top.ab.cb, bottom.ab.cb),
                                                downsample(top.cd.cb, bottom.cd.cb));
        const __m256i cr16 = _mm256_packs_epi32(downsample(top.ab.cr, bottom.ab.cr),
                                                downsample(top.cd.cr, bottom.cd.cr));
        // [cb0-7 cr0-7 | cb8-15 cr8-15] -> [cb0-15 | cr0-15]
        const __m256i both = _mm256_permute4x64_epi64(_mm256_packus_epi16(cb16, cr16), 0xD8);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(cb + x / 2), _mm256_castsi256_si128(both));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(cr + x / 2), _mm256_extracti128_si256(both, 1));
    }
    return x;
}

// Horizontal pairs of a chroma plane's 16-bit values, (sum + bias) >> 1 with the bias
// 0, 1, ...: chroma columns as in `downsample`.
TRIVIUM_INLINE __m256i average_pairs(__m256i chroma) {
    const __m256i bias = _mm256_setr_epi32(0, 1, 0, 1, 0, 1, 0, 1);
    const __m256i sums = _mm256_madd_epi16(chroma, _mm256_set1_epi16(1));
    return _mm256_srli_epi32(_mm256_add_epi32(sums, bias), 1);
}

// One row at 4:4:4 or 4:2:2 (rows.bottom unused), every whole group of 32 columns
// inside the image; returns the columns done.
int convert_row_avx2(const RgbImage& image, Rows rows, int h_factor, uint8_t* y, uint8_t* cb,
                     uint8_t* cr) {
    int x = 0;
    for (; x + 32 <= image.width; x += 32) {
        if (rows.ahead != 0) prefetch_ahead(image, rows, x);
        const Ycc32 ycc = convert32(image, rows.top, x, y + x);
        if (h_factor == 1) {  // packus undoes the lane order, as for the luma
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(cb + x),
                                _mm256_packus_epi16(ycc.ab.cb, ycc.cd.cb));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(cr + x),
                                _mm256_packus_epi16(ycc.ab.cr, ycc.cd.cr));
            continue;
        }
        const __m256i cb16 =
            _mm256_packs_epi32(average_pairs(ycc.ab.cb), average_pairs(ycc.cd.cb));
        const __m256i cr16 =
            _mm256_packs_epi32(average_pairs(ycc.ab.cr), average_pairs(ycc.cd.cr));
        const __m256i both = _mm256_permute4x64_epi64(_mm256_packus_epi16(cb16, cr16), 0xD8);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(cb + x / 2), _mm256_castsi256_si128(both));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(cr + x / 2), _mm256_extracti128_si256(both, 1));
    }
    return x;
}

#undef TRIVIUM_INLINE
#pragma GCC pop_options
#endif  // TRIVIUM_YCC_X86

}  // namespace

bool ycc_vectorised() {
#if TRIVIUM_YCC_X86
    static const bool avx2 = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
    return avx2;
#else
    return false;
#endif
}

TRIVIUM_VECTORIZE void interleave_rgb_row(const RgbImage& image, int row, uint8_t* out) {
    const ptrdiff_t off = ptrdiff_t(row) * image.row_stride;
    const uint8_t* r = image.r + off;
    const uint8_t* g = image.g + off;
    const uint8_t* b = image.b + off;
    for (int x = 0; x < image.width; ++x) {
        out[3 * x] = r[x];
        out[3 * x + 1] = g[x];
        out[3 * x + 2] = b[x];
    }
}

void rgb_rows_to_ycc420(const RgbImage& image, int row0, int row1, uint8_t* y0, uint8_t* y1,
                        uint8_t* cb, uint8_t* cr) {
    Rows rows{image.r + ptrdiff_t(row0) * image.row_stride,
              image.r + ptrdiff_t(row1) * image.row_stride};
    if (row1 + 16 < image.height) rows.ahead = 16 * image.row_stride;
    const int padded = ycc_padded_width(image.width);
    int done = 0;
#if TRIVIUM_YCC_X86
    if (ycc_vectorised()) {
        done = convert_avx2(image, rows, y0, y1, cb, cr);
        if (done < padded) {  // the last columns, padded as libjpeg pads them, in a scratch
            uint8_t rgb[2][96], y[2][32], chroma[2][16];
            copy_tail(image, rows.top, done, rgb[0]);
            copy_tail(image, rows.bottom, done, rgb[1]);
            const RgbImage tail{rgb[0], rgb[0] + 1, rgb[0] + 2, 96, 2, 32, false};
            convert_avx2(tail, Rows{rgb[0], rgb[1]}, y[0], y[1], chroma[0], chroma[1]);
            const int n = padded - done;  // 16 or 32
            std::memcpy(y0 + done, y[0], n);
            std::memcpy(y1 + done, y[1], n);
            std::memcpy(cb + done / 2, chroma[0], n / 2);
            std::memcpy(cr + done / 2, chroma[1], n / 2);
            done = padded;
        }
    }
#endif
    if (done < padded) std::abort();  // callers check ycc_vectorised() first
}

void rgb_row_to_ycc(const RgbImage& image, int row, int h_factor, uint8_t* y, uint8_t* cb,
                    uint8_t* cr) {
    const uint8_t* pixels = image.r + ptrdiff_t(row) * image.row_stride;
    Rows rows{pixels, pixels};
    if (row + 8 < image.height) rows.ahead = 8 * image.row_stride;
    const int padded = ycc_padded_width(image.width);
    int done = 0;
#if TRIVIUM_YCC_X86
    if (ycc_vectorised()) {
        done = convert_row_avx2(image, rows, h_factor, y, cb, cr);
        if (done < padded) {  // the last columns, padded as libjpeg pads them, in a scratch
            uint8_t rgb[96], y_tail[32], chroma[2][32];
            copy_tail(image, pixels, done, rgb);
            const RgbImage tail{rgb, rgb + 1, rgb + 2, 96, 1, 32, false};
            convert_row_avx2(tail, Rows{rgb, rgb}, h_factor, y_tail, chroma[0], chroma[1]);
            const int n = padded - done;  // 16 or 32
            std::memcpy(y + done, y_tail, n);
            std::memcpy(cb + done / h_factor, chroma[0], n / h_factor);
            std::memcpy(cr + done / h_factor, chroma[1], n / h_factor);
            done = padded;
        }
    }
#endif
    if (done < padded) std::abort();  // callers check ycc_vectorised() first
}

}  // namespace trivium
