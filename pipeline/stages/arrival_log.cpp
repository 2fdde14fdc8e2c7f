#include "pipeline/stages/arrival_log.hpp"

#include <utility>

namespace slicestream {

void ArrivalLog::integrated(std::uint64_t arrival_ns, bool shown) {
  std::vector<std::uint64_t>& arrivals = shown ? shown_ : rotation_;
  if (arrivals.size() < kMaxPending) arrivals.push_back(arrival_ns);
}

void ArrivalLog::rotation_shown() {
  shown_.insert(shown_.end(), rotation_.begin(), rotation_.end());
  rotation_.clear();
}

std::vector<std::uint64_t> ArrivalLog::take_shown() {
  std::vector<std::uint64_t> taken = std::move(shown_);
  shown_.clear();
  return taken;
}

void ArrivalLog::clear() {
  shown_.clear();
  rotation_.clear();
}

}  // namespace slicestream
