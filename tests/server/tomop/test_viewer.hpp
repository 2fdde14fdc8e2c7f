// A stand-in for the RECAST3D viewer that speaks its side of tomop exactly as RECAST3D 1.1 does:
// REP (bound) takes packets and answers each (MakeScene with a scene id it hands out, the rest
// with int32 1); PUB (bound) announces the viewer's slices and control changes, 8-byte topics
// being the packet id and scene id. Like the real one it publishes its three default slices right
// after MakeScene, before the server's subscription can have arrived (the slow-joiner race), and
// re-publishes them on GroupRequestSlices; a drag is RemoveSlice(old id) then SetSlice(new id).
//
// What the real viewer would die of is recorded as a violation instead: a packet id its REP does
// not take, an undecodable packet, a scene id it did not hand out, SliceData that does not fill its
// size. Tests assert that there are none.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "server/tomop/tomop_codec.hpp"

namespace slicestream::test {

class TestViewer {
 public:
  using Clock = std::chrono::steady_clock;
  struct Image {
    int width = 0;
    int height = 0;
    std::vector<float> values;
    std::uint64_t count = 0;  // SliceData received for this slice
    Clock::time_point arrived;
  };

  // `requests` / `updates`: tcp://127.0.0.1:* for ephemeral ports, or fixed ones (a restart).
  TestViewer(const std::string& requests, const std::string& updates, int first_scene_id = 0)
      : next_scene_id_(first_scene_id) {
    rep_.set(zmq::sockopt::linger, 0);
    pub_.set(zmq::sockopt::linger, 0);
    rep_.bind(requests);
    pub_.bind(updates);
    requests_ = rep_.get(zmq::sockopt::last_endpoint);
    updates_ = pub_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { run(); });
  }
  ~TestViewer() {
    stopping_ = true;
    thread_.join();
  }

  const std::string& requests_address() const { return requests_; }
  const std::string& updates_address() const { return updates_; }

  // Waits until `done` holds (checked under the viewer's lock) or `timeout` passes.
  bool wait_for(const std::function<bool()>& done,
                std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, done);
  }

  // The viewer's actions (published as the real GUI does; need a scene).
  std::int32_t drag(std::int32_t old_id, const tomop::Float9& orientation) {
    const std::int32_t id = next_slice_id_++;
    publish(tomop::RemoveSlice{scene(), old_id});
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slices_.erase(old_id);
      slices_[id] = orientation;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the mouse button's release
    drag_released_ = Clock::now();
    publish(tomop::SetSlice{scene(), id, orientation});
    return id;
  }
  void publish(const tomop::Packet& packet) {
    const std::vector<std::byte> bytes = tomop::encode(packet);
    std::lock_guard<std::mutex> lock(pub_mutex_);
    pub_.send(zmq::buffer(bytes.data(), bytes.size()), zmq::send_flags::none);
  }
  std::int32_t scene() {
    std::lock_guard<std::mutex> lock(mutex_);
    return scenes_.empty() ? -1 : *scenes_.rbegin();
  }
  Clock::time_point drag_released() const { return drag_released_; }

  // Under the lock (inside wait_for) or after the traffic has stopped.
  std::map<std::int32_t, Image>& images() { return images_; }
  std::vector<std::string>& violations() { return violations_; }
  std::map<std::string, tomop::Packet>& controls() { return controls_; }
  std::uint64_t received(tomop::PacketId id) { return received_[static_cast<std::int32_t>(id)]; }
  std::vector<std::int32_t> volume_size() { return volume_size_; }
  std::vector<float> box_max() { return box_max_; }
  std::mutex& mutex() { return mutex_; }

  static tomop::Float9 default_slice(int id) {
    switch (id) {
      case 0:
        return {0, 2, 0, 0, 0, 2, 0, -1, -1};
      case 1:
        return {2, 0, 0, 0, 0, 2, -1, 0, -1};
      default:
        return {2, 0, 0, 0, 2, 0, -1, -1, 0};
    }
  }

 private:
  void run() {
    while (!stopping_) {
      zmq::pollitem_t item{rep_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      if ((item.revents & ZMQ_POLLIN) == 0) continue;
      zmq::message_t request;
      if (!rep_.recv(request, zmq::recv_flags::dontwait)) continue;
      handle(request);
    }
  }

  void violation(std::string what) {
    std::lock_guard<std::mutex> lock(mutex_);
    violations_.push_back(std::move(what));
    changed_.notify_all();
  }

  void answer(std::int32_t value) { rep_.send(zmq::buffer(&value, sizeof value)); }

  void handle(const zmq::message_t& request) {
    const auto* bytes = static_cast<const std::byte*>(request.data());
    Decoded<tomop::Packet> decoded = tomop::decode_packet(bytes, request.size());
    if (!decoded.ok()) {
      // The real REP does not answer an unknown id (its peer then waits forever) and misreads
      // a malformed packet.
      violation("undecodable packet: " + decoded.error().message);
      answer(1);
      return;
    }
    tomop::Packet& packet = decoded.value();
    if (std::holds_alternative<tomop::MakeScene>(packet)) {
      std::int32_t id;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        id = next_scene_id_++;
        scenes_.insert(id);
        ++received_[0x101];
        changed_.notify_all();
      }
      answer(id);
      for (int s = 0; s < 3; ++s) {  // at once: the server's SUB has not subscribed yet
        std::lock_guard<std::mutex> lock(mutex_);
        slices_[s] = default_slice(s);
      }
      announce_slices(id);
      return;
    }
    const std::int32_t packet_id =
        std::visit([](const auto& p) { return static_cast<std::int32_t>(p.kId); }, packet);
    static const std::set<std::int32_t> kAccepted = {0x201, 0x202, 0x203, 0x204, 0x207,
                                                     0x301, 0x307, 0x308, 0x401, 0x501,
                                                     0x502, 0x503, 0x504, 0x505};
    if (kAccepted.count(packet_id) == 0) {
      violation("packet " + tomop::packet_name(packet_id) + " is not taken by the viewer's REP");
      answer(1);
      return;
    }
    const std::int32_t scene = std::visit(
        [](const auto& p) -> std::int32_t {
          if constexpr (std::is_same_v<std::decay_t<decltype(p)>, tomop::MakeScene> ||
                        std::is_same_v<std::decay_t<decltype(p)>, tomop::Projection>) {
            return -1;
          } else {
            return p.scene_id;
          }
        },
        packet);
    answer(1);
    std::lock_guard<std::mutex> lock(mutex_);
    ++received_[packet_id];
    if (scenes_.count(scene) == 0) {
      violations_.push_back(tomop::packet_name(packet_id) + " for scene " + std::to_string(scene) +
                            ", which this viewer did not hand out");
    } else if (auto* slice = std::get_if<tomop::SliceData>(&packet)) {
      const auto pixels = static_cast<std::size_t>(slice->slice_size[0]) *
                          static_cast<std::size_t>(slice->slice_size[1]);
      if (slice->slice_size[0] <= 0 || slice->slice_size[1] <= 0 || slice->data.count != pixels) {
        violations_.push_back("SliceData does not fill its size");
      } else {
        Image& image = images_[slice->slice_id];
        image.width = slice->slice_size[0];
        image.height = slice->slice_size[1];
        image.values = slice->data.to_vector();
        image.arrived = Clock::now();
        ++image.count;
      }
    } else if (auto* volume = std::get_if<tomop::VolumeData>(&packet)) {
      volume_size_.assign(volume->volume_size.begin(), volume->volume_size.end());
    } else if (auto* box = std::get_if<tomop::GeometrySpecification>(&packet)) {
      box_max_.assign(box->volume_max_point.begin(), box->volume_max_point.end());
    } else if (std::holds_alternative<tomop::GroupRequestSlices>(packet)) {
      group_requested_ = true;
    } else if (auto* b = std::get_if<tomop::ParameterBool>(&packet)) {
      controls_[b->parameter_name] = *b;
    } else if (auto* f = std::get_if<tomop::ParameterFloat>(&packet)) {
      controls_[f->parameter_name] = *f;
    } else if (auto* e = std::get_if<tomop::ParameterEnum>(&packet)) {
      controls_[e->parameter_name] = *e;
    }
    changed_.notify_all();
    if (group_requested_) {
      group_requested_ = false;
      announce_slices_locked(scene);
    }
  }

  void announce_slices(std::int32_t scene) {
    std::lock_guard<std::mutex> lock(mutex_);
    announce_slices_locked(scene);
  }
  void announce_slices_locked(std::int32_t scene) {
    for (const auto& [id, orientation] : slices_)
      publish(tomop::SetSlice{scene, id, orientation});
  }

  zmq::context_t context_{1};
  zmq::socket_t rep_{context_, zmq::socket_type::rep};
  zmq::socket_t pub_{context_, zmq::socket_type::pub};
  std::string requests_;
  std::string updates_;
  std::mutex pub_mutex_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::int32_t next_scene_id_;
  std::int32_t next_slice_id_ = 3;
  std::set<std::int32_t> scenes_;
  std::map<std::int32_t, tomop::Float9> slices_;
  std::map<std::int32_t, Image> images_;
  std::map<std::string, tomop::Packet> controls_;
  std::map<std::int32_t, std::uint64_t> received_;
  std::vector<std::int32_t> volume_size_;
  std::vector<float> box_max_;
  std::vector<std::string> violations_;
  bool group_requested_ = false;
  std::atomic<Clock::time_point> drag_released_{};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace slicestream::test
