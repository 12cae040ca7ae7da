// The trivium_audio operator library: schemas and CPU kernels, registered with
// TORCH_LIBRARY (torch.ops.trivium_audio.*). It is also the Python extension module
// trivium.audio._C, so that importing it loads the library; the torch implementations
// for other devices, the fake kernels and autograd are registered from Python
// (trivium.audio.functional.iir and .alignment). Keep the schemas equal to
// trivium.audio._ops.SCHEMAS (a test compares them).
#include <Python.h>

#include <torch/library.h>

#include "kernels.h"

TORCH_LIBRARY(trivium_audio, m) {
    m.def("lfilter_core(Tensor waveform, Tensor a_coeffs, Tensor b_coeffs) -> Tensor");
    m.def("forced_align_paths(Tensor log_probs, Tensor targets, Tensor input_lengths, "
          "Tensor target_lengths, int blank) -> Tensor");
    m.def("flac_frame_at(Tensor data, int start, int bits, int fixed_block) -> Tensor");
    m.def("flac_decode_frames(Tensor data, int begin, int stop, int bits, int fixed_block, "
          "int first_sample, Tensor(a!) out) -> Tensor");
}

TORCH_LIBRARY_IMPL(trivium_audio, CPU, m) {
    m.impl("lfilter_core", &trivium_audio::lfilter_core_cpu);
    m.impl("forced_align_paths", &trivium_audio::forced_align_paths_cpu);
    m.impl("flac_frame_at", &trivium_audio::flac_frame_at);
    m.impl("flac_decode_frames", &trivium_audio::flac_decode_frames);
}

static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", "The trivium_audio operator library.", -1,
                             nullptr, nullptr, nullptr, nullptr, nullptr};

PyMODINIT_FUNC PyInit__C(void) { return PyModule_Create(&module); }
