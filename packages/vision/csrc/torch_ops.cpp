// The codecs as C++ torch operators (libtrivium_ops.so): trivium::decode_jpeg,
// decode_png, decode_webp, decode_image, encode_jpeg, encode_png and encode_webp,
// registered with TORCH_LIBRARY so that a scripted or exported model that decodes runs
// without Python (load this library, then torch::jit::load the model).
//
// The kernels call the torch-free codec core (jpeg_codec.h, png_codec.h, webp_codec.h);
// they are the only binding of its decoders and encoders. The public Python functions
// call the `.status` overloads below (one call per image, or per list), which report
// failures and damage instead of raising. Elsewhere bad input raises a c10::Error whose
// message names the reason (and `path`, when given): c10::ValueError for damaged data
// and bad arguments,
// c10::NotImplementedError for valid data in an unsupported format, c10::TypeError for
// wrong input types. Damage raises with strict=true; by default (strict=None) damage the
// decoder recovers from gives a warning and the image, and a decode that stops early (a
// truncated file) raises; with strict=false every damage gives a warning and the
// decoded part (check_damage).
//
// Shapes are data-dependent, so the fake kernels used for torch.compile and
// torch.export (unbacked sizes) are Python ones, in trivium.vision.io.image.ops; so is the
// Python kernel of the plain overloads called from Python (compiled graphs), which calls
// `.status` and raises Trivium errors.
#include <algorithm>
#include <exception>
#include <tuple>
#include <atomic>
#include <initializer_list>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "decode_pool.h"
#include "formats.h"
#include "jpeg_codec.h"
#include "png_codec.h"
#include "webp_codec.h"

namespace trivium {
namespace {

// Pillow's decompression-bomb limit: the default when max_pixels is -1.
constexpr int64_t kDefaultMaxPixels = 178956970;

// How a call of a `.status` overload (the public Python functions, trivium.vision.io)
// wants failures, damage and wide samples handled on this thread; set by StatusCall
// for one call. The plain overloads (C++ programs, compiled graphs) never set it.
struct CallState {
    bool status = false;  // report failures and damage in the result instead of raising
    // Eager mode of the public decoders: dtype=None keeps uint16 samples instead of
    // refusing them, the result stays a [C, H, W] view of the [H, W, C] buffer, and an
    // animation gives its [T, C, H, W] frames.
    bool eager = false;
    ErrorKind error = ErrorKind::None;
    std::string message;  // the failure, or the damage warning; no path in front
};
thread_local CallState call_state;

// Thrown inside a status call after the failure is recorded in call_state: the
// status kernel returns it as (kind, message).
struct Refused {};

// A decode of a format the operator does not decode (one of formats.h's rows decoded
// in Python): a status call reports it with this kind and the format's name, so that
// Python decodes it (codec.h's ErrorKind values end at 5).
constexpr int kDecodedInPython = 6;

// Sets call_state for one status call on this thread, and resets it after.
struct StatusCall {
    explicit StatusCall(bool eager) { call_state = CallState{true, eager}; }
    ~StatusCall() { call_state = CallState{}; }
    StatusCall(const StatusCall&) = delete;
    StatusCall& operator=(const StatusCall&) = delete;
};

std::string prefix(const std::optional<c10::string_view>& path) {
    return path ? std::string(*path) + ": " : std::string();
}

// A data failure of `kind`: recorded in a status call, else raised with the input
// named first (`where`): c10::NotImplementedError for Unsupported, else c10::ValueError.
[[noreturn]] void refuse(ErrorKind kind, const std::string& where, const std::string& message) {
    if (call_state.status) {
        call_state.error = kind;
        call_state.message = message;
        throw Refused{};
    }
    TORCH_CHECK_NOT_IMPLEMENTED(kind != ErrorKind::Unsupported, where + message);
    TORCH_CHECK_VALUE(false, where + message);
}

// A codec's failure: data errors name the input (`where`), argument errors (a roi
// outside the image) name the function, as every other argument error here does.
[[noreturn]] void fail(const Diagnostics& diag, const std::string& where, const char* func) {
    TORCH_CHECK_VALUE(diag.error != ErrorKind::BadArgument, func, ": ", diag.message);
    refuse(diag.error, where, diag.message);
}

// The reason damage gives: the first two distinct messages and how many more.
std::string damage_reason(const Diagnostics& diag) {
    std::vector<std::string> distinct;
    for (const auto& w : diag.warnings) {
        if (std::find(distinct.begin(), distinct.end(), w) == distinct.end()) distinct.push_back(w);
    }
    std::string reason = distinct.empty() ? "corrupt data" : distinct[0];
    if (distinct.size() > 1) reason += "; " + distinct[1];
    if (distinct.size() > 2) reason += " and " + std::to_string(distinct.size() - 2) + " more";
    return reason;
}

// Damage: raises with strict=true, and by default (strict=None) where the decode
// stopped early (a truncated file, a broken PNG stream: Pillow and torchvision refuse
// those too); else warns (TORCH_WARN), or in a status call reports the warning's text.
void check_damage(const Diagnostics& diag, std::optional<bool> strict, const std::string& where) {
    if (!diag.corrupt) return;
    const std::string reason = damage_reason(diag);
    if (strict.value_or(false)) refuse(ErrorKind::Corrupt, where, "corrupt image data (" + reason + ")");
    if (!strict.has_value() && diag.partial) {
        refuse(ErrorKind::Corrupt, where,
               "only part of the image decodes (" + reason + "); strict=False returns that part");
    }
    const std::string message = reason + "; decoded what the data allows (strict=True raises)";
    if (call_state.status) {
        call_state.message = message;
    } else {
        TORCH_WARN(where + message);
    }
}

std::string dtype_name(at::ScalarType t) {
    switch (t) {
        case at::kByte: return "torch.uint8";
        case at::kUInt16: return "torch.uint16";
        case at::kFloat: return "torch.float32";
        case at::kDouble: return "torch.float64";
        case at::kHalf: return "torch.float16";
        case at::kBFloat16: return "torch.bfloat16";
        default: return std::string("torch.") + c10::toString(t);
    }
}

std::string shape_str(at::IntArrayRef sizes) {
    std::ostringstream s;
    s << "(";
    for (size_t i = 0; i < sizes.size(); ++i) s << (i ? ", " : "") << sizes[i];
    s << (sizes.size() == 1 ? ",)" : ")");
    return s.str();
}

struct Bytes {
    const uint8_t* data;
    size_t size;
};

Bytes encoded_bytes(const at::Tensor& data, const char* func) {
    TORCH_CHECK_TYPE(data.scalar_type() == at::kByte && data.dim() == 1, func,
                     ": expected a 1-D uint8 tensor of encoded bytes, got ",
                     dtype_name(data.scalar_type()), " of shape ", shape_str(data.sizes()));
    TORCH_CHECK_VALUE(data.device().is_cpu(), func, ": encoded bytes must be on the CPU");
    TORCH_CHECK_VALUE(data.is_contiguous(), func, ": encoded bytes must be contiguous");
    return {data.data_ptr<uint8_t>(), size_t(data.numel())};
}

ReadMode read_mode(int64_t mode, const char* func) {
    TORCH_CHECK_VALUE(mode >= 0 && mode <= 4, func, ": mode must be an ImageReadMode value (0..4), got ",
                      mode);
    return static_cast<ReadMode>(mode);
}

int64_t pixel_limit(int64_t max_pixels) { return max_pixels < 0 ? kDefaultMaxPixels : max_pixels; }

// A new CPU tensor on plain malloc memory, as NumPy allocates: glibc hands a freed
// block back to the next image of the same size, where at::empty's 64-byte-aligned
// blocks do not fit the freed ones and take fresh, page-faulting memory per image.
at::Tensor malloc_empty(at::IntArrayRef sizes, at::IntArrayRef strides, size_t numel,
                        at::ScalarType dtype) {
    const size_t bytes = numel * c10::elementSize(dtype);
    void* data = std::malloc(std::max<size_t>(bytes, 1));
    TORCH_CHECK(data != nullptr, "out of memory (", bytes, " bytes)");
    return at::from_blob(data, sizes, strides, [](void* p) { std::free(p); },
                         at::TensorOptions().dtype(dtype));
}

// A 1-D one.
at::Tensor malloc_empty(int64_t numel, at::ScalarType dtype) {
    return malloc_empty({numel}, {1}, size_t(numel), dtype);
}

// An [H, W, C] buffer seen as [C, H, W]: the layout every decode returns. (Made with its
// strides, not by permute: a dispatcher call less per image.)
at::Tensor empty_chw(int64_t c, int64_t h, int64_t w, at::ScalarType dtype) {
    return malloc_empty({c, h, w}, {1, w * c, c}, size_t(c * h * w), dtype);
}

// An animation's [T, H, W, C] buffer seen as [T, C, H, W].
at::Tensor empty_frames(int64_t t, int64_t c, int64_t h, int64_t w, at::ScalarType dtype) {
    return malloc_empty({t, c, h, w}, {h * w * c, 1, w * c, c}, size_t(t * c * h * w), dtype);
}

// Whether a [C, H, W] image ([T, C, H, W] frames) is stored channels last, densely:
// as empty_chw (empty_frames) lays it out. Sizes of 1 take any stride.
bool channels_last(const at::Tensor& image) {
    const int64_t d = image.dim();
    if (d != 3 && d != 4) return false;
    const int64_t c = image.size(d - 3), h = image.size(d - 2), w = image.size(d - 1);
    auto fits = [&](int64_t dim, int64_t stride) {
        return image.size(dim) == 1 || image.stride(dim) == stride;
    };
    return fits(d - 3, 1) && fits(d - 2, w * c) && fits(d - 1, c) &&
           (d == 3 || fits(0, h * w * c));
}

// The layout the op promises (its fake kernel's): contiguous [C, H, W]. Python's eager
// decoders keep the decoder's [H, W, C] memory instead (resize is faster on it).
at::Tensor output_layout(const at::Tensor& image) {
    if (!call_state.eager) return image.contiguous();
    if (channels_last(image)) return image;
    if (image.dim() == 4) {
        return empty_frames(image.size(0), image.size(1), image.size(2), image.size(3),
                            image.scalar_type())
            .copy_(image);
    }
    return empty_chw(image.size(0), image.size(1), image.size(2), image.scalar_type()).copy_(image);
}

// The output: `out` itself when its [H, W, C] view is contiguous and matches, else new.
// An animation's frames ([T, C, H, W]) are stored one after the other.
at::Tensor output_for(const OutputShape& shape, const std::optional<at::Tensor>& out) {
    const auto dtype = shape.bytes_per_sample == 2 ? at::kUInt16 : at::kByte;
    std::vector<int64_t> sizes{shape.channels, shape.height, shape.width};
    if (shape.frames > 1) sizes.insert(sizes.begin(), shape.frames);
    if (out && out->device().is_cpu() && out->scalar_type() == dtype &&
        out->sizes() == at::IntArrayRef(sizes) && channels_last(*out)) {
        return *out;
    }
    if (shape.frames > 1) {
        return empty_frames(shape.frames, shape.channels, shape.height, shape.width, dtype);
    }
    return empty_chw(shape.channels, shape.height, shape.width, dtype);
}

// The result as the op promises it: of `dtype` (uint8 when None), unless a Python
// caller keeps wide samples.
void check_output_dtype(const OutputShape& shape, const std::optional<at::ScalarType>& dtype,
                        const char* func) {
    if (dtype || shape.bytes_per_sample == 1 || call_state.eager) return;
    // decode_jpeg has no dtype argument: decode_image (which sniffs the same JPEG) has.
    const std::string fix = std::string(func) == "decode_jpeg"
                                ? "decode it with decode_image(data, dtype=torch.uint16)"
                                : "pass dtype= (e.g. dtype=torch.uint16)";
    TORCH_CHECK_TYPE(false, func,
                     ": this image decodes to torch.uint16, and inside torch.compile the output "
                     "dtype must be known before decoding: ", fix);
}

at::Tensor apply_orientation(const at::Tensor& image, int64_t orientation) {
    switch (orientation) {
        case 2: return image.flip({-1});
        case 3: return image.flip({-2, -1});
        case 4: return image.flip({-2});
        case 5: return image.transpose(-2, -1);
        case 6: return image.rot90(-1, {-2, -1});
        case 7: return image.transpose(-2, -1).flip({-2, -1});
        case 8: return image.rot90(1, {-2, -1});
        default: return image;
    }
}

// Decoded uint8/uint16 samples as `dtype` (floats scaled to [0, 1]; uint16 to uint8
// keeps the high byte, as Pillow does).
at::Tensor convert_dtype(const at::Tensor& image, const std::optional<at::ScalarType>& dtype) {
    if (!dtype || *dtype == image.scalar_type()) return image;
    const double top = image.scalar_type() == at::kUInt16 ? 65535.0 : 255.0;
    if (at::isFloatingType(*dtype)) return image.to(*dtype).div_(top);
    if (*dtype == at::kByte && image.scalar_type() == at::kUInt16) {
        return image.to(at::kInt).bitwise_right_shift(8).to(at::kByte);
    }
    if (*dtype == at::kUInt16 && image.scalar_type() == at::kByte) {
        return image.to(at::kInt).mul(257).to(at::kUInt16);
    }
    TORCH_CHECK_TYPE(false, "cannot convert decoded ", dtype_name(image.scalar_type()), " samples to ",
                     dtype_name(*dtype));
}

template <typename Decoder>
ImageHeader read_header(const Bytes& bytes, const std::string& where, const char* func) {
    Diagnostics diag;
    Decoder decoder(bytes.data, bytes.size, &diag);
    ImageHeader header;
    if (!decoder.read_header(&header)) fail(diag, where, func);
    return header;
}

// Decodes with any codec (codec.h's Decoder shape) into a new tensor or `out`:
// `prepare(decoder, &shape)` fixes the output with the format's own options, then
// `write(decoder, dst, shape)` writes the pixels. Damage raises (strict) or warns.
template <typename Decoder, typename Prepare, typename Write>
at::Tensor decode_with(const Bytes& bytes, const std::optional<at::ScalarType>& dtype,
                       std::optional<bool> strict,
                       const std::optional<at::Tensor>& out, const std::string& where,
                       const char* func, Prepare prepare, Write write) {
    Diagnostics diag;
    Decoder decoder(bytes.data, bytes.size, &diag);
    OutputShape shape;
    if (!prepare(decoder, &shape)) fail(diag, where, func);
    check_output_dtype(shape, dtype, func);
    at::Tensor image = output_for(shape, out);
    if (!write(decoder, static_cast<uint8_t*>(image.data_ptr()), shape)) fail(diag, where, func);
    check_damage(diag, strict, where);
    return image;
}

// The numerator M of a supported JPEG scale M/8.
int scale_to_eighths(double scale) {
    const double eighths = scale * 8.0;
    const double m = std::round(eighths);
    TORCH_CHECK_VALUE(m >= 1 && m <= 8 && std::abs(eighths - m) < 1e-9,
                      "decode_jpeg: scale must be one of 1/8, 1/4, 3/8, 1/2, 5/8, 3/4, 7/8, 1, got ",
                      scale);
    return int(m);
}

// The smallest M such that (height, width) scaled by M/8 still covers min_size.
int eighths_for_min_size(int64_t height, int64_t width, at::IntArrayRef min_size) {
    TORCH_CHECK_VALUE(min_size.size() == 2, "decode_jpeg: min_size must be (height, width), got ",
                      min_size.size(), " values");
    TORCH_CHECK_VALUE(min_size[0] >= 0 && min_size[1] >= 0,
                      "decode_jpeg: min_size must not be negative, got ", shape_str(min_size));
    for (int m = 1; m < 8; ++m) {
        if ((height * m + 7) / 8 >= min_size[0] && (width * m + 7) / 8 >= min_size[1]) return m;
    }
    return 8;
}

struct JpegArgs {
    int64_t mode;
    bool apply_exif_orientation;
    std::optional<double> scale;
    at::OptionalIntArrayRef min_size;
    at::OptionalIntArrayRef roi;
    std::optional<bool> strict;  // None: the default rule (check_damage)
    int64_t max_pixels;
};

at::Tensor decode_jpeg_impl(const at::Tensor& data, const JpegArgs& a,
                            const std::optional<at::ScalarType>& dtype, const std::string& where,
                            const std::optional<at::Tensor>& out, const char* func) {
    const Bytes bytes = encoded_bytes(data, func);
    const ReadMode mode = read_mode(a.mode, func);
    TORCH_CHECK_VALUE(!(a.scale && a.min_size), "decode_jpeg: pass scale or min_size, not both");
    Roi box;
    if (a.roi) {
        TORCH_CHECK_VALUE(a.roi->size() == 4, "decode_jpeg: roi must be (top, left, height, width), got ",
                          a.roi->size(), " values");
        box = Roi{(*a.roi)[0], (*a.roi)[1], (*a.roi)[2], (*a.roi)[3]};
    }
    ImageHeader header;
    if (a.min_size || a.apply_exif_orientation) header = read_header<JpegDecoder>(bytes, where, func);
    int eighths = a.scale ? scale_to_eighths(*a.scale) : 8;
    if (a.min_size) {
        const int64_t h = a.roi ? box.height : header.height, w = a.roi ? box.width : header.width;
        // Lossless JPEG has no DCT scaling; its full size covers any min_size.
        eighths = header.lossless ? 8 : eighths_for_min_size(h, w, *a.min_size);
    }
    auto prepare = [&](JpegDecoder& decoder, OutputShape* shape) {
        return decoder.prepare(mode, eighths, a.roi ? &box : nullptr, pixel_limit(a.max_pixels), shape);
    };
    auto write = [&](JpegDecoder& decoder, uint8_t* dst, const OutputShape& shape) {
        const ptrdiff_t stride = ptrdiff_t(shape.width) * shape.channels * shape.bytes_per_sample;
        return decoder.decode(dst, stride, a.strict.value_or(false));
    };
    at::Tensor image = decode_with<JpegDecoder>(bytes, dtype, a.strict,
                                                a.apply_exif_orientation || dtype ? std::nullopt : out,
                                                where, func, prepare, write);
    if (a.apply_exif_orientation) image = apply_orientation(image, header.orientation);
    return output_layout(convert_dtype(image, dtype));
}

// The arguments decode_image gives every format (decode_png takes just these).
struct ImageArgs {
    int64_t mode;
    bool apply_exif_orientation;
    std::optional<at::ScalarType> dtype;
    std::optional<bool> strict;  // None: the default rule (check_damage)
    int64_t max_pixels;
};

at::Tensor decode_png_impl(const at::Tensor& data, const ImageArgs& a, const std::string& where,
                           const std::optional<at::Tensor>& out, const char* func) {
    const Bytes bytes = encoded_bytes(data, func);
    const ReadMode mode = read_mode(a.mode, func);
    auto prepare = [&](PngDecoder& decoder, OutputShape* shape) {
        return decoder.prepare(mode, pixel_limit(a.max_pixels), shape);
    };
    auto write = [&](PngDecoder& decoder, uint8_t* dst, const OutputShape&) {
        return decoder.decode(dst, a.strict.value_or(false));
    };
    at::Tensor image = decode_with<PngDecoder>(bytes, a.dtype, a.strict,
                                               a.apply_exif_orientation || a.dtype ? std::nullopt : out,
                                               where, func, prepare, write);
    const int orientation =
        a.apply_exif_orientation ? read_header<PngDecoder>(bytes, where, func).orientation : 0;
    image = convert_dtype(image, a.dtype);
    return output_layout(apply_orientation(image, orientation));
}

// The op's result is one [C, H, W] image (its fake kernel's shape); only Python's eager
// decoders return an animation's frames, as [T, C, H, W].
void check_still(const OutputShape& shape, const std::string& where) {
    if (shape.frames == 1 || call_state.eager) return;
    refuse(ErrorKind::Unsupported, where,
           "animated WebP (" + std::to_string(shape.frames) +
               " frames) is not supported by the operator, whose result is one [C, H, W] image: "
               "decode animations eagerly in Python (decode_webp and decode_image give "
               "[T, C, H, W])");
}

at::Tensor decode_webp_impl(const at::Tensor& data, const ImageArgs& a, const std::string& where,
                            const std::optional<at::Tensor>& out, const char* func) {
    const Bytes bytes = encoded_bytes(data, func);
    const ReadMode mode = read_mode(a.mode, func);
    int orientation = 0;
    auto prepare = [&](WebpDecoder& decoder, OutputShape* shape) {
        ImageHeader header;
        if (!decoder.read_header(&header)) return false;
        if (!decoder.prepare(mode, pixel_limit(a.max_pixels), shape)) return false;
        check_still(*shape, where);
        orientation = header.orientation;
        return true;
    };
    auto write = [&](WebpDecoder& decoder, uint8_t* dst, const OutputShape&) {
        return decoder.decode(dst, a.strict.value_or(false));
    };
    at::Tensor image = decode_with<WebpDecoder>(bytes, a.dtype, a.strict,
                                                a.apply_exif_orientation || a.dtype ? std::nullopt : out,
                                                where, func, prepare, write);
    image = convert_dtype(image, a.dtype);
    return output_layout(apply_orientation(image, a.apply_exif_orientation ? orientation : 0));
}

// decode_image of each format: its decode with decode_image's arguments.
at::Tensor decode_jpeg_image(const at::Tensor& data, const ImageArgs& a, const std::string& where) {
    const JpegArgs j{a.mode, a.apply_exif_orientation, std::nullopt, std::nullopt, std::nullopt,
                     a.strict, a.max_pixels};
    return decode_jpeg_impl(data, j, a.dtype, where, std::nullopt, "decode_image");
}

at::Tensor decode_png_image(const at::Tensor& data, const ImageArgs& a, const std::string& where) {
    return decode_png_impl(data, a, where, std::nullopt, "decode_image");
}

at::Tensor decode_webp_image(const at::Tensor& data, const ImageArgs& a, const std::string& where) {
    return decode_webp_impl(data, a, where, std::nullopt, "decode_image");
}

// decode_image's decode of each native format of the table (formats.h), by name.
using ImageDecode = at::Tensor (*)(const at::Tensor&, const ImageArgs&, const std::string&);

ImageDecode image_decode(const Format& format) {
    const std::string name = format.name;
    if (name == "jpeg") return decode_jpeg_image;
    if (name == "png") return decode_png_image;
    if (name == "webp") return decode_webp_image;
    return nullptr;
}

// The format of `b` from its first bytes (the table's sniff); anything else raises, naming
// what it is. Formats decoded in Python (through Pillow) raise NotImplementedError,
// naming the format (a status call reports kDecodedInPython and the format's name
// instead: the public decode_image decodes them through Pillow).
ImageDecode sniff_decode(const Bytes& b, const std::string& where) {
    Diagnostics diag;
    const Format* format = sniff(b.data, b.size, &diag);
    if (format == nullptr) fail(diag, where, "decode_image");
    const ImageDecode decode = image_decode(*format);
    if (decode != nullptr) return decode;
    if (call_state.status) {
        call_state.error = static_cast<ErrorKind>(kDecodedInPython);
        call_state.message = format->name;
        throw Refused{};
    }
    TORCH_CHECK_NOT_IMPLEMENTED(false, where, format->title,
                                " images are decoded in Python (through Pillow), not by this "
                                "C++ operator (it decodes ", format_names("and", false), ")");
}

// ---- The operators ----

at::Tensor decode_jpeg_op(const at::Tensor& data, int64_t mode, bool apply_exif_orientation,
                          std::optional<double> scale, at::OptionalIntArrayRef min_size,
                          at::OptionalIntArrayRef roi, std::optional<bool> strict, int64_t max_pixels,
                          std::optional<c10::string_view> path) {
    const JpegArgs a{mode, apply_exif_orientation, scale, min_size, roi, strict, max_pixels};
    return decode_jpeg_impl(data, a, std::nullopt, prefix(path), std::nullopt, "decode_jpeg");
}

// Copies a result into `out` unless it was decoded there.
at::Tensor& finish_out(const at::Tensor& image, at::Tensor& out) {
    if (image.is_same(out)) return out;
    TORCH_CHECK_VALUE(out.sizes() == image.sizes() && out.scalar_type() == image.scalar_type(),
                      "out must be a ", dtype_name(image.scalar_type()), " tensor of shape ",
                      shape_str(image.sizes()), ", got ", dtype_name(out.scalar_type()),
                      " of shape ", shape_str(out.sizes()));
    out.copy_(image);
    return out;
}

at::Tensor& decode_jpeg_out(const at::Tensor& data, int64_t mode, bool apply_exif_orientation,
                            std::optional<double> scale, at::OptionalIntArrayRef min_size,
                            at::OptionalIntArrayRef roi, std::optional<bool> strict, int64_t max_pixels,
                            std::optional<c10::string_view> path, at::Tensor& out) {
    const JpegArgs a{mode, apply_exif_orientation, scale, min_size, roi, strict, max_pixels};
    return finish_out(decode_jpeg_impl(data, a, std::nullopt, prefix(path), out, "decode_jpeg"), out);
}

at::Tensor decode_png_op(const at::Tensor& data, int64_t mode, bool apply_exif_orientation,
                         std::optional<at::ScalarType> dtype, std::optional<bool> strict, int64_t max_pixels,
                         std::optional<c10::string_view> path) {
    const ImageArgs a{mode, apply_exif_orientation, dtype, strict, max_pixels};
    return decode_png_impl(data, a, prefix(path), std::nullopt, "decode_png");
}

at::Tensor& decode_png_out(const at::Tensor& data, int64_t mode, bool apply_exif_orientation,
                           std::optional<at::ScalarType> dtype, std::optional<bool> strict, int64_t max_pixels,
                           std::optional<c10::string_view> path, at::Tensor& out) {
    const ImageArgs a{mode, apply_exif_orientation, dtype, strict, max_pixels};
    return finish_out(decode_png_impl(data, a, prefix(path), out, "decode_png"), out);
}

at::Tensor decode_webp_op(const at::Tensor& data, int64_t mode, bool apply_exif_orientation,
                          std::optional<at::ScalarType> dtype, std::optional<bool> strict, int64_t max_pixels,
                          std::optional<c10::string_view> path) {
    const ImageArgs a{mode, apply_exif_orientation, dtype, strict, max_pixels};
    return decode_webp_impl(data, a, prefix(path), std::nullopt, "decode_webp");
}

at::Tensor& decode_webp_out(const at::Tensor& data, int64_t mode, bool apply_exif_orientation,
                            std::optional<at::ScalarType> dtype, std::optional<bool> strict, int64_t max_pixels,
                            std::optional<c10::string_view> path, at::Tensor& out) {
    const ImageArgs a{mode, apply_exif_orientation, dtype, strict, max_pixels};
    return finish_out(decode_webp_impl(data, a, prefix(path), out, "decode_webp"), out);
}

at::Tensor decode_image_op(const at::Tensor& data, int64_t mode, bool apply_exif_orientation,
                           std::optional<at::ScalarType> dtype, std::optional<bool> strict, int64_t max_pixels,
                           std::optional<c10::string_view> path) {
    const std::string where = prefix(path);
    const ImageDecode decode = sniff_decode(encoded_bytes(data, "decode_image"), where);
    return decode(data, ImageArgs{mode, apply_exif_orientation, dtype, strict, max_pixels}, where);
}

// ---- The status overloads: what the public Python functions call ----
//
// `<op>.status(<the op's arguments but path>, *, Tensor? out=None, bool eager=True)
// -> (Tensor image, int error, str message)` decodes as the op does, but reports a data
// failure instead of raising it: `error` is its codec.h ErrorKind (kDecodedInPython for
// decode_image of a format decoded in Python, `message` its name) and `message` its
// text, or with `error` 0 the damage warning's text ("" for none). Messages carry no
// path: Python names the file. `eager` gives the public decoders' eager results (see
// CallState). Argument errors (TypeError, ValueError naming the function) still raise.
// `<op>.status_list` takes a list and a thread count, decodes the items in parallel on
// the DecodePool (the GIL is released while an op runs), and reports each item so.

using Status = std::tuple<at::Tensor, int64_t, std::string>;
using StatusList = std::tuple<std::vector<at::Tensor>, std::vector<int64_t>, std::vector<std::string>>;

template <typename Decode>
Status with_status(bool eager, Decode decode) {
    StatusCall call(eager);
    try {
        at::Tensor image = decode();
        return {std::move(image), 0, std::move(call_state.message)};
    } catch (const Refused&) {
        return {at::empty({0}, at::kByte), int64_t(call_state.error), std::move(call_state.message)};
    }
}

// Every item of `data` decoded by `decode(item)` on up to `threads` pool threads. An
// argument error raises, unless an item before it failed (Python raises for that one).
template <typename Decode>
StatusList status_list(at::TensorList data, int64_t threads, bool eager, Decode decode) {
    const size_t n = data.size();
    std::vector<at::Tensor> images(n);
    std::vector<int64_t> errors(n, 0);
    std::vector<std::string> messages(n);
    std::vector<std::exception_ptr> raised(n);
    auto task = [&](size_t i) {
        try {
            Status status = with_status(eager, [&] { return decode(data[i]); });
            images[i] = std::move(std::get<0>(status));
            errors[i] = std::get<1>(status);
            messages[i] = std::move(std::get<2>(status));
        } catch (...) {
            raised[i] = std::current_exception();
        }
    };
    if (n > 0) get_decode_pool().run(n, size_t(std::max<int64_t>(threads, 1)), task);
    for (size_t i = 0; i < n; ++i) {
        if (raised[i]) std::rethrow_exception(raised[i]);
        if (errors[i] != 0) break;
    }
    for (at::Tensor& image : images) {
        if (!image.defined()) image = at::empty({0}, at::kByte);
    }
    return {std::move(images), std::move(errors), std::move(messages)};
}

at::Tensor jpeg_status_decode(const at::Tensor& data, const JpegArgs& a,
                              const std::optional<at::Tensor>& out) {
    at::Tensor image = decode_jpeg_impl(data, a, std::nullopt, "", out, "decode_jpeg");
    if (!out) return image;
    at::Tensor target = *out;
    return finish_out(image, target);
}

Status decode_jpeg_status(const at::Tensor& data, int64_t mode, bool apply_exif_orientation,
                          std::optional<double> scale, at::OptionalIntArrayRef min_size,
                          at::OptionalIntArrayRef roi, std::optional<bool> strict, int64_t max_pixels,
                          const std::optional<at::Tensor>& out, bool eager) {
    const JpegArgs a{mode, apply_exif_orientation, scale, min_size, roi, strict, max_pixels};
    return with_status(eager, [&] { return jpeg_status_decode(data, a, out); });
}

StatusList decode_jpeg_status_list(at::TensorList data, int64_t mode, bool apply_exif_orientation,
                                   std::optional<double> scale, at::OptionalIntArrayRef min_size,
                                   at::OptionalIntArrayRef roi, std::optional<bool> strict,
                                   int64_t max_pixels, int64_t threads, bool eager) {
    // The list arguments are copied: OptionalIntArrayRef does not own its values.
    std::optional<std::vector<int64_t>> size, box;
    if (min_size) size = min_size->vec();
    if (roi) box = roi->vec();
    return status_list(data, threads, eager, [&](const at::Tensor& item) {
        const JpegArgs a{mode, apply_exif_orientation, scale, at::OptionalIntArrayRef(size),
                         at::OptionalIntArrayRef(box), strict, max_pixels};
        return decode_jpeg_impl(item, a, std::nullopt, "", std::nullopt, "decode_jpeg");
    });
}

using ImageImpl = at::Tensor (*)(const at::Tensor&, const ImageArgs&, const std::string&,
                                 const std::optional<at::Tensor>&, const char*);

template <ImageImpl impl>
at::Tensor image_status_decode(const at::Tensor& data, const ImageArgs& a,
                               const std::optional<at::Tensor>& out, const char* func) {
    at::Tensor image = impl(data, a, "", out, func);
    if (!out) return image;
    at::Tensor target = *out;
    return finish_out(image, target);
}

at::Tensor decode_image_any(const at::Tensor& data, const ImageArgs& a,
                            const std::optional<at::Tensor>& out, const char* func) {
    TORCH_CHECK_VALUE(!out, func, ": out= is not supported");
    const ImageDecode decode = sniff_decode(encoded_bytes(data, func), "");
    return decode(data, a, "");
}

template <at::Tensor (*decode)(const at::Tensor&, const ImageArgs&, const std::optional<at::Tensor>&,
                               const char*)>
struct ImageStatus {
    static const char* func;

    static Status one(const at::Tensor& data, int64_t mode, bool apply_exif_orientation,
                      std::optional<at::ScalarType> dtype, std::optional<bool> strict,
                      int64_t max_pixels, const std::optional<at::Tensor>& out, bool eager) {
        const ImageArgs a{mode, apply_exif_orientation, dtype, strict, max_pixels};
        return with_status(eager, [&] { return decode(data, a, out, func); });
    }

    static StatusList list(at::TensorList data, int64_t mode, bool apply_exif_orientation,
                           std::optional<at::ScalarType> dtype, std::optional<bool> strict,
                           int64_t max_pixels, int64_t threads, bool eager) {
        const ImageArgs a{mode, apply_exif_orientation, dtype, strict, max_pixels};
        return status_list(data, threads, eager, [&](const at::Tensor& item) {
            return decode(item, a, std::nullopt, func);
        });
    }
};

using PngStatus = ImageStatus<image_status_decode<decode_png_impl>>;
using WebpStatus = ImageStatus<image_status_decode<decode_webp_impl>>;
using AnyStatus = ImageStatus<decode_image_any>;
template <> const char* PngStatus::func = "decode_png";
template <> const char* WebpStatus::func = "decode_webp";
template <> const char* AnyStatus::func = "decode_image";

// A [C, H, W] image as contiguous [H, W, C] samples, checked.
at::Tensor hwc_samples(const at::Tensor& image, const char* func, std::vector<int64_t> channels,
                       bool allow_uint16) {
    const bool dtype_ok =
        image.scalar_type() == at::kByte || (allow_uint16 && image.scalar_type() == at::kUInt16);
    TORCH_CHECK_TYPE(dtype_ok, func, ": expected a torch.uint8", allow_uint16 ? " or torch.uint16" : "",
                     " tensor, got ", dtype_name(image.scalar_type()));
    const bool shape_ok = image.dim() == 3 && std::find(channels.begin(), channels.end(),
                                                        image.size(0)) != channels.end();
    TORCH_CHECK_VALUE(shape_ok, func, ": expected a [C, H, W] tensor with C in ",
                      shape_str(channels), ", got ", shape_str(image.sizes()));
    TORCH_CHECK_VALUE(image.size(1) > 0 && image.size(2) > 0, func,
                      ": cannot encode an empty image of shape ", shape_str(image.sizes()));
    return image.detach().cpu().permute({1, 2, 0}).contiguous();
}

at::Tensor to_tensor(const std::vector<uint8_t>& bytes) {
    at::Tensor t = malloc_empty(int64_t(bytes.size()), at::kByte);
    std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
    return t;
}

// An int64 option as the int the codec core takes, refused (not wrapped) when out of range.
int int_option(int64_t value, const char* func, const char* name) {
    TORCH_CHECK_VALUE(value >= INT32_MIN && value <= INT32_MAX, func, ": ", name,
                      " is out of range, got ", value);
    return int(value);
}

at::Tensor encode_jpeg_op(const at::Tensor& image, int64_t quality, int64_t subsampling,
                          bool progressive, bool optimize) {
    JpegEncodeOptions options{int_option(quality, "encode_jpeg", "quality"),
                              int_option(subsampling, "encode_jpeg", "subsampling"), progressive,
                              optimize};
    uint8_t* bytes = nullptr;
    size_t size = 0;
    Diagnostics diag;
    bool ok;
    if (image.scalar_type() == at::kByte && image.dim() == 3 && image.size(0) == 3 &&
        image.size(1) > 0 && image.size(2) > 0 && image.device().is_cpu() && image.is_contiguous()) {
        // An RGB image in [C, H, W] memory: its planes are read in place (no copy to
        // [H, W, C] order).
        const at::Tensor planes = image.detach();
        ok = encode_jpeg_planes(planes.data_ptr<uint8_t>(), int(image.size(1)), int(image.size(2)),
                                options, &bytes, &size, &diag);
    } else {
        // uint8 samples give an 8-bit JPEG, uint16 a 12-bit one (the top 12 bits of each).
        const at::Tensor hwc = hwc_samples(image, "encode_jpeg", {1, 3}, true);
        const int h = int(hwc.size(0)), w = int(hwc.size(1)), c = int(hwc.size(2));
        if (hwc.scalar_type() == at::kUInt16) options.precision = 12;
        ok = encode_jpeg(hwc.data_ptr(), h, w, c, ptrdiff_t(w) * c * hwc.element_size(), options,
                         &bytes, &size, &diag);
    }
    TORCH_CHECK_VALUE(ok, "encode_jpeg: ", diag.message);
    // The encoder's buffer itself, freed with the tensor (no copy).
    return at::from_blob(bytes, {int64_t(size)}, [](void* p) { std::free(p); },
                         at::TensorOptions().dtype(at::kByte));
}

at::Tensor encode_png_op(const at::Tensor& image, int64_t compression_level) {
    const at::Tensor hwc = hwc_samples(image, "encode_png", {1, 2, 3, 4}, true);
    const int h = int(hwc.size(0)), w = int(hwc.size(1)), c = int(hwc.size(2));
    const int bits = hwc.scalar_type() == at::kUInt16 ? 16 : 8;
    std::vector<uint8_t> bytes;
    Diagnostics diag;
    const int level = int_option(compression_level, "encode_png", "compression_level");
    const bool ok = encode_png(hwc.data_ptr(), h, w, c, bits, level, &bytes, &diag);
    TORCH_CHECK_VALUE(ok, "encode_png: ", diag.message);
    return to_tensor(bytes);
}

at::Tensor encode_webp_op(const at::Tensor& image, double quality, bool lossless, int64_t method,
                          bool exact) {
    const at::Tensor hwc = hwc_samples(image, "encode_webp", {1, 2, 3, 4}, false);
    const int h = int(hwc.size(0)), w = int(hwc.size(1)), c = int(hwc.size(2));
    TORCH_CHECK_VALUE(quality >= 0 && quality <= 100, "encode_webp: quality must be in 0..100, got ",
                      quality);
    const WebpEncodeOptions options{float(quality), lossless,
                                    int_option(method, "encode_webp", "method"), exact};
    std::vector<uint8_t> bytes;
    Diagnostics diag;
    const bool ok = encode_webp(hwc.data_ptr<uint8_t>(), h, w, c, ptrdiff_t(w) * c, options,
                                &bytes, &diag);
    TORCH_CHECK_VALUE(ok, "encode_webp: ", diag.message);
    return to_tensor(bytes);
}

}  // namespace
}  // namespace trivium

TORCH_LIBRARY(trivium, m) {
    // Where the fake (shape) kernels are: torch imports it when tracing needs them.
    m.set_python_module("trivium.vision.io.image.ops");
    m.def("decode_jpeg(Tensor data, int mode=0, bool apply_exif_orientation=False, "
          "float? scale=None, int[]? min_size=None, int[]? roi=None, bool? strict=None, "
          "int max_pixels=-1, str? path=None) -> Tensor");
    m.def("decode_jpeg.out(Tensor data, int mode=0, bool apply_exif_orientation=False, "
          "float? scale=None, int[]? min_size=None, int[]? roi=None, bool? strict=None, "
          "int max_pixels=-1, str? path=None, *, Tensor(a!) out) -> Tensor(a!)");
    m.def("decode_png(Tensor data, int mode=0, bool apply_exif_orientation=False, "
          "ScalarType? dtype=None, bool? strict=None, int max_pixels=-1, str? path=None) -> Tensor");
    m.def("decode_png.out(Tensor data, int mode=0, bool apply_exif_orientation=False, "
          "ScalarType? dtype=None, bool? strict=None, int max_pixels=-1, str? path=None, *, "
          "Tensor(a!) out) -> Tensor(a!)");
    m.def("decode_webp(Tensor data, int mode=0, bool apply_exif_orientation=False, "
          "ScalarType? dtype=None, bool? strict=None, int max_pixels=-1, str? path=None) -> Tensor");
    m.def("decode_webp.out(Tensor data, int mode=0, bool apply_exif_orientation=False, "
          "ScalarType? dtype=None, bool? strict=None, int max_pixels=-1, str? path=None, *, "
          "Tensor(a!) out) -> Tensor(a!)");
    m.def("decode_image(Tensor data, int mode=0, bool apply_exif_orientation=False, "
          "ScalarType? dtype=None, bool? strict=None, int max_pixels=-1, str? path=None) -> Tensor");
    m.def("encode_jpeg(Tensor image, int quality=75, int subsampling=420, bool progressive=False, "
          "bool optimize=False) -> Tensor");
    m.def("encode_png(Tensor image, int compression_level=6) -> Tensor");
    m.def("encode_webp(Tensor image, float quality=75, bool lossless=False, int method=4, "
          "bool exact=False) -> Tensor");
    m.def("decode_jpeg.status(Tensor data, int mode=0, bool apply_exif_orientation=False, "
          "float? scale=None, int[]? min_size=None, int[]? roi=None, bool? strict=None, "
          "int max_pixels=-1, *, Tensor? out=None, bool eager=True) -> (Tensor, int, str)");
    m.def("decode_jpeg.status_list(Tensor[] data, int mode=0, bool apply_exif_orientation=False, "
          "float? scale=None, int[]? min_size=None, int[]? roi=None, bool? strict=None, "
          "int max_pixels=-1, *, int threads=1, bool eager=True) -> (Tensor[], int[], str[])");
    for (const char* name : {"decode_png", "decode_webp", "decode_image"}) {
        m.def((std::string(name) +
              ".status(Tensor data, int mode=0, bool apply_exif_orientation=False, "
              "ScalarType? dtype=None, bool? strict=None, int max_pixels=-1, *, Tensor? out=None, "
              "bool eager=True) -> (Tensor, int, str)").c_str());
        m.def((std::string(name) +
              ".status_list(Tensor[] data, int mode=0, bool apply_exif_orientation=False, "
              "ScalarType? dtype=None, bool? strict=None, int max_pixels=-1, *, int threads=1, "
              "bool eager=True) -> (Tensor[], int[], str[])").c_str());
    }
}

TORCH_LIBRARY_IMPL(trivium, CPU, m) {
    m.impl("decode_jpeg", &trivium::decode_jpeg_op);
    m.impl("decode_jpeg.out", &trivium::decode_jpeg_out);
    m.impl("decode_png", &trivium::decode_png_op);
    m.impl("decode_png.out", &trivium::decode_png_out);
    m.impl("decode_webp", &trivium::decode_webp_op);
    m.impl("decode_webp.out", &trivium::decode_webp_out);
    m.impl("decode_image", &trivium::decode_image_op);
    m.impl("decode_jpeg.status", &trivium::decode_jpeg_status);
    m.impl("decode_jpeg.status_list", &trivium::decode_jpeg_status_list);
    m.impl("decode_png.status", &trivium::PngStatus::one);
    m.impl("decode_png.status_list", &trivium::PngStatus::list);
    m.impl("decode_webp.status", &trivium::WebpStatus::one);
    m.impl("decode_webp.status_list", &trivium::WebpStatus::list);
    m.impl("decode_image.status", &trivium::AnyStatus::one);
    m.impl("decode_image.status_list", &trivium::AnyStatus::list);
    m.impl("encode_jpeg", &trivium::encode_jpeg_op);
    m.impl("encode_png", &trivium::encode_png_op);
    m.impl("encode_webp", &trivium::encode_webp_op);
}

// No output depends differentiably on an input (bytes in and pixels out, or pixels in
// and bytes out): autograd lets the ops by, rather than its fallback boxing every call
// to look for inputs that require grad.
TORCH_LIBRARY_IMPL(trivium, Autograd, m) {
    for (const char* name :
         {"decode_jpeg", "decode_jpeg.out", "decode_jpeg.status", "decode_jpeg.status_list",
          "decode_png", "decode_png.out", "decode_png.status", "decode_png.status_list",
          "decode_webp", "decode_webp.out", "decode_webp.status", "decode_webp.status_list",
          "decode_image", "decode_image.status", "decode_image.status_list", "encode_jpeg",
          "encode_png", "encode_webp"}) {
        m.impl(name, torch::CppFunction::makeFallthrough());
    }
}
