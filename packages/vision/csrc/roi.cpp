// RoI Align and RoI Pool (roi.h): torchvision's CPU arithmetic, threaded.
#include "roi.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

namespace trivium {
namespace {

// fn(begin, end) over [0, n) split into up to `threads` contiguous ranges.
void parallel_ranges(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& fn) {
    const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads, n));
    if (parts == 1) {
        if (n > 0) fn(0, n);
        return;
    }
    std::vector<std::thread> pool;
    for (int64_t p = 1; p < parts; ++p) {
        pool.emplace_back(fn, n * p / parts, n * (p + 1) / parts);
    }
    fn(0, n / parts);
    for (auto& t : pool) t.join();
}

// One bilinear sample: the four cells and their weights (all zero outside).
template <typename T>
struct Sample {
    int64_t pos1, pos2, pos3, pos4;
    T w1, w2, w3, w4;
};

template <typename T>
Sample<T> bilinear(int64_t height, int64_t width, T y, T x) {
    if (y < -1.0 || y > height || x < -1.0 || x > width) return {0, 0, 0, 0, 0, 0, 0, 0};
    if (y <= 0) y = 0;
    if (x <= 0) x = 0;
    int64_t y_low = static_cast<int64_t>(y);
    int64_t x_low = static_cast<int64_t>(x);
    int64_t y_high, x_high;
    if (y_low >= height - 1) {
        y_high = y_low = height - 1;
        y = static_cast<T>(y_low);
    } else {
        y_high = y_low + 1;
    }
    if (x_low >= width - 1) {
        x_high = x_low = width - 1;
        x = static_cast<T>(x_low);
    } else {
        x_high = x_low + 1;
    }
    const T ly = y - y_low, lx = x - x_low;
    const T hy = 1. - ly, hx = 1. - lx;
    return {y_low * width + x_low, y_low * width + x_high, y_high * width + x_low,
            y_high * width + x_high, hy * hx, hy * lx, ly * hx, ly * lx};
}

// The samples of one RoI, bin by bin (row-major), each bin's grid row-major, and the
// number of samples per bin torchvision divides by.
template <typename T>
T align_samples(const T* roi, const RoiShape& s, double spatial_scale, int64_t sampling_ratio,
                bool aligned, std::vector<Sample<T>>& out) {
    // torchvision takes the scale in the input's type.
    const T scale = static_cast<T>(spatial_scale);
    const T offset = aligned ? static_cast<T>(0.5) : static_cast<T>(0.0);
    const T roi_start_w = roi[1] * scale - offset;
    const T roi_start_h = roi[2] * scale - offset;
    const T roi_end_w = roi[3] * scale - offset;
    const T roi_end_h = roi[4] * scale - offset;
    T roi_width = roi_end_w - roi_start_w;
    T roi_height = roi_end_h - roi_start_h;
    if (!aligned) {
        roi_width = std::max(roi_width, static_cast<T>(1.));
        roi_height = std::max(roi_height, static_cast<T>(1.));
    }
    const T bin_size_h = roi_height / static_cast<T>(s.ph);
    const T bin_size_w = roi_width / static_cast<T>(s.pw);
    const int64_t grid_h = sampling_ratio > 0
                               ? sampling_ratio
                               : static_cast<int64_t>(std::ceil(roi_height / s.ph));
    const int64_t grid_w = sampling_ratio > 0
                               ? sampling_ratio
                               : static_cast<int64_t>(std::ceil(roi_width / s.pw));
    out.clear();
    const int64_t gh = std::max<int64_t>(grid_h, 0), gw = std::max<int64_t>(grid_w, 0);
    out.reserve(s.ph * s.pw * gh * gw);
    for (int64_t ph = 0; ph < s.ph; ++ph) {
        for (int64_t pw = 0; pw < s.pw; ++pw) {
            for (int64_t iy = 0; iy < gh; ++iy) {
                const T y = roi_start_h + ph * bin_size_h +
                            static_cast<T>(iy + .5f) * bin_size_h / static_cast<T>(grid_h);
                for (int64_t ix = 0; ix < gw; ++ix) {
                    const T x = roi_start_w + pw * bin_size_w +
                                static_cast<T>(ix + .5f) * bin_size_w / static_cast<T>(grid_w);
                    out.push_back(bilinear<T>(s.h, s.w, y, x));
                }
            }
        }
    }
    return std::max<T>(static_cast<T>(grid_h * grid_w), 1);
}

// C's round: halves away from zero.
template <typename T>
int64_t round_half_away(T v) {
    return static_cast<int64_t>(std::round(v));
}

struct PoolBin {
    int64_t hstart, hend, wstart, wend;
    bool empty() const { return hend <= hstart || wend <= wstart; }
};

template <typename T>
PoolBin pool_bin(const T* roi, const RoiShape& s, double spatial_scale, int64_t ph, int64_t pw) {
    const T scale = static_cast<T>(spatial_scale);  // in the input's type, as torchvision
    const int64_t roi_start_w = round_half_away(roi[1] * scale);
    const int64_t roi_start_h = round_half_away(roi[2] * scale);
    const int64_t roi_end_w = round_half_away(roi[3] * scale);
    const int64_t roi_end_h = round_half_away(roi[4] * scale);
    const int64_t roi_width = std::max<int64_t>(roi_end_w - roi_start_w + 1, 1);
    const int64_t roi_height = std::max<int64_t>(roi_end_h - roi_start_h + 1, 1);
    const T bin_size_h = static_cast<T>(roi_height) / static_cast<T>(s.ph);
    const T bin_size_w = static_cast<T>(roi_width) / static_cast<T>(s.pw);
    auto clip = [](int64_t v, int64_t hi) { return std::min(std::max<int64_t>(v, 0), hi); };
    PoolBin b;
    b.hstart = clip(static_cast<int64_t>(std::floor(static_cast<T>(ph) * bin_size_h)) + roi_start_h, s.h);
    b.wstart = clip(static_cast<int64_t>(std::floor(static_cast<T>(pw) * bin_size_w)) + roi_start_w, s.w);
    b.hend = clip(static_cast<int64_t>(std::ceil(static_cast<T>(ph + 1) * bin_size_h)) + roi_start_h, s.h);
    b.wend = clip(static_cast<int64_t>(std::ceil(static_cast<T>(pw + 1) * bin_size_w)) + roi_start_w, s.w);
    return b;
}

}  // namespace

template <typename T>
void roi_align_forward(const T* input, const T* rois, const RoiShape& s, double spatial_scale,
                       int64_t sampling_ratio, bool aligned, T* out, int threads) {
    const int64_t bins = s.ph * s.pw;
    parallel_ranges(s.k, threads, [&](int64_t begin, int64_t end) {
        std::vector<Sample<T>> samples;
        for (int64_t r = begin; r < end; ++r) {
            const T* roi = rois + r * 5;
            const T count = align_samples(roi, s, spatial_scale, sampling_ratio, aligned, samples);
            const int64_t per_bin = static_cast<int64_t>(samples.size()) / bins;
            const T* image = input + static_cast<int64_t>(roi[0]) * s.c * s.h * s.w;
            for (int64_t c = 0; c < s.c; ++c) {
                const T* plane = image + c * s.h * s.w;
                T* o = out + (r * s.c + c) * bins;
                const Sample<T>* sp = samples.data();
                for (int64_t b = 0; b < bins; ++b) {
                    T acc = 0;
                    for (int64_t i = 0; i < per_bin; ++i, ++sp) {
                        acc += sp->w1 * plane[sp->pos1] + sp->w2 * plane[sp->pos2] +
                               sp->w3 * plane[sp->pos3] + sp->w4 * plane[sp->pos4];
                    }
                    o[b] = acc / count;
                }
            }
        }
    });
}

template <typename T>
void roi_align_backward(const T* grad, const T* rois, const RoiShape& s, double spatial_scale,
                        int64_t sampling_ratio, bool aligned, T* grad_input, int threads) {
    const int64_t bins = s.ph * s.pw;
    parallel_ranges(s.c, threads, [&](int64_t c_begin, int64_t c_end) {
        std::vector<Sample<T>> samples;
        for (int64_t r = 0; r < s.k; ++r) {
            const T* roi = rois + r * 5;
            const T count = align_samples(roi, s, spatial_scale, sampling_ratio, aligned, samples);
            const int64_t per_bin = static_cast<int64_t>(samples.size()) / bins;
            T* image = grad_input + static_cast<int64_t>(roi[0]) * s.c * s.h * s.w;
            for (int64_t c = c_begin; c < c_end; ++c) {
                T* plane = image + c * s.h * s.w;
                const T* g = grad + (r * s.c + c) * bins;
                const Sample<T>* sp = samples.data();
                for (int64_t b = 0; b < bins; ++b) {
                    const T gb = g[b];
                    for (int64_t i = 0; i < per_bin; ++i, ++sp) {
                        plane[sp->pos1] += gb * sp->w1 / count;
                        plane[sp->pos2] += gb * sp->w2 / count;
                        plane[sp->pos3] += gb * sp->w3 / count;
                        plane[sp->pos4] += gb * sp->w4 / count;
                    }
                }
            }
        }
    });
}

template <typename T>
void roi_pool_forward(const T* input, const T* rois, const RoiShape& s, double spatial_scale,
                      T* out, int64_t* argmax, int threads) {
    const int64_t bins = s.ph * s.pw;
    parallel_ranges(s.k, threads, [&](int64_t begin, int64_t end) {
        std::vector<PoolBin> roi_bins(bins);
        for (int64_t r = begin; r < end; ++r) {
            const T* roi = rois + r * 5;
            for (int64_t ph = 0; ph < s.ph; ++ph) {
                for (int64_t pw = 0; pw < s.pw; ++pw) {
                    roi_bins[ph * s.pw + pw] = pool_bin(roi, s, spatial_scale, ph, pw);
                }
            }
            const T* image = input + static_cast<int64_t>(roi[0]) * s.c * s.h * s.w;
            for (int64_t c = 0; c < s.c; ++c) {
                const T* plane = image + c * s.h * s.w;
                for (int64_t b = 0; b < bins; ++b) {
                    const PoolBin& bin = roi_bins[b];
                    T best = bin.empty() ? 0 : -FLT_MAX;
                    int64_t best_index = -1;
                    for (int64_t y = bin.hstart; y < bin.hend; ++y) {
                        for (int64_t x = bin.wstart; x < bin.wend; ++x) {
                            const int64_t index = y * s.w + x;
                            if (plane[index] > best) {
                                best = plane[index];
                                best_index = index;
                            }
                        }
                    }
                    out[(r * s.c + c) * bins + b] = best;
                    argmax[(r * s.c + c) * bins + b] = best_index;
                }
            }
        }
    });
}

template <typename T>
void roi_pool_backward(const T* grad, const T* rois, const int64_t* argmax, const RoiShape& s,
                       T* grad_input, int threads) {
    const int64_t bins = s.ph * s.pw;
    parallel_ranges(s.c, threads, [&](int64_t c_begin, int64_t c_end) {
        for (int64_t r = 0; r < s.k; ++r) {
            T* image = grad_input + static_cast<int64_t>(rois[r * 5]) * s.c * s.h * s.w;
            for (int64_t c = c_begin; c < c_end; ++c) {
                T* plane = image + c * s.h * s.w;
                const int64_t at = (r * s.c + c) * bins;
                for (int64_t b = 0; b < bins; ++b) {
                    if (argmax[at + b] >= 0) plane[argmax[at + b]] += grad[at + b];
                }
            }
        }
    });
}

#define TRIVIUM_ROI_INSTANTIATE(T)                                                              \
    template void roi_align_forward<T>(const T*, const T*, const RoiShape&, double, int64_t,   \
                                       bool, T*, int);                                         \
    template void roi_align_backward<T>(const T*, const T*, const RoiShape&, double, int64_t,  \
                                        bool, T*, int);                                        \
    template void roi_pool_forward<T>(const T*, const T*, const RoiShape&, double, T*,         \
                                      int64_t*, int);                                          \
    template void roi_pool_backward<T>(const T*, const T*, const int64_t*, const RoiShape&,    \
                                       T*, int);

TRIVIUM_ROI_INSTANTIATE(float)
TRIVIUM_ROI_INSTANTIATE(double)

}  // namespace trivium
