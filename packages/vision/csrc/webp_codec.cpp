#include "webp_codec.h"

#include <webp/encode.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "exif.h"

namespace trivium {
namespace {

using FreeDeleter = decltype(&std::free);

const char* status_reason(VP8StatusCode status) {
    switch (status) {
        case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
        case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
        case VP8_STATUS_BITSTREAM_ERROR: return "damaged bitstream";
        case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
        case VP8_STATUS_SUSPENDED: return "suspended";
        case VP8_STATUS_USER_ABORT: return "aborted";
        case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated data";
        default: return "unknown error";
    }
}

bool fail_status(Diagnostics* diag, VP8StatusCode status, const std::string& what) {
    const ErrorKind kind = status == VP8_STATUS_UNSUPPORTED_FEATURE ? ErrorKind::Unsupported
                           : status == VP8_STATUS_OUT_OF_MEMORY     ? ErrorKind::TooLarge
                                                                    : ErrorKind::Corrupt;
    return diag->fail(kind, what + ": " + status_reason(status));
}

std::string dims(int width, int height) {
    return std::to_string(width) + "x" + std::to_string(height);
}

// The orientation in an EXIF chunk: a TIFF block, which some writers prefix with
// JPEG's "Exif\0\0".
int chunk_orientation(const uint8_t* data, size_t size) {
    if (size >= 6 && std::memcmp(data, "Exif\0\0", 6) == 0) data += 6, size -= 6;
    return exif_orientation(data, size);
}

void write_le32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}

}  // namespace

WebpDecoder::WebpDecoder(const uint8_t* data, size_t size, Diagnostics* diag)
    : data_(data), size_(size), diag_(diag) {}

WebpDecoder::~WebpDecoder() {
    if (demux_ != nullptr) WebPDemuxDelete(demux_);
}

bool WebpDecoder::read_features() {
    if (features_read_) return true;
    if (size_ == 0) return diag_->fail(ErrorKind::Corrupt, "empty input");
    if (size_ < 12 || std::memcmp(data_, "RIFF", 4) != 0 || std::memcmp(data_ + 8, "WEBP", 4) != 0) {
        return diag_->fail(ErrorKind::Corrupt, "not a WebP (bad signature)");
    }
    const VP8StatusCode status = WebPGetFeatures(data_, size_, &features_);
    if (status != VP8_STATUS_OK) return fail_status(diag_, status, "bad header");
    // An extended file (VP8X) may hold an animation and an EXIF chunk: the demuxer
    // reads the chunks (complete or not), which costs no pixel memory.
    if (size_ >= 16 && std::memcmp(data_ + 12, "VP8X", 4) == 0) {
        const WebPData whole{data_, size_};
        demux_ = WebPDemuxPartial(&whole, &demux_state_);
        if (demux_ == nullptr && features_.has_animation) {
            return diag_->fail(ErrorKind::Corrupt, "damaged animation container");
        }
    }
    if (demux_ != nullptr) {
        WebPChunkIterator exif;
        if (WebPDemuxGetChunk(demux_, "EXIF", 1, &exif)) {
            orientation_ = chunk_orientation(exif.chunk.bytes, exif.chunk.size);
            WebPDemuxReleaseChunkIterator(&exif);
        }
        if (features_.has_animation) {
            frames_ = int(WebPDemuxGetI(demux_, WEBP_FF_FRAME_COUNT));
            if (frames_ < 1) return diag_->fail(ErrorKind::Corrupt, "animation without frames");
        }
    }
    features_read_ = true;
    return true;
}

bool WebpDecoder::read_header(ImageHeader* header) {
    if (!read_features()) return false;
    const bool alpha = features_.has_alpha != 0;
    header->format = "webp";
    if (features_.has_animation || features_.format == 2) {
        header->color_space = alpha ? "RGBA" : "RGB";
    } else {
        header->color_space = alpha ? "YUVA" : "YUV";  // lossy VP8: YUV 4:2:0
    }
    header->height = features_.height;
    header->width = features_.width;
    header->channels = alpha ? 4 : 3;
    header->bit_depth = 8;
    header->orientation = orientation_;
    header->progressive = false;
    header->lossless = features_.format == 2;
    header->frames = frames_;
    return true;
}

bool WebpDecoder::prepare(ReadMode mode, int64_t max_pixels, OutputShape* shape) {
    ImageHeader header;
    if (!read_header(&header)) return false;
    const int64_t pixels = int64_t(header.width) * header.height * frames_;
    if (max_pixels > 0 && pixels > max_pixels) {
        const std::string what = frames_ == 1 ? dims(header.width, header.height) + " image"
                                              : dims(header.width, header.height) +
                                                    " animation of " + std::to_string(frames_) +
                                                    " frames";
        return diag_->fail(ErrorKind::TooLarge, what + " exceeds the limit of " +
                                                    std::to_string(max_pixels) + " pixels");
    }
    int channels = header.channels;
    if (mode == ReadMode::Gray) channels = 1;
    if (mode == ReadMode::GrayAlpha) channels = 2;
    if (mode == ReadMode::RGB) channels = 3;
    if (mode == ReadMode::RGBA) channels = 4;
    shape_.height = header.height;
    shape_.width = header.width;
    shape_.channels = channels;
    shape_.bytes_per_sample = 1;
    shape_.frames = frames_;
    *shape = shape_;
    return true;
}

bool WebpDecoder::decode(uint8_t* dst, bool strict) {
    if (features_.has_animation) return decode_animation(dst, strict);
    if (shape_.channels >= 3) return decode_still_rgb(dst, shape_.channels, strict);
    return decode_still(dst, strict);
}

// Gray (+alpha): decoded to RGB (RGBA), then each pixel's luma as Pillow computes it.
bool WebpDecoder::decode_still(uint8_t* dst, bool strict) {
    const int decoded = shape_.channels == 2 ? 4 : 3;
    const size_t pixels = size_t(shape_.height) * size_t(shape_.width);
    std::unique_ptr<uint8_t, FreeDeleter> rgb(static_cast<uint8_t*>(std::malloc(pixels * decoded)),
                                              &std::free);
    if (!rgb) return diag_->fail(ErrorKind::TooLarge, "out of memory");
    if (!decode_still_rgb(rgb.get(), decoded, strict)) return false;
    const uint8_t* in = rgb.get();
    if (decoded == 3) {
        for (size_t i = 0; i < pixels; ++i, in += 3) dst[i] = uint8_t(luma(in[0], in[1], in[2]));
    } else {
        convert_rgba(in, dst, pixels);
    }
    return true;
}

bool WebpDecoder::decode_still_rgb(uint8_t* dst, int channels, bool strict) {
    WebPDecoderConfig config;
    if (!WebPInitDecoderConfig(&config)) return diag_->fail(ErrorKind::Corrupt, "libwebp version mismatch");
    const size_t stride = size_t(shape_.width) * channels;
    const size_t bytes = stride * size_t(shape_.height);
    auto set_output = [&](WebPDecBuffer* output) {
        output->colorspace = channels == 4 ? MODE_RGBA : MODE_RGB;
        output->is_external_memory = 1;
        output->u.RGBA.rgba = dst;
        output->u.RGBA.stride = int(stride);
        output->u.RGBA.size = bytes;
    };
    set_output(&config.output);
    config.options.use_threads = 0;
    const VP8StatusCode status = WebPDecode(data_, size_, &config);
    WebPFreeDecBuffer(&config.output);
    if (status == VP8_STATUS_OK) return true;
    if (status != VP8_STATUS_NOT_ENOUGH_DATA && status != VP8_STATUS_BITSTREAM_ERROR) {
        return fail_status(diag_, status, "cannot decode");
    }
    // Truncated or damaged: the incremental decoder, which takes data as it comes,
    // decodes the rows the data holds (rows not reached read as zero).
    std::memset(dst, 0, bytes);
    WebPDecBuffer output;
    if (!WebPInitDecBuffer(&output)) return diag_->fail(ErrorKind::Corrupt, "libwebp version mismatch");
    set_output(&output);
    WebPIDecoder* incremental = WebPINewDecoder(&output);
    if (incremental == nullptr) return diag_->fail(ErrorKind::TooLarge, "out of memory");
    const VP8StatusCode partial = WebPIUpdate(incremental, data_, size_);
    int rows = 0;
    WebPIDecGetRGB(incremental, &rows, nullptr, nullptr, nullptr);
    WebPIDelete(incremental);
    WebPFreeDecBuffer(&output);
    if (partial == VP8_STATUS_OK && rows >= shape_.height) {
        // Every pixel is there; only the container is off (its RIFF size, a chunk after
        // the image data): damage recovered from.
        diag_->warn(std::string("damaged after the image data: ") + status_reason(status), true);
        return true;
    }
    const std::string reason = std::string(status_reason(status)) + " (decoded " +
                               std::to_string(rows) + " of " + std::to_string(shape_.height) +
                               " rows)";
    if (strict) return diag_->fail(ErrorKind::Corrupt, "corrupt image data (" + reason + ")");
    diag_->warn(reason, true, true);
    return true;
}

void WebpDecoder::convert_rgba(const uint8_t* in, uint8_t* out, size_t pixels) const {
    switch (shape_.channels) {
        case 4: std::memcpy(out, in, pixels * 4); break;
        case 3:
            for (size_t i = 0; i < pixels; ++i, in += 4, out += 3) {
                out[0] = in[0], out[1] = in[1], out[2] = in[2];
            }
            break;
        case 2:
            for (size_t i = 0; i < pixels; ++i, in += 4, out += 2) {
                out[0] = uint8_t(luma(in[0], in[1], in[2])), out[1] = in[3];
            }
            break;
        default:
            for (size_t i = 0; i < pixels; ++i, in += 4) *out++ = uint8_t(luma(in[0], in[1], in[2]));
    }
}

// Frames composited on the canvas by WebPAnimDecoder (RGBA), each converted into its
// place. A file that ends before its RIFF size says is truncated: frames may be
// missing, so strict decoding fails; otherwise its complete frames are decoded from a
// copy of the bytes up to the last of them, the copy's RIFF size set to match.
bool WebpDecoder::decode_animation(uint8_t* dst, bool strict) {
    const size_t pixels = size_t(shape_.height) * size_t(shape_.width);
    const size_t frame_bytes = pixels * size_t(shape_.channels);
    WebPData whole{data_, size_};
    std::vector<uint8_t> complete_part;
    int complete = frames_;
    std::string damage;
    if (demux_state_ != WEBP_DEMUX_DONE) {
        size_t end = 0;
        complete = 0;
        WebPIterator frame;
        for (int i = 1; i <= frames_ && WebPDemuxGetFrame(demux_, i, &frame); ++i) {
            const bool done = frame.complete != 0;
            const size_t frame_end = size_t(frame.fragment.bytes - data_) + frame.fragment.size;
            WebPDemuxReleaseIterator(&frame);
            if (!done) break;
            complete = i;
            end = frame_end + (frame_end & 1);  // chunks are padded to an even size
        }
        damage = "truncated animation: the data ends after " + std::to_string(complete) +
                 (complete == 1 ? " complete frame" : " complete frames");
        if (strict) return diag_->fail(ErrorKind::Corrupt, "corrupt image data (" + damage + ")");
        if (complete > 0) {
            end = std::min(end, size_);
            complete_part.assign(data_, data_ + end);
            write_le32(complete_part.data() + 4, uint32_t(end - 8));
            whole = WebPData{complete_part.data(), complete_part.size()};
        }
    }
    int decoded = 0;
    if (complete > 0) {
        WebPAnimDecoderOptions options;
        if (!WebPAnimDecoderOptionsInit(&options)) {
            return diag_->fail(ErrorKind::Corrupt, "libwebp version mismatch");
        }
        options.color_mode = MODE_RGBA;
        options.use_threads = 0;
        WebPAnimDecoder* animation = WebPAnimDecoderNew(&whole, &options);
        if (animation == nullptr) return diag_->fail(ErrorKind::Corrupt, "damaged animation");
        uint8_t* canvas = nullptr;
        int timestamp = 0;
        while (decoded < complete && WebPAnimDecoderGetNext(animation, &canvas, &timestamp)) {
            convert_rgba(canvas, dst + size_t(decoded) * frame_bytes, pixels);
            ++decoded;
        }
        WebPAnimDecoderDelete(animation);
    }
    if (decoded < complete) {
        damage = "damaged animation: decoded " + std::to_string(decoded) + " of " +
                 std::to_string(frames_) + " frames";
        if (strict) return diag_->fail(ErrorKind::Corrupt, "corrupt image data (" + damage + ")");
    }
    if (damage.empty()) return true;
    std::memset(dst + size_t(decoded) * frame_bytes, 0, size_t(frames_ - decoded) * frame_bytes);
    diag_->warn(damage, true, true);  // frames are missing: the decode stopped early
    return true;
}

bool encode_webp(const uint8_t* pixels, int height, int width, int channels, ptrdiff_t row_stride,
                 const WebpEncodeOptions& options, std::vector<uint8_t>* out, Diagnostics* diag) {
    if (channels < 1 || channels > 4) {
        return diag->fail(ErrorKind::Corrupt, "WebP needs 1 to 4 channels, got " + std::to_string(channels));
    }
    if (height <= 0 || width <= 0 || height > WEBP_MAX_DIMENSION || width > WEBP_MAX_DIMENSION) {
        return diag->fail(ErrorKind::Corrupt, "WebP dimensions must be 1.." +
                                                  std::to_string(WEBP_MAX_DIMENSION) + ", got " +
                                                  dims(width, height));
    }
    if (!(options.quality >= 0.0f && options.quality <= 100.0f)) {
        return diag->fail(ErrorKind::Corrupt,
                          "quality must be in 0..100, got " + std::to_string(options.quality));
    }
    if (options.method < 0 || options.method > 6) {
        return diag->fail(ErrorKind::Corrupt, "method must be in 0..6, got " + std::to_string(options.method));
    }
    WebPConfig config;
    if (!WebPConfigInit(&config)) return diag->fail(ErrorKind::Corrupt, "libwebp version mismatch");
    config.quality = options.quality;
    config.method = options.method;
    config.lossless = options.lossless ? 1 : 0;
    config.exact = options.exact ? 1 : 0;
    if (!WebPValidateConfig(&config)) return diag->fail(ErrorKind::Corrupt, "invalid WebP options");

    // WebP stores no gray: gray (+alpha) is widened to RGB (+alpha).
    const bool alpha = channels == 2 || channels == 4;
    std::vector<uint8_t> widened;
    const uint8_t* src = pixels;
    if (channels <= 2) {
        const int c = alpha ? 4 : 3;
        widened.resize(size_t(height) * width * c);
        uint8_t* o = widened.data();
        for (int y = 0; y < height; ++y) {
            const uint8_t* in = pixels + y * row_stride;
            for (int x = 0; x < width; ++x, in += channels, o += c) {
                o[0] = o[1] = o[2] = in[0];
                if (alpha) o[3] = in[1];
            }
        }
        src = widened.data();
        row_stride = ptrdiff_t(width) * c;
    }
    WebPPicture picture;
    if (!WebPPictureInit(&picture)) return diag->fail(ErrorKind::Corrupt, "libwebp version mismatch");
    picture.width = width;
    picture.height = height;
    // Lossless codes ARGB; lossy YUV, converted from RGB on import.
    picture.use_argb = config.lossless;
    out->clear();
    picture.custom_ptr = out;
    picture.writer = [](const uint8_t* data, size_t size, const WebPPicture* p) -> int {
        auto* bytes = static_cast<std::vector<uint8_t>*>(p->custom_ptr);
        bytes->insert(bytes->end(), data, data + size);
        return 1;
    };
    const int stride = int(row_stride);
    const int imported = alpha ? WebPPictureImportRGBA(&picture, src, stride)
                               : WebPPictureImportRGB(&picture, src, stride);
    const int ok = imported && WebPEncode(&config, &picture);
    const WebPEncodingError error = picture.error_code;
    WebPPictureFree(&picture);
    if (!imported) return diag->fail(ErrorKind::TooLarge, "out of memory");
    if (!ok) {
        return diag->fail(error == VP8_ENC_ERROR_OUT_OF_MEMORY ? ErrorKind::TooLarge : ErrorKind::Corrupt,
                          "libwebp failed to encode (error " + std::to_string(int(error)) + ")");
    }
    return true;
}

std::string webp_version_string() {
    const int v = WebPGetDecoderVersion();
    return std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff) + "." +
           std::to_string(v & 0xff);
}

}  // namespace trivium
