// Types shared by the JPEG, PNG and WebP codecs. Nothing here depends on Python or torch:
// the codecs read a byte buffer and write into a caller-provided pixel buffer, so
// the binding layer can release the GIL around all of their work.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trivium {

// Same values as trivium.vision.io.ImageReadMode.
enum class ReadMode : int { Unchanged = 0, Gray = 1, GrayAlpha = 2, RGB = 3, RGBA = 4 };

// Corrupt: damaged data; Unsupported: valid data in a format or feature not decoded;
// TooLarge: over the pixel limit; BadArgument: an argument the image refuses (a roi
// outside it), which the operators raise as a plain ValueError, not a decode error;
// Empty: no bytes at all. The operators' `.status` overloads report the kind to Python,
// where trivium.vision.io.image.codec.native_error maps it to its error (the one map).
enum class ErrorKind : int {
    None = 0, Corrupt = 1, Unsupported = 2, TooLarge = 3, BadArgument = 4, Empty = 5
};

// Every decoder has this shape (JpegDecoder, PngDecoder, WebpDecoder), so that one template in the
// operator library (torch_ops.cpp, decode_with) serves them all:
//
//     Decoder(const uint8_t* data, size_t size, Diagnostics* diag);
//     bool read_header(ImageHeader* header);
//     bool prepare(ReadMode mode, /* format options, */ int64_t max_pixels, OutputShape* shape);
//     bool decode(uint8_t* dst, /* row stride, */ bool strict);
//
// `strict` means the same in every decoder: damage that loses pixels fails the
// decode; without it the damage is recorded in Diagnostics (corrupt, truncated,
// warnings) and the pixels decoded are kept. Each returns false after
// Diagnostics::fail. Whether recorded damage then raises or warns is the operators'
// rule (torch_ops.cpp check_damage).

// What a header says, before any pixel is decoded.
struct ImageHeader {
    std::string format;       // "jpeg", "png" or "webp"
    std::string color_space;  // e.g. "YCbCr", "CMYK", "gray", "RGBA", "palette"
    int height = 0;
    int width = 0;
    int channels = 0;  // channels of an ImageReadMode.UNCHANGED decode
    int bit_depth = 0;
    int orientation = 0;  // EXIF orientation 1..8, 0 when absent
    bool progressive = false;  // JPEG progressive / PNG interlaced
    bool lossless = false;     // JPEG lossless (predictive) process, WebP lossless (VP8L)
    int frames = 1;            // frames of an animation (WebP), else 1
};

// The geometry and sample size a decode will produce.
struct OutputShape {
    int height = 0;
    int width = 0;
    int channels = 0;
    int bytes_per_sample = 1;  // 1 (uint8) or 2 (uint16, host-endian)
    int frames = 1;  // an animation's frames, stored one after the other; 1: a still image
};

// Collects what went wrong while decoding. `corrupt` is set for damage (bad Huffman
// codes, a marker inside the data, bytes the format does not allow); `partial` also
// when the decode stopped before the image's end (a truncated file, a broken PNG
// stream), so that only the part before the damage holds the image's pixels.
struct Diagnostics {
    static constexpr size_t kMaxWarnings = 8;
    ErrorKind error = ErrorKind::None;
    std::string message;
    std::vector<std::string> warnings;
    bool corrupt = false;
    bool partial = false;

    // What the bindings report of the damage: 0 none, 1 recovered, 2 partial.
    int damage() const { return partial ? 2 : corrupt ? 1 : 0; }

    bool fail(ErrorKind kind, std::string msg) {
        error = kind;
        message = std::move(msg);
        return false;
    }
    void warn(std::string msg, bool loses_data, bool stops = false) {
        corrupt = corrupt || loses_data || stops;
        partial = partial || stops;
        if (warnings.size() < kMaxWarnings) warnings.push_back(std::move(msg));
    }
};

// Luma as Pillow's RGB -> L conversion computes it (ITU-R 601-2, 16-bit fixed point).
inline uint32_t luma(uint32_t r, uint32_t g, uint32_t b) {
    return uint32_t((uint64_t(r) * 19595 + uint64_t(g) * 38470 + uint64_t(b) * 7471 + 0x8000) >> 16);
}

}  // namespace trivium
