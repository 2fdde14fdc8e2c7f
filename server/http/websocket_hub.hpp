// The WebSocket side of publication: a PublishSink beside the ZeroMQ publisher that hands every
// slice, refined slice, preview and event to the open WebSocket sessions.
//
// The publish thread never waits for a browser: with no session open it returns at once; else it
// copies the publication and leaves it in a map that keeps only the latest per slice (and one
// preview), and the HTTP thread picks the map up. Each session again keeps only the latest per
// slice until its connection can take it. Events queue up to a bound; beyond it they are counted
// and the sessions are told how many were dropped.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
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
  WebSocketHub(std::shared_ptr<IoMailbox> mailbox, HttpCounters& counters,
               std::size_t max_events_queued);

  // PublishSink (the pipeline's publish thread, or any thread for events).
  void publish_slice(const SliceImage& slice) override;
  void publish_preview(const PreviewVolume& preview) override;
  void publish_refined(const RefinedSliceImage& refined) override;
  void publish_event(const ServerEvent& event) override;

  // HTTP thread. A session added gets the latest image of every stream at once.
  void add(const std::shared_ptr<WebSocketSession>& session);
  void remove(const WebSocketSession* session);

 private:
  using StreamKey = std::pair<std::string, std::uint32_t>;  // type, slice id

  void offer(std::shared_ptr<ImageUpdate> update);  // any thread
  void schedule_delivery();                         // with mutex_ held
  void deliver();                                   // HTTP thread

  std::shared_ptr<IoMailbox> mailbox_;
  HttpCounters& counters_;
  const std::size_t max_events_queued_;
  std::atomic<int> session_count_{0};

  std::mutex mutex_;  // what waits for the HTTP thread
  std::map<StreamKey, std::shared_ptr<ImageUpdate>> incoming_;
  std::deque<std::shared_ptr<const std::string>> incoming_events_;
  std::uint64_t events_dropped_ = 0;
  bool delivery_scheduled_ = false;

  // HTTP thread only.
  std::vector<std::weak_ptr<WebSocketSession>> sessions_;
  std::map<StreamKey, std::shared_ptr<ImageUpdate>> latest_;
};

}  // namespace slicestream
