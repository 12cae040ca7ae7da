// TRIVIUM_VECTORIZE: GCC's usual vectoriser cost model for one function.
// The build's -O2 vectorises only loops without a remainder; hot loops over rows or
// boxes (nms.cpp, resample.cpp) need the dynamic cost model to vectorise.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#define TRIVIUM_VECTORIZE __attribute__((optimize("vect-cost-model=dynamic")))
#else
#define TRIVIUM_VECTORIZE
#endif
