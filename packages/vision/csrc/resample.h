// Antialiased crop + resize of uint8 images, bit-exact with torch's CPU kernel.
//
// No torch here: raw strided planes in and out. The Python binding
// (register_resample, in resample.cpp) takes NumPy arrays and releases the GIL.
#pragma once

#include <cstdint>

#include <pybind11/pybind11.h>

namespace trivium {

// A strided uint8 image batch [n, c, h, w]; strides in elements (bytes), all positive.
struct ImageBatch {
    uint8_t* data;
    int64_t n, c, h, w;
    int64_t stride_n, stride_c, stride_h, stride_w;
};

enum class ResampleFilter { Bilinear, Bicubic };

// For every image k of `src`, crops the box boxes[4k..4k+3] = (top, left, height,
// width) (inside the image) and resizes it to `dst`'s h x w as torch's
// interpolate(antialias=True, align_corners=False) does on uint8 CPU tensors:
// PIL's separable filters with int16 weights, width first, each pass rounded to
// uint8. `dst` has as many images and channels as `src`. Images are shared out to
// `threads` threads (1: this thread only). Returns false (and leaves `dst` partly
// written) only if a box is outside its image; `bad_box` is its index then.
bool resized_crops_u8(const ImageBatch& src, const int64_t* boxes, const ImageBatch& dst,
                      ResampleFilter filter, int threads, int64_t* bad_box);

}  // namespace trivium

// Adds resized_crops_u8 to the module (see resample.cpp).
void register_resample(pybind11::module_& m);
