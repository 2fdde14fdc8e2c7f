#include "pipeline/refinement/refinement_worker.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <exception>

#include "kernels/thread_name.hpp"

namespace slicestream {
namespace {

// The worker's nice value. Matrix builds and CPU solves (and the threads they start, which
// inherit it) then take only the cycles the live scan leaves: automatic checks are on by default
// and a build takes seconds on every core it gets, while the reconstruction must keep up with
// the detector.
constexpr int kWorkerNice = 10;

void lower_priority() {
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  setpriority(PRIO_PROCESS, tid, kWorkerNice);  // best effort: an error leaves it as it was
}

}  // namespace

RefinementWorker::RefinementWorker(Backend& backend)
    : backend_(backend), thread_([this] { run(); }) {}

RefinementWorker::~RefinementWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

bool RefinementWorker::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.has_value() || running_ || finished_.has_value();
}

void RefinementWorker::submit(RefinementJob job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_ = std::move(job);
  }
  changed_.notify_all();
}

std::optional<RefinementOutcome> RefinementWorker::take_finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<RefinementOutcome> outcome = std::move(finished_);
  finished_.reset();
  return outcome;
}

void RefinementWorker::wait_finished() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !pending_ && !running_; });
}

void RefinementWorker::run() {
  name_this_thread("ss-refine");
  lower_priority();
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || pending_.has_value(); });
    if (stopping_) return;
    RefinementJob job = std::move(*pending_);
    pending_.reset();
    running_ = true;
    lock.unlock();
    RefinementOutcome outcome = execute(std::move(job));
    lock.lock();
    running_ = false;
    finished_ = std::move(outcome);
    changed_.notify_all();
  }
}

RefinementOutcome RefinementWorker::execute(RefinementJob job) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point begin = Clock::now();
  RefinementOutcome outcome;
  try {
    RefinerCache& cache = *job.cache;
    if (!cache.refiner || cache.setup != job.setup) {
      phase_ = Phase::kBuildingMatrix;
      cache.refiner.reset();  // the old matrix goes before the new one is built
      cache.refiner = backend_.create_refiner(job.setup);
      cache.setup = job.setup;
      outcome.matrix_built = true;
    }
    phase_ = Phase::kSolving;
    SliceRefiner& refiner = *cache.refiner;
    outcome.solver = refiner.solver();
    const RefinementRequest request{job.iterations, job.settings, job.noise_level};
    if (job.iterations > 0) {
      outcome.result = refiner.refine(job.fbp.values.data(), job.sinogram.data(), request,
                                      job.fbp.values.data());
    } else {
      const double residual = refiner.residual(job.fbp.values.data(), job.sinogram.data());
      outcome.result = {residual, residual, 0, summary_of(request)};
    }
    outcome.ok = true;
  } catch (const std::exception& e) {
    outcome.error = e.what();
  }
  phase_ = Phase::kIdle;
  outcome.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
  outcome.job = std::move(job);
  return outcome;
}

}  // namespace slicestream
