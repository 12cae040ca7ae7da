// WebP decode (lossy, lossless, alpha, animated) and encode on libwebp.
#pragma once
#include <webp/decode.h>
#include <webp/demux.h>

#include <vector>

#include "codec.h"

namespace trivium {

// Decodes one WebP in two steps, like PngDecoder: prepare() reads the header and fixes
// the output shape, decode() writes pixels. A still image is decoded by WebPDecode
// straight into the output in the requested layout (RGB or RGBA); an animation is
// composited frame by frame (WebPAnimDecoder) into shape.frames images of
// shape.height x shape.width x shape.channels, one after the other.
class WebpDecoder {
public:
    WebpDecoder(const uint8_t* data, size_t size, Diagnostics* diag);
    ~WebpDecoder();
    WebpDecoder(const WebpDecoder&) = delete;
    WebpDecoder& operator=(const WebpDecoder&) = delete;

    bool read_header(ImageHeader* header);
    // max_pixels limits height * width * frames, the pixels the output holds.
    bool prepare(ReadMode mode, int64_t max_pixels, OutputShape* shape);
    // Decodes into a contiguous buffer of shape.frames * shape.height * shape.width *
    // shape.channels bytes. With `strict`, a truncated or damaged bitstream fails the
    // decode; otherwise the rows (frames) decoded are kept, the rest are zero, and the
    // damage is recorded (see codec.h): partial where rows or frames are missing, else
    // (a container cut or mis-sized after whole image data) recovered.
    bool decode(uint8_t* dst, bool strict);

private:
    bool read_features();
    bool decode_still(uint8_t* dst, bool strict);
    bool decode_still_rgb(uint8_t* dst, int channels, bool strict);
    bool decode_animation(uint8_t* dst, bool strict);
    void convert_rgba(const uint8_t* rgba, uint8_t* dst, size_t pixels) const;

    const uint8_t* data_;
    size_t size_;
    Diagnostics* diag_;
    WebPBitstreamFeatures features_{};
    bool features_read_ = false;
    WebPDemuxer* demux_ = nullptr;  // extended (VP8X) files only
    WebPDemuxState demux_state_ = WEBP_DEMUX_PARSE_ERROR;
    int frames_ = 1;
    int orientation_ = 0;
    OutputShape shape_;
};

struct WebpEncodeOptions {
    float quality = 75.0f;  // 0..100: lossy quality, or lossless compression effort
    bool lossless = false;
    int method = 4;      // 0 (fast) .. 6 (slower, smaller)
    bool exact = false;  // keep the RGB of fully transparent pixels
};

// Encodes height x width x channels (1..4) uint8 samples, rows `row_stride` bytes
// apart. Gray (+alpha) is stored as RGB (+alpha): WebP has no gray mode.
bool encode_webp(const uint8_t* pixels, int height, int width, int channels, ptrdiff_t row_stride,
                 const WebpEncodeOptions& options, std::vector<uint8_t>* out, Diagnostics* diag);

// libwebp's version, "1.2.4".
std::string webp_version_string();

}  // namespace trivium
