// RGB -> YCbCr for the JPEG encoder: libjpeg's colour conversion (jccolor.c) and its
// chroma downsampling (jcsample.c: h2v2 for 4:2:0, h2v1 for 4:2:2) in one pass, bit
// for bit, so that the encoder can hand libjpeg raw YCbCr planes (jpeg_write_raw_data).
#pragma once
#include <cstddef>
#include <cstdint>

namespace trivium {

// 8-bit RGB samples: interleaved (H, W, 3) rows when `planar` is false (r points at the
// first pixel), else three (H, W) planes. Rows are `row_stride` bytes apart.
struct RgbImage {
    const uint8_t* r;
    const uint8_t* g;
    const uint8_t* b;
    ptrdiff_t row_stride;
    int height, width;
    bool planar;
};

// Converts source rows `row0` and `row1` (equal for an odd height's last row) into
// two luma rows and one row of each chroma plane. Columns past the image repeat its
// last pixel, as libjpeg pads them: `y0`/`y1` get padded_width samples and `cb`/`cr`
// padded_width / 2, where padded_width is the width rounded up to a multiple of 16.
void rgb_rows_to_ycc420(const RgbImage& image, int row0, int row1, uint8_t* y0, uint8_t* y1,
                        uint8_t* cb, uint8_t* cr);

// Converts source row `row` at 4:4:4 (h_factor 1) or 4:2:2 (h_factor 2: the chroma
// of each pair of pixels averaged as libjpeg's h2v1_downsample averages it): padded
// as for rgb_rows_to_ycc420, `y` gets padded_width samples and `cb`/`cr`
// padded_width / h_factor.
void rgb_row_to_ycc(const RgbImage& image, int row, int h_factor, uint8_t* y, uint8_t* cb,
                    uint8_t* cr);

// Row `row` of planar `image` as interleaved RGB (width * 3 bytes), for libjpeg's own
// conversion at the subsamplings rgb_rows_to_ycc420 does not cover.
void interleave_rgb_row(const RgbImage& image, int row, uint8_t* out);

// The width rounded up to the 16 columns of a 4:2:0 or 4:2:2 MCU (two 4:4:4 ones).
inline int ycc_padded_width(int width) { return (width + 15) & ~15; }

// Whether this CPU runs the conversions above and the decoder's (jpeg_upsample.h), which
// need AVX2: call them only where it does.
bool ycc_vectorised();

}  // namespace trivium
