// The layered projection store: in-place layer updates, windows spread over several arrays
// (the per-array layer limit lowered for the test), exact scratch difference and copies.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/projection_texture_store.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace slicestream {
namespace {

using test::RandomSource;

std::vector<float> read_slot(const cuda::ProjectionTextureStore& store, int slot,
                             cudaStream_t stream) {
  cuda::DeviceBuffer<float> out(store.shape().pixels());
  store.read_slot(slot, out.data(), stream);
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  return test::to_host(out.data(), out.size());
}

std::vector<float> read_scratch(const cuda::ProjectionTextureStore& store, cudaStream_t stream) {
  cuda::DeviceBuffer<float> out(store.shape().pixels());
  store.read_scratch(out.data(), stream);
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  return test::to_host(out.data(), out.size());
}

TEST(ProjectionStoreCuda, ReportsDeviceLimits) {
  SLICESTREAM_REQUIRE_GPU();
  const int limit = cuda::ProjectionTextureStore::device_layer_limit(0);
  EXPECT_GE(limit, 2048);
  cuda::ProjectionTextureStore store(0, {8, 8}, 2);
  ::testing::Test::RecordProperty("layer_limit", limit);
  ::testing::Test::RecordProperty("texture_gather_on_layered_arrays",
                                  store.gather_supported() ? "yes" : "no");
  std::printf("layered texture limit %d layers; gather on layered arrays: %s\n", limit,
              store.gather_supported() ? "supported" : "refused by the driver");
  EXPECT_NE(cuda::ProjectionTextureStore::unsupported_reason(0, {1, 1 << 20}), "");
}

TEST(ProjectionStoreCuda, InPlaceUpdatesAcrossSeveralArrays) {
  SLICESTREAM_REQUIRE_GPU();
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{19, 37};
  for (bool mirror : {false, true}) {
    cuda::ProjectionStoreOptions options;
    options.max_layers_per_array = 3;
    options.linear_mirror = mirror;
    const int slots = 8;
    cuda::ProjectionTextureStore store(0, shape, slots, options);
    ASSERT_EQ(store.array_count(), 3);
    ASSERT_EQ(store.layers_per_array(), 3);
    EXPECT_EQ(store.has_linear_mirror(), mirror);
    cuda::Stream stream;
    std::vector<std::vector<float>> contents;
    for (int s = 0; s < slots; ++s) {
      contents.push_back(random.floats(shape.pixels(), -1.0, 1.0));
      cuda::DeviceBuffer<float> d = test::to_device(contents.back());
      store.write_slot(s, d.data(), stream.get());
      SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      EXPECT_EQ(store.slot_ref(s).layer, s % 3);
    }
    // Overwrite two slots in place; the others keep their data.
    for (int s : {4, 7}) {
      contents[static_cast<std::size_t>(s)] = random.floats(shape.pixels(), -1.0, 1.0);
      cuda::DeviceBuffer<float> d = test::to_device(contents[static_cast<std::size_t>(s)]);
      store.write_slot(s, d.data(), stream.get());
      SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    }
    for (int s = 0; s < slots; ++s) {
      EXPECT_EQ(read_slot(store, s, stream.get()), contents[static_cast<std::size_t>(s)])
          << "slot " << s;
      if (mirror) {
        EXPECT_EQ(test::to_host(store.slot_ref(s).linear, shape.pixels()),
                  contents[static_cast<std::size_t>(s)])
            << "mirror of slot " << s;
      }
    }

    // Scratch := new - stored(5), exactly; then a copy of slot 2.
    const std::vector<float> fresh = random.floats(shape.pixels(), -1.0, 1.0);
    cuda::DeviceBuffer<float> d = test::to_device(fresh);
    store.write_scratch_difference(5, d.data(), stream.get());
    std::vector<float> expected(shape.pixels());
    for (std::size_t i = 0; i < expected.size(); ++i)
      expected[i] = fresh[i] - contents[5][i];
    EXPECT_EQ(read_scratch(store, stream.get()), expected);
    if (mirror) {
      EXPECT_EQ(test::to_host(store.scratch_ref().linear, shape.pixels()), expected);
    }
    store.copy_slot_to_scratch(2, stream.get());
    EXPECT_EQ(read_scratch(store, stream.get()), contents[2]);
    if (mirror) {
      EXPECT_EQ(test::to_host(store.scratch_ref().linear, shape.pixels()), contents[2]);
    }
    EXPECT_EQ(read_slot(store, 5, stream.get()), contents[5]);  // the difference left it alone
  }
}

TEST(ProjectionStoreCuda, RejectsSlotsOutsideTheWindow) {
  SLICESTREAM_REQUIRE_GPU();
  cuda::ProjectionTextureStore store(0, {4, 4}, 3);
  EXPECT_THROW(store.slot_ref(3), cuda::CudaError);
  EXPECT_THROW(store.slot_ref(-1), cuda::CudaError);
}

}  // namespace
}  // namespace slicestream
