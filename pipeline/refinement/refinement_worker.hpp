// The thread that runs slice refinements, so that the reconstruct stage never waits for a
// system-matrix build (seconds for a large slice) or for CGLS: the stage hands over a snapshot
// (the FBP image and the sinogram window) and collects the outcome later. One job at a time.
//
// Each slice holds a RefinerCache (slices with equal 2D problems share one, refiner_sharing.hpp)
// that travels with its jobs: the worker keeps the SliceRefiner (the system matrix) there and
// rebuilds it only when the job's setup differs from the cached one. The reconstruct thread
// never reads a cache while a job that uses it is in flight (it may replace its own pointer).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/backend/backend.hpp"
#include "pipeline/messages/command.hpp"

namespace slicestream {

struct RefinerCache {
  RefinementSetup setup;
  std::unique_ptr<SliceRefiner> refiner;
};

struct RefinementJob {
  std::uint32_t slice_id = 0;
  std::uint64_t generation = 0;  // of the slice's refinement when submitted
  int iterations = 0;            // 0: residual of the FBP image only
  bool automatic = false;        // an automatic residual check (no SetRefinement)
  RefinementSettings settings;   // how to refine (SetRefinement)
  // Expected ||noise|| / ||b|| of the sinogram from the detector's counts; < 0: unknown.
  double noise_level = -1;
  RefinementSetup setup;
  std::vector<float> sinogram;  // angles x bins
  SliceImage fbp;               // the FBP image (values: the start value) and its metadata
  std::shared_ptr<RefinerCache> cache;
};

struct RefinementOutcome {
  RefinementJob job;  // fbp.values now hold the refined image when iterations > 0
  bool ok = false;
  std::string error;
  RefinementResult result;
  bool matrix_built = false;
  std::string solver;
  double duration_ms = 0;  // wall time, the matrix build included
};

class RefinementWorker {
 public:
  enum class Phase { kIdle, kBuildingMatrix, kSolving };

  explicit RefinementWorker(Backend& backend);
  ~RefinementWorker();  // waits for the running job (CGLS cannot be interrupted)
  RefinementWorker(const RefinementWorker&) = delete;
  RefinementWorker& operator=(const RefinementWorker&) = delete;

  // True from submit() until take_finished() returned the outcome.
  bool busy() const;
  Phase phase() const { return phase_.load(); }
  // Only when !busy().
  void submit(RefinementJob job);
  std::optional<RefinementOutcome> take_finished();
  // Blocks until the running job has finished (its outcome then waits in take_finished()).
  void wait_finished();

 private:
  void run();
  RefinementOutcome execute(RefinementJob job);

  Backend& backend_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<RefinementJob> pending_;
  std::optional<RefinementOutcome> finished_;
  bool running_ = false;
  bool stopping_ = false;
  std::atomic<Phase> phase_{Phase::kIdle};
  std::thread thread_;
};

}  // namespace slicestream
