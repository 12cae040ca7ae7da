// The CPU kernels of the trivium_audio operators (ops.cpp registers them).
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace trivium_audio {

// lfilter_core(waveform [batch, filters, time], a_coeffs [filters, taps],
// b_coeffs [filters, taps]) -> [batch, filters, time]: the difference equation
// sum_k a[k] y[n-k] = sum_k b[k] x[n-k], each row filtered by its filter.
at::Tensor lfilter_core_cpu(const at::Tensor& waveform, const at::Tensor& a_coeffs,
                            const at::Tensor& b_coeffs);

// forced_align_paths(log_probs [batch, frames, classes], targets [batch, labels],
// input_lengths [batch], target_lengths [batch], blank) -> [batch, frames] int64: each
// item's CTC Viterbi path over its first input_lengths[i] frames (0 after them).
at::Tensor forced_align_paths_cpu(const at::Tensor& log_probs, const at::Tensor& targets,
                                  const at::Tensor& input_lengths,
                                  const at::Tensor& target_lengths, int64_t blank);

}  // namespace trivium_audio
