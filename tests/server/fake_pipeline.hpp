// A PipelinePort that records what the endpoints hand over and answers commands from its own
// thread (as the real pipeline does), so endpoint tests need no reconstruction.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/pipeline_port.hpp"

namespace slicestream::test {

class FakePipeline : public PipelinePort {
 public:
  using Responder = std::function<CommandReply(const Command&)>;

  FakePipeline() : worker_([this] { answer_loop(); }) {}
  ~FakePipeline() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      gate_open_ = true;
    }
    changed_.notify_all();
    worker_.join();
  }

  bool submit(DataMessage message) override {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return gate_open_; });
    messages_.push_back(std::move(message));
    changed_.notify_all();
    return true;
  }

  void submit_command(Command command, ReplyCallback on_reply) override {
    std::lock_guard<std::mutex> lock(mutex_);
    commands_.push_back(command);
    if (hold_replies_) {
      held_.push_back(std::move(on_reply));
      return;
    }
    queue_.push_back({std::move(command), std::move(on_reply)});
    changed_.notify_all();
  }

  void report_rejected(const std::string& reason, const std::string& message,
                       std::uint64_t scan_id) override {
    std::lock_guard<std::mutex> lock(mutex_);
    rejected_.push_back({reason, message, scan_id});
    changed_.notify_all();
  }

  void report_warning(const std::string& reason, const std::string& message) override {
    std::lock_guard<std::mutex> lock(mutex_);
    warnings_.push_back({reason, message, 0});
    changed_.notify_all();
  }

  struct Rejection {
    std::string reason;
    std::string message;
    std::uint64_t scan_id;
  };

  void set_responder(Responder responder) {
    std::lock_guard<std::mutex> lock(mutex_);
    responder_ = std::move(responder);
  }
  void hold_replies() {
    std::lock_guard<std::mutex> lock(mutex_);
    hold_replies_ = true;
  }
  void close_gate() {
    std::lock_guard<std::mutex> lock(mutex_);
    gate_open_ = false;
  }
  void open_gate() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      gate_open_ = true;
    }
    changed_.notify_all();
  }

  // Waits (up to 10 s) until `ready` holds; returns whether it did.
  bool wait_for(const std::function<bool()>& ready) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(10), ready);
  }
  std::size_t message_count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return messages_.size();
  }
  std::vector<DataMessage> take_messages() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::move(messages_);
  }
  std::vector<Rejection> rejections() {
    std::lock_guard<std::mutex> lock(mutex_);
    return rejected_;
  }
  std::vector<Rejection> warnings() {
    std::lock_guard<std::mutex> lock(mutex_);
    return warnings_;
  }
  std::vector<Command> commands() {
    std::lock_guard<std::mutex> lock(mutex_);
    return commands_;
  }

  // Accessors for wait_for predicates (the lock is held there).
  std::size_t messages_locked() const { return messages_.size(); }
  std::size_t rejections_locked() const { return rejected_.size(); }
  std::size_t warnings_locked() const { return warnings_.size(); }

 private:
  struct Queued {
    Command command;
    ReplyCallback on_reply;
  };

  void answer_loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      Queued next = std::move(queue_.front());
      queue_.pop_front();
      Responder responder = responder_;
      lock.unlock();
      CommandReply reply = responder ? responder(next.command) : CommandReply{};
      next.on_reply(std::move(reply));
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<DataMessage> messages_;
  std::vector<Rejection> rejected_;
  std::vector<Rejection> warnings_;
  std::vector<Command> commands_;
  std::deque<Queued> queue_;
  std::vector<ReplyCallback> held_;
  Responder responder_;
  bool hold_replies_ = false;
  bool gate_open_ = true;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace slicestream::test
