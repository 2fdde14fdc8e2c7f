// Slice publications handed to the publish stage that it has not taken yet, per slice. The
// reconstruct stage does not queue (nor read back) a slice again while its previous publication
// still waits: the slice stays due and goes out with its latest values once the publish stage has
// taken the previous one ("latest wins", each publication complete). So a publish stage that
// cannot keep up with every update thins the publications instead of holding up reconstruction.
// Shared by the two stage threads.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

namespace slicestream {

class PublicationBacklog {
 public:
  // The reconstruct stage queued a publication of `slice_id`.
  void queued(std::uint32_t slice_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++waiting_[slice_id];
  }
  // The publish stage took one of them off its queue.
  void taken(std::uint32_t slice_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = waiting_.find(slice_id);
    if (it == waiting_.end()) return;
    if (--it->second == 0) waiting_.erase(it);
  }
  bool waiting(std::uint32_t slice_id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return waiting_.count(slice_id) > 0;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::uint32_t, int> waiting_;
};

}  // namespace slicestream
