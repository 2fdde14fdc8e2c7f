// One PublishSink that hands every publication to several (the PUB socket, the RECAST3D bridge, the
// WebSocket hub). Sinks are added before the pipeline starts; each must return quickly (none may
// wait on a peer).
#pragma once

#include <memory>
#include <vector>

#include "pipeline/messages/publish_sink.hpp"

namespace slicestream {

class PublishFanout final : public PublishSink {
 public:
  void add(PublishSink& sink) { sinks_.push_back(&sink); }

  void publish_slice(const SliceImage& slice) override {
    for (PublishSink* sink : sinks_)
      sink->publish_slice(slice);
  }
  void publish_shared_slice(std::shared_ptr<const SliceImage> slice) override {
    for (PublishSink* sink : sinks_)
      sink->publish_shared_slice(slice);
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
