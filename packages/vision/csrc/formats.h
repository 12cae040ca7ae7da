// The one table of image formats: the operator library (torch_ops.cpp) sniffs
// decode_image with it, and trivium.vision.io's registry reads it through _C (module.cpp:
// sniff, image_info, formats).
// Torch- and Python-free. A row is a format: its name, how messages spell it, its test
// on the first kSniffBytes bytes, and its header reader (nullptr for the formats that
// trivium.vision.io decodes in Python, through Pillow). sniff() and the error wording
// for data of no known format live here, so every caller says the same thing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "codec.h"

namespace trivium {

// How many first bytes the formats' tests read.
constexpr size_t kSniffBytes = 32;

struct Format {
    const char* name;   // as ImageInfo.format and sniff_format give it: "jpeg"
    const char* title;  // as messages spell it: "JPEG"
    bool (*matches)(const uint8_t* data, size_t size);
    // The header, without decoding pixels; nullptr: decoded in Python (Pillow).
    bool (*info)(const uint8_t* data, size_t size, Diagnostics* diag, ImageHeader* header);

    bool native() const { return info != nullptr; }
};

// Every format, the native ones first, each group in the order the Python registry lists them.
const Format* formats_begin();
const Format* formats_end();

// The format of `data`, or nullptr after diag->fail with what it is instead: an empty
// input (ErrorKind::Empty), a known format not supported (ICO: Unsupported), or no
// known signature (Corrupt). The messages are the ones users see from every path.
const Format* sniff(const uint8_t* data, size_t size, Diagnostics* diag);

// The titles joined as "JPEG, PNG and GIF" (`word` "and") or "JPEG, PNG or GIF"; with
// `python` false only the native formats.
std::string format_names(const char* word, bool python = true);

}  // namespace trivium
