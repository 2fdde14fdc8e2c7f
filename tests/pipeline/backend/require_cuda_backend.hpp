// Skips a test with the reason where the CUDA backend cannot run (no usable GPU, or built without
// CUDA). GTEST_SKIP returns from the calling function: use at the top of a test body.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "pipeline/backend/cuda/cuda_backend.hpp"

#define SLICESTREAM_REQUIRE_CUDA_BACKEND()                                         \
  do {                                                                             \
    const std::string slicestream_reason = slicestream::cuda_unavailable_reason(); \
    if (!slicestream_reason.empty()) {                                             \
      GTEST_SKIP() << "no usable GPU: " << slicestream_reason;                     \
    }                                                                              \
  } while (0)
