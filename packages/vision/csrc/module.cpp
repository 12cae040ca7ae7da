// pybind11 bindings of trivium.vision._C: the native helpers that are not torch operators.
//
// The codecs decode and encode only through the torch operators (torch_ops.cpp). _C
// holds the format table (formats.h: `sniff`, `image_info`, `formats`), which Python
// reads before and beside any decode (sniff_format, image_info, the registry) and which
// answers with strings and dicts, not tensors; the library versions; and the NumPy
// kernels of resampling, NMS and RoI. Functions take any contiguous byte buffer (bytes,
// bytearray, memoryview, a NumPy array); the GIL is released around codec work.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

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
    m.doc() = "The format table and native kernels of trivium.vision (codecs: its torch operators)";
    auto base = py::register_exception<DecodeFailure>(m, "DecodeFailure", PyExc_ValueError);
    py::register_exception<UnsupportedFailure>(m, "UnsupportedFailure", base.ptr());
    py::register_exception<TooLargeFailure>(m, "TooLargeFailure", base.ptr());
    py::register_exception<EmptyFailure>(m, "EmptyFailure", base.ptr());

    // The format table and each format's header reader (trivium.vision.io's registry).
    m.def("sniff", &py_sniff, py::arg("data"));
    m.def("image_info", &py_image_info, py::arg("data"));
    m.def("formats", &py_formats);
    m.attr("SNIFF_BYTES") = kSniffBytes;
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
