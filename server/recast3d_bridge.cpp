#include "server/recast3d_bridge.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <utility>

#include "kernels/thread_name.hpp"
#include "server/tomop/recast3d_controls.hpp"
#include "server/tomop/recast3d_slice_geometry.hpp"
#include "server/tomop/tomop_codec.hpp"
#include "wire/wire_text.hpp"

namespace slicestream::tomop {

namespace {

constexpr auto kRetryInterval = std::chrono::seconds(1);
// The viewer re-publishes its slices on GroupRequestSlices; one that answers nothing within this
// time (its subscription had not reached it yet) is asked again, a few times.
constexpr auto kGroupRequestInterval = std::chrono::seconds(1);
constexpr int kGroupRequests = 5;
constexpr auto kIdleWait = std::chrono::milliseconds(50);
// How often images held back by the rate limit are looked at again.
constexpr auto kHeldBackWait = std::chrono::milliseconds(2);
constexpr int kRefineIterations = kDefaultRefinementIterations;
constexpr double kRefineInterval_s = 1;

bool same(const Vec3& a, const Vec3& b) {
  return a.x == b.x && a.y == b.y && a.z == b.z;
}

bool same(const StartedScan& a, const StartedScan& b) {
  return same(a.volume.min_mm, b.volume.min_mm) && same(a.volume.max_mm, b.volume.max_mm) &&
         a.detector == b.detector;
}

}  // namespace

std::string default_updates_address(const std::string& requests) {
  const std::size_t colon = requests.rfind(':');
  if (colon == std::string::npos || colon + 1 >= requests.size()) return {};
  const std::string port = requests.substr(colon + 1);
  if (!std::all_of(port.begin(), port.end(), [](char c) { return std::isdigit(c) != 0; }) ||
      port.size() > 5) {
    return {};
  }
  return requests.substr(0, colon + 1) + std::to_string(std::stoi(port) + 1);
}

Recast3dBridge::Recast3dBridge(zmq::context_t& context, const Recast3dConfig& config,
                               int fallback_slice_size, int max_slice_side, PipelinePort& pipeline,
                               ServerCounters& counters, SharedMemoryBudget memory)
    : config_(config),
      fallback_slice_size_(fallback_slice_size),
      max_slice_side_(max_slice_side),
      pipeline_(pipeline),
      counters_(counters),
      memory_(std::move(memory)),
      session_(context, config.requests,
               config.updates.empty() ? default_updates_address(config.requests) : config.updates,
               config.reply_timeout),
      replies_(std::make_shared<ReplyQueue>()) {}

Recast3dBridge::~Recast3dBridge() {
  stop();
}

void Recast3dBridge::start() {
  thread_ = std::thread([this] { run(); });
}

void Recast3dBridge::stop() {
  stopping_ = true;
  replies_->wake();
  if (thread_.joinable()) thread_.join();
  replies_->close();
}

// ------------------------------------------------------------------ publish thread (PublishSink)

bool Recast3dBridge::charge_kept(std::size_t bytes, std::shared_ptr<MemoryCharge>* charge) {
  if (!memory_) return true;
  *charge = memory_->try_charge(bytes);
  if (*charge) return true;
  ++counters_.recast3d_over_budget;
  std::uint64_t suppressed = 0;
  if (over_budget_log_.allow(&suppressed)) {
    spdlog::warn("RECAST3D bridge: an image for the viewer was not kept: {}{}",
                 memory_->shortfall(bytes, "its copy"),
                 suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
  }
  return false;
}

bool Recast3dBridge::wanted(std::uint32_t slice_id) const {
  if (outbox_.live.count(slice_id) == 0) return false;
  return !(outbox_.refined_slice == slice_id && outbox_.refined_arrived);
}

void Recast3dBridge::publish_slice(const SliceImage& slice) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!wanted(slice.slice_id)) return;
    std::shared_ptr<MemoryCharge> charge;
    if (!charge_kept(2 * slice.values.size() * sizeof(float), &charge)) return;
    SliceImage& kept = outbox_.slices[slice.slice_id];
    kept = slice;
    kept.memory = std::move(charge);  // the copy's own charge, not the publication's
  }
  replies_->wake();
}

void Recast3dBridge::publish_shared_slice(std::shared_ptr<const SliceImage> slice) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!wanted(slice->slice_id)) return;
    std::shared_ptr<MemoryCharge> charge;
    if (!charge_kept(slice->values.size() * sizeof(float), &charge)) return;
    // What send_due reads; the values stay where they are, and the image (with its own charge)
    // lives as long as this view of them.
    SliceImage kept;
    kept.slice_id = slice->slice_id;
    kept.width = slice->width;
    kept.height = slice->height;
    kept.values = shared_values(slice);
    kept.memory = std::move(charge);  // the packet's
    outbox_.slices[slice->slice_id] = std::move(kept);
  }
  replies_->wake();
}

void Recast3dBridge::publish_refined(const RefinedSliceImage& refined) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (outbox_.refined_slice != refined.slice.slice_id) return;
    outbox_.refined_arrived = true;
    std::shared_ptr<MemoryCharge> charge;
    if (!charge_kept(2 * refined.slice.values.size() * sizeof(float), &charge)) return;
    SliceImage& kept = outbox_.slices[refined.slice.slice_id];
    kept = refined.slice;
    kept.memory = std::move(charge);
  }
  replies_->wake();
}

void Recast3dBridge::publish_preview(const PreviewVolume& preview) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<MemoryCharge> charge;
    if (!charge_kept(2 * preview.values.size() * sizeof(float), &charge)) return;
    outbox_.preview = preview;
    outbox_.preview->memory = std::move(charge);
  }
  replies_->wake();
}

void Recast3dBridge::publish_event(const ServerEvent& event) {
  if (event.kind != EventKind::kScanStarted || !event.started) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    outbox_.started = event.started;
  }
  replies_->wake();
}

// ------------------------------------------------------------------------------ bridge thread

void Recast3dBridge::run() {
  name_this_thread("ss-recast3d");
  spdlog::info(
      "RECAST3D bridge: viewer at {} (updates {})", config_.requests,
      config_.updates.empty() ? default_updates_address(config_.requests) : config_.updates);
  // The parameters in force, for the controls (an empty SetParameters changes nothing).
  submit(SetParametersCommand{}, Pending::kParameters, 0);
  while (!stopping_) {
    try {
      step();
    } catch (const zmq::error_t& error) {
      if (error.num() == ETERM) break;
      spdlog::error("RECAST3D bridge: {}", error.what());
      end_session(error.what());
    } catch (const std::exception& error) {
      spdlog::error("RECAST3D bridge: {}", error.what());
      end_session(error.what());
    }
  }
  spdlog::info("RECAST3D bridge stopped");
}

void Recast3dBridge::step() {
  const Clock::time_point now = Clock::now();
  if (!session_.scene()) {
    if (had_scene_) end_session(session_.why());
    if (!killed_ && now >= retry_at_) try_start_session();
  }
  zmq::pollitem_t items[2] = {{session_.updates().handle(), 0, ZMQ_POLLIN, 0},
                              {nullptr, replies_->fd(), ZMQ_POLLIN, 0}};
  zmq::poll(items, 2, std::chrono::duration_cast<std::chrono::milliseconds>(next_wait(now)));
  for (CompletedCommand& done : replies_->take_all()) {
    const auto it = pending_.find(done.token);
    if (it == pending_.end()) continue;
    const auto [what, slice_id] = it->second;
    pending_.erase(it);
    on_reply(what, slice_id, done.reply);
  }
  while (std::optional<zmq::message_t> update = session_.receive_update()) {
    handle_update(*update);
  }
  std::optional<StartedScan> started;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    started.swap(outbox_.started);
  }
  if (started) on_scan_started(*started);
  if (!session_.scene()) return;
  if (group_requests_left_ > 0 && Clock::now() >= group_request_at_) {
    --group_requests_left_;
    group_request_at_ = Clock::now() + kGroupRequestInterval;
    send(GroupRequestSlices{*session_.scene(), 1});
  }
  send_due(Clock::now());
}

Recast3dBridge::Clock::duration Recast3dBridge::next_wait(Clock::time_point now) const {
  Clock::duration wait = held_back_ ? Clock::duration(kHeldBackWait) : Clock::duration(kIdleWait);
  if (group_requests_left_ > 0) wait = std::min<Clock::duration>(wait, group_request_at_ - now);
  return std::max<Clock::duration>(wait, Clock::duration::zero());
}

void Recast3dBridge::try_start_session() {
  retry_at_ = Clock::now() + kRetryInterval;
  const std::optional<std::int32_t> scene = session_.make_scene(config_.scene_name);
  if (!scene) {
    ++counters_.recast3d_unreachable;
    if (counters_.recast3d_unreachable == 1 || had_scene_) {
      spdlog::warn("RECAST3D bridge: no scene ({}); retrying every second", session_.why());
    }
    had_scene_ = false;
    return;
  }
  had_scene_ = true;
  ++counters_.recast3d_scenes;
  spdlog::info("RECAST3D bridge: scene {} made in the viewer at {}", *scene, config_.requests);
  // A previous viewer's slices are not this viewer's: it announces its own.
  for (const auto& [id, slice] : slices_) {
    if (id >= 0)
      submit(RemoveSliceCommand{static_cast<std::uint32_t>(id)}, Pending::kRemoveSlice,
             static_cast<std::uint32_t>(id));
  }
  slices_.clear();
  last_sent_.clear();
  refine_on_ = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    outbox_.live.clear();
    outbox_.slices.clear();
    outbox_.refined_slice.reset();
  }
  send_controls();
  send_scene_setup();
  if (last_preview_) {
    const PreviewVolume& p = *last_preview_;
    send(VolumeData{*scene, {p.size_x, p.size_y, p.size_z}, FloatView::of(p.values)});
  }
}

void Recast3dBridge::end_session(const std::string& why) {
  if (!had_scene_) return;
  had_scene_ = false;
  retry_at_ = Clock::now() + kRetryInterval;
  group_requests_left_ = 0;
  held_back_ = false;
  spdlog::warn("RECAST3D bridge: scene lost ({}); making a new one when the viewer answers", why);
}

void Recast3dBridge::send_scene_setup() {
  const std::optional<std::int32_t> scene = session_.scene();
  if (!scene) return;
  if (scan_) {
    const auto [min, max] = display_box(scan_->volume);
    send(GeometrySpecification{*scene, min, max});
  }
  // The viewer's own SetSlice packets may have raced our subscription: ask for them again.
  group_requests_left_ = kGroupRequests;
  group_request_at_ = Clock::now();
}

void Recast3dBridge::send_controls() {
  const std::optional<std::int32_t> scene = session_.scene();
  if (!scene) return;
  for (const Packet& packet : control_packets(*scene, parameters_, refine_on_)) {
    if (!send(packet)) return;
  }
}

void Recast3dBridge::handle_update(const zmq::message_t& message) {
  const std::optional<std::int32_t> scene = session_.scene();
  Decoded<Packet> decoded =
      decode_packet(static_cast<const std::byte*>(message.data()), message.size());
  if (!decoded.ok()) {
    ++counters_.recast3d_refused;
    spdlog::warn("RECAST3D bridge: an update from the viewer was refused ({}): {}",
                 decoded.error().reason, escape_wire_text(decoded.error().message, 200));
    return;
  }
  const Packet& packet = decoded.value();
  const std::int32_t packet_scene = std::visit(
      [](const auto& p) -> std::int32_t {
        if constexpr (std::is_same_v<std::decay_t<decltype(p)>, MakeScene> ||
                      std::is_same_v<std::decay_t<decltype(p)>, Projection>) {
          return -1;
        } else {
          return p.scene_id;
        }
      },
      packet);
  if (!scene || packet_scene != *scene) return;  // an earlier scene's, or another server's
  if (const auto* set = std::get_if<SetSlice>(&packet)) {
    group_requests_left_ = 0;  // the viewer has answered
    on_set_slice(set->slice_id, set->orientation);
  } else if (const auto* remove = std::get_if<RemoveSlice>(&packet)) {
    on_remove_slice(remove->slice_id);
  } else if (std::holds_alternative<KillScene>(packet)) {
    spdlog::info("RECAST3D bridge: the viewer closed scene {}; a new one at the next scan", *scene);
    session_.forget_scene();
    had_scene_ = false;
    killed_ = true;
  } else {
    on_control(packet);
  }
}

void Recast3dBridge::on_set_slice(std::int32_t id, const Float9& normalized) {
  const std::string problem = id < 0 ? "a negative slice id" : check_normalized(normalized);
  if (!problem.empty()) {
    ++counters_.recast3d_refused;
    spdlog::warn("RECAST3D bridge: SetSlice {} refused: {}", id, problem);
    return;
  }
  ViewerSlice& slice = slices_[id];
  if (slice.applied && slice.normalized == normalized) return;  // a re-announcement
  slice.normalized = normalized;
  slice.applied = false;
  apply_slice(static_cast<std::uint32_t>(id), slice);
}

void Recast3dBridge::apply_slice(std::uint32_t id, ViewerSlice& slice) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    outbox_.live.insert(id);
  }
  if (!scan_) return;  // placed when the first scan says where its box is
  SliceOrientation normalized;
  normalized.values = slice.normalized;
  const SliceOrientation world = from_normalized(normalized, scan_->volume);
  int longest = config_.slice_size > 0
                    ? config_.slice_size
                    : (fallback_slice_size_ > 0 ? fallback_slice_size_ : scan_->detector.cols);
  longest = std::clamp(longest, 1, max_slice_side_);
  const auto [width, height] = slice_pixels(world, longest);
  slice.applied = true;
  submit(SetSliceCommand{id, world, width, height}, Pending::kSetSlice, id);
  if (refine_on_ && is_axial(slice.normalized)) set_refinement(true);
}

void Recast3dBridge::on_remove_slice(std::int32_t id) {
  if (id < 0 || slices_.erase(id) == 0) return;
  const auto uid = static_cast<std::uint32_t>(id);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    outbox_.live.erase(uid);
    outbox_.slices.erase(uid);
    if (outbox_.refined_slice == uid) outbox_.refined_slice.reset();
  }
  last_sent_.erase(uid);
  submit(RemoveSliceCommand{uid}, Pending::kRemoveSlice, uid);
}

void Recast3dBridge::on_control(const Packet& packet) {
  const ControlChange change = control_change(packet);
  if (!change.refused.empty()) {
    ++counters_.recast3d_refused;
    spdlog::warn("RECAST3D bridge: control change refused: {}",
                 escape_wire_text(change.refused, 200));
    send_controls();
    return;
  }
  if (change.parameters) submit(*change.parameters, Pending::kParameters, 0);
  if (change.refine) {
    refine_on_ = *change.refine;
    set_refinement(refine_on_);
  }
}

void Recast3dBridge::set_refinement(bool on) {
  // The viewer's newest axial slice (its ids grow as slices are made).
  std::optional<std::uint32_t> axial;
  for (const auto& [id, slice] : slices_) {
    if (slice.applied && is_axial(slice.normalized)) axial = static_cast<std::uint32_t>(id);
  }
  std::optional<std::uint32_t> previous;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    previous = outbox_.refined_slice;
    outbox_.refined_slice = on ? axial : std::nullopt;
    outbox_.refined_arrived = false;
  }
  if (previous && previous != axial) {
    submit(SetRefinementCommand{*previous, false, kRefineIterations, kRefineInterval_s, {}},
           Pending::kRefinement, *previous);
  }
  if (!axial) {
    if (on) spdlog::warn("RECAST3D bridge: refinement on, but the viewer shows no axial slice");
    return;
  }
  submit(SetRefinementCommand{*axial, on, kRefineIterations, kRefineInterval_s, {}},
         Pending::kRefinement, *axial);
}

void Recast3dBridge::on_scan_started(const StartedScan& scan) {
  const bool moved = !scan_ || !same(*scan_, scan);
  scan_ = scan;
  if (killed_) {
    killed_ = false;
    retry_at_ = Clock::now();
  }
  if (moved) {
    for (auto& [id, slice] : slices_) {
      slice.applied = false;
      apply_slice(static_cast<std::uint32_t>(id), slice);
    }
  }
  send_scene_setup();
}

void Recast3dBridge::on_reply(Pending what, std::uint32_t slice_id, const CommandReply& reply) {
  if (what == Pending::kParameters && reply.status.ok() && reply.parameters) {
    parameters_ = *reply.parameters;
    return;
  }
  if (reply.status.ok() || what == Pending::kRemoveSlice) return;
  ++counters_.recast3d_refused;
  spdlog::warn("RECAST3D bridge: the server refused the viewer's change (slice {}): {} {}",
               slice_id, to_string(reply.status.code), escape_wire_text(reply.status.message, 200));
  if (what == Pending::kSetSlice) {
    const auto it = slices_.find(static_cast<std::int32_t>(slice_id));
    if (it != slices_.end()) it->second.applied = false;
  }
  if (what == Pending::kRefinement) refine_on_ = false;
  if (what != Pending::kSetSlice) send_controls();  // back to the values in force
}

void Recast3dBridge::send_due(Clock::time_point now) {
  const std::optional<std::int32_t> scene = session_.scene();
  const Clock::duration period = config_.rate_hz > 0
                                     ? std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(1 / config_.rate_hz))
                                     : Clock::duration::zero();
  std::vector<SliceImage> due;
  std::optional<PreviewVolume> preview;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = outbox_.slices.begin(); it != outbox_.slices.end();) {
      const auto sent = last_sent_.find(it->first);
      if (sent != last_sent_.end() && now - sent->second < period) {
        ++it;
        continue;
      }
      due.push_back(std::move(it->second));
      it = outbox_.slices.erase(it);
    }
    preview.swap(outbox_.preview);
    held_back_ = !outbox_.slices.empty();
  }
  for (const SliceImage& image : due) {
    const std::size_t pixels = static_cast<std::size_t>(std::max(image.width, 0)) *
                               static_cast<std::size_t>(std::max(image.height, 0));
    // The viewer would read past an image that does not fill its size.
    if (pixels == 0 || image.values.size() != pixels) continue;
    last_sent_[image.slice_id] = now;
    if (!send(SliceData{*scene,
                        static_cast<std::int32_t>(image.slice_id),
                        {image.width, image.height},
                        FloatView::of(image.values),
                        false})) {
      return;
    }
    ++counters_.recast3d_slices_sent;
  }
  if (preview) {
    const std::size_t voxels = static_cast<std::size_t>(std::max(preview->size_x, 0)) *
                               static_cast<std::size_t>(std::max(preview->size_y, 0)) *
                               static_cast<std::size_t>(std::max(preview->size_z, 0));
    if (voxels == 0 || preview->values.size() != voxels) return;
    last_preview_ = std::move(preview);
    const PreviewVolume& p = *last_preview_;
    if (send(VolumeData{*scene, {p.size_x, p.size_y, p.size_z}, FloatView::of(p.values)})) {
      ++counters_.recast3d_volumes_sent;
    }
  }
}

bool Recast3dBridge::send(const Packet& packet) {
  if (session_.send(packet)) return true;
  std::uint64_t suppressed = 0;
  if (log_throttle_.allow(&suppressed)) {
    spdlog::warn("RECAST3D bridge: the viewer did not take a packet ({}){}", session_.why(),
                 suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
  }
  return false;
}

void Recast3dBridge::submit(Command command, Pending what, std::uint32_t slice_id) {
  const std::uint64_t token = next_token_++;
  pending_.emplace(token, std::make_pair(what, slice_id));
  pipeline_.submit_command(std::move(command), [queue = replies_, token](CommandReply reply) {
    queue->push({token, std::move(reply)});
  });
}

}  // namespace slicestream::tomop
