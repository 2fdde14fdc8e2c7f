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

// The quad copy expected for `p`: quad (r, c) = texels (r..r+1, c..c+1), r, c from -1, zeros
// outside.
std::vector<float> expected_quads(const std::vector<float>& p, DetectorShape shape) {
  auto at = [&](int r, int c) {
    return (r < 0 || r >= shape.rows || c < 0 || c >= shape.cols)
               ? 0.0f
               : p[static_cast<std::size_t>(r) * static_cast<std::size_t>(shape.cols) +
                   static_cast<std::size_t>(c)];
  };
  std::vector<float> quads;
  for (int r = -1; r < shape.rows; ++r) {
    for (int c = -1; c < shape.cols; ++c) {
      for (float v : {at(r, c), at(r, c + 1), at(r + 1, c), at(r + 1, c + 1)})
        quads.push_back(v);
    }
  }
  return quads;
}

std::vector<float> read_quads(const float4* quads, DetectorShape shape) {
  const std::size_t count =
      static_cast<std::size_t>(shape.rows + 1) * static_cast<std::size_t>(shape.cols + 1) * 4;
  return test::to_host(reinterpret_cast<const float*>(quads), count);
}

// Every view of a slot (texture layer, plain or quad copy) holds `expected`.
void expect_slot(const cuda::ProjectionTextureStore& store, int slot,
                 const std::vector<float>& expected, cudaStream_t stream) {
  EXPECT_EQ(read_slot(store, slot, stream), expected) << "layer of slot " << slot;
  const cuda::TextureRef ref = store.slot_ref(slot);
  if (ref.linear != nullptr) {
    EXPECT_EQ(test::to_host(ref.linear, expected.size()), expected) << "plain copy " << slot;
  }
  if (ref.quads != nullptr) {
    EXPECT_EQ(read_quads(ref.quads, store.shape()), expected_quads(expected, store.shape()))
        << "quad copy " << slot;
  }
}

void expect_scratch(const cuda::ProjectionTextureStore& store, const std::vector<float>& expected,
                    cudaStream_t stream) {
  EXPECT_EQ(read_scratch(store, stream), expected) << "scratch layer";
  const cuda::TextureRef ref = store.scratch_ref();
  if (ref.linear != nullptr) {
    EXPECT_EQ(test::to_host(ref.linear, expected.size()), expected) << "scratch plain copy";
  }
  if (ref.quads != nullptr) {
    EXPECT_EQ(read_quads(ref.quads, store.shape()), expected_quads(expected, store.shape()))
        << "scratch quad copy";
  }
}

TEST(ProjectionStoreCuda, InPlaceUpdatesAcrossSeveralArrays) {
  SLICESTREAM_REQUIRE_GPU();
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{19, 37};
  for (cuda::LinearCopy copy :
       {cuda::LinearCopy::kNone, cuda::LinearCopy::kPlain, cuda::LinearCopy::kQuads}) {
    SCOPED_TRACE(std::string("linear copy ") + cuda::to_string(copy));
    cuda::ProjectionStoreOptions options;
    options.max_layers_per_array = 3;
    options.linear_copy = copy;
    const int slots = 8;
    cuda::ProjectionTextureStore store(0, shape, slots, options);
    ASSERT_EQ(store.array_count(), 3);
    ASSERT_EQ(store.layers_per_array(), 3);
    EXPECT_EQ(store.linear_copy(), copy);
    cuda::Stream stream;
    std::vector<std::vector<float>> contents;
    for (int s = 0; s < slots; ++s) {
      contents.push_back(random.floats(shape.pixels(), -1.0, 1.0));
      cuda::DeviceBuffer<float> d = test::to_device(contents.back());
      store.write_slot(s, d.data(), stream.get());
      SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      EXPECT_EQ(store.slot_ref(s).layer, s % 3);
    }
    // In-place replacements: plain, leaving new - old, leaving the old projection.
    const cuda::ScratchContent modes[] = {cuda::ScratchContent::kUnchanged,
                                          cuda::ScratchContent::kDifference,
                                          cuda::ScratchContent::kOldProjection};
    const int replaced[] = {4, 7, 2};
    for (int k = 0; k < 3; ++k) {
      const int s = replaced[k];
      std::vector<float>& stored = contents[static_cast<std::size_t>(s)];
      const std::vector<float> fresh = random.floats(shape.pixels(), -1.0, 1.0);
      cuda::DeviceBuffer<float> d = test::to_device(fresh);
      store.replace_slots({{s, d.data(), modes[k]}}, stream.get());
      SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      if (modes[k] == cuda::ScratchContent::kDifference) {
        std::vector<float> difference(shape.pixels());
        for (std::size_t i = 0; i < difference.size(); ++i)
          difference[i] = fresh[i] - stored[i];
        expect_scratch(store, difference, stream.get());
      } else if (modes[k] == cuda::ScratchContent::kOldProjection) {
        expect_scratch(store, stored, stream.get());
      }
      stored = fresh;
    }
    for (int s = 0; s < slots; ++s) {
      SCOPED_TRACE("slot " + std::to_string(s));
      expect_slot(store, s, contents[static_cast<std::size_t>(s)], stream.get());
    }
  }
}

std::vector<float> read_scratch_at(const cuda::ProjectionTextureStore& store, int index,
                                   cudaStream_t stream) {
  cuda::DeviceBuffer<float> out(store.shape().pixels());
  store.read_scratch(out.data(), stream, index);
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  return test::to_host(out.data(), out.size());
}

// Scratch layer `index` (texture layer when written, and the linear copy) holds `expected`.
void expect_scratch_at(const cuda::ProjectionTextureStore& store, int index,
                       const std::vector<float>& expected, bool layers_written,
                       cudaStream_t stream) {
  if (layers_written) {
    EXPECT_EQ(read_scratch_at(store, index, stream), expected) << "scratch layer " << index;
  }
  const cuda::TextureRef ref = store.scratch_ref(index);
  EXPECT_EQ(ref.layer, index);
  if (ref.linear != nullptr) {
    EXPECT_EQ(test::to_host(ref.linear, expected.size()), expected) << "scratch plain " << index;
  }
  if (ref.quads != nullptr) {
    EXPECT_EQ(read_quads(ref.quads, store.shape()), expected_quads(expected, store.shape()))
        << "scratch quads " << index;
  }
}

// A batch of replacements (one launch per pass) leaves what the same replacements one by one
// leave: the slots, and entry i's scratch content in scratch layer i; with the texture layers
// skipped, the linear copies still do, and turning the layers back on brings them up to date.
void check_batches(cuda::LinearCopy copy, bool skip_layers) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{17, 29};
  const int slots = 7;
  cuda::ProjectionStoreOptions options;
  options.max_layers_per_array = 3;
  options.linear_copy = copy;
  options.scratch_layers = 5;
  cuda::ProjectionTextureStore store(0, shape, slots, options);
  ASSERT_EQ(store.scratch_layers(), 5);
  cuda::Stream stream;
  if (skip_layers) {
    store.set_texture_layer_writes(false, stream.get());
    EXPECT_FALSE(store.texture_layer_writes());
  }
  std::vector<std::vector<float>> contents(static_cast<std::size_t>(slots),
                                           std::vector<float>(shape.pixels(), 0.0f));
  std::vector<cuda::DeviceBuffer<float>> keep;
  auto fresh = [&]() {
    keep.push_back(test::to_device(random.floats(shape.pixels(), -1.0, 1.0)));
    return keep.back().data();
  };
  // Unwritten linear copies are not zeroed: start every view of every slot from zeros.
  const cuda::DeviceBuffer<float> zeros = test::to_device(std::vector<float>(shape.pixels(), 0.0f));
  for (int s = 0; s < slots; ++s)
    store.write_slot(s, zeros.data(), stream.get());
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  // Fill every slot (one batch of 5, one of 2), then batches with every scratch content.
  const std::vector<std::vector<int>> batches = {{0, 1, 2, 3, 4}, {5, 6}, {3, 0, 6, 2, 5}, {1, 4}};
  const cuda::ScratchContent modes[] = {cuda::ScratchContent::kDifference,
                                        cuda::ScratchContent::kOldProjection,
                                        cuda::ScratchContent::kUnchanged};
  int n = 0;
  for (const std::vector<int>& slots_of_batch : batches) {
    std::vector<cuda::SlotReplacement> batch;
    std::vector<std::vector<float>> expected_scratch;
    for (int slot : slots_of_batch) {
      const float* device = fresh();
      const cuda::ScratchContent mode = modes[n++ % 3];
      batch.push_back({slot, device, mode});
      const std::vector<float> values = test::to_host(device, shape.pixels());
      std::vector<float>& stored = contents[static_cast<std::size_t>(slot)];
      std::vector<float> scratch;
      if (mode == cuda::ScratchContent::kDifference) {
        scratch.resize(values.size());
        for (std::size_t i = 0; i < values.size(); ++i)
          scratch[i] = values[i] - stored[i];
      } else if (mode == cuda::ScratchContent::kOldProjection) {
        scratch = stored;
      }
      expected_scratch.push_back(scratch);
      stored = values;
    }
    store.replace_slots(batch, stream.get());
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    for (std::size_t k = 0; k < batch.size(); ++k) {
      if (batch[k].scratch == cuda::ScratchContent::kUnchanged) continue;
      SCOPED_TRACE("batch entry " + std::to_string(k));
      expect_scratch_at(store, static_cast<int>(k), expected_scratch[k], !skip_layers,
                        stream.get());
    }
  }
  EXPECT_EQ(store.texture_layers_current(), !skip_layers);
  if (skip_layers) {
    for (int s = 0; s < slots; ++s) {
      const cuda::TextureRef ref = store.slot_ref(s);
      if (ref.linear != nullptr) {
        EXPECT_EQ(test::to_host(ref.linear, shape.pixels()), contents[static_cast<std::size_t>(s)]);
      }
      if (ref.quads != nullptr) {
        EXPECT_EQ(read_quads(ref.quads, shape),
                  expected_quads(contents[static_cast<std::size_t>(s)], shape));
      }
    }
    store.set_texture_layer_writes(true, stream.get());  // layers from the linear copy
    EXPECT_TRUE(store.texture_layers_current());
  }
  for (int s = 0; s < slots; ++s) {
    SCOPED_TRACE("slot " + std::to_string(s));
    expect_slot(store, s, contents[static_cast<std::size_t>(s)], stream.get());
  }
}

TEST(ProjectionStoreCuda, BatchedReplacementsEqualOneByOne) {
  SLICESTREAM_REQUIRE_GPU();
  for (cuda::LinearCopy copy :
       {cuda::LinearCopy::kNone, cuda::LinearCopy::kPlain, cuda::LinearCopy::kQuads}) {
    SCOPED_TRACE(std::string("linear copy ") + cuda::to_string(copy));
    check_batches(copy, /*skip_layers=*/false);
  }
}

TEST(ProjectionStoreCuda, SkippedTextureLayersComeBackFromTheLinearCopy) {
  SLICESTREAM_REQUIRE_GPU();
  for (cuda::LinearCopy copy : {cuda::LinearCopy::kPlain, cuda::LinearCopy::kQuads}) {
    SCOPED_TRACE(std::string("linear copy ") + cuda::to_string(copy));
    check_batches(copy, /*skip_layers=*/true);
  }
  // Without a linear copy the layers are the store: they cannot be skipped.
  cuda::ProjectionTextureStore bare(0, {4, 4}, 2);
  cuda::Stream stream;
  EXPECT_THROW(bare.set_texture_layer_writes(false, stream.get()), cuda::CudaError);
}

TEST(ProjectionStoreCuda, RejectsBadBatches) {
  SLICESTREAM_REQUIRE_GPU();
  cuda::ProjectionStoreOptions options;
  options.scratch_layers = 2;
  cuda::ProjectionTextureStore store(0, {4, 4}, 3, options);
  cuda::DeviceBuffer<float> p = test::to_device(std::vector<float>(16, 1.0f));
  cuda::Stream stream;
  const auto unchanged = cuda::ScratchContent::kUnchanged;
  EXPECT_THROW(
      store.replace_slots({{1, p.data(), unchanged}, {1, p.data(), unchanged}}, stream.get()),
      cuda::CudaError);
  EXPECT_THROW(store.replace_slots(
                   {{0, p.data(), unchanged}, {1, p.data(), unchanged}, {2, p.data(), unchanged}},
                   stream.get()),
               cuda::CudaError);
  EXPECT_THROW(store.scratch_ref(2), cuda::CudaError);
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
}

TEST(ProjectionStoreCuda, RejectsSlotsOutsideTheWindow) {
  SLICESTREAM_REQUIRE_GPU();
  cuda::ProjectionTextureStore store(0, {4, 4}, 3);
  EXPECT_THROW(store.slot_ref(3), cuda::CudaError);
  EXPECT_THROW(store.slot_ref(-1), cuda::CudaError);
}

}  // namespace
}  // namespace slicestream
