// FLAC frames to normalised float32 (load's long-FLAC path): the frames of one byte
// range of a file, decoded as the FLAC format specifies (RFC 9639) and written as
// sample / 2^(bits - 1), which is what libsndfile's float read gives. Every frame's
// header CRC-8 and CRC-16 are checked; anything unexpected (a bad CRC, a frame that
// does not follow the one before, a reserved code, 32-bit samples, a sample outside the
// stream's bit depth or padding that is not zero, which libFLAC refuses too) is reported, not
// decoded around, and the Python side then reads the file through libsndfile.
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "kernels.h"

namespace trivium_audio {
namespace {

constexpr int64_t kBadFrame = -1;

struct CrcTables {
    std::array<uint8_t, 256> crc8{};
    std::array<std::array<uint16_t, 256>, 8> crc16{};  // slice-by-8 (MSB first, 0x8005)
    CrcTables() {
        for (int v = 0; v < 256; ++v) {
            uint8_t c8 = static_cast<uint8_t>(v);
            for (int b = 0; b < 8; ++b) c8 = static_cast<uint8_t>((c8 & 0x80) ? (c8 << 1) ^ 0x07 : c8 << 1);
            crc8[v] = c8;
            uint16_t c16 = static_cast<uint16_t>(v << 8);
            for (int b = 0; b < 8; ++b)
                c16 = static_cast<uint16_t>((c16 & 0x8000) ? (c16 << 1) ^ 0x8005 : c16 << 1);
            crc16[0][v] = c16;
        }
        for (int k = 1; k < 8; ++k)
            for (int v = 0; v < 256; ++v) {
                const uint16_t prev = crc16[k - 1][v];
                crc16[k][v] = static_cast<uint16_t>((prev << 8) ^ crc16[0][prev >> 8]);
            }
    }
};

const CrcTables& tables() {
    static const CrcTables t;
    return t;
}

uint16_t crc16(const uint8_t* p, size_t n) {
    const auto& t = tables().crc16;
    uint16_t crc = 0;
    for (; n >= 8; n -= 8, p += 8) {
        crc = t[7][p[0] ^ (crc >> 8)] ^ t[6][p[1] ^ (crc & 0xFF)] ^ t[5][p[2]] ^ t[4][p[3]] ^
              t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    }
    for (; n; --n, ++p) crc = static_cast<uint16_t>((crc << 8) ^ t[0][(crc >> 8) ^ *p]);
    return crc;
}

// MSB-first bits of [p, end); past the end it reads zeros and marks itself overrun.
class BitReader {
   public:
    BitReader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}

    inline void refill() {
        if (end_ - p_ >= 8) {
            uint64_t w;
            std::memcpy(&w, p_, 8);
            w = __builtin_bswap64(w);
            cache_ |= w >> bits_;
            const int take = (63 - bits_) >> 3;
            p_ += take;
            bits_ += take * 8;
            return;
        }
        while (bits_ <= 56) {
            const uint64_t byte = p_ < end_ ? *p_ : 0;
            cache_ |= byte << (56 - bits_);
            ++p_;
            bits_ += 8;
        }
    }
    // n in [1, 32].
    inline uint32_t read(int n) {
        if (bits_ < n) refill();
        const uint32_t v = static_cast<uint32_t>(cache_ >> (64 - n));
        cache_ <<= n;
        bits_ -= n;
        return v;
    }
    inline uint32_t read0(int n) { return n ? read(n) : 0; }
    inline int32_t read_signed(int n) {
        const uint32_t v = read(n);
        return static_cast<int32_t>(v << (32 - n)) >> (32 - n);
    }
    // The number of 0 bits before the next 1 (which is consumed).
    inline uint32_t unary() {
        uint32_t count = 0;
        for (;;) {
            if (cache_ != 0) {
                const int lz = __builtin_clzll(cache_);
                if (lz < bits_) {
                    cache_ = (cache_ << lz) << 1;
                    bits_ -= lz + 1;
                    return count + lz;
                }
            }
            count += bits_;
            cache_ = 0;
            bits_ = 0;
            if (p_ - end_ > 16) return count;  // overrun() says so
            refill();
        }
    }
    // Rice code with parameter k (< 32) as a signed value.
    inline int32_t rice(int k) {
        const uint32_t q = unary();
        const uint32_t u = (q << k) | read0(k);
        return static_cast<int32_t>(u >> 1) ^ -static_cast<int32_t>(u & 1);
    }
    // n Rice-coded values with parameter k (< 31), as signed values.
    void rice_block(int k, int32_t* out, int n) {
        uint64_t cache = cache_;
        int bits = bits_;
        for (int i = 0; i < n; ++i) {
            if (bits < 40) {
                cache_ = cache;
                bits_ = bits;
                refill();
                cache = cache_;
                bits = bits_;
            }
            const int lz = cache ? __builtin_clzll(cache) : 64;
            if (lz + 1 + k > bits) {  // a long quotient: the general path
                cache_ = cache;
                bits_ = bits;
                out[i] = rice(k);
                if (p_ - end_ > 16) return;
                cache = cache_;
                bits = bits_;
                continue;
            }
            const uint64_t rest = cache << lz << 1;
            const uint32_t u = (static_cast<uint32_t>(lz) << k) |
                               static_cast<uint32_t>((rest >> 1) >> (63 - k));
            cache = rest << k;
            bits -= lz + 1 + k;
            out[i] = static_cast<int32_t>(u >> 1) ^ -static_cast<int32_t>(u & 1);
        }
        cache_ = cache;
        bits_ = bits;
    }
    // To the next byte; whether the bits skipped were zeros (as a frame's padding must be).
    bool align() { return read0(bits_ & 7) == 0; }
    // Position in bytes (byte-aligned reads only).
    const uint8_t* position() const { return p_ - bits_ / 8; }
    // Whether more bits were taken than [p, end) holds.
    bool overrun() const { return (p_ - end_) * 8 > bits_; }

   private:
    const uint8_t* p_;
    const uint8_t* end_;
    uint64_t cache_ = 0;
    int bits_ = 0;
};

struct Header {
    int blocksize = 0;
    int assignment = 0;  // 0-7: independent channels; 8 left/side, 9 right/side, 10 mid/side
    int channels = 0;
    int bits = 0;
    int64_t first_sample = 0;
    int length = 0;  // header bytes
};

// The frame header at p (of a stream of `bits`-bit samples, fixed blocks of
// `fixed_block` when > 0), or false when p does not start a valid one.
bool parse_header(const uint8_t* p, const uint8_t* end, int bits, int64_t fixed_block, Header* h) {
    if (end - p < 6 || p[0] != 0xFF || (p[1] & 0xFE) != 0xF8) return false;
    const bool variable = p[1] & 1;
    if (variable == (fixed_block > 0)) return false;
    const int size_code = p[2] >> 4, rate_code = p[2] & 15;
    const int assignment = p[3] >> 4, size_bits = (p[3] >> 1) & 7;
    if (size_code == 0 || rate_code == 15 || assignment > 10 || (p[3] & 1)) return false;
    static const int kBits[8] = {0, 8, 12, 0, 16, 20, 24, 0};
    if (size_bits == 3 || size_bits == 7) return false;
    const int frame_bits = size_bits ? kBits[size_bits] : bits;
    if (frame_bits != bits) return false;
    // UTF-8-like coded frame or sample number.
    const uint8_t* q = p + 4;
    uint64_t number = *q++;
    int extra = 0;
    if (number >= 0x80) {
        if (number < 0xC0 || number == 0xFF) return false;
        int mask = 0x40;
        while (number & mask) {
            ++extra;
            mask >>= 1;
        }
        if (extra > 6 || (!variable && extra > 5)) return false;
        number &= mask - 1;
        if (end - q < extra) return false;
        for (int i = 0; i < extra; ++i) {
            if ((*q & 0xC0) != 0x80) return false;
            number = (number << 6) | (*q++ & 0x3F);
        }
    }
    const int tail = (size_code == 6) + 2 * (size_code == 7) + (rate_code == 12) +
                     2 * (rate_code == 13 || rate_code == 14);
    if (end - q < tail + 1) return false;  // the CRC-8 too
    int blocksize;
    if (size_code == 1) blocksize = 192;
    else if (size_code <= 5) blocksize = 576 << (size_code - 2);
    else if (size_code == 6) blocksize = *q++ + 1;
    else if (size_code == 7) {
        blocksize = ((q[0] << 8) | q[1]) + 1;
        q += 2;
    } else blocksize = 256 << (size_code - 8);
    if (rate_code == 12) q += 1;
    else if (rate_code == 13 || rate_code == 14) q += 2;
    uint8_t crc = 0;
    const auto& t8 = tables().crc8;
    for (const uint8_t* r = p; r < q; ++r) crc = t8[crc ^ *r];
    if (crc != *q) return false;
    h->blocksize = blocksize;
    h->assignment = assignment;
    h->channels = assignment < 8 ? assignment + 1 : 2;
    h->bits = bits;
    h->first_sample = variable ? static_cast<int64_t>(number) : static_cast<int64_t>(number) * fixed_block;
    h->length = static_cast<int>(q + 1 - p);
    return true;
}

bool read_residual(BitReader& br, int blocksize, int order, int32_t* out) {
    const int method = br.read(2);
    if (method > 1) return false;
    const int param_bits = method ? 5 : 4;
    const int escape = method ? 31 : 15;
    const int partition_order = br.read(4);
    const int partitions = 1 << partition_order;
    if ((blocksize >> partition_order) < order || (blocksize & (partitions - 1))) return false;
    int i = 0;
    for (int part = 0; part < partitions; ++part) {
        const int n = (blocksize >> partition_order) - (part == 0 ? order : 0);
        const int k = br.read(param_bits);
        if (k == escape) {
            const int raw = br.read(5);
            for (int j = 0; j < n; ++j) out[i++] = raw ? br.read_signed(raw) : 0;
        } else {
            br.rice_block(k, out + i, n);
            i += n;
        }
        if (br.overrun()) return false;
    }
    return true;
}

void restore_fixed(int32_t* x, int n, int order) {
    switch (order) {
        case 1:
            for (int i = 1; i < n; ++i) x[i] += x[i - 1];
            break;
        case 2:
            for (int i = 2; i < n; ++i) x[i] += 2 * x[i - 1] - x[i - 2];
            break;
        case 3:
            for (int i = 3; i < n; ++i) x[i] += 3 * x[i - 1] - 3 * x[i - 2] + x[i - 3];
            break;
        case 4:
            for (int i = 4; i < n; ++i)
                x[i] += 4 * x[i - 1] - 6 * x[i - 2] + 4 * x[i - 3] - x[i - 4];
            break;
        default:
            break;
    }
}

// x[order:] hold residuals; 32-bit sums where they cannot overflow (as libFLAC decides).
// ORDER > 0: a compile-time order (unrolled); 0: any.
template <typename Acc, int ORDER = 0>
void restore_lpc(int32_t* x, int n, const int32_t* coefs, int order, int shift) {
    if constexpr (ORDER > 0) {
        // The last ORDER samples stay in registers (no store-to-load wait per sample).
        Acc c[ORDER], h[ORDER];
        for (int j = 0; j < ORDER; ++j) {
            c[j] = coefs[ORDER - 1 - j];
            h[j] = x[j];
        }
        for (int i = ORDER; i < n; ++i) {
            Acc sum = 0;
#pragma GCC unroll 32
            for (int j = 0; j < ORDER; ++j) sum += c[j] * h[j];
            const int32_t v = x[i] + static_cast<int32_t>(sum >> shift);
            x[i] = v;
#pragma GCC unroll 32
            for (int j = 0; j + 1 < ORDER; ++j) h[j] = h[j + 1];
            h[ORDER - 1] = v;
        }
        return;
    }
    for (int i = order; i < n; ++i) {
        Acc sum = 0;
        const int32_t* h = x + i - order;
        for (int j = 0; j < order; ++j) sum += static_cast<Acc>(coefs[order - 1 - j]) * h[j];
        x[i] += static_cast<int32_t>(sum >> shift);
    }
}

void restore_lpc32(int32_t* x, int n, const int32_t* coefs, int order, int shift) {
    switch (order) {
#define TRIVIUM_LPC_ORDER(k) \
    case k:                  \
        return restore_lpc<int32_t, k>(x, n, coefs, order, shift);
        TRIVIUM_LPC_ORDER(1) TRIVIUM_LPC_ORDER(2) TRIVIUM_LPC_ORDER(3) TRIVIUM_LPC_ORDER(4)
        TRIVIUM_LPC_ORDER(5) TRIVIUM_LPC_ORDER(6) TRIVIUM_LPC_ORDER(7) TRIVIUM_LPC_ORDER(8)
        TRIVIUM_LPC_ORDER(9) TRIVIUM_LPC_ORDER(10) TRIVIUM_LPC_ORDER(11) TRIVIUM_LPC_ORDER(12)
#undef TRIVIUM_LPC_ORDER
        default:
            return restore_lpc<int32_t>(x, n, coefs, order, shift);
    }
}

// Whether every x[i] fits in `bits`-bit two's complement. libFLAC refuses a frame whose
// samples do not (its OUT_OF_BOUNDS error); in range, every sum after it is exact.
bool fits(const int32_t* x, int n, int bits) {
    const uint32_t half = 1u << (bits - 1);
    uint32_t spill = 0;
    for (int i = 0; i < n; ++i) spill |= (static_cast<uint32_t>(x[i]) + half) >> bits;
    return spill == 0;
}

int ilog2(int v) { return 31 - __builtin_clz(static_cast<unsigned>(v)); }

bool read_subframe(BitReader& br, int blocksize, int bits, int32_t* x) {
    if (br.read(1)) return false;
    const int type = br.read(6);
    int wasted = 0;
    if (br.read(1)) wasted = static_cast<int>(br.unary()) + 1;
    if (wasted >= bits) return false;
    bits -= wasted;
    if (type == 0) {
        const int32_t v = br.read_signed(bits);
        std::fill(x, x + blocksize, v);
    } else if (type == 1) {
        for (int i = 0; i < blocksize; ++i) x[i] = br.read_signed(bits);
    } else if (type >= 8 && type <= 12) {
        const int order = type - 8;
        if (order > blocksize) return false;
        for (int i = 0; i < order; ++i) x[i] = br.read_signed(bits);
        if (!read_residual(br, blocksize, order, x + order)) return false;
        restore_fixed(x, blocksize, order);
    } else if (type >= 32) {
        const int order = type - 31;
        if (order > blocksize) return false;
        for (int i = 0; i < order; ++i) x[i] = br.read_signed(bits);
        const int precision = static_cast<int>(br.read(4)) + 1;
        if (precision == 16) return false;
        const int shift = br.read_signed(5);
        if (shift < 0) return false;
        int32_t coefs[32];
        for (int i = 0; i < order; ++i) coefs[i] = br.read_signed(precision);
        if (!read_residual(br, blocksize, order, x + order)) return false;
        if (bits + precision + ilog2(order) <= 32)
            restore_lpc32(x, blocksize, coefs, order, shift);
        else
            restore_lpc<int64_t>(x, blocksize, coefs, order, shift);
    } else {
        return false;
    }
    if (!fits(x, blocksize, bits)) return false;
    if (wasted)
        for (int i = 0; i < blocksize; ++i) x[i] = static_cast<int32_t>(static_cast<uint32_t>(x[i]) << wasted);
    return !br.overrun();
}

void decorrelate(int assignment, int32_t* a, int32_t* b, int n) {
    if (assignment == 8) {  // left, side
        for (int i = 0; i < n; ++i) b[i] = a[i] - b[i];
    } else if (assignment == 9) {  // side, right
        for (int i = 0; i < n; ++i) a[i] += b[i];
    } else if (assignment == 10) {  // mid, side
        for (int i = 0; i < n; ++i) {
            const int32_t side = b[i];
            const int32_t mid = static_cast<int32_t>(static_cast<uint32_t>(a[i]) << 1) | (side & 1);
            a[i] = (mid + side) >> 1;
            b[i] = (mid - side) >> 1;
        }
    }
}

void write_scaled(const int32_t* __restrict src, float* __restrict d, int64_t n, int64_t stride,
                  float scale) {
    if (stride == 1)
        for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(src[i]) * scale;
    else
        for (int64_t i = 0; i < n; ++i) d[i * stride] = static_cast<float>(src[i]) * scale;
}

}  // namespace

at::Tensor flac_frame_at(const at::Tensor& data, int64_t from, int64_t bits, int64_t fixed_block) {
    TORCH_CHECK(data.dim() == 1 && data.scalar_type() == at::kByte && data.is_contiguous(),
                "data must be a contiguous uint8 vector");
    const uint8_t* begin = data.data_ptr<uint8_t>();
    const uint8_t* end = begin + data.numel();
    Header h;
    for (const uint8_t* p = begin + std::max<int64_t>(from, 0); p + 1 < end; ++p) {
        p = static_cast<const uint8_t*>(std::memchr(p, 0xFF, end - p));
        if (p == nullptr) break;
        if (parse_header(p, end, static_cast<int>(bits), fixed_block, &h))
            return at::tensor({static_cast<int64_t>(p - begin), h.first_sample}, at::kLong);
    }
    return at::tensor({kBadFrame, kBadFrame}, at::kLong);
}

at::Tensor flac_decode_frames(const at::Tensor& data, int64_t begin, int64_t stop, int64_t bits,
                              int64_t fixed_block, int64_t first_sample, const at::Tensor& out) {
    TORCH_CHECK(data.dim() == 1 && data.scalar_type() == at::kByte && data.is_contiguous(),
                "data must be a contiguous uint8 vector");
    TORCH_CHECK(out.dim() == 2 && out.scalar_type() == at::kFloat, "out must be 2-D float32");
    TORCH_CHECK(bits >= 4 && bits <= 24, "bits must be in [4, 24]");
    TORCH_CHECK(0 <= begin && begin <= stop && stop <= data.numel(),
                "need 0 <= begin <= stop <= the number of bytes");
    const uint8_t* base = data.data_ptr<uint8_t>();
    const uint8_t* end = base + data.numel();
    // out is [channels, time] with any strides (a [time, channels] output comes transposed).
    const int64_t channels = out.size(0), length = out.size(1);
    const int64_t ch_stride = out.stride(0), t_stride = out.stride(1);
    float* dst = out.data_ptr<float>();
    const float scale = 1.0f / static_cast<float>(1 << (bits - 1));

    std::vector<int32_t> buf;
    const uint8_t* p = base + begin;
    int64_t first = -1, next = -1;
    bool ok = true;
    while (p < base + stop && (next < 0 || next < first_sample + length)) {
        Header h;
        if (!parse_header(p, end, static_cast<int>(bits), fixed_block, &h) || h.channels != channels ||
            (next >= 0 && h.first_sample != next)) {
            ok = false;
            break;
        }
        if (buf.size() < static_cast<size_t>(h.blocksize * channels)) buf.resize(h.blocksize * channels);
        BitReader br(p + h.length, end);
        for (int c = 0; c < channels && ok; ++c) {
            const bool side = (h.assignment == 8 && c == 1) || (h.assignment == 9 && c == 0) ||
                              (h.assignment == 10 && c == 1);
            ok = read_subframe(br, h.blocksize, h.bits + side, buf.data() + c * h.blocksize);
        }
        if (!ok) break;
        const bool padded = br.align();
        const uint8_t* frame_end = br.position() + 2;
        if (!padded || br.overrun() || frame_end > end || crc16(p, frame_end - p) != 0) {
            ok = false;
            break;
        }
        if (h.assignment >= 8) {
            decorrelate(h.assignment, buf.data(), buf.data() + h.blocksize, h.blocksize);
            if (!fits(buf.data(), 2 * h.blocksize, h.bits)) {
                ok = false;
                break;
            }
        }
        const int64_t lo = std::max<int64_t>(h.first_sample, first_sample);
        const int64_t hi = std::min<int64_t>(h.first_sample + h.blocksize, first_sample + length);
        for (int64_t c = 0; c < channels && lo < hi; ++c) {
            const int32_t* src = buf.data() + c * h.blocksize + (lo - h.first_sample);
            float* d = dst + c * ch_stride + (lo - first_sample) * t_stride;
            write_scaled(src, d, hi - lo, t_stride, scale);
        }
        if (first < 0) first = h.first_sample;
        next = h.first_sample + h.blocksize;
        p = frame_end;
    }
    if (!ok) return at::tensor({kBadFrame, first, next}, at::kLong);
    return at::tensor({static_cast<int64_t>(p - base), first, next}, at::kLong);
}

}  // namespace trivium_audio
