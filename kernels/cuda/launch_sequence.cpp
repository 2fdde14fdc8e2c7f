#include "kernels/cuda/launch_sequence.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "kernels/cuda/cuda_check.hpp"

namespace slicestream::cuda {

cudaKernelNodeParams KernelLaunch::node_params() const {
  cudaKernelNodeParams p{};
  p.func = const_cast<void*>(function_);
  p.gridDim = grid_;
  p.blockDim = block_;
  p.sharedMemBytes = 0;
  p.kernelParams = const_cast<void**>(args_.data());
  p.extra = nullptr;
  return p;
}

void KernelLaunch::enqueue(cudaStream_t stream) const {
  if (!start_early_) {
    SLICESTREAM_CUDA_CHECK(
        cudaLaunchKernel(function_, grid_, block_, const_cast<void**>(args_.data()), 0, stream));
    return;
  }
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid_;
  config.blockDim = block_;
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  SLICESTREAM_CUDA_CHECK(cudaLaunchKernelExC(&config, function_, const_cast<void**>(args_.data())));
}

void LaunchSequence::add(KernelLaunch launch) {
  Step step;
  step.kind = Kind::kKernel;
  step.kernel.emplace(std::move(launch));
  steps_.push_back(std::move(step));
}

void LaunchSequence::add_copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) throw CudaError("launch sequence: empty copy");
  Step step;
  step.kind = Kind::kCopy;
  step.dst = dst;
  step.src = src;
  step.bytes = bytes;
  step.copy_kind = kind;
  steps_.push_back(std::move(step));
}

void LaunchSequence::add_fixed(const void* key, std::function<void(cudaStream_t)> step_fn) {
  Step step;
  step.kind = Kind::kFixed;
  step.key = key;
  step.fixed = std::move(step_fn);
  steps_.push_back(std::move(step));
}

void LaunchSequence::append(LaunchSequence&& other) {
  for (Step& step : other.steps_)
    steps_.push_back(std::move(step));
  other.steps_.clear();
}

std::size_t LaunchSequence::kernel_count() const {
  return static_cast<std::size_t>(std::count_if(
      steps_.begin(), steps_.end(), [](const Step& s) { return s.kind == Kind::kKernel; }));
}

const KernelLaunch* LaunchSequence::kernel(std::size_t step) const {
  if (step >= steps_.size() || steps_[step].kind != Kind::kKernel) return nullptr;
  return &*steps_[step].kernel;
}

void LaunchSequence::enqueue_step(const Step& step, cudaStream_t stream) {
  switch (step.kind) {
    case Kind::kKernel:
      step.kernel->enqueue(stream);
      break;
    case Kind::kCopy:
      SLICESTREAM_CUDA_CHECK(
          cudaMemcpyAsync(step.dst, step.src, step.bytes, step.copy_kind, stream));
      break;
    case Kind::kFixed:
      step.fixed(stream);
      break;
  }
}

void LaunchSequence::enqueue(cudaStream_t stream) const {
  for (const Step& step : steps_)
    enqueue_step(step, stream);
}

std::vector<LaunchSequence::StepShape> LaunchSequence::shape() const {
  std::vector<StepShape> shape;
  shape.reserve(steps_.size());
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Kind::kKernel:
        shape.push_back({step.kind, step.kernel->function(), cudaMemcpyDefault, 0,
                         step.kernel->starts_early()});
        break;
      case Kind::kCopy:
        shape.push_back({step.kind, nullptr, step.copy_kind, step.bytes, false});
        break;
      case Kind::kFixed:
        shape.push_back({step.kind, step.key, cudaMemcpyDefault, 0, false});
        break;
    }
  }
  return shape;
}

// ------------------------------------------------------------------------------ GraphReplayer

namespace {

// The node that the last captured operation on `stream` added (the capture's single current
// dependency), checked to be of type `expected`.
cudaGraphNode_t last_captured_node(cudaStream_t stream, cudaGraphNodeType expected) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaGraphNode_t* dependencies = nullptr;
  std::size_t count = 0;
  SLICESTREAM_CUDA_CHECK(
      cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, &dependencies, nullptr, &count));
  if (status != cudaStreamCaptureStatusActive) {
    throw CudaError("graph capture: the capture is no longer active (invalidated)");
  }
  if (count != 1 || dependencies == nullptr) {
    throw CudaError("graph capture: expected one node after a step, the stream depends on " +
                    std::to_string(count));
  }
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  SLICESTREAM_CUDA_CHECK(cudaGraphNodeGetType(dependencies[0], &type));
  if (type != expected) {
    throw CudaError("graph capture: captured node of type " +
                    std::to_string(static_cast<int>(type)) + " where type " +
                    std::to_string(static_cast<int>(expected)) + " was expected");
  }
  return dependencies[0];
}

}  // namespace

struct GraphReplayer::Entry {
  std::vector<LaunchSequence::StepShape> shape;
  std::vector<cudaGraphNode_t> nodes;     // per step; null for fixed steps
  std::vector<cudaMemcpy3DParms> copies;  // per step: the copy node's parameters in the graph
  // Per kernel step, what the executable graph holds now: arguments and launch dimensions.
  std::vector<std::vector<unsigned char>> arguments;
  std::vector<dim3> grids;
  std::vector<dim3> blocks;

  // Records `launch` as what kernel step `i` holds.
  void remember(std::size_t i, const KernelLaunch& launch) {
    arguments[i].assign(launch.argument_bytes(), launch.argument_bytes() + launch.argument_size());
    grids[i] = launch.grid();
    blocks[i] = launch.block();
  }
  bool holds(std::size_t i, const KernelLaunch& launch) const {
    auto same = [](dim3 a, dim3 b) { return a.x == b.x && a.y == b.y && a.z == b.z; };
    return same(grids[i], launch.grid()) && same(blocks[i], launch.block()) &&
           arguments[i].size() == launch.argument_size() &&
           std::equal(arguments[i].begin(), arguments[i].end(), launch.argument_bytes());
  }
  cudaGraph_t graph = nullptr;  // kept: exec updates name nodes of this graph
  cudaGraphExec_t exec = nullptr;
  std::size_t last_use = 0;

  Entry() = default;
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;
  ~Entry() {
    // An executable graph still running is freed when it completes.
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    if (graph != nullptr) cudaGraphDestroy(graph);
  }
};

GraphReplayer::GraphReplayer(std::size_t max_graphs)
    : max_graphs_(std::max<std::size_t>(1, max_graphs)) {}

GraphReplayer::~GraphReplayer() = default;

GraphReplayer::Entry* GraphReplayer::find(const LaunchSequence& sequence) {
  const std::vector<LaunchSequence::StepShape> shape = sequence.shape();
  for (const std::unique_ptr<Entry>& entry : entries_) {
    if (entry->shape == shape) return entry.get();
  }
  return nullptr;
}

std::unique_ptr<GraphReplayer::Entry> GraphReplayer::capture(const LaunchSequence& sequence,
                                                             cudaStream_t stream) const {
  auto entry = std::make_unique<Entry>();
  entry->shape = sequence.shape();
  entry->nodes.reserve(sequence.steps_.size());
  entry->copies.resize(sequence.steps_.size());
  entry->arguments.resize(sequence.steps_.size());
  entry->grids.resize(sequence.steps_.size());
  entry->blocks.resize(sequence.steps_.size());
  // Kernels are loaded on first use (lazy loading): load ours before the capture, so that no
  // module loading happens inside it.
  for (const LaunchSequence::Step& step : sequence.steps_) {
    if (step.kind != LaunchSequence::Kind::kKernel) continue;
    cudaFuncAttributes attributes{};
    SLICESTREAM_CUDA_CHECK(cudaFuncGetAttributes(&attributes, step.kernel->function()));
  }
  SLICESTREAM_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (const LaunchSequence::Step& step : sequence.steps_) {
      LaunchSequence::enqueue_step(step, stream);
      switch (step.kind) {
        case LaunchSequence::Kind::kKernel:
          entry->nodes.push_back(last_captured_node(stream, cudaGraphNodeTypeKernel));
          entry->remember(entry->nodes.size() - 1, *step.kernel);
          break;
        case LaunchSequence::Kind::kCopy:
          entry->nodes.push_back(last_captured_node(stream, cudaGraphNodeTypeMemcpy));
          // Updates rewrite the pointers of exactly these parameters (whatever form the
          // capture gave the copy).
          SLICESTREAM_CUDA_CHECK(cudaGraphMemcpyNodeGetParams(
              entry->nodes.back(), &entry->copies[entry->nodes.size() - 1]));
          break;
        case LaunchSequence::Kind::kFixed:
          entry->nodes.push_back(nullptr);
          break;
      }
    }
  } catch (...) {
    // End the capture so that the stream works again; what was captured is thrown away.
    cudaGraph_t partial = nullptr;
    (void)cudaStreamEndCapture(stream, &partial);
    if (partial != nullptr) (void)cudaGraphDestroy(partial);
    (void)cudaGetLastError();
    throw;
  }
  SLICESTREAM_CUDA_CHECK(cudaStreamEndCapture(stream, &entry->graph));
  if (entry->graph == nullptr) throw CudaError("graph capture: no graph captured");
  SLICESTREAM_CUDA_CHECK(cudaGraphInstantiate(&entry->exec, entry->graph, 0));
  return entry;
}

void GraphReplayer::update(Entry& entry, const LaunchSequence& sequence) const {
  for (std::size_t i = 0; i < sequence.steps_.size(); ++i) {
    const LaunchSequence::Step& step = sequence.steps_[i];
    if (step.kind == LaunchSequence::Kind::kKernel) {
      if (entry.holds(i, *step.kernel)) continue;
      const cudaKernelNodeParams params = step.kernel->node_params();
      // Forget the old arguments first: after a refused update the node's content is unknown.
      entry.arguments[i].clear();
      SLICESTREAM_CUDA_CHECK(cudaGraphExecKernelNodeSetParams(entry.exec, entry.nodes[i], &params));
      entry.remember(i, *step.kernel);
    } else if (step.kind == LaunchSequence::Kind::kCopy) {
      cudaMemcpy3DParms& params = entry.copies[i];
      if (params.srcPtr.ptr == step.src && params.dstPtr.ptr == step.dst) continue;
      cudaMemcpy3DParms next = params;
      next.srcPtr.ptr = const_cast<void*>(step.src);
      next.dstPtr.ptr = step.dst;
      SLICESTREAM_CUDA_CHECK(cudaGraphExecMemcpyNodeSetParams(entry.exec, entry.nodes[i], &next));
      params = next;
    }
  }
}

void GraphReplayer::launch(const LaunchSequence& sequence, cudaStream_t stream) {
  if (sequence.empty()) return;
  Entry* entry = find(sequence);
  if (entry != nullptr) {
    // Same shape: rewrite what changes from frame to frame in the executable graph.
    try {
      update(*entry, sequence);
    } catch (const CudaError&) {
      // The driver refused an in-place update (none is expected): clear the error, drop this
      // graph and capture the sequence anew below. Counted, so tests and benchmarks see it.
      (void)cudaGetLastError();
      ++update_failures_;
      entries_.erase(std::find_if(entries_.begin(), entries_.end(),
                                  [&](const auto& e) { return e.get() == entry; }));
      entry = nullptr;
    }
  }
  if (entry == nullptr) {
    std::unique_ptr<Entry> fresh = capture(sequence, stream);
    ++captures_;
    if (entries_.size() >= max_graphs_) {
      auto oldest =
          std::min_element(entries_.begin(), entries_.end(),
                           [](const auto& a, const auto& b) { return a->last_use < b->last_use; });
      entries_.erase(oldest);
    }
    entries_.push_back(std::move(fresh));
    entry = entries_.back().get();
  }
  entry->last_use = ++clock_;
  SLICESTREAM_CUDA_CHECK(cudaGraphLaunch(entry->exec, stream));
  ++launches_;
}

}  // namespace slicestream::cuda
