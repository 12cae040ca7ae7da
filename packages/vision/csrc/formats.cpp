// The format table (formats.h). Adding a codec: its <format>_codec.{h,cpp}, one row
// in kFormats below, and its registration in trivium.vision.io (docs/design.md, "Adding
// an image format").
#include "formats.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "jpeg_codec.h"
#include "png_codec.h"
#include "webp_codec.h"

namespace trivium {
namespace {

bool starts_with(const uint8_t* data, size_t size, const char* sig, size_t n, size_t at = 0) {
    return size >= at + n && std::memcmp(data + at, sig, n) == 0;
}

uint32_t le32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24; }
uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | p[1] << 16 | p[2] << 8 | p[3]; }

// Any codec of codec.h's Decoder shape reads its header the same way.
template <typename Decoder>
bool header_of(const uint8_t* data, size_t size, Diagnostics* diag, ImageHeader* header) {
    Decoder decoder(data, size, diag);
    return decoder.read_header(header);
}

bool is_jpeg(const uint8_t* d, size_t n) { return starts_with(d, n, "\xff\xd8\xff", 3); }
bool is_png(const uint8_t* d, size_t n) { return starts_with(d, n, "\x89PNG\r\n\x1a\n", 8); }
// "RIFF" and "WEBP" at byte 8 (a WAV file is a RIFF too).
bool is_webp(const uint8_t* d, size_t n) {
    return starts_with(d, n, "RIFF", 4) && starts_with(d, n, "WEBP", 4, 8);
}

bool is_gif(const uint8_t* d, size_t n) {
    return starts_with(d, n, "GIF87a", 6) || starts_with(d, n, "GIF89a", 6);
}

// "BM" and a DIB header size Pillow reads.
bool is_bmp(const uint8_t* d, size_t n) {
    if (!starts_with(d, n, "BM", 2) || n < 18) return false;
    const uint32_t header = le32(d + 14);
    return header == 12 || header == 40 || header == 52 || header == 56 || header == 64 ||
           header == 108 || header == 124;
}

bool is_tiff(const uint8_t* d, size_t n) {
    return starts_with(d, n, "II*\0", 4) || starts_with(d, n, "MM\0*", 4) ||
           starts_with(d, n, "II+\0", 4) || starts_with(d, n, "MM\0+", 4);
}

// Netpbm "P1".."P6" followed by white space.
bool is_ppm(const uint8_t* d, size_t n) {
    return n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6' && d[2] != 0 &&
           std::strchr(" \t\n\v\f\r", d[2]) != nullptr;
}

// An ISO BMFF "ftyp" box naming one of `brands` as its major or a compatible brand
// (those within the first kSniffBytes bytes).
bool has_brand(const uint8_t* d, size_t n, std::initializer_list<const char*> brands) {
    if (!starts_with(d, n, "ftyp", 4, 4) || n < 12) return false;
    const size_t end = std::min<size_t>({n, kSniffBytes, be32(d)});
    auto named = [&](size_t at) {
        for (const char* brand : brands) {
            if (std::memcmp(d + at, brand, 4) == 0) return true;
        }
        return false;
    };
    if (named(8)) return true;
    for (size_t at = 16; at + 4 <= end; at += 4) {
        if (named(at)) return true;
    }
    return false;
}

bool is_avif(const uint8_t* d, size_t n) { return has_brand(d, n, {"avif", "avis"}); }

bool is_heic(const uint8_t* d, size_t n) {
    return has_brand(d, n, {"heic", "heix", "heim", "heis", "hevc", "hevx", "hevm", "hevs",
                            "mif1", "msf1"});
}

constexpr Format kFormats[] = {
    {"jpeg", "JPEG", is_jpeg, header_of<JpegDecoder>},
    {"png", "PNG", is_png, header_of<PngDecoder>},
    {"webp", "WebP", is_webp, header_of<WebpDecoder>},
    // Decoded in Python (trivium/vision/io/image/pillow.py, gif.py).
    {"bmp", "BMP", is_bmp, nullptr},
    {"tiff", "TIFF", is_tiff, nullptr},
    {"ppm", "PPM", is_ppm, nullptr},
    {"avif", "AVIF", is_avif, nullptr},
    {"heic", "HEIC", is_heic, nullptr},
    {"gif", "GIF", is_gif, nullptr},
};

}  // namespace

const Format* formats_begin() { return std::begin(kFormats); }
const Format* formats_end() { return std::end(kFormats); }

std::string format_names(const char* word, bool python) {
    std::vector<const char*> all;
    for (const Format& format : kFormats) {
        if (python || format.native()) all.push_back(format.title);
    }
    std::string names;
    for (size_t i = 0; i < all.size(); ++i) {
        names += i == 0 ? "" : (i + 1 == all.size() ? std::string(" ") + word + " " : ", ");
        names += all[i];
    }
    return names;
}

const Format* sniff(const uint8_t* data, size_t size, Diagnostics* diag) {
    for (const Format& format : kFormats) {
        if (format.matches(data, size)) return &format;
    }
    if (size == 0) {
        diag->fail(ErrorKind::Empty, "empty input (0 bytes)");
    } else if (starts_with(data, size, "\0\0\1\0", 4)) {
        diag->fail(ErrorKind::Unsupported,
                   "ICO images are not supported (" + format_names("and") + " are)");
    } else {
        diag->fail(ErrorKind::Corrupt,
                   "not a " + format_names("or") + " image (unknown signature)");
    }
    return nullptr;
}

}  // namespace trivium
