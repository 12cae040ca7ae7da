// RoI Align and RoI Pool over NCHW feature maps, as torchvision's CPU kernels.
//
// No Python or torch here: plain row-major arrays in and out. `rois` is k rows of
// (batch index, x1, y1, x2, y2) in the input's type; batch indices are checked by
// the caller. Forward passes split the RoIs over `threads` threads; backward passes
// split the channels, so each gradient element is summed in torchvision's order
// (RoI by RoI, bin by bin) and the result is deterministic.
#pragma once

#include <cstdint>

namespace trivium {

struct RoiShape {
    int64_t n, c, h, w;    // the input
    int64_t k;             // the RoIs
    int64_t ph, pw;        // the bins per RoI
};

template <typename T>
void roi_align_forward(const T* input, const T* rois, const RoiShape& s, double spatial_scale,
                       int64_t sampling_ratio, bool aligned, T* out, int threads);

// grad [k, c, ph, pw] into grad_input [n, c, h, w] (zeroed by the caller).
template <typename T>
void roi_align_backward(const T* grad, const T* rois, const RoiShape& s, double spatial_scale,
                        int64_t sampling_ratio, bool aligned, T* grad_input, int threads);

// out [k, c, ph, pw] the bins' maxima, argmax their flat h * w + w indices (-1: empty bin).
template <typename T>
void roi_pool_forward(const T* input, const T* rois, const RoiShape& s, double spatial_scale,
                      T* out, int64_t* argmax, int threads);

template <typename T>
void roi_pool_backward(const T* grad, const T* rois, const int64_t* argmax, const RoiShape& s,
                       T* grad_input, int threads);

}  // namespace trivium
