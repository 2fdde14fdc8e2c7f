// The projection store in each storage (fp32 and fp16 texture layers, mirrored fp16 pairs, fp32
// linear rows): in-place batched updates, windows spread over several arrays (the per-array layer
// limit lowered for the test), scratch differences of the stored values, the texture layers'
// centre lines, its memory budget.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/projection_texture_store.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"
#include "tests/kernels/cuda/projection_store_test_support.hpp"

namespace slicestream {
namespace {

using test::RandomSource;
using test::read_scratch;
using test::read_slot;
using test::scratch_of;
using test::texels_of;

TEST(ProjectionStoreCuda, ReportsDeviceLimits) {
  SLICESTREAM_REQUIRE_GPU();
  const int limit = cuda::ProjectionTextureStore::device_layer_limit(0);
  EXPECT_GE(limit, 2048);
  ::testing::Test::RecordProperty("layer_limit", limit);
  std::printf("layered texture limit %d layers\n", limit);
  EXPECT_NE(cuda::ProjectionTextureStore::unsupported_reason(0, {1, 1 << 20}), "");
  // One copy per projection: fp32 or fp16 texels or fp32 rows, plus scratch layers of the same;
  // texture layers each with a centre line of 20 + 3 entries of 8 bytes.
  const DetectorShape shape{10, 20};
  cuda::ProjectionStoreOptions options;
  options.scratch_layers = 3;
  const std::size_t lines = 23u * 8 * (7 + 3);
  EXPECT_EQ(cuda::centre_line_entries(20), 23);
  EXPECT_EQ(cuda::ProjectionTextureStore::device_bytes(shape, 7, options),
            200u * (7 * 4 + 3 * 4) + lines);
  options.storage = cuda::ProjectionStorage::kTextureHalf;
  EXPECT_EQ(cuda::ProjectionTextureStore::device_bytes(shape, 7, options),
            200u * (7 * 2 + 3 * 2) + lines);
  // Mirrored pairs: (10 + 3) / 2 = 6 texel rows of 4-byte pairs (rows 0-4 with 9-5, and 5 with 4).
  options.storage = cuda::ProjectionStorage::kTextureHalfMirrored;
  EXPECT_EQ(cuda::mirrored_texel_rows(10), 6);
  EXPECT_EQ(cuda::mirrored_texel_rows(9), 6);
  EXPECT_EQ(cuda::ProjectionTextureStore::device_bytes(shape, 7, options),
            20u * 6 * 4 * (7 + 3) + lines);
  options.storage = cuda::ProjectionStorage::kLinear;
  EXPECT_EQ(cuda::ProjectionTextureStore::device_bytes(shape, 7, options), 200u * (7 * 4 + 3 * 4));
}

const cuda::ProjectionStorage kStorages[] = {
    cuda::ProjectionStorage::kTexture, cuda::ProjectionStorage::kTextureHalf,
    cuda::ProjectionStorage::kTextureHalfMirrored, cuda::ProjectionStorage::kLinear};

// `values` as the store keeps them: fp16 texels round each value to nearest (ties to even).
std::vector<float> as_stored(std::vector<float> values, cuda::ProjectionStorage storage) {
  for (float& v : values)
    v = cpu::as_stored(v, texels_of(storage));
  return values;
}

// A batch of replacements (one launch) leaves what the same replacements one by one leave: the
// slots, and entry i's scratch content (new - old of the stored values, or old) in scratch layer
// i, exactly; on a window spread over several arrays. Rows of whole quads of columns take the
// pass that moves four values per access (fp16 texels, fp32 rows), others one value per access.
void check_batches(cuda::ProjectionStorage storage, DetectorShape shape) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const int slots = 7;
  cuda::ProjectionStoreOptions options;
  options.max_layers_per_array = 3;
  options.storage = storage;
  options.scratch_layers = 5;
  cuda::ProjectionTextureStore store(0, shape, slots, options);
  ASSERT_EQ(store.scratch_layers(), 5);
  EXPECT_EQ(store.storage(), storage);
  if (cuda::is_texture(storage)) {
    EXPECT_EQ(store.array_count(), 3);
    EXPECT_EQ(store.slot_ref(4).layer, 1);
    EXPECT_NE(store.slot_ref(4).texture, 0u);
    const bool mirrored = storage == cuda::ProjectionStorage::kTextureHalfMirrored;
    EXPECT_EQ(store.slot_ref(4).mirrored, mirrored);
    EXPECT_EQ(store.scratch_ref(1).mirrored, mirrored);
  } else {
    EXPECT_NE(store.slot_ref(4).linear, nullptr);
  }
  cuda::Stream stream;
  // A fresh store holds zeros.
  std::vector<std::vector<float>> contents(static_cast<std::size_t>(slots),
                                           std::vector<float>(shape.pixels(), 0.0f));
  for (int s = 0; s < slots; ++s)
    EXPECT_EQ(read_slot(store, s, stream.get()), contents[static_cast<std::size_t>(s)]);
  std::vector<cuda::DeviceBuffer<float>> keep;
  auto fresh = [&]() {
    keep.push_back(test::to_device(random.floats(shape.pixels(), -100.0, 100.0)));
    return keep.back().data();
  };
  // Fill every slot (write_slot, one batch of 5), then batches with every scratch content.
  contents[6] = random.floats(shape.pixels(), -1.0, 1.0);
  const cuda::DeviceBuffer<float> sixth = test::to_device(contents[6]);
  store.write_slot(6, sixth.data(), stream.get());
  contents[6] = as_stored(contents[6], storage);
  // Texture layers keep their centre lines beside them (the mean of the middle rows as stored):
  // the slots' lines follow their contents, the scratch layers' lines hold the lines' new - old or
  // old, in fp32.
  const bool lines = cuda::is_texture(storage);
  const std::vector<std::vector<int>> batches = {{0, 1, 2, 3, 4}, {5}, {3, 0, 6, 2, 5}, {1, 4}};
  const int first_scratch[] = {0, 4, 0, 3};  // a batch may start at any scratch layer
  const cuda::ScratchContent modes[] = {cuda::ScratchContent::kDifference,
                                        cuda::ScratchContent::kOldProjection,
                                        cuda::ScratchContent::kUnchanged};
  int n = 0;
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const std::vector<int>& slots_of_batch = batches[b];
    const int first = first_scratch[b];
    std::vector<cuda::SlotReplacement> batch;
    std::vector<std::vector<float>> expected_scratch;
    std::vector<std::vector<float>> expected_scratch_line;
    for (int slot : slots_of_batch) {
      const float* device = fresh();
      const cuda::ScratchContent mode = modes[n++ % 3];
      batch.push_back({slot, device, mode});
      // The CPU twin of the pass: the expected slot and scratch.
      const std::vector<float> values = test::to_host(device, shape.pixels());
      std::vector<float> scratch;
      std::vector<float>& content = contents[static_cast<std::size_t>(slot)];
      std::vector<float> line = test::centre_line_of(content, shape);  // the old line
      cpu::replace_slot(shape, {values.data(), shape.cols}, texels_of(storage), scratch_of(mode),
                        content, scratch);
      expected_scratch.push_back(scratch);
      if (mode == cuda::ScratchContent::kDifference) {
        const std::vector<float> fresh_line = test::centre_line_of(content, shape);
        for (std::size_t c = 0; c < line.size(); ++c)
          line[c] = fresh_line[c] - line[c];
      }
      expected_scratch_line.push_back(line);
    }
    store.replace_slots(batch, stream.get(), first);
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    for (std::size_t k = 0; k < batch.size(); ++k) {
      if (batch[k].scratch == cuda::ScratchContent::kUnchanged) continue;
      SCOPED_TRACE("batch entry " + std::to_string(k));
      const int layer = first + static_cast<int>(k);
      EXPECT_EQ(read_scratch(store, layer, stream.get()), expected_scratch[k]);
      EXPECT_EQ(store.scratch_ref(layer).layer, layer);
      if (lines) {
        EXPECT_EQ(test::read_centre_line(store.scratch_ref(layer), shape),
                  expected_scratch_line[k]);
      }
    }
  }
  for (int s = 0; s < slots; ++s) {
    SCOPED_TRACE("slot " + std::to_string(s));
    EXPECT_EQ(read_slot(store, s, stream.get()), contents[static_cast<std::size_t>(s)]);
    if (lines) {
      EXPECT_EQ(test::read_centre_line(store.slot_ref(s), shape),
                test::centre_line_of(contents[static_cast<std::size_t>(s)], shape));
    } else {
      EXPECT_EQ(store.slot_ref(s).centre_line, nullptr);
    }
  }
}

TEST(ProjectionStoreCuda, BatchedReplacementsEqualOneByOne) {
  SLICESTREAM_REQUIRE_GPU();
  for (cuda::ProjectionStorage storage : kStorages) {
    // Odd and even rows (mirrored pairs: the centre row paired with itself, or the two centre
    // rows stored twice), columns in whole quads or not, and a one-row detector.
    for (const DetectorShape shape : {DetectorShape{17, 29}, DetectorShape{9, 36},
                                      DetectorShape{10, 24}, DetectorShape{1, 12}}) {
      SCOPED_TRACE(std::string(cuda::to_string(storage)) + ", " + std::to_string(shape.rows) +
                   " x " + std::to_string(shape.cols));
      check_batches(storage, shape);
    }
  }
}

// fp16 texels hold +-65504 at most: a value beyond (or NaN) is clamped (zeroed) as it is stored,
// never an infinity that would turn differences and slices into NaN, and counted; fp32 texels and
// rows keep every value and count nothing.
TEST(ProjectionStoreCuda, HalfTexelsClampValuesBeyondTheirRangeAndCountThem) {
  SLICESTREAM_REQUIRE_GPU();
  const DetectorShape shape{2, 4};
  const std::vector<float> values = {1.5f,     70000.0f, -1e9f, std::nanf(""),
                                     65504.0f, -3.0f,    1e30f, 0.25f};
  const cuda::DeviceBuffer<float> device = test::to_device(values);
  for (cuda::ProjectionStorage storage : kStorages) {
    SCOPED_TRACE(cuda::to_string(storage));
    cuda::ProjectionStoreOptions options;
    options.storage = storage;
    cuda::ProjectionTextureStore store(0, shape, 2, options);
    cuda::Stream stream;
    EXPECT_EQ(store.values_clamped(), 0u);
    store.replace_slots({{0, device.data(), cuda::ScratchContent::kDifference}}, stream.get());
    store.write_slot(1, device.data(), stream.get());
    stream.synchronize();
    if (texels_of(storage) != cpu::SlotTexels::kFloat16) {
      EXPECT_EQ(store.values_clamped(), 0u);
      continue;
    }
    // Four per pass: mirrored pairs store both rows twice and count each value once.
    EXPECT_EQ(store.values_clamped(), 8u);
    const std::vector<float> expected = as_stored(values, storage);
    EXPECT_EQ(expected[1], 65504.0f);
    EXPECT_EQ(expected[3], 0.0f);
    EXPECT_EQ(read_slot(store, 0, stream.get()), expected);
    EXPECT_EQ(read_slot(store, 1, stream.get()), expected);
    EXPECT_EQ(read_scratch(store, 0, stream.get()), expected);  // new - zeros
  }
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
  // Scratch layers past the last, or before the first.
  EXPECT_THROW(
      store.replace_slots({{0, p.data(), unchanged}, {1, p.data(), unchanged}}, stream.get(), 1),
      cuda::CudaError);
  EXPECT_THROW(store.replace_slots({{0, p.data(), unchanged}}, stream.get(), 2), cuda::CudaError);
  EXPECT_THROW(store.replace_slots({{0, p.data(), unchanged}}, stream.get(), -1), cuda::CudaError);
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
}

TEST(ProjectionStoreCuda, RejectsSlotsOutsideTheWindow) {
  SLICESTREAM_REQUIRE_GPU();
  cuda::ProjectionTextureStore store(0, {4, 4}, 3);
  EXPECT_THROW(store.slot_ref(3), cuda::CudaError);
  EXPECT_THROW(store.slot_ref(-1), cuda::CudaError);
  EXPECT_THROW(store.read_slot(3, nullptr, nullptr), cuda::CudaError);
}

}  // namespace
}  // namespace slicestream
