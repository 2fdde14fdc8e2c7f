// The multi-threaded CPU backend: the CPU kernels (kernels/cpu/) run over row ranges on one
// worker pool shared by every stage; the projection store and the targets are host float arrays.
#pragma once

#include <cstddef>
#include <memory>

#include "pipeline/backend/backend.hpp"

namespace slicestream {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options = {});
  ~CpuBackend() override;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  BackendInfo info() const override;

  void begin_scan(const ScanSetup& setup) override;
  void end_scan() override;
  void set_calibration(const std::vector<float>& dark, const std::vector<float>& flat) override;
  void set_filter(const FilterConfig& config) override;

  std::unique_ptr<ProjectionBuffer> preprocess(const FrameView& raw,
                                               const ProjectionVector& vector) override;
  std::vector<PreprocessCounters> take_preprocess_counts() override;
  void filter(ProjectionBuffer& projection) override;
  void read_rows(ProjectionBuffer& projection, int row_begin, int count, float* host) override;

  std::unique_ptr<ReconTarget> create_target(const GridSpec& grid) override;
  void replace_projections(std::vector<ProjectionUpdate>& updates, float scale) override;
  void backproject_store(const std::vector<int>& slots, ReconTarget& target, float scale,
                         bool accumulate, int plane_begin, int plane_end) override;
  void set_slot_maps(const std::vector<ProjectionMap>& maps) override;
  void clear_target(ReconTarget& target) override;
  void copy_target(const ReconTarget& from, ReconTarget& to) override;
  void read_target(const ReconTarget& target, float* host) override;

  std::unique_ptr<SliceRefiner> create_refiner(const RefinementSetup& setup) override;
  std::string refiner_memory_problem(const RefinementSetup& setup) const override;
  std::size_t target_host_bytes(const GridSpec& grid) const override {
    return grid.points() * sizeof(float);
  }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace slicestream
