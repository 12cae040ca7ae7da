// CTC forced alignment: the Viterbi pass over the 2 L + 1 states (blank, label,
// blank, ..., blank) of each item, in the emissions' dtype, as torchaudio's kernel.
// Frame t only updates the states a path can occupy there: reached from the start
// (s <= 2 t + 1) and still able to reach the last two states by the last frame; the
// path runs through those alone. Ties as torchaudio's: a skip wins only over both
// other moves, a step over staying.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include "kernels.h"

namespace trivium_audio {
namespace {

// A move is stepped + 2 * skipped; kBack gives how many states back it came from.
constexpr int64_t kBack[4] = {0, 1, 2, 2};
// The most moves (bytes) a thread keeps between calls; larger passes allocate their own.
constexpr size_t kKeptCells = size_t{64} << 20;

std::string listed(const int64_t* values, int64_t count) {
    std::ostringstream out;
    out << "[";
    for (int64_t i = 0; i < count; ++i) out << (i ? ", " : "") << values[i];
    out << "]";
    return out.str();
}

// The checks torchaudio makes of an item, with its words.
void check_item(const int64_t* target, int64_t length, int64_t frames, int64_t classes, int64_t blank) {
    int64_t repeats = 0;
    for (int64_t i = 0; i < length; ++i) {
        TORCH_CHECK_VALUE(target[i] != blank, "targets Tensor shouldn't contain blank index. Found ",
                          listed(target, length), ".");
        TORCH_CHECK_VALUE(target[i] >= 0 && target[i] < classes,
                          "targets values must be within [0, num classes=", classes,
                          ") (the CTC dimension), got ", listed(target, length));
        if (i > 0 && target[i] == target[i - 1]) ++repeats;
    }
    TORCH_CHECK_VALUE(frames >= length + repeats,
                      "targets length is too long for CTC. Found log_probs length: ", frames,
                      ", targets length: ", length, ", and number of repeats: ", repeats);
}

template <typename T>
void viterbi(const T* emissions, int64_t classes, int64_t frames, const int64_t* target, int64_t length,
             int64_t blank, int64_t* path) {
    const int64_t states = 2 * length + 1;
    std::vector<int64_t> labels(states, blank);
    constexpr T kNone = -std::numeric_limits<T>::infinity();
    // 0 where a state may be reached by a skip over the blank before it (between two
    // different labels), else -inf: added to the score two states back.
    std::vector<T> barred(states, kNone);
    for (int64_t i = 0; i < length; ++i) {
        labels[2 * i + 1] = target[i];
        if (i > 0 && target[i] != target[i - 1]) barred[2 * i + 1] = 0;
    }
    // Two rows of scores with two unreachable states in front: state s reads s, s - 1, s - 2.
    std::vector<T> before(states + 2, kNone), now(states + 2, kNone);
    // Every frame's moves, in memory this thread keeps between calls: a fresh block
    // of this size costs a page fault per page at first touch, more than the pass.
    const size_t cells = static_cast<size_t>(frames * states);
    thread_local std::vector<uint8_t> kept;
    std::vector<uint8_t> own;
    std::vector<uint8_t>& moves = cells <= kKeptCells ? kept : own;
    if (moves.size() < cells) moves.resize(cells);
    before[2] = emissions[labels[0]];
    before[3] = emissions[labels[1]];
    for (int64_t t = 1; t < frames; ++t) {
        const int64_t lo = std::max<int64_t>(0, states - 2 - 2 * (frames - 1 - t));
        const int64_t hi = std::min<int64_t>(states - 1, 2 * t + 1);
        const T* row = emissions + t * classes;
        uint8_t* move = moves.data() + t * states;
        const T* prev = before.data() + 2;
        T* cur = now.data() + 2;
        for (int64_t s = lo; s <= hi; ++s) {
            // Branch-free (the moves are data, not predictable): a skip beats both
            // others exactly when it beats their maximum.
            const T stay = prev[s], step = prev[s - 1], jump = prev[s - 2] + barred[s];
            const T kept = std::max(stay, step);  // stay on a tie
            const bool stepped = step > stay, skipped = jump > kept;
            cur[s] = std::max(kept, jump) + row[labels[s]];
            move[s] = static_cast<uint8_t>(stepped + 2 * skipped);
        }
        std::swap(before, now);
    }
    const T* last = before.data() + 2;
    int64_t state = last[states - 1] > last[states - 2] ? states - 1 : states - 2;
    for (int64_t t = frames - 1; t > 0; --t) {
        path[t] = labels[state];
        state -= kBack[moves[t * states + state]];
    }
    path[0] = labels[state];
}

void check_align(const at::Tensor& log_probs, const at::Tensor& targets, const at::Tensor& input_lengths,
                 const at::Tensor& target_lengths, int64_t blank) {
    TORCH_CHECK_TYPE(log_probs.scalar_type() == at::kFloat || log_probs.scalar_type() == at::kDouble ||
                         log_probs.scalar_type() == at::kHalf,
                     "forced_align: log_probs must be float64, float32 or float16, got ", log_probs.scalar_type());
    TORCH_CHECK_TYPE(targets.scalar_type() == at::kInt || targets.scalar_type() == at::kLong,
                     "forced_align: targets must be int32 or int64, got ", targets.scalar_type());
    TORCH_CHECK_VALUE(log_probs.dim() == 3, "forced_align: log_probs must be 3-D (batch_size, input length, "
                      "num classes), got ", log_probs.sizes());
    TORCH_CHECK_VALUE(targets.dim() == 2 && targets.size(0) == log_probs.size(0) && targets.size(1) >= 1,
                      "forced_align: targets must be 2-D (batch_size=", log_probs.size(0),
                      ", target length >= 1), got ", targets.sizes());
    TORCH_CHECK_VALUE(blank >= 0 && blank < log_probs.size(2), "forced_align: blank must be within [0, num classes=",
                      log_probs.size(2), "), got ", blank);
    const int64_t batch = log_probs.size(0);
    for (const auto& [lengths, name, size] :
         {std::tuple{&input_lengths, "input_lengths", log_probs.size(1)},
          std::tuple{&target_lengths, "target_lengths", targets.size(1)}}) {
        TORCH_CHECK_TYPE(!at::isFloatingType(lengths->scalar_type()) && !at::isComplexType(lengths->scalar_type()),
                         "forced_align: ", name, " must be an integer tensor, got ", lengths->scalar_type());
        TORCH_CHECK_VALUE(lengths->dim() == 1 && lengths->size(0) == batch, "forced_align: ", name,
                          " must be 1-D (batch_size=", batch, ",), got ", lengths->sizes());
        const at::Tensor l = lengths->to(at::kLong);
        TORCH_CHECK_VALUE(batch == 0 || (l.min().item<int64_t>() >= 1 && l.max().item<int64_t>() <= size),
                          "forced_align: ", name, " must be in [1, ", size, "]");
    }
}

}  // namespace

at::Tensor forced_align_paths_cpu(const at::Tensor& log_probs, const at::Tensor& targets,
                                  const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                                  int64_t blank) {
    check_align(log_probs, targets, input_lengths, target_lengths, blank);
    // float16 sums run in float32, as trivium.audio.functional.forced_align's fallback.
    const at::Tensor emissions =
        (log_probs.scalar_type() == at::kHalf ? log_probs.to(at::kFloat) : log_probs).contiguous();
    const at::Tensor labels = targets.to(at::kLong).contiguous();
    const at::Tensor frame_counts = input_lengths.to(at::kLong).contiguous();
    const at::Tensor label_counts = target_lengths.to(at::kLong).contiguous();
    const int64_t batch = emissions.size(0), frames = emissions.size(1), classes = emissions.size(2);
    const int64_t width = labels.size(1);
    const int64_t* frame_of = frame_counts.const_data_ptr<int64_t>();
    const int64_t* label_of = label_counts.const_data_ptr<int64_t>();
    const int64_t* label = labels.const_data_ptr<int64_t>();
    for (int64_t i = 0; i < batch; ++i) check_item(label + i * width, label_of[i], frame_of[i], classes, blank);
    at::Tensor paths = at::zeros({batch, frames}, labels.options());
    int64_t* out = paths.mutable_data_ptr<int64_t>();
    AT_DISPATCH_FLOATING_TYPES(emissions.scalar_type(), "forced_align", [&] {
        const scalar_t* e = emissions.const_data_ptr<scalar_t>();
        at::parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                viterbi(e + i * frames * classes, classes, frame_of[i], label + i * width, label_of[i], blank,
                        out + i * frames);
            }
        });
    });
    return paths;
}

}  // namespace trivium_audio
