// Hands every publication to several sinks in turn: the ZeroMQ publisher and, when the HTTP
// endpoint is on, its WebSocket hub. Sinks are added before the pipeline starts.
#pragma once

#include <vector>

#include "pipeline/messages/publish_sink.hpp"

namespace slicestream {

class PublishFanout : public PublishSink {
 public:
  void add(PublishSink& sink) { sinks_.push_back(&sink); }

  void publish_slice(const SliceImage& slice) override {
    for (PublishSink* sink : sinks_)
      sink->publish_slice(slice);
  }
  void publish_preview(const PreviewVolume& preview) override {
    for (PublishSink* sink : sinks_)
      sink->publish_preview(preview);
  }
  void publish_refined(const RefinedSliceImage& refined) override {
    for (PublishSink* sink : sinks_)
      sink->publish_refined(refined);
  }
  void publish_event(const ServerEvent& event) override {
    for (PublishSink* sink : sinks_)
      sink->publish_event(event);
  }

 private:
  std::vector<PublishSink*> sinks_;
};

}  // namespace slicestream
