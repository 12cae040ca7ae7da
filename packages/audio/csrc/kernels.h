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

// flac_frame_at(data uint8 [bytes], start, bits, fixed_block) -> [2] int64: the byte
// offset and first sample of the first valid FLAC frame header at or after `start`
// (header CRC-8 checked; frames of `bits`-bit samples; fixed_block > 0: fixed-size
// blocks of that many samples, else variable), or [-1, -1].
at::Tensor flac_frame_at(const at::Tensor& data, int64_t start, int64_t bits, int64_t fixed_block);

// flac_decode_frames(data, begin, stop, bits, fixed_block, first_sample, out) -> [3] int64:
// decodes the consecutive frames from byte `begin` (a frame start) until byte `stop` or
// past sample first_sample + out's length, writing samples / 2^(bits - 1) that fall in
// [first_sample, first_sample + length) into float32 `out` ([channels, time], any
// strides: a [time, channels] output is passed transposed). Returns {byte after the last frame, first sample of the
// first frame, sample after the last frame}; the byte is -1 when a frame is invalid.
at::Tensor flac_decode_frames(const at::Tensor& data, int64_t begin, int64_t stop, int64_t bits,
                              int64_t fixed_block, int64_t first_sample, const at::Tensor& out);

}  // namespace trivium_audio
