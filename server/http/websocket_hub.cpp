#include "server/http/websocket_hub.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "kernels/steady_clock.hpp"
#include "server/codec/publish_codec.hpp"
#include "server/http/websocket_session.hpp"

namespace slicestream {

WebSocketHub::WebSocketHub(std::shared_ptr<IoMailbox> mailbox, HttpCounters& counters,
                           std::size_t max_events_queued, SharedMemoryBudget budget,
                           Executor* encoder)
    : mailbox_(std::move(mailbox)),
      counters_(counters),
      max_events_queued_(max_events_queued),
      budget_(std::move(budget)),
      encoder_(encoder) {}

void WebSocketHub::publish_slice(const SliceImage& slice) {
  if (skipped_without_sessions(kSliceTopic, slice.slice_id)) return;
  // Shared values are the image's own buffer, under the image's charge; own ones are copied.
  offer(kSliceTopic, slice.slice_id, encode_slice(slice, steady_now_ns()), slice.values,
        slice.orientation.values, slice.values.is_shared() ? slice.memory : nullptr);
}

void WebSocketHub::publish_shared_slice(std::shared_ptr<const SliceImage> slice) {
  if (skipped_without_sessions(kSliceTopic, slice->slice_id)) return;
  offer(kSliceTopic, slice->slice_id, encode_slice(*slice, steady_now_ns()), shared_values(slice),
        slice->orientation.values, slice->memory);
}

void WebSocketHub::publish_refined(const RefinedSliceImage& refined) {
  if (skipped_without_sessions(kRefinedTopic, refined.slice.slice_id)) return;
  offer(kRefinedTopic, refined.slice.slice_id, encode_refined(refined, steady_now_ns()),
        refined.slice.values, refined.slice.orientation.values);
}

void WebSocketHub::publish_preview(const PreviewVolume& preview) {
  if (skipped_without_sessions(kPreviewTopic, 0)) return;
  offer(kPreviewTopic, 0, encode_preview(preview, steady_now_ns()), preview.values);
}

void WebSocketHub::publish_event(const ServerEvent& event) {
  if (session_count_.load() == 0) return;
  auto message = std::make_shared<const std::string>(
      event_message(encode_event(event, steady_now_ns()).event()));
  std::lock_guard<std::mutex> lock(mutex_);
  if (incoming_events_.size() >= max_events_queued_) {
    incoming_events_.pop_front();
    ++events_dropped_;
    ++counters_.websocket_events_dropped;
  }
  incoming_events_.push_back(std::move(message));
  schedule_delivery();
}

bool WebSocketHub::skipped_without_sessions(const char* type, std::uint32_t slice_id) {
  if (session_count_.load() != 0) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  // Checked again under the lock that add() takes: a session joining now either counts here or
  // finds this stream marked stale.
  if (session_count_.load() != 0) return false;
  stale_.insert({type, slice_id});
  return true;
}

void WebSocketHub::offer(const char* type, std::uint32_t slice_id, v1::PublishHeader header,
                         SliceValues values, std::array<float, 9> place,
                         std::shared_ptr<MemoryCharge> charge) {
  if (budget_ && !charge) {
    charge = budget_->try_charge(values.size() * sizeof(float));
    if (!charge) {
      ++counters_.websocket_updates_over_budget;
      std::lock_guard<std::mutex> lock(mutex_);
      ++updates_over_budget_;
      schedule_delivery();
      return;
    }
  }
  auto update = std::make_shared<ImageUpdate>(type, slice_id, std::move(header), std::move(values),
                                              place, budget_, std::move(charge), encoder_);
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = incoming_[{update->type(), update->slice_id()}];
  if (slot) ++counters_.websocket_updates_superseded;
  slot = std::move(update);
  schedule_delivery();
}

void WebSocketHub::schedule_delivery() {
  if (delivery_scheduled_) return;
  delivery_scheduled_ = mailbox_->post([this] { deliver(); });
}

void WebSocketHub::deliver() {
  std::map<StreamKey, std::shared_ptr<ImageUpdate>> updates;
  std::deque<std::shared_ptr<const std::string>> events;
  std::uint64_t dropped = 0;
  std::uint64_t over_budget = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    updates.swap(incoming_);
    events.swap(incoming_events_);
    std::swap(dropped, events_dropped_);
    std::swap(over_budget, updates_over_budget_);
    delivery_scheduled_ = false;
  }
  if (dropped > 0) {
    events.push_back(std::make_shared<const std::string>(notice_message(
        fmt::format("{} events were dropped before the server could send them", dropped))));
  }
  if (over_budget > 0) {
    events.push_back(std::make_shared<const std::string>(notice_message(fmt::format(
        "{} image updates were not passed on: the server's memory budget had no room for "
        "their copies (--memory-limit-mb); later updates of the same images are",
        over_budget))));
  }
  for (auto& [key, update] : updates)
    latest_[key] = update;
  for (const auto& weak : sessions_) {
    const auto session = weak.lock();
    if (!session) continue;
    for (const auto& [key, update] : updates)
      session->offer(update);
    for (const auto& event : events)
      session->offer_event(event);
  }
}

void WebSocketHub::add(const std::shared_ptr<WebSocketSession>& session) {
  sessions_.push_back(session);
  std::set<StreamKey> stale;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++session_count_;
    stale.swap(stale_);
  }
  // Streams published while no session was open have a newer image than the one kept here: the
  // joining viewer gets none of them rather than an old one (it asks for what it lacks).
  for (const auto& key : stale)
    latest_.erase(key);
  for (const auto& [key, update] : latest_)
    session->offer(update);
}

void WebSocketHub::remove(const WebSocketSession* session) {
  const auto before = sessions_.size();
  sessions_.erase(std::remove_if(sessions_.begin(), sessions_.end(),
                                 [&](const std::weak_ptr<WebSocketSession>& weak) {
                                   const auto locked = weak.lock();
                                   return !locked || locked.get() == session;
                                 }),
                  sessions_.end());
  session_count_ -= static_cast<int>(before - sessions_.size());
}

}  // namespace slicestream
