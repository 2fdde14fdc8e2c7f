// GetSlice requests computed on the reconstruct thread in units, so that a large on-demand slice
// never holds the thread for long: a unit is one band of rows of the slice, backprojected from
// every stored slot, sized to about kUnitUpdates pixel-projection updates. The reconstruct stage
// runs units within its ThreadShare (thread_share.hpp): while frames are queued, on-demand work and
// the preview together take at most a quarter of the thread, and a frame waits behind at most one
// unit. Requests are served oldest first; the reply leaves when the last band is in.
//
// Frames integrated while a request is in progress reach only the bands computed after them: the
// reply's projections_integrated and timestamps are those of the store when the last band ran.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/backend/backend.hpp"
#include "pipeline/messages/command.hpp"
#include "pipeline/stages/slice_set.hpp"

namespace slicestream {

class OnDemandSlices {
 public:
  // Pixel-projection updates per unit (width x band rows x stored slots).
  static constexpr std::size_t kUnitUpdates = std::size_t{1} << 24;

  explicit OnDemandSlices(Backend& backend) : backend_(backend) {}
  // Requests still waiting are answered UNAVAILABLE (the server is stopping).
  ~OnDemandSlices();
  OnDemandSlices(const OnDemandSlices&) = delete;
  OnDemandSlices& operator=(const OnDemandSlices&) = delete;

  // A GetSlice whose image (orientation, size, scan id, values sized, memory charged) is ready to
  // be filled; `on_reply` gets the result.
  void add(SliceImage image, ReplyCallback on_reply);
  bool pending() const { return !requests_.empty(); }

  // One band of the oldest request from `slots` with `scale`; when it was the last band the
  // request is answered, stamped with `content`.
  void run_unit(const std::vector<int>& slots, float scale, const WindowContent& content);
  // Every waiting request is answered with `code` and `why` (the store went away).
  void cancel_all(StatusCode code, const std::string& why);

 private:
  struct Request {
    SliceImage image;
    ReplyCallback on_reply;
    int next_row = 0;
  };

  static int band_rows(int width, int height, std::size_t slots);
  void answer(Request& request, CommandReply reply);

  Backend& backend_;
  std::deque<Request> requests_;
};

}  // namespace slicestream
