// A ServerPort for the HTTP endpoint's tests: records the requests it gets and answers them
// from a thread of its own (as the pipeline does), or holds them back.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "server/codec/reply_codec.hpp"
#include "server/http/server_port.hpp"

namespace slicestream::test {

class FakeServerPort : public ServerPort {
 public:
  using Responder = std::function<WireReply(const v1::Request&)>;

  FakeServerPort() : worker_([this] { run(); }) {}
  ~FakeServerPort() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }

  void request(const std::string& endpoint, const v1::Request& request,
               std::function<void(WireReply)> on_reply) override {
    std::lock_guard<std::mutex> lock(mutex_);
    requests_.push_back(request);
    endpoints_.push_back(endpoint);
    if (hold_) {
      held_.push_back([on_reply] { on_reply(WireReply{}); });
      return;
    }
    Responder responder = responder_;
    queue_.push_back(
        [request, responder, on_reply] { on_reply(responder ? responder(request) : WireReply{}); });
    changed_.notify_all();
  }
  WireReply refuse(const std::string& endpoint, std::uint64_t request_id, const std::string& kind,
                   const WireError& error) override {
    std::lock_guard<std::mutex> lock(mutex_);
    refusals_.push_back({endpoint, kind, error.reason});
    return {encode_error_reply(request_id, error), std::nullopt};
  }
  void status(std::function<void(CommandReply)> on_reply) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (hold_) {
      held_.push_back([on_reply] { on_reply(CommandReply{}); });
      return;
    }
    StatusReport report = report_;
    queue_.push_back([report, on_reply] {
      CommandReply reply;
      reply.report = report;
      on_reply(reply);
    });
    changed_.notify_all();
  }
  CounterMap server_counters() const override { return {{"requests", 3}, {"replies", 2}}; }
  std::map<RequestCountKey, std::uint64_t> request_counts() const override {
    return {{{"websocket", "get_status", "ok"}, 4}, {{"requests", "set_slice", "not_found"}, 1}};
  }

  void set_responder(Responder responder) {
    std::lock_guard<std::mutex> lock(mutex_);
    responder_ = std::move(responder);
  }
  void set_report(StatusReport report) {
    std::lock_guard<std::mutex> lock(mutex_);
    report_ = std::move(report);
  }
  void hold() {
    std::lock_guard<std::mutex> lock(mutex_);
    hold_ = true;
  }
  // Answers everything held (with empty replies) and stops holding.
  void release() {
    std::vector<std::function<void()>> held;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      hold_ = false;
      held.swap(held_);
    }
    for (auto& answer : held)
      answer();
  }
  std::vector<v1::Request> requests() {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }
  std::vector<std::string> endpoints() {
    std::lock_guard<std::mutex> lock(mutex_);
    return endpoints_;
  }
  struct Refusal {
    std::string endpoint, kind, reason;
  };
  std::vector<Refusal> refusals() {
    std::lock_guard<std::mutex> lock(mutex_);
    return refusals_;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto next = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      next();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::function<void()>> held_;
  std::vector<v1::Request> requests_;
  std::vector<std::string> endpoints_;
  std::vector<Refusal> refusals_;
  Responder responder_;
  StatusReport report_;
  bool hold_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace slicestream::test
