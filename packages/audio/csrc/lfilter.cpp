// lfilter's recursion, one row of samples at a time in double, in transposed direct
// form II (as scipy.signal.lfilter): each output needs only the state of the taps, so
// a sample costs 2 * taps multiply-adds and the rows run in parallel. The Python
// wrapper (trivium.audio.functional.iir) and its autograd run everything else.
#include <algorithm>
#include <vector>

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include "kernels.h"

namespace trivium_audio {
namespace {

// One filter's coefficients, divided by a[0], in double.
struct Coeffs {
    std::vector<double> a, b;
};

// y[n] = b0 x[n] + z0; z_k = b_{k+1} x[n] - a_{k+1} y[n] + z_{k+1} (z_{taps-1} = 0).
// Any number of taps, one row.
template <typename T>
void filter_row(const T* x, T* y, int64_t length, const Coeffs& c) {
    const int taps = static_cast<int>(c.a.size());
    const double* a = c.a.data();
    const double* b = c.b.data();
    std::vector<double> z(taps, 0.0);
    for (int64_t n = 0; n < length; ++n) {
        const double in = static_cast<double>(x[n]);
        const double out = b[0] * in + z[0];
        for (int k = 0; k + 1 < taps; ++k) z[k] = b[k + 1] * in - a[k + 1] * out + z[k + 1];
        y[n] = static_cast<T>(out);
    }
}

// The same for TAPS taps (a compile-time count: the state stays in registers) over
// LANES rows at once. A row's recursion is bound by the latency of its chain of
// multiply-adds; the rows' chains are independent, so the processor overlaps them.
template <int TAPS, int LANES, typename T>
void filter_lanes(const T* x, T* y, int64_t first, int64_t length, const std::vector<Coeffs>& filters) {
    const int64_t count = static_cast<int64_t>(filters.size());
    double a[LANES][TAPS], b[LANES][TAPS], z[LANES][TAPS] = {};
    for (int l = 0; l < LANES; ++l) {
        const Coeffs& c = filters[(first + l) % count];
        for (int k = 0; k < TAPS; ++k) a[l][k] = c.a[k], b[l][k] = c.b[k];
    }
    const T* in = x + first * length;
    T* out = y + first * length;
    for (int64_t n = 0; n < length; ++n) {
        for (int l = 0; l < LANES; ++l) {
            const double v = static_cast<double>(in[l * length + n]);
            const double w = b[l][0] * v + z[l][0];
            for (int k = 0; k + 1 < TAPS; ++k) z[l][k] = b[l][k + 1] * v - a[l][k + 1] * w + z[l][k + 1];
            out[l * length + n] = static_cast<T>(w);
        }
    }
}

template <int TAPS, typename T>
void filter_range(const T* x, T* y, int64_t begin, int64_t end, int64_t length,
                  const std::vector<Coeffs>& filters) {
    constexpr int kLanes = 4;
    int64_t r = begin;
    for (; r + kLanes <= end; r += kLanes) filter_lanes<TAPS, kLanes>(x, y, r, length, filters);
    for (; r < end; ++r) filter_lanes<TAPS, 1>(x, y, r, length, filters);
}

template <typename T>
void filter_rows(const T* x, T* y, int64_t rows, int64_t length, const std::vector<Coeffs>& filters) {
    const int64_t count = static_cast<int64_t>(filters.size());
    const int taps = static_cast<int>(filters[0].a.size());
    // Rows small enough to share a thread share one (the pool's start costs microseconds).
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(length, 1));
    at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
        switch (taps) {
            case 1: filter_range<1>(x, y, begin, end, length, filters); break;
            case 2: filter_range<2>(x, y, begin, end, length, filters); break;
            case 3: filter_range<3>(x, y, begin, end, length, filters); break;
            case 4: filter_range<4>(x, y, begin, end, length, filters); break;
            case 5: filter_range<5>(x, y, begin, end, length, filters); break;
            default:
                for (int64_t r = begin; r < end; ++r) {
                    filter_row(x + r * length, y + r * length, length, filters[r % count]);
                }
        }
    });
}

std::vector<Coeffs> normalised(const at::Tensor& a_coeffs, const at::Tensor& b_coeffs) {
    const at::Tensor a = a_coeffs.to(at::kDouble).contiguous();
    const at::Tensor b = b_coeffs.to(at::kDouble).contiguous();
    const int64_t filters = a.size(0), taps = a.size(1);
    std::vector<Coeffs> out(filters);
    for (int64_t f = 0; f < filters; ++f) {
        const double* pa = a.data_ptr<double>() + f * taps;
        const double* pb = b.data_ptr<double>() + f * taps;
        out[f].a.assign(pa, pa + taps);
        out[f].b.assign(pb, pb + taps);
        for (int64_t k = 0; k < taps; ++k) {
            out[f].a[k] /= pa[0];
            out[f].b[k] /= pa[0];
        }
    }
    return out;
}

void check_lfilter(const at::Tensor& waveform, const at::Tensor& a, const at::Tensor& b) {
    TORCH_CHECK_TYPE(at::isFloatingType(waveform.scalar_type()),
                     "lfilter_core: waveform must be a floating-point tensor, got ", waveform.scalar_type());
    TORCH_CHECK_TYPE(at::isFloatingType(a.scalar_type()) && at::isFloatingType(b.scalar_type()),
                     "lfilter_core: a_coeffs and b_coeffs must be floating-point tensors, got ",
                     a.scalar_type(), " and ", b.scalar_type());
    TORCH_CHECK_VALUE(waveform.dim() == 3, "lfilter_core: waveform must be [batch, filters, time], got ",
                      waveform.sizes());
    TORCH_CHECK_VALUE(a.dim() == 2 && a.sizes() == b.sizes() && a.size(1) >= 1,
                      "lfilter_core: a_coeffs and b_coeffs must be one shape [filters, taps], got ",
                      a.sizes(), " and ", b.sizes());
    TORCH_CHECK_VALUE(a.size(0) == waveform.size(1), "lfilter_core: waveform has ", waveform.size(1),
                      " rows per item (dimension 1) but there are ", a.size(0), " filters");
}

}  // namespace

at::Tensor lfilter_core_cpu(const at::Tensor& waveform, const at::Tensor& a_coeffs,
                            const at::Tensor& b_coeffs) {
    check_lfilter(waveform, a_coeffs, b_coeffs);
    const at::Tensor x = waveform.contiguous();
    at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
    if (x.numel() == 0) return y;
    const std::vector<Coeffs> filters = normalised(a_coeffs, b_coeffs);
    const int64_t length = x.size(2), rows = x.numel() / length;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "lfilter_core", [&] {
        filter_rows(x.const_data_ptr<scalar_t>(), y.mutable_data_ptr<scalar_t>(), rows, length, filters);
    });
    return y;
}

}  // namespace trivium_audio
