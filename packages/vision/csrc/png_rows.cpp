#include "png_rows.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <zlib.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

#if defined(__SSE2__)
inline __m128i select(__m128i mask, __m128i if_set, __m128i if_clear) {
    return _mm_or_si128(_mm_and_si128(mask, if_set), _mm_andnot_si128(mask, if_clear));
}

inline __m128i abs16(__m128i v) { return _mm_max_epi16(v, _mm_sub_epi16(_mm_setzero_si128(), v)); }

// The Paeth predictor of 8 pixels' bytes widened to 16 bits (the PNG spec's tie order).
inline __m128i paeth8(__m128i a, __m128i b, __m128i c) {
    const __m128i pa = abs16(_mm_sub_epi16(b, c));
    const __m128i pb = abs16(_mm_sub_epi16(a, c));
    const __m128i pc = abs16(_mm_add_epi16(_mm_sub_epi16(b, c), _mm_sub_epi16(a, c)));
    const __m128i not_a = _mm_or_si128(_mm_cmpgt_epi16(pa, pb), _mm_cmpgt_epi16(pa, pc));
    const __m128i b_or_c = select(_mm_cmpgt_epi16(pb, pc), c, b);
    return select(not_a, b_or_c, a);
}

// Bytes of one pixel (3 or 4) widened to 16-bit lanes, and back.
template <int BPP>
inline __m128i load_pixel(const uint8_t* p) {
    uint32_t v = 0;
    std::memcpy(&v, p, BPP);
    return _mm_unpacklo_epi8(_mm_cvtsi32_si128(int(v)), _mm_setzero_si128());
}

template <int BPP>
inline void store_pixel(uint8_t* p, __m128i v) {
    const uint32_t bytes = uint32_t(_mm_cvtsi128_si32(_mm_packus_epi16(v, v)));
    std::memcpy(p, &bytes, BPP);
}

// Paeth unfiltering a pixel at a time, its bytes in parallel (each pixel depends on
// the one to its left); n a multiple of BPP. Used for 4-byte pixels: with 3, the
// scalar loop's three independent byte chains measured faster.
template <int BPP>
void unpaeth_pixels(const uint8_t* raw, const uint8_t* prev, uint8_t* out, size_t n) {
    const __m128i low_byte = _mm_set1_epi16(0xff);
    __m128i a = _mm_setzero_si128(), c = a;  // left and upper-left; zero before the row
    for (size_t i = 0; i < n; i += BPP) {
        const __m128i b = load_pixel<BPP>(prev + i);
        a = _mm_and_si128(_mm_add_epi16(load_pixel<BPP>(raw + i), paeth8(a, b, c)), low_byte);
        store_pixel<BPP>(out + i, a);
        c = b;
    }
}
#endif

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
#if defined(__SSE2__)
            if constexpr (BPP == 4) {
                unpaeth_pixels<BPP>(raw, prev, out, n);
                return true;
            }
#endif
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

// Raw inflate: the zlib header is checked by hand (zlib_header_ok) and the Adler-32
// trailer is not computed, since every IDAT chunk's CRC covers the same bytes.
struct Inflater {
    z_stream zs{};
    bool ready = false;
    Inflater() { ready = inflateInit2(&zs, -15) == Z_OK; }
    ~Inflater() {
        if (ready) inflateEnd(&zs);
    }
};

// Takes the 2-byte zlib header off the front of the image data; "" when it is a
// valid header of deflate data without a preset dictionary, else what is wrong.
std::string take_zlib_header(ImageData* data) {
    uint8_t header[2];
    size_t got = 0;
    for (auto& piece : data->pieces) {
        while (got < 2 && piece.second > 0) {
            header[got++] = *piece.first++;
            --piece.second;
        }
    }
    if (got < 2) return data->damage.empty() ? "image data too short" : data->damage;
    const unsigned cmf = header[0], flg = header[1];
    const bool ok = (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && (cmf * 256 + flg) % 31 == 0;
    if (!ok) return "invalid compressed data (incorrect header check)";
    if (flg & 0x20) return "invalid compressed data (preset dictionary)";
    return "";
}

}  // namespace

bool decode_png_rows_8bit(const uint8_t* png, size_t size, int height, int width, int channels,
                          uint8_t* dst, bool strict, Diagnostics* diag) {
    const size_t row_bytes = size_t(width) * size_t(channels);
    ImageData data = find_image_data(png, size);
    // A damaged stream ends the decode (before `row`; at `height` every row is in):
    // unless strict, as a warning.
    auto damaged = [&](const std::string& why, int row) {
        if (strict) return diag->fail(ErrorKind::Corrupt, "cannot decode: " + why);
        diag->warn("image data damaged at row " + std::to_string(row) + ": " + why, true,
                   row < height);
        return true;
    };
    Inflater inflater;
    if (!inflater.ready) return diag->fail(ErrorKind::TooLarge, "out of memory");
    const std::string bad_header = take_zlib_header(&data);
    if (!bad_header.empty()) return damaged(bad_header, 0);
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

// ---------------------------------------------------------------------- encode

namespace {

constexpr size_t kIdatSize = size_t(1) << 16;  // data bytes per IDAT chunk
constexpr int kFilters = 5;                     // none, sub, up, average, paeth

void put_u32(uint8_t* p, uint32_t v) {
    p[0] = uint8_t(v >> 24), p[1] = uint8_t(v >> 16), p[2] = uint8_t(v >> 8), p[3] = uint8_t(v);
}

// Appends a chunk of `length` data bytes, whose type and data are already at
// out[start + 4 ...], by filling in its length and CRC.
void close_chunk(std::vector<uint8_t>* out, size_t start, size_t length) {
    put_u32(out->data() + start, uint32_t(length));
    const uLong crc = crc32(crc32(0L, Z_NULL, 0), out->data() + start + 4, uInt(length + 4));
    out->resize(start + 8 + length + 4);
    put_u32(out->data() + start + 8 + length, uint32_t(crc));
}

void append_chunk(std::vector<uint8_t>* out, const char* type, const uint8_t* data, size_t n) {
    const size_t start = out->size();
    out->resize(start + 8 + n);
    std::memcpy(out->data() + start + 4, type, 4);
    if (n != 0) std::memcpy(out->data() + start + 8, data, n);
    close_chunk(out, start, n);
}

// The magnitude of a filtered byte read as signed: what the heuristic sums.
inline uint32_t magnitude(uint8_t r) { return r < 128 ? r : 256u - r; }

// The five filtered rows of one scanline and their sums. Each row keeps its filter
// type in byte 0, so the chosen one is deflated as it is.
struct FilterRows {
    std::vector<uint8_t> rows[kFilters];
    uint64_t sums[kFilters];

    explicit FilterRows(size_t row_bytes) {
        for (int f = 0; f < kFilters; ++f) {
            rows[f].assign(row_bytes + 1, 0);
            rows[f][0] = uint8_t(f);
        }
    }
};

// Filters bytes [begin, n) of `cur` against `prev` (both with `bpp` zero bytes
// before them) into every filtered row, adding to the sums.
void filter_bytes(const uint8_t* cur, const uint8_t* prev, int bpp, size_t begin, size_t n,
                  FilterRows* f) {
    uint8_t* out[kFilters];
    for (int k = 0; k < kFilters; ++k) out[k] = f->rows[k].data() + 1;
    for (size_t i = begin; i < n; ++i) {
        const int x = cur[i], a = cur[i - bpp], b = prev[i], c = prev[i - bpp];
        const uint8_t r[kFilters] = {uint8_t(x), uint8_t(x - a), uint8_t(x - b),
                                     uint8_t(x - ((a + b) >> 1)), uint8_t(x - paeth(a, b, c))};
        for (int k = 0; k < kFilters; ++k) {
            out[k][i] = r[k];
            f->sums[k] += magnitude(r[k]);
        }
    }
}

#if defined(__SSE2__)
inline __m128i paeth16(__m128i a, __m128i b, __m128i c) {
    const __m128i z = _mm_setzero_si128();
    const __m128i lo = paeth8(_mm_unpacklo_epi8(a, z), _mm_unpacklo_epi8(b, z), _mm_unpacklo_epi8(c, z));
    const __m128i hi = paeth8(_mm_unpackhi_epi8(a, z), _mm_unpackhi_epi8(b, z), _mm_unpackhi_epi8(c, z));
    return _mm_packus_epi16(lo, hi);
}

// Sum of the magnitudes of 16 filtered bytes, in the two 64-bit lanes.
inline __m128i magnitudes(__m128i r) {
    const __m128i z = _mm_setzero_si128();
    return _mm_sad_epu8(_mm_min_epu8(r, _mm_sub_epi8(z, r)), z);
}
#endif

// Fills every filtered row of one scanline and its sum.
void filter_all(const uint8_t* cur, const uint8_t* prev, int bpp, size_t n, FilterRows* f) {
    for (int k = 0; k < kFilters; ++k) f->sums[k] = 0;
    size_t i = 0;
#if defined(__SSE2__)
    __m128i sums[kFilters];
    for (int k = 0; k < kFilters; ++k) sums[k] = _mm_setzero_si128();
    uint8_t* out[kFilters];
    for (int k = 0; k < kFilters; ++k) out[k] = f->rows[k].data() + 1;
    const __m128i one = _mm_set1_epi8(1);
    for (; i + 16 <= n; i += 16) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(cur + i));
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(cur + i - bpp));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(prev + i));
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(prev + i - bpp));
        // floor((a + b) / 2): avg_epu8 rounds up, so take the carry back off.
        const __m128i avg = _mm_sub_epi8(_mm_avg_epu8(a, b), _mm_and_si128(_mm_xor_si128(a, b), one));
        const __m128i r[kFilters] = {x, _mm_sub_epi8(x, a), _mm_sub_epi8(x, b), _mm_sub_epi8(x, avg),
                                     _mm_sub_epi8(x, paeth16(a, b, c))};
        for (int k = 0; k < kFilters; ++k) {
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out[k] + i), r[k]);
            sums[k] = _mm_add_epi64(sums[k], magnitudes(r[k]));
        }
    }
    for (int k = 0; k < kFilters; ++k) {
        uint64_t lanes[2];
        _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), sums[k]);
        f->sums[k] = lanes[0] + lanes[1];
    }
#endif
    filter_bytes(cur, prev, bpp, i, n, f);
}

// The filter with the smallest sum; ties go to the earlier filter, as in libpng.
int best_filter(const FilterRows& f) {
    int best = 0;
    for (int k = 1; k < kFilters; ++k) {
        if (f.sums[k] < f.sums[best]) best = k;
    }
    return best;
}

// deflate's output, written straight into IDAT chunks of `out`.
class IdatWriter {
public:
    IdatWriter(std::vector<uint8_t>* out, z_stream* zs) : out_(out), zs_(zs) { open(); }

    // Deflates `n` bytes (flush: Z_NO_FLUSH or Z_FINISH). False on a zlib error.
    bool write(const uint8_t* data, size_t n, int flush) {
        zs_->next_in = const_cast<Bytef*>(data);
        zs_->avail_in = uInt(n);
        for (;;) {
            if (zs_->avail_out == 0) {
                close();
                open();
            }
            const int ret = deflate(zs_, flush);
            if (ret == Z_STREAM_END) {
                close();
                return true;
            }
            if (ret != Z_OK && ret != Z_BUF_ERROR) return false;
            if (flush == Z_NO_FLUSH && zs_->avail_in == 0) return true;
        }
    }

private:
    void open() {
        start_ = out_->size();
        out_->resize(start_ + 8 + kIdatSize);
        std::memcpy(out_->data() + start_ + 4, "IDAT", 4);
        zs_->next_out = out_->data() + start_ + 8;
        zs_->avail_out = uInt(kIdatSize);
    }

    void close() {
        const size_t length = kIdatSize - zs_->avail_out;
        if (length == 0) {
            out_->resize(start_);  // no empty IDAT chunks
        } else {
            close_chunk(out_, start_, length);
        }
    }

    std::vector<uint8_t>* out_;
    z_stream* zs_;
    size_t start_ = 0;
};

struct Deflater {
    z_stream zs{};
    bool ready = false;
    Deflater(int level, int window_bits) {
        ready = deflateInit2(&zs, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    }
    ~Deflater() {
        if (ready) deflateEnd(&zs);
    }
};

// The smallest zlib window that holds `bytes` (9..15 bits), as libpng picks it: the
// same output for small images, with less memory to set up.
int window_bits_for(size_t bytes) {
    int bits = 15;
    while (bits > 9 && (size_t(1) << (bits - 1)) >= bytes) --bits;
    return bits;
}

// Row y's bytes as PNG stores them (16-bit samples big-endian) into `row`.
void load_row(const uint8_t* pixels, size_t row_bytes, int bit_depth, int y, uint8_t* row) {
    const uint8_t* src = pixels + size_t(y) * row_bytes;
    if (bit_depth == 8) {
        std::memcpy(row, src, row_bytes);
        return;
    }
    const auto* samples = reinterpret_cast<const uint16_t*>(src);
    for (size_t i = 0; i < row_bytes / 2; ++i) {
        row[2 * i] = uint8_t(samples[i] >> 8);
        row[2 * i + 1] = uint8_t(samples[i]);
    }
}

}  // namespace

bool encode_png_rows(const void* pixels, int height, int width, int channels, int bit_depth,
                     int level, std::vector<uint8_t>* out, Diagnostics* diag) {
    static const uint8_t kColorTypes[] = {0, 4, 2, 6};  // gray, gray+alpha, RGB, RGBA
    const int bpp = channels * bit_depth / 8;
    const size_t row_bytes = size_t(width) * size_t(bpp);
    const size_t filtered_bytes = size_t(height) * (row_bytes + 1);
    Deflater deflater(level, window_bits_for(filtered_bytes));
    if (!deflater.ready) return diag->fail(ErrorKind::TooLarge, "out of memory");

    out->clear();
    out->reserve(size_t(compressBound(uLong(std::min<size_t>(filtered_bytes, 1u << 30)))) + 1024);
    const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    out->insert(out->end(), signature, signature + 8);
    uint8_t ihdr[13] = {};
    put_u32(ihdr, uint32_t(width));
    put_u32(ihdr + 4, uint32_t(height));
    ihdr[8] = uint8_t(bit_depth);
    ihdr[9] = kColorTypes[channels - 1];
    append_chunk(out, "IHDR", ihdr, sizeof(ihdr));

    // Two rows, each after bpp zero bytes (the pixels left of the first), swapped
    // as we go; the row above the first is all zeros.
    std::vector<uint8_t> rows(2 * (bpp + row_bytes), 0);
    uint8_t* prev = rows.data() + bpp;
    uint8_t* cur = prev + row_bytes + bpp;
    FilterRows filtered(row_bytes);
    IdatWriter idat(out, &deflater.zs);
    const auto* src = static_cast<const uint8_t*>(pixels);
    for (int y = 0; y < height; ++y) {
        load_row(src, row_bytes, bit_depth, y, cur);
        int filter = 0;
        if (level == 0) {  // stored: filtering cannot help
            std::memcpy(filtered.rows[0].data() + 1, cur, row_bytes);
        } else {
            filter_all(cur, prev, bpp, row_bytes, &filtered);
            filter = best_filter(filtered);
        }
        if (!idat.write(filtered.rows[filter].data(), row_bytes + 1, Z_NO_FLUSH)) {
            return diag->fail(ErrorKind::Corrupt, "cannot encode: zlib failed");
        }
        std::swap(prev, cur);
    }
    if (!idat.write(nullptr, 0, Z_FINISH)) {
        return diag->fail(ErrorKind::Corrupt, "cannot encode: zlib failed");
    }
    append_chunk(out, "IEND", nullptr, 0);
    return true;
}

}  // namespace trivium
