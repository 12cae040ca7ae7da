// trivium.vision._op_calls: the decode ops' `.status` overloads called from Python
// through the dispatcher's typed path.
//
// This is how the public decoders (trivium.vision.io) run one image: the same operator
// (trivium::decode_<format>.status, registered by torch_ops.cpp), the same kernels,
// dispatch keys and modes as `torch.ops.trivium.decode_jpeg.status(...)`, without the
// boxed call's argument parsing and override checks, which cost a third of a 16x16 JPEG
// decode. It binds no codec: every name here looks up an operator by name on first use
// (the operator library is loaded by trivium.vision.io.image.ops). Built against the
// installed torch like the operator library, with torch's own pybind11.
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <torch/csrc/Dtype.h>
#include <torch/extension.h>

namespace {

using Status = std::tuple<at::Tensor, int64_t, std::string>;
using JpegStatus = Status(const at::Tensor&, int64_t, bool, std::optional<double>,
                          at::OptionalIntArrayRef, at::OptionalIntArrayRef, std::optional<bool>,
                          int64_t, const std::optional<at::Tensor>&, bool);
using ImageStatus = Status(const at::Tensor&, int64_t, bool, std::optional<at::ScalarType>,
                           std::optional<bool>, int64_t, const std::optional<at::Tensor>&, bool);

template <typename Signature>
c10::TypedOperatorHandle<Signature> status_op(const char* name) {
    return c10::Dispatcher::singleton().findSchemaOrThrow(name, "status").typed<Signature>();
}

// The encoded bytes: a tensor as it is (the kernel checks it), or a bytes object read in
// place (it cannot change). The tensor holds a reference to the bytes, as
// torch.frombuffer's does: a dispatch mode may keep the op's arguments.
at::Tensor encoded(const py::handle& data) {
    PyObject* object = data.ptr();
    if (THPVariable_Check(object)) return THPVariable_Unpack(object);
    if (PyBytes_Check(object)) {
        Py_INCREF(object);
        auto release = [object](void*) {
            py::gil_scoped_acquire gil;
            Py_DECREF(object);
        };
        return at::from_blob(PyBytes_AS_STRING(object), {PyBytes_GET_SIZE(object)}, release,
                             at::kByte);
    }
    throw py::type_error("the encoded data must be a 1-D uint8 tensor or bytes");
}

std::optional<at::ScalarType> dtype_arg(const py::handle& dtype) {
    if (dtype.is_none()) return std::nullopt;
    if (!THPDtype_Check(dtype.ptr())) throw py::type_error("dtype must be a torch.dtype or None");
    return reinterpret_cast<THPDtype*>(dtype.ptr())->scalar_type;
}

Status decode_jpeg_status(const py::handle& data, int64_t mode, bool apply_exif_orientation,
                          std::optional<double> scale, std::optional<std::vector<int64_t>> min_size,
                          std::optional<std::vector<int64_t>> roi, std::optional<bool> strict,
                          int64_t max_pixels, std::optional<at::Tensor> out) {
    static const auto op = status_op<JpegStatus>("trivium::decode_jpeg");
    const at::Tensor bytes = encoded(data);
    py::gil_scoped_release no_gil;
    return op.call(bytes, mode, apply_exif_orientation, scale, at::OptionalIntArrayRef(min_size),
                   at::OptionalIntArrayRef(roi), strict, max_pixels, out, true);
}

// decode_png, decode_webp and decode_image share one schema.
template <const char* Name>
Status decode_image_status(const py::handle& data, int64_t mode, bool apply_exif_orientation,
                           const py::handle& dtype, std::optional<bool> strict, int64_t max_pixels,
                           std::optional<at::Tensor> out) {
    static const auto op = status_op<ImageStatus>(Name);
    const at::Tensor bytes = encoded(data);
    const std::optional<at::ScalarType> scalar_type = dtype_arg(dtype);
    py::gil_scoped_release no_gil;
    return op.call(bytes, mode, apply_exif_orientation, scalar_type, strict, max_pixels, out, true);
}

constexpr char kPng[] = "trivium::decode_png";
constexpr char kWebp[] = "trivium::decode_webp";
constexpr char kImage[] = "trivium::decode_image";

}  // namespace

PYBIND11_MODULE(_op_calls, m) {
    m.doc() = "The decode ops' .status overloads, called through the dispatcher's typed path.";
    m.def("decode_jpeg", &decode_jpeg_status);
    m.def("decode_png", &decode_image_status<kPng>);
    m.def("decode_webp", &decode_image_status<kWebp>);
    m.def("decode_image", &decode_image_status<kImage>);
}
