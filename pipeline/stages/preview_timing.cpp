#include "pipeline/stages/preview_timing.hpp"

namespace slicestream {
namespace {

std::chrono::nanoseconds seconds(double s) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s));
}

}  // namespace

void PreviewTiming::reset() {
  store_version_ = 0;
  built_version_ = 0;
  started_ = Clock::time_point{};
  forced_ = false;
}

bool PreviewTiming::rebuild_due(Clock::time_point now, double interval_s) const {
  if (store_version_ == built_version_) return false;
  return forced_ || now - started_ >= seconds(interval_s);
}

PreviewTiming::Clock::time_point PreviewTiming::rebuild_deadline(double interval_s) const {
  if (store_version_ == built_version_) return Clock::time_point::max();
  return forced_ ? Clock::time_point::min() : started_ + seconds(interval_s);
}

void PreviewTiming::rebuild_started(Clock::time_point now) {
  started_ = now;
  built_version_ = store_version_;
  forced_ = false;
}

}  // namespace slicestream
