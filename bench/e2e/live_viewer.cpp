#include "live_viewer.hpp"

#include <utility>

#include "kernels/steady_clock.hpp"

namespace slicestream::bench {
namespace {
// How often the reader looks whether it should stop while nothing arrives.
constexpr int kReceiveTimeoutMs = 50;
}  // namespace

LiveViewer::LiveViewer(client::SliceSubscriber& subscriber)
    : subscriber_(subscriber), reader_([this] { read(); }) {}

LiveViewer::~LiveViewer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  reader_.join();
}

void LiveViewer::expect(Match match) {
  std::lock_guard<std::mutex> lock(mutex_);
  match_ = std::move(match);
  arrival_.reset();
}

std::optional<LiveViewer::Arrival> LiveViewer::wait(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  arrived_.wait_until(lock, deadline, [&] { return arrival_.has_value(); });
  std::optional<Arrival> arrival = std::move(arrival_);
  arrival_.reset();
  match_ = nullptr;
  return arrival;
}

std::uint64_t LiveViewer::slices_received() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slices_received_;
}

std::vector<double> LiveViewer::publication_to_decoded_ms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return publication_to_decoded_ms_;
}

std::uint64_t LiveViewer::slice_bytes_received() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slice_bytes_received_;
}

std::uint64_t LiveViewer::malformed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return malformed_;
}

void LiveViewer::read() {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
    }
    std::optional<client::Publication> publication;
    try {
      publication = subscriber_.receive(kReceiveTimeoutMs);
    } catch (const client::ProtocolError&) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++malformed_;
      continue;
    }
    if (!publication || publication->topic != client::Topic::kSlice) continue;
    const Clock::time_point decoded = Clock::now();
    const std::uint64_t decoded_ns = steady_now_ns();
    const std::uint64_t published_ns = publication->header.slice().published_ns();
    std::lock_guard<std::mutex> lock(mutex_);
    ++slices_received_;
    const bool half = publication->header.payload_encoding() == v1::PAYLOAD_ENCODING_FLOAT16;
    slice_bytes_received_ += publication->values.size() * (half ? 2 : sizeof(float));  // wire
    if (published_ns > 0 && published_ns <= decoded_ns) {
      publication_to_decoded_ms_.push_back(1e-6 * static_cast<double>(decoded_ns - published_ns));
    }
    if (match_ && !arrival_ && match_(publication->header.slice())) {
      arrival_ = Arrival{publication->header.slice(), publication->values.size(), decoded};
      arrived_.notify_all();
    }
  }
}

}  // namespace slicestream::bench
