// pybind11 bindings of the codecs: trivium.vision._C.
//
// What Python reads through _C rather than the torch operators (torch_ops.cpp): the
// format table (formats.h: `sniff`, `image_info`, `formats`) and the scaled region
// decode of JPEG the fused Decode* transforms use. Every function takes any contiguous byte buffer (bytes,
// bytearray, memoryview, a NumPy array) and returns NumPy arrays or dicts. The GIL is
// released around all codec work and only taken back to allocate the output array.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <cstdlib>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <pthread.h>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "formats.h"
#include "jpeg_codec.h"
#include "nms.h"
#include "roi.h"
#include "png_codec.h"
#include "resample.h"
#include "webp_codec.h"

namespace py = pybind11;
using namespace trivium;

namespace {

struct DecodeFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct UnsupportedFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct TooLargeFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct EmptyFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

[[noreturn]] void raise(const Diagnostics& diag) {
    switch (diag.error) {
        case ErrorKind::Unsupported: throw UnsupportedFailure(diag.message);
        case ErrorKind::TooLarge: throw TooLargeFailure(diag.message);
        case ErrorKind::Empty: throw EmptyFailure(diag.message);
        case ErrorKind::BadArgument: throw py::value_error(diag.message);
        default: throw DecodeFailure(diag.message);
    }
}

struct ByteView {
    py::buffer_info info;
    const uint8_t* data() const { return static_cast<const uint8_t*>(info.ptr); }
    size_t size() const { return size_t(info.size) * size_t(info.itemsize); }
};

ByteView view_bytes(const py::buffer& buffer) {
    ByteView view{buffer.request()};
    bool contiguous = view.info.ndim <= 1 &&
                      (view.info.ndim == 0 || view.info.strides[0] == view.info.itemsize);
    if (!contiguous) throw py::value_error("encoded data must be a contiguous 1-D buffer");
    return view;
}

py::dict header_dict(const ImageHeader& h) {
    py::dict d;
    d["format"] = h.format;
    d["color_space"] = h.color_space;
    d["height"] = h.height;
    d["width"] = h.width;
    d["channels"] = h.channels;
    d["bit_depth"] = h.bit_depth;
    d["orientation"] = h.orientation;
    d["progressive"] = h.progressive;
    d["lossless"] = h.lossless;
    d["frames"] = h.frames;
    return d;
}

// The output array: a new one, the caller's `out` array, or the array returned by
// calling `out(height, width, channels, bits_per_sample)` (an allocator, e.g. of
// pinned memory). A caller's array must match the shape exactly.
py::array output_array(const OutputShape& shape, const std::optional<py::object>& out) {
    const std::vector<py::ssize_t> dims{shape.height, shape.width, shape.channels};
    const py::dtype dtype = shape.bytes_per_sample == 2 ? py::dtype::of<uint16_t>()
                                                        : py::dtype::of<uint8_t>();
    if (shape.frames > 1) {  // an animation: (T, H, W, C), never into a caller's array
        if (out && !out->is_none()) throw py::value_error("out takes a single image");
        return py::array(dtype, std::vector<py::ssize_t>{shape.frames, dims[0], dims[1], dims[2]});
    }
    if (!out || out->is_none()) return py::array(dtype, dims);
    py::object given = *out;
    if (!py::isinstance<py::array>(given) && PyCallable_Check(given.ptr())) {
        given = given(dims[0], dims[1], dims[2], 8 * shape.bytes_per_sample);
    }
    if (!py::isinstance<py::array>(given)) throw py::type_error("out must be a NumPy array");
    py::array a = py::reinterpret_borrow<py::array>(given);
    const bool ok = a.ndim() == 3 && a.shape(0) == dims[0] && a.shape(1) == dims[1] &&
                    a.shape(2) == dims[2] && a.dtype().is(dtype) && a.writeable() &&
                    (a.flags() & py::array::c_style);
    if (!ok) {
        throw py::value_error("out must be a writable C-contiguous " +
                              std::string(py::str(dtype)) + " array of shape (" +
                              std::to_string(dims[0]) + ", " + std::to_string(dims[1]) + ", " +
                              std::to_string(dims[2]) + ")");
    }
    return a;
}

// (image, warnings, damage): damage is Diagnostics::damage(), 0 none, 1 recovered
// damage, 2 a truncated file.
py::tuple result(py::array image, const Diagnostics& diag) {
    return py::make_tuple(image, diag.warnings, diag.damage());
}

ReadMode read_mode(int mode) {
    if (mode < 0 || mode > 4) throw py::value_error("mode must be an ImageReadMode value");
    return static_cast<ReadMode>(mode);
}

// The bindings of every codec (codec.h's Decoder shape), one template each.

// `<format>_info(data)`: the header, read without decoding pixels.
// The table's format of `data` (formats.h), or its failure raised.
const Format& sniff_view(const ByteView& view) {
    Diagnostics diag;
    const Format* format = sniff(view.data(), view.size(), &diag);
    if (format == nullptr) raise(diag);
    return *format;
}

// `sniff(data)`: the format's name ("jpeg"), from the table.
std::string py_sniff(const py::buffer& data) { return sniff_view(view_bytes(data)).name; }

// `image_info(data)`: the header of a native format, read without decoding pixels; None
// for a format decoded in Python.
py::object py_image_info(const py::buffer& data) {
    ByteView view = view_bytes(data);
    const Format& format = sniff_view(view);
    if (!format.native()) return py::none();
    Diagnostics diag;
    ImageHeader header;
    bool ok;
    {
        py::gil_scoped_release release;
        ok = format.info(view.data(), view.size(), &diag, &header);
    }
    if (!ok) raise(diag);
    return header_dict(header);
}

// `formats()`: the table's rows as (name, title, native), in its order.
py::list py_formats() {
    py::list rows;
    for (const Format* f = formats_begin(); f != formats_end(); ++f) {
        rows.append(py::make_tuple(f->name, f->title, f->native()));
    }
    return rows;
}

// A decode into a NumPy array: `prepare(decoder, &shape)` fixes the output with the
// format's own options, the array is allocated (GIL held: `out` may be a Python
// allocator), then `write(decoder, dst, shape)` decodes into it. Returns (array,
// warnings, damage) as result() gives them.
template <typename Decoder, typename Prepare, typename Write>
py::tuple decode_array(const py::buffer& data, const std::optional<py::object>& out,
                       Prepare prepare, Write write) {
    ByteView view = view_bytes(data);
    Diagnostics diag;
    Decoder decoder(view.data(), view.size(), &diag);
    OutputShape shape;
    bool ok;
    {
        py::gil_scoped_release release;
        ok = prepare(decoder, &shape);
    }
    if (!ok) raise(diag);
    py::array image = output_array(shape, out);
    uint8_t* dst = static_cast<uint8_t*>(image.mutable_data());
    {
        py::gil_scoped_release release;
        ok = write(decoder, dst, shape);
    }
    if (!ok) raise(diag);
    return result(image, diag);
}


// One JPEG decoded with the GIL released throughout (header, allocation, pixels): the
// output is malloc'd by the decoding thread and handed to NumPy afterwards
// (owned_array), so a thread never waits for the GIL in the middle of an image.
struct OwnedDecode {
    ByteView view;
    Diagnostics diag;
    OutputShape shape;
    uint8_t* pixels = nullptr;
    bool ok = false;

    OwnedDecode() = default;
    explicit OwnedDecode(ByteView v) : view(std::move(v)) {}
    OwnedDecode(OwnedDecode&& o) noexcept
        : view(std::move(o.view)), diag(std::move(o.diag)), shape(o.shape),
          pixels(std::exchange(o.pixels, nullptr)), ok(o.ok) {}
    ~OwnedDecode() { std::free(pixels); }
};

void decode_owned(OwnedDecode& item, ReadMode mode, int scale_num, const Roi* roi, bool strict,
                  int64_t max_pixels) {
    JpegDecoder decoder(item.view.data(), item.view.size(), &item.diag);
    if (!decoder.prepare(mode, scale_num, roi, max_pixels, &item.shape)) return;
    const ptrdiff_t stride =
        ptrdiff_t(item.shape.width) * item.shape.channels * item.shape.bytes_per_sample;
    item.pixels = static_cast<uint8_t*>(std::malloc(std::max<size_t>(stride * item.shape.height, 1)));
    if (item.pixels == nullptr) {
        item.diag.fail(ErrorKind::TooLarge, "out of memory for the decoded image");
        return;
    }
    item.ok = decoder.decode(item.pixels, stride, strict);
}

// The decoded pixels as an (H, W, C) array that frees them (GIL held).
py::array owned_array(OwnedDecode& item) {
    const OutputShape& s = item.shape;
    const py::dtype dtype = s.bytes_per_sample == 2 ? py::dtype::of<uint16_t>()
                                                    : py::dtype::of<uint8_t>();
    py::capsule owner(item.pixels, [](void* p) { std::free(p); });
    item.pixels = nullptr;
    const std::vector<py::ssize_t> dims{s.height, s.width, s.channels};
    return py::array(dtype, dims, {}, owner.get_pointer(), owner);
}

std::optional<Roi> to_roi(const std::optional<std::tuple<int64_t, int64_t, int64_t, int64_t>>& roi) {
    if (!roi) return std::nullopt;
    return Roi{std::get<0>(*roi), std::get<1>(*roi), std::get<2>(*roi), std::get<3>(*roi)};
}

// JPEG at a DCT scale of scale_num/8, optionally of a region (the fused Decode* transforms).
py::tuple py_decode_jpeg(const py::buffer& data, int mode, int scale_num,
                         std::optional<std::tuple<int64_t, int64_t, int64_t, int64_t>> roi,
                         bool strict, int64_t max_pixels, std::optional<py::object> out) {
    if (scale_num < 1 || scale_num > 8) throw py::value_error("scale_num must be in 1..8");
    const ReadMode read = read_mode(mode);
    const std::optional<Roi> box = to_roi(roi);
    const Roi* region = box ? &*box : nullptr;
    if (!out || out->is_none()) {
        OwnedDecode item(view_bytes(data));
        {
            py::gil_scoped_release release;
            decode_owned(item, read, scale_num, region, strict, max_pixels);
        }
        if (!item.ok) raise(item.diag);
        return result(owned_array(item), item.diag);
    }
    auto prepare = [&](JpegDecoder& decoder, OutputShape* shape) {
        return decoder.prepare(read, scale_num, region, max_pixels, shape);
    };
    auto write = [&](JpegDecoder& decoder, uint8_t* dst, const OutputShape& shape) {
        const ptrdiff_t stride = ptrdiff_t(shape.width) * shape.channels * shape.bytes_per_sample;
        return decoder.decode(dst, stride, strict);
    };
    return decode_array<JpegDecoder>(data, out, prepare, write);
}

// WebP, a still image (H, W, C) or an animation's frames (T, H, W, C).
py::tuple py_decode_webp(const py::buffer& data, int mode, bool strict, int64_t max_pixels) {
    const ReadMode read = read_mode(mode);
    auto prepare = [&](WebpDecoder& decoder, OutputShape* shape) {
        return decoder.prepare(read, max_pixels, shape);
    };
    auto write = [&](WebpDecoder& decoder, uint8_t* dst, const OutputShape&) {
        return decoder.decode(dst, strict);
    };
    return decode_array<WebpDecoder>(data, std::nullopt, prepare, write);
}

// A persistent pool of decode threads for lists. Each keeps its malloc arena, so the
// pages of the images a call frees serve the next call's images; the main thread's
// heap is trimmed back to the system when a list of images is freed, and new threads
// start new arenas, both page-faulting every image afresh. Threads are created on
// demand, never joined (the process ends them), and forgotten in a forked child.
class DecodePool {
public:
    // Runs task(i) for every i < n on up to `threads` pool threads, each taking the
    // next index; returns when all are done. The caller only waits (a single item
    // runs on the caller).
    void run(size_t n, size_t threads, const std::function<void(size_t)>& task) {
        if (n == 1) return task(0);  // one item: a hand-over would cost more than it saves
        auto batch = std::make_shared<Batch>(task, n, std::min(threads, n));
        {
            std::lock_guard<std::mutex> lock(mutex_);
            while (workers_ < batch->runners) {
                std::thread([this] { work(); }).detach();
                ++workers_;
            }
            for (size_t r = 0; r < batch->runners; ++r) queue_.push_back(batch);
        }
        wake_.notify_all();
        std::unique_lock<std::mutex> lock(batch->mutex);
        batch->done.wait(lock, [&] { return batch->finished == batch->runners; });
    }

private:
    struct Batch {
        Batch(const std::function<void(size_t)>& t, size_t count, size_t r)
            : task(t), n(count), runners(r) {}
        const std::function<void(size_t)>& task;
        const size_t n, runners;
        std::atomic<size_t> next{0};
        std::mutex mutex;
        std::condition_variable done;
        size_t finished = 0;
    };

    void work() {
        for (;;) {
            std::shared_ptr<Batch> batch;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return !queue_.empty(); });
                batch = std::move(queue_.front());
                queue_.pop_front();
            }
            for (size_t i; (i = batch->next.fetch_add(1)) < batch->n;) batch->task(i);
            {
                std::lock_guard<std::mutex> lock(batch->mutex);
                ++batch->finished;
            }
            batch->done.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Batch>> queue_;
    size_t workers_ = 0;
};

DecodePool* decode_pool = nullptr;  // created, and after a fork recreated, with the GIL held

DecodePool& get_decode_pool() {
    static const bool registered = [] {
        pthread_atfork(nullptr, nullptr, [] { decode_pool = nullptr; });  // leaked in the child
        return true;
    }();
    (void)registered;
    if (decode_pool == nullptr) decode_pool = new DecodePool();
    return *decode_pool;
}

// A list of JPEGs decoded on `threads` threads of the DecodePool, the GIL released
// for the whole list, each thread taking the next item. Returns (images,
// problems): images[i] is the (H, W, C) array, or None where the decode failed;
// problems lists (i, error kind, message, warnings, damage) for each item that
// failed or lost pixels (codec.h's ErrorKind values, 0 with a partial image; damage
// as result() gives it).
py::tuple py_decode_jpeg_list(const py::list& items, int mode, int scale_num,
                              std::optional<std::tuple<int64_t, int64_t, int64_t, int64_t>> roi,
                              bool strict, int64_t max_pixels, int threads) {
    if (scale_num < 1 || scale_num > 8) throw py::value_error("scale_num must be in 1..8");
    const ReadMode read = read_mode(mode);
    const std::optional<Roi> box = to_roi(roi);
    const Roi* region = box ? &*box : nullptr;
    std::vector<OwnedDecode> list;
    list.reserve(items.size());
    for (const py::handle item : items) list.emplace_back(view_bytes(item.cast<py::buffer>()));
    if (list.empty()) return py::make_tuple(py::list(), py::list());
    DecodePool& pool = get_decode_pool();
    {
        py::gil_scoped_release release;
        auto decode = [&](size_t i) {
            decode_owned(list[i], read, scale_num, region, strict, max_pixels);
        };
        pool.run(list.size(), size_t(std::max(threads, 1)), decode);
    }
    py::list images, problems;
    for (size_t i = 0; i < list.size(); ++i) {
        OwnedDecode& item = list[i];
        images.append(item.ok ? py::object(owned_array(item)) : py::object(py::none()));
        if (!item.ok || item.diag.corrupt) {
            problems.append(py::make_tuple(i, int(item.diag.error), item.diag.message,
                                           item.diag.warnings, item.diag.damage()));
        }
    }
    return py::make_tuple(images, problems);
}

// The encoder's buffer as a 1-D uint8 array that frees it, or its error.
py::array_t<uint8_t> encoded_array(bool ok, uint8_t* bytes, size_t size, const Diagnostics& diag) {
    if (!ok) throw py::value_error(diag.message);
    py::capsule owner(bytes, [](void* p) { std::free(p); });
    return py::array_t<uint8_t>(static_cast<py::ssize_t>(size), bytes, owner);
}

// JPEG encode of an (H, W, C) C-contiguous uint8 (8-bit) or uint16 (12-bit) array
// into a 1-D uint8 array over the encoder's own buffer: the eager path of
// encode_jpeg, the op's bytes.
py::array_t<uint8_t> py_encode_jpeg(const py::array& pixels, int quality, int subsampling,
                                    bool progressive, bool optimize) {
    const bool wide = py::isinstance<py::array_t<uint16_t>>(pixels);
    if (pixels.ndim() != 3 || !(pixels.flags() & py::array::c_style) ||
        !(wide || py::isinstance<py::array_t<uint8_t>>(pixels))) {
        throw py::value_error("pixels must be a C-contiguous (H, W, C) uint8 or uint16 array");
    }
    const int h = int(pixels.shape(0)), w = int(pixels.shape(1)), c = int(pixels.shape(2));
    JpegEncodeOptions options{quality, subsampling, progressive, optimize};
    if (wide) options.precision = 12;
    // Read before the GIL is released: itemsize() goes through the dtype object.
    const ptrdiff_t row_stride = ptrdiff_t(w) * c * pixels.itemsize();
    uint8_t* bytes = nullptr;
    size_t size = 0;
    Diagnostics diag;
    bool ok;
    {
        py::gil_scoped_release release;
        ok = encode_jpeg(pixels.data(), h, w, c, row_stride, options, &bytes, &size, &diag);
    }
    return encoded_array(ok, bytes, size, diag);
}

// JPEG encode of a C-contiguous (3, H, W) uint8 array (a [3, H, W] tensor's planes),
// read in place: the eager path of encode_jpeg for a channel-first RGB image.
py::array_t<uint8_t> py_encode_jpeg_planes(const py::array& planes, int quality,
                                           int subsampling, bool progressive, bool optimize) {
    if (planes.ndim() != 3 || planes.shape(0) != 3 || !(planes.flags() & py::array::c_style) ||
        !py::isinstance<py::array_t<uint8_t>>(planes)) {
        throw py::value_error("planes must be a C-contiguous (3, H, W) uint8 array");
    }
    const int h = int(planes.shape(1)), w = int(planes.shape(2));
    const JpegEncodeOptions options{quality, subsampling, progressive, optimize};
    uint8_t* bytes = nullptr;
    size_t size = 0;
    Diagnostics diag;
    bool ok;
    {
        py::gil_scoped_release release;
        ok = encode_jpeg_planes(static_cast<const uint8_t*>(planes.data()), h, w, options, &bytes,
                                &size, &diag);
    }
    return encoded_array(ok, bytes, size, diag);
}

// Greedy NMS (nms.h): boxes float32/float64 [N, 4], order int64 [N] (a permutation,
// by decreasing score), classes int64 [N] or None. Returns the kept indices, int64,
// in the order of `order` or increasing with `ascending`.
template <typename T>
py::array_t<int64_t> nms_typed(const py::array& boxes, const py::array_t<int64_t>& order,
                               double iou_threshold, const int64_t* classes, bool ascending) {
    const auto* b = static_cast<const T*>(boxes.data());
    const int64_t n = boxes.shape(0);
    std::vector<int64_t> keep;
    {
        py::gil_scoped_release release;
        keep = nms_keep(b, order.data(), n, iou_threshold, classes, ascending);
    }
    py::array_t<int64_t> out(static_cast<py::ssize_t>(keep.size()));
    std::copy(keep.begin(), keep.end(), out.mutable_data());
    return out;
}

py::array_t<int64_t> py_nms(const py::array& boxes, const py::array& order_in, double iou_threshold,
                            const std::optional<py::array>& classes_in, bool ascending) {
    if (boxes.ndim() != 2 || boxes.shape(1) != 4 || !(boxes.flags() & py::array::c_style)) {
        throw py::value_error("boxes must be a C-contiguous [N, 4] array");
    }
    const int64_t n = boxes.shape(0);
    const auto order = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(order_in);
    if (!order || order.ndim() != 1 || order.shape(0) != n) throw py::value_error("order must be [N] int64");
    std::vector<uint8_t> seen(n, 0);
    for (int64_t k = 0; k < n; ++k) {
        const int64_t i = order.data()[k];
        if (i < 0 || i >= n || seen[i]) throw py::value_error("order must be a permutation of 0..N-1");
        seen[i] = 1;
    }
    py::array_t<int64_t, py::array::c_style | py::array::forcecast> classes;  // empty, not null
    const bool by_class = classes_in && !classes_in->is_none();
    if (by_class) {
        classes = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(*classes_in);
        if (!classes || classes.ndim() != 1 || classes.shape(0) != n) {
            throw py::value_error("classes must be [N] int64");
        }
    }
    const int64_t* cls = by_class ? classes.data() : nullptr;
    if (py::isinstance<py::array_t<float>>(boxes)) return nms_typed<float>(boxes, order, iou_threshold, cls, ascending);
    if (py::isinstance<py::array_t<double>>(boxes)) return nms_typed<double>(boxes, order, iou_threshold, cls, ascending);
    throw py::type_error("boxes must be float32 or float64");
}

// RoI Align / RoI Pool (roi.h). Arrays are C-contiguous float32 or float64, all of one
// type: input [N, C, H, W] or grad [K, C, PH, PW], rois [K, 5] (batch indices checked by
// the caller). The work runs on `threads` threads with the GIL released.
template <typename T>
using carray = py::array_t<T, py::array::c_style>;

template <typename T>
const T* typed(const py::array& a, const char* name, int ndim) {
    if (!py::isinstance<carray<T>>(a) || a.ndim() != ndim) {
        throw py::type_error(std::string(name) + " must be a C-contiguous " +
                             std::to_string(ndim) + "D array of the input's dtype");
    }
    return static_cast<const T*>(a.data());
}

RoiShape roi_shape(const py::array& rois, int64_t n, int64_t c, int64_t h, int64_t w, int64_t ph,
                   int64_t pw) {
    if (rois.ndim() != 2 || rois.shape(1) != 5) throw py::value_error("rois must be [K, 5]");
    return {n, c, h, w, static_cast<int64_t>(rois.shape(0)), ph, pw};
}

template <typename T>
py::array roi_align_fwd(const py::array& input, const py::array& rois, double spatial_scale,
                        int64_t ph, int64_t pw, int64_t sampling_ratio, bool aligned, int threads) {
    const T* in = typed<T>(input, "input", 4);
    const T* r = typed<T>(rois, "rois", 2);
    const RoiShape s = roi_shape(rois, input.shape(0), input.shape(1), input.shape(2), input.shape(3), ph, pw);
    carray<T> out({s.k, s.c, ph, pw});
    T* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        roi_align_forward<T>(in, r, s, spatial_scale, sampling_ratio, aligned, o, threads);
    }
    return out;
}

template <typename T>
py::array roi_align_bwd(const py::array& grad, const py::array& rois, double spatial_scale,
                        int64_t sampling_ratio, bool aligned, int64_t n, int64_t h, int64_t w,
                        int threads) {
    const T* g = typed<T>(grad, "grad", 4);
    const T* r = typed<T>(rois, "rois", 2);
    const RoiShape s = roi_shape(rois, n, grad.shape(1), h, w, grad.shape(2), grad.shape(3));
    carray<T> out({n, s.c, h, w});
    T* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        std::fill(o, o + n * s.c * h * w, T(0));
        roi_align_backward<T>(g, r, s, spatial_scale, sampling_ratio, aligned, o, threads);
    }
    return out;
}

template <typename T>
py::tuple roi_pool_fwd(const py::array& input, const py::array& rois, double spatial_scale,
                       int64_t ph, int64_t pw, int threads) {
    const T* in = typed<T>(input, "input", 4);
    const T* r = typed<T>(rois, "rois", 2);
    const RoiShape s = roi_shape(rois, input.shape(0), input.shape(1), input.shape(2), input.shape(3), ph, pw);
    carray<T> out({s.k, s.c, ph, pw});
    carray<int64_t> argmax({s.k, s.c, ph, pw});
    T* o = out.mutable_data();
    int64_t* a = argmax.mutable_data();
    {
        py::gil_scoped_release release;
        roi_pool_forward<T>(in, r, s, spatial_scale, o, a, threads);
    }
    return py::make_tuple(out, argmax);
}

template <typename T>
py::array roi_pool_bwd(const py::array& grad, const py::array& rois, const py::array& argmax_in,
                       int64_t n, int64_t h, int64_t w, int threads) {
    const T* g = typed<T>(grad, "grad", 4);
    const T* r = typed<T>(rois, "rois", 2);
    const RoiShape s = roi_shape(rois, n, grad.shape(1), h, w, grad.shape(2), grad.shape(3));
    if (!py::isinstance<carray<int64_t>>(argmax_in) || argmax_in.size() != grad.size()) {
        throw py::type_error("argmax must be a C-contiguous int64 array shaped as grad");
    }
    const auto* a = static_cast<const int64_t*>(argmax_in.data());
    carray<T> out({n, s.c, h, w});
    T* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        std::fill(o, o + n * s.c * h * w, T(0));
        roi_pool_backward<T>(g, r, a, s, o, threads);
    }
    return out;
}

bool is_double(const py::array& a) { return py::isinstance<py::array_t<double>>(a); }

void register_roi(py::module_& m) {
    m.def("roi_align_forward", [](const py::array& input, const py::array& rois, double scale,
                                  int64_t ph, int64_t pw, int64_t sr, bool aligned, int threads) {
        return is_double(input) ? roi_align_fwd<double>(input, rois, scale, ph, pw, sr, aligned, threads)
                                : roi_align_fwd<float>(input, rois, scale, ph, pw, sr, aligned, threads);
    });
    m.def("roi_align_backward", [](const py::array& grad, const py::array& rois, double scale,
                                   int64_t sr, bool aligned, int64_t n, int64_t h, int64_t w,
                                   int threads) {
        return is_double(grad) ? roi_align_bwd<double>(grad, rois, scale, sr, aligned, n, h, w, threads)
                               : roi_align_bwd<float>(grad, rois, scale, sr, aligned, n, h, w, threads);
    });
    m.def("roi_pool_forward", [](const py::array& input, const py::array& rois, double scale,
                                 int64_t ph, int64_t pw, int threads) {
        return is_double(input) ? roi_pool_fwd<double>(input, rois, scale, ph, pw, threads)
                                : roi_pool_fwd<float>(input, rois, scale, ph, pw, threads);
    });
    m.def("roi_pool_backward", [](const py::array& grad, const py::array& rois,
                                  const py::array& argmax, int64_t n, int64_t h, int64_t w,
                                  int threads) {
        return is_double(grad) ? roi_pool_bwd<double>(grad, rois, argmax, n, h, w, threads)
                               : roi_pool_bwd<float>(grad, rois, argmax, n, h, w, threads);
    });
}

}  // namespace

PYBIND11_MODULE(_C, m) {
    m.doc() = "Native JPEG (libjpeg-turbo), PNG (libspng) and WebP (libwebp) codecs of trivium.vision";
    auto base = py::register_exception<DecodeFailure>(m, "DecodeFailure", PyExc_ValueError);
    py::register_exception<UnsupportedFailure>(m, "UnsupportedFailure", base.ptr());
    py::register_exception<TooLargeFailure>(m, "TooLargeFailure", base.ptr());
    py::register_exception<EmptyFailure>(m, "EmptyFailure", base.ptr());

    // Each codec's header reader (trivium.vision.io's format registry reads these).
    m.def("sniff", &py_sniff, py::arg("data"));
    m.def("image_info", &py_image_info, py::arg("data"));
    m.def("formats", &py_formats);
    m.attr("SNIFF_BYTES") = kSniffBytes;
    m.def("decode_jpeg", &py_decode_jpeg, py::arg("data"), py::arg("mode"), py::arg("scale_num"),
          py::arg("roi"), py::arg("strict"), py::arg("max_pixels"), py::arg("out") = py::none());
    m.def("decode_webp", &py_decode_webp, py::arg("data"), py::arg("mode"), py::arg("strict"),
          py::arg("max_pixels"));
    m.def("decode_jpeg_list", &py_decode_jpeg_list, py::arg("items"), py::arg("mode"),
          py::arg("scale_num"), py::arg("roi"), py::arg("strict"), py::arg("max_pixels"),
          py::arg("threads"));
    m.def("encode_jpeg", &py_encode_jpeg, py::arg("pixels"), py::arg("quality"),
          py::arg("subsampling"), py::arg("progressive"), py::arg("optimize"));
    m.def("encode_jpeg_planes", &py_encode_jpeg_planes, py::arg("planes"), py::arg("quality"),
          py::arg("subsampling"), py::arg("progressive"), py::arg("optimize"));
    register_resample(m);
    m.def("nms", &py_nms, py::arg("boxes"), py::arg("order"), py::arg("iou_threshold"),
          py::arg("classes") = py::none(), py::arg("ascending") = false);
    register_roi(m);
    m.attr("jpeg_version") = JPEG_LIB_VERSION;
#ifdef LIBJPEG_TURBO_VERSION_NUMBER
    constexpr int turbo = LIBJPEG_TURBO_VERSION_NUMBER;  // e.g. 3001003 for 3.1.3
    m.attr("libjpeg_turbo_version") = std::to_string(turbo / 1000000) + "." +
                                      std::to_string(turbo / 1000 % 1000) + "." +
                                      std::to_string(turbo % 1000);
#endif
    m.attr("spng_version") = spng_version_string();
    m.attr("webp_version") = webp_version_string();
}
