// Counters kept by the endpoints (the pipeline keeps its own): reported in GetStatus and in the
// stats log.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "server/codec/reply_codec.hpp"
#include "server/protobuf_log_route.hpp"

namespace slicestream {

struct ServerCounters {
  std::atomic<std::uint64_t> data_messages{0};       // data messages read from the socket
  std::atomic<std::uint64_t> data_rejected{0};       // refused by the codec (reported as discards)
  std::atomic<std::uint64_t> payloads_realigned{0};  // payloads copied for alignment
  std::atomic<std::uint64_t> requests{0};            // requests read from the socket
  std::atomic<std::uint64_t> requests_rejected{0};   // refused by the codec (error reply)
  std::atomic<std::uint64_t> replies{0};             // replies sent
  std::atomic<std::uint64_t> replies_undeliverable{0};    // the requester had gone
  std::atomic<std::uint64_t> publications{0};             // slices, previews and events sent
  std::atomic<std::uint64_t> publications_invalid{0};     // refused: values do not match the size
  std::atomic<std::uint64_t> publications_superseded{0};  // replaced while waiting, never sent
  std::atomic<std::uint64_t> tomop_packets{0};            // tomop data packets read
  std::atomic<std::uint64_t> tomop_rejected{0};           // refused (reported as discards)
  std::atomic<std::uint64_t> recast3d_scenes{0};          // scenes made in a RECAST3D viewer
  std::atomic<std::uint64_t> recast3d_unreachable{0};     // MakeScene without an answer
  std::atomic<std::uint64_t> recast3d_slices_sent{0};     // SliceData taken by the viewer
  std::atomic<std::uint64_t> recast3d_volumes_sent{0};    // VolumeData (previews) taken
  std::atomic<std::uint64_t> recast3d_refused{0};         // viewer updates not applied
  // Images (slices, previews) not copied for the viewer: no room in the memory budget.
  std::atomic<std::uint64_t> recast3d_over_budget{0};

  // Counters named at run time (per endpoint: connections, disconnects, handshake and
  // authentication failures), e.g. add("data_connections").
  void add(const std::string& name, std::uint64_t count = 1) {
    std::lock_guard<std::mutex> lock(named_mutex_);
    named_[name] += count;
  }
  std::uint64_t named(const std::string& name) const {
    std::lock_guard<std::mutex> lock(named_mutex_);
    const auto it = named_.find(name);
    return it == named_.end() ? 0 : it->second;
  }

  CounterMap snapshot() const {
    CounterMap counters{{"data_messages", data_messages.load()},
                        {"data_rejected", data_rejected.load()},
                        {"payloads_realigned", payloads_realigned.load()},
                        {"requests", requests.load()},
                        {"requests_rejected", requests_rejected.load()},
                        {"replies", replies.load()},
                        {"replies_undeliverable", replies_undeliverable.load()},
                        {"publications", publications.load()},
                        {"publications_invalid", publications_invalid.load()},
                        {"publications_superseded", publications_superseded.load()},
                        {"tomop_packets", tomop_packets.load()},
                        {"tomop_rejected", tomop_rejected.load()},
                        {"recast3d_scenes", recast3d_scenes.load()},
                        {"recast3d_unreachable", recast3d_unreachable.load()},
                        {"recast3d_slices_sent", recast3d_slices_sent.load()},
                        {"recast3d_volumes_sent", recast3d_volumes_sent.load()},
                        {"recast3d_refused", recast3d_refused.load()},
                        {"recast3d_over_budget", recast3d_over_budget.load()},
                        {"protobuf_log_lines", protobuf_log_lines()}};
    std::lock_guard<std::mutex> lock(named_mutex_);
    counters.insert(named_.begin(), named_.end());
    return counters;
  }

 private:
  mutable std::mutex named_mutex_;
  std::map<std::string, std::uint64_t> named_;
};

}  // namespace slicestream
