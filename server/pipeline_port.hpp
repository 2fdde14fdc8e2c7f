// What the endpoints need from the pipeline. Pipeline implements it through PipelineAdapter
// (server.cpp); endpoint tests substitute a recorder, so the endpoints are tested on their own.
#pragma once

#include <cstdint>
#include <string>

#include "pipeline/messages/command.hpp"
#include "pipeline/messages/data_message.hpp"

namespace slicestream {

class PipelinePort {
 public:
  virtual ~PipelinePort() = default;
  // Blocks while the pipeline is full; false when it is stopping (it then counted the message).
  virtual bool submit(DataMessage message) = 0;
  // The callback runs exactly once, possibly on another thread.
  virtual void submit_command(Command command, ReplyCallback on_reply) = 0;
  virtual void report_rejected(const std::string& reason, const std::string& message,
                               std::uint64_t scan_id) = 0;
  // Something the operator should know that lost no accepted message (a warning event).
  virtual void report_warning(const std::string& reason, const std::string& message) = 0;
};

}  // namespace slicestream
