// A Backend that forwards every call to a CpuBackend, the base of the test backends that
// instrument some calls (failures, gates, counters).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pipeline/backend/backend.hpp"
#include "pipeline/backend/cpu/cpu_backend.hpp"

namespace slicestream::test {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(int threads = 2) : inner_(CpuBackendOptions{threads, 0}) {}

  BackendInfo info() const override { return inner_.info(); }
  void begin_scan(const ScanSetup& setup) override { inner_.begin_scan(setup); }
  void end_scan() override { inner_.end_scan(); }
  void set_calibration(const std::vector<float>& dark, const std::vector<float>& flat) override {
    inner_.set_calibration(dark, flat);
  }
  void set_filter(const FilterConfig& config) override { inner_.set_filter(config); }
  std::unique_ptr<ProjectionBuffer> preprocess(const FrameView& raw,
                                               const ProjectionVector& vector) override {
    return inner_.preprocess(raw, vector);
  }
  std::vector<PreprocessCounters> take_preprocess_counts() override {
    return inner_.take_preprocess_counts();
  }
  void filter(ProjectionBuffer& projection) override { inner_.filter(projection); }
  void read_rows(ProjectionBuffer& projection, int row_begin, int count, float* host) override {
    inner_.read_rows(projection, row_begin, count, host);
  }
  std::unique_ptr<SliceRefiner> create_refiner(const RefinementSetup& setup) override {
    return inner_.create_refiner(setup);
  }
  std::string refiner_memory_problem(const RefinementSetup& setup) const override {
    return inner_.refiner_memory_problem(setup);
  }
  std::unique_ptr<ReconTarget> create_target(const GridSpec& grid) override {
    return inner_.create_target(grid);
  }
  void replace_projections(std::vector<ProjectionUpdate>& updates, float scale) override {
    inner_.replace_projections(updates, scale);
  }
  std::uint64_t store_values_clamped() const override { return inner_.store_values_clamped(); }
  void backproject_store(const std::vector<int>& slots, ReconTarget& target, float scale,
                         bool accumulate, int plane_begin, int plane_end) override {
    inner_.backproject_store(slots, target, scale, accumulate, plane_begin, plane_end);
  }
  void set_slot_maps(const std::vector<ProjectionMap>& maps) override {
    inner_.set_slot_maps(maps);
  }
  void clear_target(ReconTarget& target) override { inner_.clear_target(target); }
  void copy_target(const ReconTarget& from, ReconTarget& to) override {
    inner_.copy_target(from, to);
  }
  void read_target(const ReconTarget& target, float* host) override {
    inner_.read_target(target, host);
  }

 protected:
  // Applies `update` alone on the CpuBackend (its `applied` flag and projection updated).
  void apply_one(ProjectionUpdate& update, float scale) {
    std::vector<ProjectionUpdate> one;
    one.push_back(std::move(update));
    inner_.replace_projections(one, scale);
    update = std::move(one[0]);
  }

  CpuBackend inner_;
};

}  // namespace slicestream::test
