// The WebSocket side of publication: a PublishSink beside the ZeroMQ publisher that hands every
// slice, refined slice, preview and event to the open WebSocket sessions.
//
// The publish thread never waits for a browser: with no session open it returns at once (marking
// the stream stale, so that a viewer joining later is not shown an older image); else it
// copies the publication and leaves it in a map that keeps only the latest per slice (and one
// preview), and the HTTP thread picks the map up. Each session again keeps only the latest per
// slice until its connection can take it. Events queue up to a bound; beyond it they are counted
// and the sessions are told how many were dropped.
//
// Every copy counts against the server's memory budget before it is made: an update whose values
// do not fit is not taken (counted in websocket_updates_over_budget, and the sessions are told);
// an encoding that does not fit waits in its session until there is room (websocket_session.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/messages/publish_sink.hpp"
#include "server/http/io_mailbox.hpp"
#include "server/http/websocket_frames.hpp"
#include "server/metrics/http_counters.hpp"

namespace slicestream {

class WebSocketSession;

class WebSocketHub : public PublishSink {
 public:
  // `budget`: the server's memory budget (null: copies are not charged). `encoder`: helpers of
  // the HTTP thread for encoding updates (ImageUpdate; null: none; must outlive the hub).
  WebSocketHub(std::shared_ptr<IoMailbox> mailbox, HttpCounters& counters,
               std::size_t max_events_queued, SharedMemoryBudget budget = nullptr,
               Executor* encoder = nullptr);

  // PublishSink (the pipeline's publish thread, or any thread for events).
  void publish_slice(const SliceImage& slice) override;
  // The image's values are read where they are and its memory charge held: no copy, no second
  // charge for the same bytes.
  void publish_shared_slice(std::shared_ptr<const SliceImage> slice) override;
  void publish_preview(const PreviewVolume& preview) override;
  void publish_refined(const RefinedSliceImage& refined) override;
  void publish_event(const ServerEvent& event) override;

  // HTTP thread. A session added gets the latest image of every stream at once, except streams
  // published while no session was open (it gets their next image).
  void add(const std::shared_ptr<WebSocketSession>& session);
  void remove(const WebSocketSession* session);

 private:
  using StreamKey = std::pair<std::string, std::uint32_t>;  // type, slice id

  // True when no session is open: the publication is skipped and its stream marked stale.
  bool skipped_without_sessions(const char* type, std::uint32_t slice_id);
  // An update of `values` (kept, shared with the published image where that holds a readback's
  // buffer, when they fit in the budget; else counted and left out). `charge`: the values' charge
  // where somebody already holds one for them (null: the hub charges them itself).
  void offer(const char* type, std::uint32_t slice_id, v1::PublishHeader header, SliceValues values,
             std::array<float, 9> place = {},
             std::shared_ptr<MemoryCharge> charge = nullptr);  // any thread
  void schedule_delivery();                                    // with mutex_ held
  void deliver();                                              // HTTP thread

  std::shared_ptr<IoMailbox> mailbox_;
  HttpCounters& counters_;
  const std::size_t max_events_queued_;
  const SharedMemoryBudget budget_;
  Executor* const encoder_;
  std::atomic<int> session_count_{0};

  std::mutex mutex_;  // what waits for the HTTP thread
  std::map<StreamKey, std::shared_ptr<ImageUpdate>> incoming_;
  std::deque<std::shared_ptr<const std::string>> incoming_events_;
  std::uint64_t events_dropped_ = 0;
  std::uint64_t updates_over_budget_ = 0;  // since the sessions were last told
  bool delivery_scheduled_ = false;
  std::set<StreamKey> stale_;  // streams published while no session was open

  // HTTP thread only.
  std::vector<std::weak_ptr<WebSocketSession>> sessions_;
  std::map<StreamKey, std::shared_ptr<ImageUpdate>> latest_;  // for sessions that join later
};

}  // namespace slicestream
