#include "pipeline/stages/on_demand_slices.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace slicestream {
namespace {

// Rows [row_begin, row_begin + rows) of `grid` as a grid of their own: the same pixel centres.
GridSpec row_band(const GridSpec& grid, int row_begin, int rows) {
  const float begin = static_cast<float>(row_begin) / static_cast<float>(grid.height);
  const float extent = static_cast<float>(rows) / static_cast<float>(grid.height);
  GridSpec band = grid;
  band.base = {grid.base.x + grid.y_axis.x * begin, grid.base.y + grid.y_axis.y * begin,
               grid.base.z + grid.y_axis.z * begin};
  band.y_axis = {grid.y_axis.x * extent, grid.y_axis.y * extent, grid.y_axis.z * extent};
  band.height = rows;
  return band;
}

CommandReply reply_of(StatusCode code, std::string message) {
  CommandReply reply;
  reply.status = Status{code, std::move(message)};
  return reply;
}

}  // namespace

OnDemandSlices::~OnDemandSlices() {
  cancel_all(StatusCode::kUnavailable, "the server is shutting down");
}

void OnDemandSlices::add(SliceImage image, ReplyCallback on_reply) {
  Request request;
  request.image = std::move(image);
  request.on_reply = std::move(on_reply);
  requests_.push_back(std::move(request));
}

int OnDemandSlices::band_rows(int width, int height, std::size_t slots) {
  const std::size_t per_row = static_cast<std::size_t>(width) * std::max<std::size_t>(slots, 1);
  const std::size_t rows = std::max<std::size_t>(1, kUnitUpdates / per_row);
  return static_cast<int>(std::min<std::size_t>(rows, static_cast<std::size_t>(height)));
}

void OnDemandSlices::run_unit(const std::vector<int>& slots, float scale,
                              const WindowContent& content) {
  if (requests_.empty()) return;
  Request& request = requests_.front();
  SliceImage& image = request.image;
  const int rows =
      std::min(band_rows(image.width, image.height, slots.size()), image.height - request.next_row);
  try {
    // A target's grid is fixed: each band gets its own (its allocation is small beside its
    // backprojection).
    const GridSpec grid =
        row_band(slice_grid(image.orientation, image.width, image.height), request.next_row, rows);
    const std::unique_ptr<ReconTarget> band = backend_.create_target(grid);
    backend_.backproject_store(slots, *band, scale, /*accumulate=*/false, 0, 1);
    backend_.read_target(*band, image.values.data() + static_cast<std::size_t>(request.next_row) *
                                                          static_cast<std::size_t>(image.width));
  } catch (const BackendError& error) {
    answer(request, reply_of(StatusCode::kResourceExhausted, error.what()));
    requests_.pop_front();
    return;
  }
  request.next_row += rows;
  if (request.next_row < image.height) return;
  image.projections_integrated = content.projections_integrated;
  image.newest_detector_timestamp_ns = content.newest_timestamp_ns;
  image.newest_arrival_ns = content.newest_arrival_ns;
  CommandReply reply = reply_of(
      StatusCode::kOk, "reconstructed from " + std::to_string(content.projections_integrated) +
                           " projections of scan " + std::to_string(image.scan_id));
  reply.slice = std::move(image);
  answer(request, std::move(reply));
  requests_.pop_front();
}

void OnDemandSlices::cancel_all(StatusCode code, const std::string& why) {
  for (Request& request : requests_)
    answer(request, reply_of(code, why));
  requests_.clear();
}

void OnDemandSlices::answer(Request& request, CommandReply reply) {
  if (!request.on_reply) return;
  try {
    request.on_reply(std::move(reply));
  } catch (const std::exception& e) {
    spdlog::error("a GetSlice reply callback threw: {}", e.what());
  }
}

}  // namespace slicestream
