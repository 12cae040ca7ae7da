// Antialiased crop + resize of uint8 images (see resample.h).
//
// The arithmetic is torch's uint8 path of interpolate(antialias=True) on CPU
// (aten/src/ATen/native/cpu/UpSampleKernel.cpp, HelperInterpBase::
// _compute_index_ranges_int16_weights, and UpSampleKernelAVXAntialias.h): per axis,
// PIL's support and centring, weights normalised in double, rounded to int16 at the
// largest precision whose biggest weight still fits; each output sample is
// (2^(p-1) + sum of weight * sample) >> p, clamped to [0, 255]; width first, the
// intermediate rows rounded to uint8. Integer sums do not depend on their order, so
// the result is bit-exact whatever the loop order. Unlike torch, the planes are
// read and written where they lie (torch repacks every image to RGBA and back,
// which costs more than the filtering for 224 x 224 channel-first images), only the
// rows the vertical pass reads are filtered, and the buffers are reused across the
// images of a batch.
#include "resample.h"
#include "vectorize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <pybind11/numpy.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TRIVIUM_RESAMPLE_SIMD 1
#endif


namespace trivium {
namespace {

double filter_weight(ResampleFilter filter, double x) {
    x = std::abs(x);
    if (filter == ResampleFilter::Bilinear) return x < 1.0 ? 1.0 - x : 0.0;
    constexpr double a = -0.5;  // Keys, as PIL and torch
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    return 0.0;
}

// One axis of the resample: for output i, `count[i]` taps from input `first[i]`,
// with int16 weights w[i * taps ...] at `precision` bits.
struct Axis {
    int64_t taps = 0;
    unsigned precision = 0;
    std::vector<int64_t> first, count;
    std::vector<int16_t> w;
    std::vector<double> real;  // scratch

    void build(int64_t in, int64_t out, ResampleFilter filter) {
        const double scale = double(in) / double(out);
        const double interp = filter == ResampleFilter::Bilinear ? 2.0 : 4.0;
        const double support = scale >= 1.0 ? (interp * 0.5) * scale : interp * 0.5;
        taps = int64_t(std::ceil(support)) * 2 + 1;
        const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
        first.resize(out);
        count.resize(out);
        real.assign(out * taps, 0.0);
        double wt_max = 0.0;
        for (int64_t i = 0; i < out; ++i) {
            const double center = scale * (i + 0.5);
            const int64_t xmin = std::max(int64_t(center - support + 0.5), int64_t(0));
            int64_t xsize = std::min(int64_t(center + support + 0.5), in) - xmin;
            xsize = std::clamp(xsize, int64_t(0), taps);
            double* wi = &real[i * taps];
            double total = 0.0;
            for (int64_t j = 0; j < xsize; ++j) {
                wi[j] = filter_weight(filter, (j + xmin - center + 0.5) * invscale);
                total += wi[j];
            }
            if (total != 0.0) {
                for (int64_t j = 0; j < xsize; ++j) {
                    wi[j] /= total;
                    wt_max = std::max(wt_max, wi[j]);
                }
            }
            first[i] = xmin;
            count[i] = xsize;
        }
        for (precision = 0; precision < 22; ++precision) {
            const int next = int(0.5 + wt_max * (1 << (precision + 1)));
            if (next >= (1 << 15)) break;
        }
        w.resize(out * taps);
        for (size_t k = 0; k < real.size(); ++k) {
            const double v = real[k] * (1 << precision);
            w[k] = int16_t(v < 0 ? int(-0.5 + v) : int(0.5 + v));
        }
        fix_taps(in);
    }

    // Every output to the same number of taps: zero weights dropped (they add
    // nothing), then each output's taps padded with zeros to the longest, its window
    // moved left where it would pass the input's end. The loops then run a fixed
    // number of taps without a branch on the count.
    void fix_taps(int64_t in) {
        const int64_t out = int64_t(first.size());
        int64_t longest = 1;
        for (int64_t i = 0; i < out; ++i) {
            const int16_t* wi = &w[i * taps];
            int64_t a = 0, b = count[i];
            while (a < b && wi[a] == 0) ++a;
            while (b > a && wi[b - 1] == 0) --b;
            first[i] += a;
            count[i] = b - a;
            for (int64_t j = 0; j < count[i]; ++j) real[i * taps + j] = wi[a + j];  // scratch
            longest = std::max(longest, count[i]);
        }
        std::vector<int16_t> fixed(out * longest, 0);
        for (int64_t i = 0; i < out; ++i) {
            if (count[i] == 0) first[i] = 0;  // no weight: any window inside the input
            const int64_t shift = std::max<int64_t>(0, first[i] + longest - in);
            first[i] -= shift;
            for (int64_t j = 0; j < count[i]; ++j) {
                fixed[i * longest + shift + j] = int16_t(real[i * taps + j]);
            }
            count[i] = longest;
        }
        taps = longest;
        w.swap(fixed);
    }

    int32_t half() const { return precision > 0 ? int32_t(1) << (precision - 1) : 0; }
};

inline uint8_t clamp_u8(int32_t v) { return uint8_t(std::min(std::max(v, 0), 255)); }

// A plane: sample (y, x) at data[y * row + x * col].
struct Plane {
    const uint8_t* data;
    int64_t row, col;
};

// One output sample of the horizontal pass: `taps` (T when T > 0) weights from s.
template <int T>
inline uint8_t convolve(const uint8_t* s, int64_t col, const int16_t* k, int64_t taps,
                        int32_t half, unsigned p) {
    const int64_t n = T > 0 ? T : taps;
    int32_t acc = half;
    for (int64_t t = 0; t < n; ++t) acc += int32_t(k[t]) * int32_t(s[t * col]);
    return clamp_u8(acc >> p);
}

// out[y][x] for y in [y0, y1) = horizontal pass of rows y of `in` (x: the axis's
// outputs); T: the axis's taps when known at compile time (0: at run time).
template <int T>
void horizontal_taps(const Plane& in, int64_t y0, int64_t y1, const Axis& ax, uint8_t* out,
                     int64_t out_row, int64_t out_col) {
    const int64_t n = int64_t(ax.first.size()), taps = ax.taps, col = in.col;
    const int32_t half = ax.half();
    const unsigned p = ax.precision;
    const int64_t* first = ax.first.data();
    const int16_t* w = ax.w.data();
    int64_t y = y0;
    if (col == 1 && out_col == 1) {
        // Four rows at a time: the window and weights of an output are loaded once.
        for (; y + 4 <= y1; y += 4) {
            const uint8_t* s0 = in.data + y * in.row;
            const uint8_t *s1 = s0 + in.row, *s2 = s1 + in.row, *s3 = s2 + in.row;
            uint8_t* d0 = out + y * out_row;
            uint8_t *d1 = d0 + out_row, *d2 = d1 + out_row, *d3 = d2 + out_row;
            for (int64_t x = 0; x < n; ++x) {
                const int64_t f = first[x];
                const int16_t* k = w + x * taps;
                d0[x] = convolve<T>(s0 + f, 1, k, taps, half, p);
                d1[x] = convolve<T>(s1 + f, 1, k, taps, half, p);
                d2[x] = convolve<T>(s2 + f, 1, k, taps, half, p);
                d3[x] = convolve<T>(s3 + f, 1, k, taps, half, p);
            }
        }
    }
    for (; y < y1; ++y) {
        const uint8_t* src = in.data + y * in.row;
        uint8_t* dst = out + y * out_row;
        for (int64_t x = 0; x < n; ++x) {
            dst[x * out_col] = convolve<T>(src + first[x] * col, col, w + x * taps, taps, half, p);
        }
    }
}

void horizontal_scalar(const Plane& in, int64_t y0, int64_t y1, const Axis& ax, uint8_t* out,
                       int64_t out_row, int64_t out_col) {
    switch (ax.taps) {
        case 1: return horizontal_taps<1>(in, y0, y1, ax, out, out_row, out_col);
        case 2: return horizontal_taps<2>(in, y0, y1, ax, out, out_row, out_col);
        case 3: return horizontal_taps<3>(in, y0, y1, ax, out, out_row, out_col);
        case 4: return horizontal_taps<4>(in, y0, y1, ax, out, out_row, out_col);
        case 5: return horizontal_taps<5>(in, y0, y1, ax, out, out_row, out_col);
        case 6: return horizontal_taps<6>(in, y0, y1, ax, out, out_row, out_col);
        default: return horizontal_taps<0>(in, y0, y1, ax, out, out_row, out_col);
    }
}

#ifdef TRIVIUM_RESAMPLE_SIMD
// The horizontal pass with SSSE3, 4 outputs at a time, for axes whose 4 consecutive
// outputs read at most 16 consecutive input bytes (upscales and mild downscales, up
// to 4 taps): one 16-byte load per group, a byte shuffle into (sample, sample) int16
// pairs, multiplied-added with the weight pairs (as torch's AVX2 kernel does with
// RGBA pixels). Groups whose load would pass the row's end are left to the scalar
// loop. The plan depends only on the axis, so it is made once per image.
struct ShufflePlan {
    int64_t groups = 0;  // outputs [0, 4 * groups) go through the SIMD loop
    struct alignas(16) Lanes {
        int16_t v[8];
    };
    std::vector<int32_t> base;
    std::vector<Lanes> spread01, spread23, pair01, pair23;  // __m128i each

    bool make(const Axis& ax, int64_t row_len) {
        const int64_t n = int64_t(ax.first.size()), taps = ax.taps;
        groups = 0;
        if (taps > 4) return false;
        base.clear(), spread01.clear(), spread23.clear(), pair01.clear(), pair23.clear();
        for (int64_t g = 0; 4 * g + 4 <= n; ++g) {
            // Trimmed windows need not move right monotonically: span the group's.
            const int64_t x0 = 4 * g;
            const int64_t* f = &ax.first[x0];
            const int64_t start = std::min({f[0], f[1], f[2], f[3]});
            const int64_t end = std::max({f[0], f[1], f[2], f[3]}) + taps;
            if (start + 16 > row_len || end - start > 16) break;
            Lanes shuffle01, shuffle23, w01, w23;
            auto* m01 = reinterpret_cast<int8_t*>(shuffle01.v);
            auto* m23 = reinterpret_cast<int8_t*>(shuffle23.v);
            for (int64_t j = 0; j < 4; ++j) {
                const int64_t off = ax.first[x0 + j] - start;
                const int16_t* k = &ax.w[(x0 + j) * taps];
                for (int64_t t = 0; t < 4; ++t) {
                    int8_t* m = t < 2 ? m01 : m23;
                    int16_t* w = t < 2 ? w01.v : w23.v;
                    const int64_t slot = 2 * j + t % 2;
                    m[2 * slot] = t < taps ? int8_t(off + t) : int8_t(-128);
                    m[2 * slot + 1] = int8_t(-128);  // the high byte: zero
                    w[slot] = t < taps ? k[t] : int16_t(0);
                }
            }
            base.push_back(int32_t(start));
            spread01.push_back(shuffle01);
            spread23.push_back(shuffle23);
            pair01.push_back(w01);
            pair23.push_back(w23);
            ++groups;
        }
        return groups > 0;
    }
};

__attribute__((target("ssse3"))) void horizontal_ssse3(const Plane& in, int64_t y0, int64_t y1,
                                                        const Axis& ax, const ShufflePlan& plan,
                                                        uint8_t* out, int64_t out_row) {
    const __m128i half = _mm_set1_epi32(ax.half());
    const __m128i shift = _mm_cvtsi32_si128(int(ax.precision));
    const bool four = ax.taps > 2;
    const int64_t groups = plan.groups;
    const int32_t* base = plan.base.data();
    auto lanes = [](const std::vector<ShufflePlan::Lanes>& v) {
        return reinterpret_cast<const __m128i*>(v.data());
    };
    const __m128i *spread01 = lanes(plan.spread01), *spread23 = lanes(plan.spread23);
    const __m128i *pair01 = lanes(plan.pair01), *pair23 = lanes(plan.pair23);
    for (int64_t y = y0; y < y1; ++y) {
        const uint8_t* src = in.data + y * in.row;
        uint8_t* dst = out + y * out_row;
        for (int64_t g = 0; g < groups; ++g) {
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + base[g]));
            __m128i acc =
                _mm_add_epi32(half, _mm_madd_epi16(_mm_shuffle_epi8(v, spread01[g]), pair01[g]));
            if (four) {
                acc = _mm_add_epi32(
                    acc, _mm_madd_epi16(_mm_shuffle_epi8(v, spread23[g]), pair23[g]));
            }
            acc = _mm_sra_epi32(acc, shift);
            const __m128i words = _mm_packs_epi32(acc, acc);
            const int32_t bytes = _mm_cvtsi128_si32(_mm_packus_epi16(words, words));
            std::memcpy(dst + 4 * g, &bytes, 4);
        }
    }
}

// __builtin_cpu_init first: in a shared library nothing may have run it yet.
bool cpu_has(int feature) {
    static const bool ssse3 = (__builtin_cpu_init(), __builtin_cpu_supports("ssse3"));
    static const bool avx2 = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
    return feature == 2 ? avx2 : ssse3;
}

bool has_ssse3() { return cpu_has(1); }
#endif

// What the horizontal pass reuses from call to call (one per thread).
struct HorizontalScratch {
#ifdef TRIVIUM_RESAMPLE_SIMD
    ShufflePlan plan;
#endif
    Axis rest;
};

// The horizontal pass (see horizontal_taps); `row_len`: the input row's length.
void horizontal(const Plane& in, int64_t y0, int64_t y1, const Axis& ax, int64_t row_len,
                uint8_t* out, int64_t out_row, int64_t out_col, HorizontalScratch& scratch) {
#ifdef TRIVIUM_RESAMPLE_SIMD
    ShufflePlan& plan = scratch.plan;
    if (in.col == 1 && out_col == 1 && has_ssse3() && plan.make(ax, row_len)) {
        horizontal_ssse3(in, y0, y1, ax, plan, out, out_row);
        const int64_t done = 4 * plan.groups;
        if (done == int64_t(ax.first.size())) return;
        // The last outputs, by the scalar loop over an axis of the rest.
        Axis& rest = scratch.rest;
        rest.taps = ax.taps;
        rest.precision = ax.precision;
        rest.first.assign(ax.first.begin() + done, ax.first.end());
        rest.count.assign(ax.count.begin() + done, ax.count.end());
        rest.w.assign(ax.w.begin() + done * ax.taps, ax.w.end());
        return horizontal_scalar(in, y0, y1, rest, out + done, out_row, out_col);
    }
#endif
    horizontal_scalar(in, y0, y1, ax, out, out_row, out_col);
}

// Vertical pass: out row y = the axis's weighted rows of `in`, `width` samples each.
// T: the axis's taps when known at compile time (0: at run time); the loop over x
// then vectorises. Inlined into a default and an AVX2 build (chosen at run time).
template <int T>
__attribute__((always_inline)) inline void vertical_body(const Plane& in, int64_t width,
                                                         const Axis& ax, uint8_t* out,
                                                         int64_t out_row, int64_t out_col) {
    const int64_t n = int64_t(ax.first.size()), taps = T > 0 ? T : ax.taps;
    const int32_t half = ax.half();
    const unsigned p = ax.precision;
    std::vector<const uint8_t*> rows(taps);
    std::vector<int32_t> k(taps);
    for (int64_t y = 0; y < n; ++y) {
        for (int64_t t = 0; t < taps; ++t) {
            rows[t] = in.data + (ax.first[y] + t) * in.row;
            k[t] = ax.w[y * ax.taps + t];
        }
        uint8_t* dst = out + y * out_row;
        if (in.col == 1 && out_col == 1) {
            for (int64_t x = 0; x < width; ++x) {
                int32_t acc = half;
                for (int64_t t = 0; t < taps; ++t) acc += k[t] * int32_t(rows[t][x]);
                dst[x] = clamp_u8(acc >> p);
            }
        } else {
            for (int64_t x = 0; x < width; ++x) {
                int32_t acc = half;
                for (int64_t t = 0; t < taps; ++t) acc += k[t] * int32_t(rows[t][x * in.col]);
                dst[x * out_col] = clamp_u8(acc >> p);
            }
        }
    }
}

template <int T>
TRIVIUM_VECTORIZE void vertical_default(const Plane& in, int64_t width, const Axis& ax,
                                        uint8_t* out, int64_t out_row, int64_t out_col) {
    vertical_body<T>(in, width, ax, out, out_row, out_col);
}

#ifdef TRIVIUM_RESAMPLE_SIMD
template <int T>
__attribute__((target("avx2"))) TRIVIUM_VECTORIZE void vertical_avx2(
    const Plane& in, int64_t width, const Axis& ax, uint8_t* out, int64_t out_row,
    int64_t out_col) {
    vertical_body<T>(in, width, ax, out, out_row, out_col);
}

bool has_avx2() { return cpu_has(2); }
#endif

template <int T>
void vertical_taps(const Plane& in, int64_t width, const Axis& ax, uint8_t* out,
                   int64_t out_row, int64_t out_col) {
#ifdef TRIVIUM_RESAMPLE_SIMD
    if (has_avx2()) return vertical_avx2<T>(in, width, ax, out, out_row, out_col);
#endif
    vertical_default<T>(in, width, ax, out, out_row, out_col);
}

void vertical(const Plane& in, int64_t width, const Axis& ax, uint8_t* out, int64_t out_row,
              int64_t out_col) {
    switch (ax.taps) {
        case 1: return vertical_taps<1>(in, width, ax, out, out_row, out_col);
        case 2: return vertical_taps<2>(in, width, ax, out, out_row, out_col);
        case 3: return vertical_taps<3>(in, width, ax, out, out_row, out_col);
        case 4: return vertical_taps<4>(in, width, ax, out, out_row, out_col);
        default: return vertical_taps<0>(in, width, ax, out, out_row, out_col);
    }
}

// Buffers one thread reuses from image to image.
struct Worker {
    Axis across, down;
    std::vector<uint8_t> rows;  // the horizontal pass's output (one plane)
    HorizontalScratch scratch;

    void run(const ImageBatch& src, const int64_t* box, const ImageBatch& dst, int64_t k,
             ResampleFilter filter) {
        const int64_t top = box[0], left = box[1], bh = box[2], bw = box[3];
        const int64_t oh = dst.h, ow = dst.w;
        const bool need_h = bw != ow, need_v = bh != oh;
        const uint8_t* in = src.data + k * src.stride_n + top * src.stride_h + left * src.stride_w;
        uint8_t* out = dst.data + k * dst.stride_n;
        if (!need_h && !need_v) {
            for (int64_t c = 0; c < src.c; ++c)
                for (int64_t y = 0; y < oh; ++y)
                    for (int64_t x = 0; x < ow; ++x)
                        out[c * dst.stride_c + y * dst.stride_h + x * dst.stride_w] =
                            in[c * src.stride_c + y * src.stride_h + x * src.stride_w];
            return;
        }
        if (need_h) across.build(bw, ow, filter);
        if (need_v) down.build(bh, oh, filter);
        // Rows of the box the vertical pass reads (all of them without one).
        int64_t y0 = 0, y1 = bh;
        if (need_v) {  // (trimmed windows need not move down monotonically)
            y0 = bh;
            y1 = 0;
            for (int64_t y = 0; y < oh; ++y) {
                y0 = std::min(y0, down.first[y]);
                y1 = std::max(y1, down.first[y] + down.count[y]);
            }
        }
        if (need_h && need_v) rows.resize(size_t(bh) * ow);
        for (int64_t c = 0; c < src.c; ++c) {
            const Plane plane{in + c * src.stride_c, src.stride_h, src.stride_w};
            uint8_t* out_plane = out + c * dst.stride_c;
            if (!need_v) {
                horizontal(plane, 0, bh, across, bw, out_plane, dst.stride_h, dst.stride_w, scratch);
            } else if (!need_h) {
                vertical(plane, ow, down, out_plane, dst.stride_h, dst.stride_w);
            } else {
                horizontal(plane, y0, y1, across, bw, rows.data(), ow, 1, scratch);
                vertical(Plane{rows.data(), ow, 1}, ow, down, out_plane, dst.stride_h,
                         dst.stride_w);
            }
        }
    }
};

}  // namespace

bool resized_crops_u8(const ImageBatch& src, const int64_t* boxes, const ImageBatch& dst,
                      ResampleFilter filter, int threads, int64_t* bad_box) {
    for (int64_t k = 0; k < src.n; ++k) {
        const int64_t* b = boxes + 4 * k;
        if (b[0] < 0 || b[1] < 0 || b[2] <= 0 || b[3] <= 0 || b[2] > src.h - b[0] ||
            b[3] > src.w - b[1]) {
            *bad_box = k;
            return false;
        }
    }
    if (dst.h <= 0 || dst.w <= 0 || src.c <= 0) return true;  // nothing to write
    // A thread per 64 K output samples at least: starting one costs tens of microseconds.
    const int64_t work = src.n * src.c * dst.h * dst.w;
    const int64_t workers = std::max<int64_t>(1, std::min<int64_t>({threads, src.n, work >> 16}));
    auto share = [&](int64_t part) {
        Worker worker;
        for (int64_t k = part; k < src.n; k += workers) worker.run(src, boxes + 4 * k, dst, k, filter);
    };
    if (workers == 1) {
        share(0);
        return true;
    }
    std::vector<std::thread> pool;
    for (int64_t part = 1; part < workers; ++part) pool.emplace_back(share, part);
    share(0);
    for (auto& t : pool) t.join();
    return true;
}

}  // namespace trivium

namespace py = pybind11;

namespace {

trivium::ImageBatch batch_of(const py::array& a, const char* name, bool writable) {
    if (!a.dtype().is(py::dtype::of<uint8_t>()) || a.ndim() != 4) {
        throw py::value_error(std::string(name) + " must be a uint8 array [N, C, H, W]");
    }
    if (writable && !a.writeable()) throw py::value_error(std::string(name) + " must be writable");
    for (int d = 0; d < 4; ++d) {
        if (a.strides(d) < 0) throw py::value_error(std::string(name) + " has a negative stride");
    }
    auto* data = static_cast<uint8_t*>(const_cast<void*>(a.data()));
    return {data,          a.shape(0),    a.shape(1),    a.shape(2),   a.shape(3),
            a.strides(0),  a.strides(1),  a.strides(2),  a.strides(3)};
}

// resized_crops_u8(src [N, C, H, W] uint8, boxes [N, 4] int64 (top, left, height,
// width), out [N, C, oh, ow] uint8, filter "bilinear" | "bicubic", threads): see
// resample.h. Writes `out`; a box outside its image raises ValueError.
void py_resized_crops_u8(const py::array& src_in, const py::array& boxes_in, py::array& out_in,
                         const std::string& filter_name, int threads) {
    const auto src = batch_of(src_in, "src", false);
    const auto dst = batch_of(out_in, "out", true);
    if (dst.n != src.n || dst.c != src.c) {
        throw py::value_error("out must have as many images and channels as src");
    }
    const auto boxes =
        py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(boxes_in);
    if (!boxes || boxes.ndim() != 2 || boxes.shape(0) != src.n || boxes.shape(1) != 4) {
        throw py::value_error("boxes must be an int64 array [N, 4]");
    }
    trivium::ResampleFilter filter;
    if (filter_name == "bilinear") {
        filter = trivium::ResampleFilter::Bilinear;
    } else if (filter_name == "bicubic") {
        filter = trivium::ResampleFilter::Bicubic;
    } else {
        throw py::value_error("filter must be 'bilinear' or 'bicubic', got '" + filter_name + "'");
    }
    int64_t bad = -1;
    bool ok;
    {
        py::gil_scoped_release release;
        ok = trivium::resized_crops_u8(src, boxes.data(), dst, filter, threads, &bad);
    }
    if (!ok) {
        const int64_t* b = boxes.data() + 4 * bad;
        throw py::value_error("resized crop: box " + std::to_string(bad) + " (top=" +
                              std::to_string(b[0]) + ", left=" + std::to_string(b[1]) +
                              ", height=" + std::to_string(b[2]) + ", width=" +
                              std::to_string(b[3]) + ") is not inside the " +
                              std::to_string(src.h) + "x" + std::to_string(src.w) + " image");
    }
}

}  // namespace

void register_resample(py::module_& m) {
    m.def("resized_crops_u8", &py_resized_crops_u8, py::arg("src"), py::arg("boxes"),
          py::arg("out"), py::arg("filter"), py::arg("threads") = 1);
}
