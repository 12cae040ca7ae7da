// A fast path for the common PNGs: 8-bit, not interlaced, gray / gray+alpha / RGB /
// RGBA samples decoded to the same layout. zlib inflates the image data and the
// scanline filters are undone by loops specialised per filter and pixel size
// (Debian's libspng undoes them in one generic, byte-at-a-time loop).
#pragma once
#include "codec.h"

namespace trivium {

// Decodes the IDAT chunks of `png` (whose header and earlier chunks libspng has
// already checked) into `height` rows of width * channels bytes at `dst`. Every
// IDAT chunk's CRC is verified. With `stop_at_damage`, damage ends the decode with
// a warning and the rows not reached are left as they are.
bool decode_png_rows_8bit(const uint8_t* png, size_t size, int height, int width, int channels,
                          uint8_t* dst, bool stop_at_damage, Diagnostics* diag);

}  // namespace trivium
