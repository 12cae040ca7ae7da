#include "png_rows.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <zlib.h>

namespace trivium {
namespace {

constexpr size_t kSignatureSize = 8;
constexpr uint32_t kMaxChunkLength = 0x7fffffffu;

uint32_t read_u32(const uint8_t* p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// The data of the consecutive IDAT chunks, in order, each checked against its CRC.
struct ImageData {
    std::vector<std::pair<const uint8_t*, size_t>> pieces;
    std::string damage;  // why the data ends early, if it does
    bool bad_checksum = false;
};

ImageData find_image_data(const uint8_t* png, size_t size) {
    ImageData found;
    size_t pos = kSignatureSize;
    bool in_idat = false;
    while (size - pos >= 8) {
        const uint32_t length = read_u32(png + pos);
        const bool is_idat = std::memcmp(png + pos + 4, "IDAT", 4) == 0;
        if (in_idat && !is_idat) return found;  // the image data ended
        if (length > kMaxChunkLength || size - pos - 8 < size_t(length) + 4) {
            if (is_idat) {  // cut short: keep what is there, unchecked
                found.pieces.emplace_back(png + pos + 8, std::min<size_t>(length, size - pos - 8));
            }
            found.damage = "file truncated in the image data";
            return found;
        }
        if (is_idat) {
            const uint8_t* chunk = png + pos + 4;  // type and data, which the CRC covers
            const uLong crc = crc32(crc32(0L, Z_NULL, 0), chunk, uInt(length) + 4);
            if (crc != read_u32(chunk + 4 + length)) {
                found.damage = "invalid chunk checksum in the image data";
                found.bad_checksum = true;
                return found;
            }
            found.pieces.emplace_back(chunk + 4, length);
            in_idat = true;
        }
        pos += size_t(length) + 12;
    }
    if (found.damage.empty()) found.damage = "file truncated in the image data";
    return found;
}

// PNG filter type 4 predictor, branch-free.
inline uint8_t paeth(int a, int b, int c) {
    const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
    const int ab = pa <= pb ? a : b;
    const int pab = pa <= pb ? pa : pb;
    return static_cast<uint8_t>(pab <= pc ? ab : c);
}

// Undoes one scanline's filter: raw (filtered) bytes to out, given the previous
// unfiltered row. BPP is the bytes per pixel, a constant so loops unroll.
template <int BPP>
bool unfilter(int filter, const uint8_t* raw, const uint8_t* prev, uint8_t* out, size_t n) {
    switch (filter) {
        case 0:
            std::memcpy(out, raw, n);
            return true;
        case 1:
            for (size_t i = 0; i < BPP && i < n; ++i) out[i] = raw[i];
            for (size_t i = BPP; i < n; ++i) out[i] = uint8_t(raw[i] + out[i - BPP]);
            return true;
        case 2:
            for (size_t i = 0; i < n; ++i) out[i] = uint8_t(raw[i] + prev[i]);
            return true;
        case 3:
            for (size_t i = 0; i < BPP && i < n; ++i) out[i] = uint8_t(raw[i] + (prev[i] >> 1));
            for (size_t i = BPP; i < n; ++i) {
                out[i] = uint8_t(raw[i] + ((out[i - BPP] + prev[i]) >> 1));
            }
            return true;
        case 4:
            for (size_t i = 0; i < BPP && i < n; ++i) out[i] = uint8_t(raw[i] + prev[i]);
            for (size_t i = BPP; i < n; ++i) {
                out[i] = uint8_t(raw[i] + paeth(out[i - BPP], prev[i], prev[i - BPP]));
            }
            return true;
        default:
            return false;
    }
}

bool unfilter_row(int bpp, int filter, const uint8_t* raw, const uint8_t* prev, uint8_t* out,
                  size_t n) {
    switch (bpp) {
        case 1: return unfilter<1>(filter, raw, prev, out, n);
        case 2: return unfilter<2>(filter, raw, prev, out, n);
        case 3: return unfilter<3>(filter, raw, prev, out, n);
        default: return unfilter<4>(filter, raw, prev, out, n);
    }
}

struct Inflater {
    z_stream zs{};
    bool ready = false;
    Inflater() { ready = inflateInit(&zs) == Z_OK; }
    ~Inflater() {
        if (ready) inflateEnd(&zs);
    }
};

}  // namespace

bool decode_png_rows_8bit(const uint8_t* png, size_t size, int height, int width, int channels,
                          uint8_t* dst, bool stop_at_damage, Diagnostics* diag) {
    const size_t row_bytes = size_t(width) * size_t(channels);
    ImageData data = find_image_data(png, size);
    // A damaged stream ends the decode: with stop_at_damage as a warning.
    auto damaged = [&](const std::string& why, int row) {
        if (!stop_at_damage) return diag->fail(ErrorKind::Corrupt, "cannot decode: " + why);
        diag->warn("image data damaged at row " + std::to_string(row) + ": " + why, true);
        return true;
    };
    Inflater inflater;
    if (!inflater.ready) return diag->fail(ErrorKind::TooLarge, "out of memory");
    std::vector<uint8_t> scanline(row_bytes + 1), zeros(row_bytes, 0);
    size_t piece = 0;
    z_stream& zs = inflater.zs;
    for (int y = 0; y < height; ++y) {
        zs.next_out = scanline.data();
        zs.avail_out = uInt(scanline.size());
        while (zs.avail_out > 0) {
            if (zs.avail_in == 0) {
                if (piece == data.pieces.size()) {
                    return damaged(data.damage.empty() ? "image data too short" : data.damage, y);
                }
                zs.next_in = const_cast<Bytef*>(data.pieces[piece].first);
                zs.avail_in = uInt(data.pieces[piece].second);
                ++piece;
            }
            const int ret = inflate(&zs, Z_NO_FLUSH);
            if (ret == Z_STREAM_END && zs.avail_out > 0) return damaged("image data too short", y);
            if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR) {
                return damaged(std::string("invalid compressed data") +
                                   (zs.msg != nullptr ? std::string(" (") + zs.msg + ")" : ""),
                               y);
            }
        }
        uint8_t* out = dst + size_t(y) * row_bytes;
        const uint8_t* prev = y == 0 ? zeros.data() : out - row_bytes;
        if (!unfilter_row(channels, scanline[0], scanline.data() + 1, prev, out, row_bytes)) {
            return damaged("invalid scanline filter", y);
        }
    }
    // All rows are in; a bad checksum on image data not needed for them (e.g. the
    // zlib trailer) still fails a strict decode, a file cut short after them does not.
    if (data.bad_checksum) return damaged(data.damage, height);
    return true;
}

}  // namespace trivium
