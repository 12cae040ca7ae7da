// Greedy non-maximum suppression over axis-aligned boxes, as torchvision's CPU kernel.
//
// No Python or torch here: plain arrays in, kept indices out.
#pragma once

#include <cstdint>
#include <vector>

namespace trivium {

// Boxes are n rows of (x1, y1, x2, y2), row-major. `order` is a permutation of
// 0..n-1, the boxes by decreasing score (ties already broken). In that order a box
// is kept unless a kept box has IoU > iou_threshold with it, the IoU computed in the
// boxes' type as inter / (area_i + area_j - inter) and compared as a double. With
// `classes` (n category ids, or nullptr) a box only suppresses boxes of its own
// category. Returns the kept indices in the order of `order`, or increasing with
// `ascending`.
std::vector<int64_t> nms_keep(const float* boxes, const int64_t* order, int64_t n,
                              double iou_threshold, const int64_t* classes, bool ascending);
std::vector<int64_t> nms_keep(const double* boxes, const int64_t* order, int64_t n,
                              double iou_threshold, const int64_t* classes, bool ascending);

}  // namespace trivium
