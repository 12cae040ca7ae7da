#include "exif.h"

namespace trivium {
namespace {

struct TiffReader {
    const uint8_t* data;
    size_t size;
    bool little_endian;

    bool u16(size_t off, uint32_t* out) const {
        if (off > size || size - off < 2) return false;
        const uint8_t* p = data + off;
        *out = little_endian ? (p[0] | (p[1] << 8)) : ((p[0] << 8) | p[1]);
        return true;
    }
    bool u32(size_t off, uint32_t* out) const {
        if (off > size || size - off < 4) return false;
        const uint8_t* p = data + off;
        *out = little_endian
                   ? (uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) |
                      (uint32_t(p[3]) << 24))
                   : ((uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) |
                      uint32_t(p[3]));
        return true;
    }
};

constexpr uint32_t kOrientationTag = 0x0112;
constexpr uint32_t kTypeShort = 3;

}  // namespace

int exif_orientation(const uint8_t* data, size_t size) {
    if (data == nullptr || size < 8) return 0;
    TiffReader r{data, size, false};
    if (data[0] == 'I' && data[1] == 'I') {
        r.little_endian = true;
    } else if (!(data[0] == 'M' && data[1] == 'M')) {
        return 0;
    }
    uint32_t magic = 0, ifd = 0, count = 0;
    if (!r.u16(2, &magic) || magic != 42 || !r.u32(4, &ifd) || !r.u16(ifd, &count)) return 0;
    for (uint32_t i = 0; i < count; ++i) {
        size_t entry = size_t(ifd) + 2 + size_t(i) * 12;
        uint32_t tag = 0, type = 0, value = 0;
        if (!r.u16(entry, &tag) || !r.u16(entry + 2, &type)) return 0;
        if (tag != kOrientationTag) continue;
        if (type != kTypeShort || !r.u16(entry + 8, &value)) return 0;
        return (value >= 1 && value <= 8) ? int(value) : 0;
    }
    return 0;
}

}  // namespace trivium
