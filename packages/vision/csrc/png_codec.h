// PNG decode on libspng (with a zlib fast path, png_rows.h) and encode on zlib (png_rows.h).
#pragma once
#include <spng.h>

#include "codec.h"

namespace trivium {

// Decodes one PNG in two steps, like JpegDecoder: prepare() reads the header and
// fixes the output shape, decode() writes pixels (8-bit, or 16-bit host-endian
// samples for 16-bit PNGs).
class PngDecoder {
public:
    PngDecoder(const uint8_t* data, size_t size, Diagnostics* diag);
    ~PngDecoder();
    PngDecoder(const PngDecoder&) = delete;
    PngDecoder& operator=(const PngDecoder&) = delete;

    bool read_header(ImageHeader* header);
    bool prepare(ReadMode mode, int64_t max_pixels, OutputShape* shape);
    // Decodes into a contiguous buffer of shape.height*shape.width*shape.channels
    // samples. With `strict`, damaged image data fails the decode; otherwise it
    // ends the decode early (rows not reached read as zero) and is reported as a
    // warning (see codec.h).
    bool decode(uint8_t* dst, bool strict);

private:
    enum class Conversion { None, DropAlpha, ToLuma, ToLumaAlpha };

    bool check(int ret, const char* what);
    bool decode_rows(uint8_t* dst, size_t row_bytes, bool strict);
    void convert(const uint8_t* src, uint8_t* dst) const;

    const uint8_t* data_;
    size_t size_;
    Diagnostics* diag_;
    spng_ctx* ctx_;
    spng_ihdr ihdr_{};
    bool has_trns_ = false;
    int spng_format_ = 0;
    int decoded_channels_ = 0;  // channels of spng_format_
    Conversion conversion_ = Conversion::None;
    bool fast_path_ = false;  // decode with png_rows.h instead of libspng
    OutputShape shape_;
};

// Encodes height x width x channels (1..4) samples of 8 or 16 bits
// (host-endian), stored contiguously. compression_level is zlib's 0..9.
bool encode_png(const void* pixels, int height, int width, int channels, int bit_depth,
                int compression_level, std::vector<uint8_t>* out, Diagnostics* diag);

}  // namespace trivium
