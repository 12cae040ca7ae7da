// PNG scanlines on zlib directly, for the paths where libspng is slow.
//
// Decode: a fast path for the common PNGs: 8-bit, not interlaced, gray / gray+alpha /
// RGB / RGBA samples decoded to the same layout. zlib inflates the image data and the
// scanline filters are undone by loops specialised per filter and pixel size
// (Debian's libspng undoes them in one generic, byte-at-a-time loop).
//
// Encode: every row is filtered with the filter whose output has the smallest sum of
// absolute (signed byte) values, the heuristic libpng and libspng use, computed for
// all five filters in one vectorised pass; level 0 stores rows unfiltered (as
// libspng does). The filtered rows go to zlib's deflate at the given level with its
// default strategy (what OpenCV asks libpng for at a given level).
#pragma once
#include <vector>

#include "codec.h"

namespace trivium {

// Decodes the IDAT chunks of `png` (whose header and earlier chunks libspng has
// already checked) into `height` rows of width * channels bytes at `dst`. Every
// IDAT chunk's CRC is verified. With `strict`, damage fails the decode; without, it
// ends the decode with a warning and the rows not reached are left as they are.
bool decode_png_rows_8bit(const uint8_t* png, size_t size, int height, int width, int channels,
                          uint8_t* dst, bool strict, Diagnostics* diag);

// Writes a whole non-interlaced PNG (signature, IHDR, IDAT chunks, IEND) of
// height x width pixels of 1..4 channels (gray, gray+alpha, RGB, RGBA) of
// bit_depth 8 or 16 (host-endian samples), stored contiguously, at zlib `level`
// 0..9. The arguments are checked by the caller.
bool encode_png_rows(const void* pixels, int height, int width, int channels, int bit_depth,
                     int level, std::vector<uint8_t>* out, Diagnostics* diag);

}  // namespace trivium
