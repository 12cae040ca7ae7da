// YCbCr -> RGB for the JPEG decoder: libjpeg-turbo's fancy chroma upsampling (jdsample.c:
// h2v2 for 4:2:0, h2v1 for 4:2:2, a triangle filter) and its colour conversion (jdcolor.c)
// in one pass, bit for bit, so that the decoder can take raw YCbCr planes from libjpeg
// (jpeg_read_raw_data) and write RGB rows straight into the output.
#pragma once
#include <cstdint>

namespace trivium {

// The samples of one output row. `y` is its luma row. `cb` / `cr` are the chroma rows
// at its height: 4:2:2's row, or 4:2:0's nearer row; `cb_far` / `cr_far` are 4:2:0's
// other row (the one above an even output row, below an odd one, and the nearer row
// itself at the image's top and bottom edges), unused at 4:2:2.
//
// Chroma rows hold (width + 1) / 2 samples and, as libjpeg's upsampling reads them,
// their edge samples repeated once outside: row[-1] == row[0] and
// row[(width + 1) / 2] == row[(width + 1) / 2 - 1]. Every row must be readable
// ycc_row_slack() bytes further than that (luma from row[0], chroma from row[-1]).
struct YccRow {
    const uint8_t* y;
    const uint8_t* cb;
    const uint8_t* cr;
    const uint8_t* cb_far;
    const uint8_t* cr_far;
};

// Writes `width` RGB pixels (3 * width bytes) of `row` to `rgb`, upsampling the chroma
// as libjpeg-turbo does at 4:2:0 (`h2v2`) or 4:2:2. Call only where ycc_vectorised()
// (jpeg_color.h) says the CPU runs it.
void ycc_row_to_rgb(const YccRow& row, int width, bool h2v2, uint8_t* rgb);

// The bytes a row of luma must be readable past `width` samples, and a row of chroma
// past (width + 1) / 2 (both rounded up to whole vectors).
constexpr int ycc_row_slack() { return 64; }

}  // namespace trivium
