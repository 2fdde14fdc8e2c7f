// slicestream in SliceRecon's role toward a running RECAST3D viewer (docs/recast3d.md).
//
// The viewer's slice set becomes the server's: its SetSlice / RemoveSlice (normalised [-1, 1]^3
// mapped to the scan's box) are SetSlice / RemoveSlice commands through the PipelinePort, the same
// path as slicestream-ctl's, with the viewer's slice ids (slice ids are shared with native
// clients: RECAST3D's three defaults are the server's default slices 0, 1, 2). The live slices go
// back as SliceData at most `rate_hz` per slice, latest wins; the preview as VolumeData; the
// parameters as the viewer's controls (recast3d_controls.hpp).
//
// The pipeline's publish thread only hands images over (a copy under a short lock); one thread of
// the bridge talks to the viewer, so a slow, absent or restarting viewer never holds the pipeline.
// A viewer that does not answer is logged, counted (recast3d_* counters in GetStatus) and retried
// every second; a restarted one gets a new scene, the controls and a GroupRequestSlices.
//
// The images it keeps for the viewer count against the server's memory budget before they are
// copied (the copy and the packet made from it); one without room is not kept, counted in
// recast3d_over_budget and logged, and the next update of that image goes out instead.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <zmq.hpp>

#include "pipeline/backend/memory_budget.hpp"
#include "pipeline/messages/publish_sink.hpp"
#include "server/log_throttle.hpp"
#include "server/pipeline_port.hpp"
#include "server/recast3d_bridge_config.hpp"
#include "server/recast3d_session.hpp"
#include "server/reply_queue.hpp"
#include "server/server_counters.hpp"

namespace slicestream::tomop {

class Recast3dBridge final : public PublishSink {
 public:
  // `fallback_slice_size`: the server's default slice edge (0: the detector width).
  // `memory`: the server's memory budget (null: copies are not charged).
  Recast3dBridge(zmq::context_t& context, const Recast3dConfig& config, int fallback_slice_size,
                 int max_slice_side, PipelinePort& pipeline, ServerCounters& counters,
                 SharedMemoryBudget memory = nullptr);
  ~Recast3dBridge() override;
  Recast3dBridge(const Recast3dBridge&) = delete;
  Recast3dBridge& operator=(const Recast3dBridge&) = delete;

  void start();
  void stop();

  // PublishSink: called from the pipeline's publish thread; never waits for the viewer.
  void publish_slice(const SliceImage& slice) override;
  // The image handed over is kept as it is, under its own charge: only its packet is charged.
  void publish_shared_slice(std::shared_ptr<const SliceImage> slice) override;
  void publish_preview(const PreviewVolume& preview) override;
  void publish_refined(const RefinedSliceImage& refined) override;
  void publish_event(const ServerEvent& event) override;

 private:
  using Clock = std::chrono::steady_clock;
  struct ViewerSlice {
    Float9 normalized{};
    bool applied = false;  // submitted for the current box
  };
  enum class Pending { kSetSlice, kRemoveSlice, kParameters, kRefinement };
  // What the publish thread hands over (mutex_).
  struct Outbox {
    std::set<std::uint32_t> live;  // slices whose images go to the viewer
    std::map<std::uint32_t, SliceImage> slices;
    std::optional<PreviewVolume> preview;
    std::optional<StartedScan> started;
    std::optional<std::uint32_t> refined_slice;  // its refined images replace its FBP ones
    bool refined_arrived = false;
  };

  // The charge of `bytes` kept for the viewer (a copy of an image and its packet, or the packet
  // alone); false when the budget has no room (counted, logged). Publish thread, mutex_ held.
  bool charge_kept(std::size_t bytes, std::shared_ptr<MemoryCharge>* charge);
  // Whether the viewer takes FBP images of this slice: it shows the slice, and not its refined
  // images. Publish thread, mutex_ held.
  bool wanted(std::uint32_t slice_id) const;
  void run();
  void step();
  void try_start_session();
  void end_session(const std::string& why);
  void handle_update(const zmq::message_t& message);
  void on_set_slice(std::int32_t id, const Float9& normalized);
  void on_remove_slice(std::int32_t id);
  void on_control(const Packet& packet);
  void on_scan_started(const StartedScan& scan);
  void on_reply(Pending what, std::uint32_t slice_id, const CommandReply& reply);
  void apply_slice(std::uint32_t id, ViewerSlice& slice);
  void set_refinement(bool on);
  void send_controls();
  void send_scene_setup();
  void send_due(Clock::time_point now);
  void submit(Command command, Pending what, std::uint32_t slice_id);
  bool send(const Packet& packet);  // to the viewer; a failure is logged (throttled)
  Clock::duration next_wait(Clock::time_point now) const;

  Recast3dConfig config_;
  int fallback_slice_size_;
  int max_slice_side_;
  PipelinePort& pipeline_;
  ServerCounters& counters_;
  SharedMemoryBudget memory_;
  LogThrottle over_budget_log_;
  Recast3dSession session_;
  std::shared_ptr<ReplyQueue> replies_;

  // Bridge thread only.
  bool had_scene_ = false;
  bool killed_ = false;  // the viewer deleted our scene: a new one at the next scan start
  Clock::time_point retry_at_{};
  Clock::time_point group_request_at_{};
  int group_requests_left_ = 0;
  bool held_back_ = false;  // images wait for their slice's rate period
  std::map<std::int32_t, ViewerSlice> slices_;
  std::map<std::uint32_t, Clock::time_point> last_sent_;
  std::optional<StartedScan> scan_;
  Parameters parameters_;
  bool refine_on_ = false;
  std::map<std::uint64_t, std::pair<Pending, std::uint32_t>> pending_;
  std::uint64_t next_token_ = 1;
  std::optional<PreviewVolume> last_preview_;
  LogThrottle log_throttle_;

  std::mutex mutex_;
  Outbox outbox_;

  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace slicestream::tomop
