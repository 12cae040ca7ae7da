#include "png_codec.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>

#include "exif.h"
#include "png_rows.h"

namespace trivium {
namespace {

constexpr uint32_t kMaxDimension = 1u << 24;
constexpr size_t kChunkSizeLimit = size_t(64) << 20;   // one ancillary chunk
constexpr size_t kChunkCacheLimit = size_t(256) << 20;  // all stored ancillary chunks

enum ColorType { kGray = 0, kRGB = 2, kPalette = 3, kGrayAlpha = 4, kRGBA = 6 };

const char* color_type_name(int color_type) {
    switch (color_type) {
        case kGray: return "gray";
        case kRGB: return "RGB";
        case kPalette: return "palette";
        case kGrayAlpha: return "gray_alpha";
        case kRGBA: return "RGBA";
        default: return "unknown";
    }
}

bool is_gray(int color_type) { return color_type == kGray || color_type == kGrayAlpha; }

int unchanged_channels(int color_type, bool has_trns) {
    switch (color_type) {
        case kGray: return has_trns ? 2 : 1;
        case kGrayAlpha: return 2;
        case kRGBA: return 4;
        default: return has_trns ? 4 : 3;  // RGB and palette
    }
}

// Errors that mean the image data itself is damaged (the header was fine).
bool is_data_damage(int ret) {
    return ret == SPNG_IO_EOF || ret == SPNG_EOF || ret == SPNG_IO_ERROR || ret == SPNG_EZLIB || ret == SPNG_EIDAT_TOO_SHORT ||
           ret == SPNG_EIDAT_STREAM || ret == SPNG_EFILTER || ret == SPNG_ECHUNK_CRC ||
           ret == SPNG_ECHUNK_STDLEN || ret == SPNG_ECHUNK_POS;
}


}  // namespace

PngDecoder::PngDecoder(const uint8_t* data, size_t size, Diagnostics* diag)
    // The zlib Adler-32 is skipped: every IDAT chunk's CRC-32 (always checked) already
    // covers the same bytes, and more strongly.
    : data_(data), size_(size), diag_(diag), ctx_(spng_ctx_new(SPNG_CTX_IGNORE_ADLER32)) {}

PngDecoder::~PngDecoder() {
    if (ctx_ != nullptr) spng_ctx_free(ctx_);
}

bool PngDecoder::check(int ret, const char* what) {
    if (ret == 0) return true;
    return diag_->fail(ErrorKind::Corrupt, std::string(what) + ": " + spng_strerror(ret));
}

bool PngDecoder::read_header(ImageHeader* header) {
    if (ctx_ == nullptr) return diag_->fail(ErrorKind::Corrupt, "out of memory");
    if (size_ == 0) return diag_->fail(ErrorKind::Corrupt, "empty input");
    if (size_ < 8 || std::memcmp(data_, "\x89PNG\r\n\x1a\n", 8) != 0) {
        return diag_->fail(ErrorKind::Corrupt, "not a PNG (bad signature)");
    }
    if (ihdr_.width == 0) {
        if (!check(spng_set_image_limits(ctx_, kMaxDimension, kMaxDimension), "limits") ||
            !check(spng_set_chunk_limits(ctx_, kChunkSizeLimit, kChunkCacheLimit), "limits") ||
            !check(spng_set_png_buffer(ctx_, data_, size_), "input") ||
            !check(spng_get_ihdr(ctx_, &ihdr_), "bad header")) {
            return false;
        }
        // Reading tRNS reads (and checks) every chunk before the image data.
        spng_trns trns;
        const int ret = spng_get_trns(ctx_, &trns);
        has_trns_ = ret == 0;
        if (ret != 0 && ret != SPNG_ECHUNKAVAIL) return check(ret, "damaged before the image data");
    }
    spng_exif exif{};
    int orientation = 0;
    if (spng_get_exif(ctx_, &exif) == 0) {
        orientation = exif_orientation(reinterpret_cast<const uint8_t*>(exif.data), exif.length);
    }
    header->format = "png";
    header->color_space = color_type_name(ihdr_.color_type);
    header->height = static_cast<int>(ihdr_.height);
    header->width = static_cast<int>(ihdr_.width);
    header->channels = unchanged_channels(ihdr_.color_type, has_trns_);
    header->bit_depth = ihdr_.bit_depth;
    header->orientation = orientation;
    header->progressive = ihdr_.interlace_method != 0;
    return true;
}

bool PngDecoder::prepare(ReadMode mode, int64_t max_pixels, OutputShape* shape) {
    ImageHeader header;
    if (!read_header(&header)) return false;
    const int64_t pixels = int64_t(ihdr_.width) * int64_t(ihdr_.height);
    if (max_pixels > 0 && pixels > max_pixels) {
        return diag_->fail(ErrorKind::TooLarge,
                           std::to_string(ihdr_.width) + "x" + std::to_string(ihdr_.height) +
                               " image exceeds the limit of " + std::to_string(max_pixels) +
                               " pixels");
    }
    const int ct = ihdr_.color_type;
    const bool wide = ihdr_.bit_depth == 16;
    int channels = header.channels;
    if (mode == ReadMode::Gray) channels = 1;
    if (mode == ReadMode::GrayAlpha) channels = 2;
    if (mode == ReadMode::RGB) channels = 3;
    if (mode == ReadMode::RGBA) channels = 4;

    // Pick the libspng output format closest to what was asked, then convert.
    conversion_ = Conversion::None;
    if (channels == 1 && ct == kGray) {
        spng_format_ = wide ? SPNG_FMT_PNG : SPNG_FMT_G8, decoded_channels_ = 1;
    } else if (channels <= 2 && is_gray(ct)) {
        // libspng expands gray (+tRNS) to GA8/GA16, but reads gray+alpha only natively.
        spng_format_ = ct == kGrayAlpha ? SPNG_FMT_PNG : wide ? SPNG_FMT_GA16 : SPNG_FMT_GA8;
        decoded_channels_ = 2;
        if (channels == 1) conversion_ = Conversion::DropAlpha;
    } else if (channels == 3 && !wide && !(ct == kGrayAlpha || ct == kRGBA)) {
        spng_format_ = SPNG_FMT_RGB8, decoded_channels_ = 3;
    } else if (channels == 3 && wide && ct == kRGB) {
        spng_format_ = SPNG_FMT_PNG, decoded_channels_ = 3;
    } else {
        spng_format_ = wide ? SPNG_FMT_RGBA16 : SPNG_FMT_RGBA8, decoded_channels_ = 4;
        conversion_ = channels == 4   ? Conversion::None
                      : channels == 3 ? Conversion::DropAlpha
                      : channels == 2 ? Conversion::ToLumaAlpha
                                      : Conversion::ToLuma;
    }
    // 8-bit samples already laid out as asked: take libspng's native path, which
    // skips its per-pixel format conversion.
    const bool native = ihdr_.bit_depth == 8 && conversion_ == Conversion::None &&
                        ((ct == kGray && channels == 1) || (ct == kRGB && channels == 3) ||
                         (ct == kRGBA && channels == 4));
    if (native) spng_format_ = SPNG_FMT_PNG;
    fast_path_ = native && ihdr_.interlace_method == 0;
    shape_.height = static_cast<int>(ihdr_.height);
    shape_.width = static_cast<int>(ihdr_.width);
    shape_.channels = channels;
    shape_.bytes_per_sample = wide ? 2 : 1;
    *shape = shape_;
    return true;
}

bool PngDecoder::decode_rows(uint8_t* dst, size_t row_bytes, bool strict) {
    const bool alpha_out = decoded_channels_ == 2 || decoded_channels_ == 4;
    const bool trns = alpha_out && has_trns_ && spng_format_ != SPNG_FMT_PNG;
    const int flags = SPNG_DECODE_PROGRESSIVE | (trns ? SPNG_DECODE_TRNS : 0);
    int ret = spng_decode_image(ctx_, nullptr, 0, spng_format_, flags);
    if (ret != 0) {
        if (!strict && is_data_damage(ret)) {
            diag_->warn(std::string("image data damaged: ") + spng_strerror(ret), true, true);
            return true;
        }
        return check(ret, "cannot decode");
    }
    spng_row_info info{};
    for (;;) {
        ret = spng_get_row_info(ctx_, &info);
        if (ret == 0) ret = spng_decode_row(ctx_, dst + size_t(info.row_num) * row_bytes, row_bytes);
        if (ret == SPNG_EOI) break;
        if (ret == 0) continue;
        if (!strict && is_data_damage(ret)) {
            diag_->warn(std::string("image data damaged at row ") + std::to_string(info.row_num) +
                            ": " + spng_strerror(ret),
                        true, true);
            return true;
        }
        return check(ret, "cannot decode");
    }
    // The last IDAT chunk's checksum is only verified when the chunks after the
    // image data are read. A file cut short after its pixels is complete enough.
    ret = spng_decode_chunks(ctx_);
    if (ret == 0 || ret == SPNG_IO_EOF || ret == SPNG_EOF) return true;
    if (!strict) {
        // The image data's last checksum failed: its rows cannot be trusted.
        diag_->warn(std::string("damaged at or after the end of the image data: ") + spng_strerror(ret),
                    true, true);
        return true;
    }
    return check(ret, "damaged at or after the end of the image data");
}

void PngDecoder::convert(const uint8_t* src, uint8_t* dst) const {
    const size_t n = size_t(shape_.height) * size_t(shape_.width);
    const int in_c = decoded_channels_, out_c = shape_.channels;
    auto run = [&](auto* in, auto* out) {
        for (size_t i = 0; i < n; ++i, in += in_c, out += out_c) {
            switch (conversion_) {
                case Conversion::DropAlpha:
                    for (int c = 0; c < out_c; ++c) out[c] = in[c];
                    break;
                case Conversion::ToLuma:
                    out[0] = static_cast<std::remove_reference_t<decltype(out[0])>>(luma(in[0], in[1], in[2]));
                    break;
                case Conversion::ToLumaAlpha:
                    out[0] = static_cast<std::remove_reference_t<decltype(out[0])>>(luma(in[0], in[1], in[2]));
                    out[1] = in[3];
                    break;
                default:
                    break;
            }
        }
    };
    if (shape_.bytes_per_sample == 2) {
        run(reinterpret_cast<const uint16_t*>(src), reinterpret_cast<uint16_t*>(dst));
    } else {
        run(src, dst);
    }
}

bool PngDecoder::decode(uint8_t* dst, bool strict) {
    const size_t bps = size_t(shape_.bytes_per_sample);
    const size_t out_bytes = size_t(shape_.height) * shape_.width * shape_.channels * bps;
    if (!strict) std::memset(dst, 0, out_bytes);  // rows never reached read as zero
    if (fast_path_) {
        return decode_png_rows_8bit(data_, size_, shape_.height, shape_.width, shape_.channels,
                                    dst, strict, diag_);
    }
    if (conversion_ == Conversion::None) {
        return decode_rows(dst, size_t(shape_.width) * decoded_channels_ * bps, strict);
    }
    const size_t bytes = size_t(shape_.height) * shape_.width * decoded_channels_ * bps;
    std::unique_ptr<uint8_t, decltype(&std::free)> tmp(static_cast<uint8_t*>(std::calloc(bytes, 1)),
                                                       &std::free);
    if (!tmp) return diag_->fail(ErrorKind::TooLarge, "out of memory");
    if (!decode_rows(tmp.get(), size_t(shape_.width) * decoded_channels_ * bps, strict)) {
        return false;
    }
    convert(tmp.get(), dst);
    return true;
}

bool encode_png(const void* pixels, int height, int width, int channels, int bit_depth,
                int compression_level, std::vector<uint8_t>* out, Diagnostics* diag) {
    if (channels < 1 || channels > 4) {
        return diag->fail(ErrorKind::Corrupt,
                          "PNG needs 1 to 4 channels, got " + std::to_string(channels));
    }
    if (height <= 0 || width <= 0 || uint32_t(height) > kMaxDimension ||
        uint32_t(width) > kMaxDimension) {
        return diag->fail(ErrorKind::Corrupt, "PNG dimensions must be positive, got " +
                                                  std::to_string(width) + "x" +
                                                  std::to_string(height));
    }
    if (compression_level < 0 || compression_level > 9) {
        return diag->fail(ErrorKind::Corrupt, "compression_level must be in 0..9, got " +
                                                  std::to_string(compression_level));
    }
    if (bit_depth != 8 && bit_depth != 16) {
        return diag->fail(ErrorKind::Corrupt, "PNG bit depth must be 8 or 16, got " + std::to_string(bit_depth));
    }
    return encode_png_rows(pixels, height, width, channels, bit_depth, compression_level, out, diag);
}

}  // namespace trivium
