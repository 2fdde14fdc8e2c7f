// CUDA graphs for the per-frame sequences (launch_sequence.hpp): every stage's graph replay gives
// exactly what the same steps give enqueued one by one, frame after frame with new pointers and
// coefficients, and a stream of frames of one shape captures one graph.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/backprojector.hpp"
#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/launch_sequence.hpp"
#include "kernels/cuda/preprocessor.hpp"
#include "kernels/cuda/projection_texture_store.hpp"
#include "kernels/cuda/ramp_filter_cuda.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace slicestream {
namespace {

using test::RandomSource;

std::vector<float> host_of(const cuda::DeviceBuffer<float>& buffer) {
  return test::to_host(buffer.data(), buffer.size());
}

TEST(GraphReplay, RampFilterGraphEqualsStepByStep) {
  SLICESTREAM_REQUIRE_GPU();
  const DetectorShape shape{7, 45};
  const FilterConfig config{FilterWindow::kSheppLogan, 0.9f};
  cuda::RampFilterCuda eager(shape, config, /*use_graph=*/false);
  cuda::RampFilterCuda graphed(shape, config, /*use_graph=*/true);
  cuda::Stream stream;
  RandomSource random;
  SCOPED_TRACE(random.trace());
  ASSERT_EQ(eager.graph(), nullptr);
  ASSERT_NE(graphed.graph(), nullptr);
  for (int frame = 0; frame < 6; ++frame) {
    SCOPED_TRACE("frame " + std::to_string(frame));
    if (frame == 3) {  // a filter change between frames: new gains, the same graph
      const FilterConfig hann{FilterWindow::kHann, 0.6f};
      eager.set_config(hann, stream.get());
      graphed.set_config(hann, stream.get());
    }
    const std::vector<float> input = test::smooth_random_image(random, shape.rows, shape.cols);
    // New buffers every frame: the graph's pad and unpad kernels must follow the pointer.
    cuda::DeviceBuffer<float> a = test::to_device(input);
    cuda::DeviceBuffer<float> b = test::to_device(input);
    eager.filter(a.data(), stream.get());
    graphed.filter(b.data(), stream.get());
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    const std::vector<float> expected = host_of(a);
    ASSERT_GT(test::max_abs(expected), 0.0);
    EXPECT_LE(test::relative_error(host_of(b), expected), 1e-6);
  }
  EXPECT_EQ(graphed.graph()->captures(), 1u);
  EXPECT_EQ(graphed.graph()->launches(), 6u);
  EXPECT_EQ(graphed.graph()->update_failures(), 0u);
}

TEST(GraphReplay, PreprocessGraphEqualsStepByStepWithCounters) {
  SLICESTREAM_REQUIRE_GPU();
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{13, 29};
  const ScanGeometry geometry = test::circular_geometry(BeamKind::kCone, shape, 9);
  const std::vector<float> dark = random.floats(shape.pixels(), 90.0, 110.0);
  const std::vector<float> flat = random.floats(shape.pixels(), 3000.0, 5000.0);
  cuda::Stream stream;
  cuda::Preprocessor eager(shape, stream.get(), /*use_graph=*/false);
  cuda::Preprocessor graphed(shape, stream.get(), /*use_graph=*/true);
  eager.set_calibration(dark, flat, stream.get());
  graphed.set_calibration(dark, flat, stream.get());
  PreprocessParams params;
  params.min_transmission = 1e-4f;
  // uint16 frames, then float32 frames: two shapes.
  for (int frame = 0; frame < 8; ++frame) {
    SCOPED_TRACE("frame " + std::to_string(frame));
    const CosineWeight cosine = make_cosine_weight(
        BeamKind::kCone, geometry.vectors[static_cast<std::size_t>(frame)], shape);
    std::vector<std::uint16_t> counts16(shape.pixels());
    std::vector<float> counts32(shape.pixels());
    for (std::size_t i = 0; i < shape.pixels(); ++i) {
      const double v = random.uniform(50.0, 4500.0);
      counts16[i] = static_cast<std::uint16_t>(v);
      counts32[i] = static_cast<float>(v);
    }
    counts16[3] = 0;  // guarded: transmission <= 0
    counts32[5] = 0;
    const bool as_float = frame >= 4;
    const FrameView view = as_float ? FrameView{counts32.data(), PixelType::kFloat32, shape}
                                    : FrameView{counts16.data(), PixelType::kUint16, shape};
    cuda::DeviceBuffer<float> a(shape.pixels());
    cuda::DeviceBuffer<float> b(shape.pixels());
    eager.run(view, params, cosine, a.data(), stream.get());
    graphed.run(view, params, cosine, b.data(), stream.get());
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    EXPECT_EQ(host_of(b), host_of(a));
    if (frame % 3 != 2) continue;  // counts read back for several frames at once
    const std::vector<PreprocessCounters> counted[2] = {eager.take_counts(stream.get()),
                                                        graphed.take_counts(stream.get())};
    ASSERT_EQ(counted[1].size(), counted[0].size());
    for (std::size_t k = 0; k < counted[0].size(); ++k) {
      EXPECT_EQ(counted[1][k].clamped_low, counted[0][k].clamped_low);
      EXPECT_EQ(counted[1][k].non_finite, counted[0][k].non_finite);
      EXPECT_GT(counted[1][k].clamped_low, 0u);
    }
  }
  EXPECT_EQ(graphed.graph()->captures(), 2u);  // one per pixel type
  EXPECT_EQ(graphed.graph()->launches(), 8u);
  EXPECT_EQ(graphed.graph()->update_failures(), 0u);  // the copy node follows the staged chunk
}

// The reconstruct stage's sequence: a batched replacement pass and one backprojection launch.
struct ReconstructSetup {
  std::unique_ptr<cuda::ProjectionTextureStore> store;
  std::vector<cuda::DeviceBuffer<float>> targets;
};

TEST(GraphReplay, StoreUpdateAndBackprojectionGraphEqualsStepByStep) {
  SLICESTREAM_REQUIRE_GPU();
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{11, 23};
  const int slots = 7;
  const ScanGeometry geometry = test::circular_geometry(BeamKind::kCone, shape, slots);
  const std::vector<ProjectionMap> maps = make_projection_maps(geometry);
  const auto planes = default_slices(test::centered_box(20.0));
  const std::vector<GridSpec> grids = {slice_grid(planes[0], 17, 13), slice_grid(planes[2], 9, 21)};
  cuda::ProjectionStoreOptions options;
  options.max_layers_per_array = 3;  // several arrays
  options.scratch_layers = 4;
  ReconstructSetup setups[2];
  for (ReconstructSetup& s : setups) {
    s.store = std::make_unique<cuda::ProjectionTextureStore>(0, shape, slots, options);
    for (const GridSpec& grid : grids) {
      s.targets.push_back(test::to_device(std::vector<float>(grid.points(), 0.0f)));
    }
  }
  const cuda::BackprojectTuning tuning{32, 4, 0, cuda::BackprojectInterpolation::kTexture};
  cuda::Backprojector backprojector(geometry.beam, shape, tuning);
  cuda::GraphReplayer replayer;
  cuda::Stream stream;
  const float scale = angular_weight(slots);
  // Batches of 1..4 distinct slots over three rotations; the first rotation fills the store.
  const std::vector<std::vector<int>> batches = {{0, 1, 2, 3}, {4, 5, 6}, {0},       {1, 2},
                                                 {3, 4, 5, 6}, {6, 0},    {1, 3, 5}, {2, 4}};
  std::vector<bool> filled(static_cast<std::size_t>(slots), false);
  std::vector<cuda::DeviceBuffer<float>> keep;  // projections stay alive until the end
  for (const std::vector<int>& batch : batches) {
    std::vector<cuda::SlotReplacement> replacements;
    for (int slot : batch) {
      keep.push_back(test::to_device(test::smooth_random_image(random, shape.rows, shape.cols)));
      const bool had_old = filled[static_cast<std::size_t>(slot)];
      replacements.push_back(
          {slot, keep.back().data(),
           had_old ? cuda::ScratchContent::kDifference : cuda::ScratchContent::kUnchanged});
      filled[static_cast<std::size_t>(slot)] = true;
    }
    for (int g = 0; g < 2; ++g) {
      ReconstructSetup& s = setups[g];
      std::vector<cuda::BackprojectJob> jobs;
      for (std::size_t t = 0; t < grids.size(); ++t) {
        cuda::BackprojectJob job;
        job.grid = grids[t];
        job.data = s.targets[t].data();
        job.accumulate = true;
        for (std::size_t k = 0; k < replacements.size(); ++k) {
          const int slot = replacements[k].slot;
          job.sources.push_back({maps[static_cast<std::size_t>(slot)],
                                 replacements[k].scratch == cuda::ScratchContent::kDifference
                                     ? s.store->scratch_ref(static_cast<int>(k))
                                     : s.store->slot_ref(slot),
                                 scale});
        }
        jobs.push_back(std::move(job));
      }
      cuda::LaunchSequence sequence;
      s.store->append_replace_slots(replacements, sequence);
      backprojector.append(jobs, sequence);
      if (g == 0) {
        sequence.enqueue(stream.get());
      } else {
        replayer.launch(sequence, stream.get());
      }
    }
  }
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  for (std::size_t t = 0; t < grids.size(); ++t) {
    const std::vector<float> expected = host_of(setups[0].targets[t]);
    ASSERT_GT(test::max_abs(expected), 0.0);
    EXPECT_EQ(host_of(setups[1].targets[t]), expected) << "target " << t;
  }
  for (int slot = 0; slot < slots; ++slot) {
    cuda::DeviceBuffer<float> stored[2] = {cuda::DeviceBuffer<float>(shape.pixels()),
                                           cuda::DeviceBuffer<float>(shape.pixels())};
    for (int g = 0; g < 2; ++g)
      setups[g].store->read_slot(slot, stored[g].data(), stream.get());
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    EXPECT_EQ(host_of(stored[1]), host_of(stored[0])) << "slot " << slot;
  }
  // One graph for the sequence shape: batches of 1..4 share the replacement kernel (the batch is
  // its grid's depth) and at most 2 x 4 sources keep the backprojection's small parameter block.
  EXPECT_EQ(replayer.captures(), 1u);
  EXPECT_EQ(replayer.launches(), batches.size());
  EXPECT_EQ(replayer.update_failures(), 0u);
}

TEST(GraphReplay, EvictedShapesAreCapturedAgainAndStayCorrect) {
  SLICESTREAM_REQUIRE_GPU();
  cuda::GraphReplayer replayer(/*max_graphs=*/1);
  const DetectorShape shape{5, 33};
  const FilterConfig config{FilterWindow::kRamLak, 1.0f};
  cuda::RampFilterCuda filter(shape, config);  // only for its sequences
  cuda::RampFilterCuda reference(shape, config);
  cuda::Stream stream;
  RandomSource random;
  SCOPED_TRACE(random.trace());
  for (int frame = 0; frame < 4; ++frame) {
    const std::vector<float> input = test::smooth_random_image(random, shape.rows, shape.cols);
    cuda::DeviceBuffer<float> a = test::to_device(input);
    cuda::DeviceBuffer<float> b = test::to_device(input);
    reference.filter(a.data(), stream.get());
    cuda::LaunchSequence sequence = filter.sequence(b.data());
    if (frame % 2 == 1) {
      // Another shape: an extra step in front (a copy of b into a scratch buffer).
      cuda::DeviceBuffer<float> scratch(shape.pixels());
      cuda::LaunchSequence longer;
      longer.add_copy(scratch.data(), b.data(), b.bytes(), cudaMemcpyDeviceToDevice);
      longer.append(std::move(sequence));
      replayer.launch(longer, stream.get());
      SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    } else {
      replayer.launch(sequence, stream.get());
    }
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    EXPECT_LE(test::relative_error(host_of(b), host_of(a)), 1e-6) << "frame " << frame;
  }
  EXPECT_EQ(replayer.captures(), 4u);  // one graph kept: every change of shape captures
  EXPECT_EQ(replayer.cached(), 1u);
}

}  // namespace
}  // namespace slicestream
