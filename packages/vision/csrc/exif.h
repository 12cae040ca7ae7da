// EXIF orientation lookup shared by the JPEG (APP1) and PNG (eXIf) readers.
#pragma once
#include <cstddef>
#include <cstdint>

namespace trivium {

// Returns the EXIF orientation (1..8) found in a TIFF-structured EXIF block, or 0
// when the block has none or is malformed. `data` starts at the TIFF header
// ("II*\0" / "MM\0*"); every read is bounds-checked.
int exif_orientation(const uint8_t* data, size_t size);

}  // namespace trivium
