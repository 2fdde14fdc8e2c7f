// Per-frame GPU work as data, replayable as CUDA graphs (one graph launch per stage and frame).
//
// A LaunchSequence lists what one stage enqueues for one frame, in order: kernels with their
// arguments (KernelLaunch), 1D copies, and fixed steps (library calls such as cuFFT, which enqueue
// the same work every frame). It runs either eagerly, step by step (enqueue), or through a
// GraphReplayer: the first time a sequence of a given shape is seen it is captured into a CUDA
// graph and instantiated; afterwards only the kernel arguments, launch dimensions and copy
// pointers that changed are rewritten in the executable graph (cudaGraphExecKernelNodeSetParams,
// cudaGraphExecMemcpyNodeSetParams) before one cudaGraphLaunch. Both paths run the same kernels
// with the same arguments, so their results are identical.
//
// Stream ordering: a graph launch is ordered after everything enqueued earlier on its stream, so
// cross-stream dependencies stay outside the graph (cudaStreamWaitEvent before launch, event
// records after). Capture uses cudaStreamCaptureModeThreadLocal: other threads (the other stage
// streams) may keep calling any CUDA API meanwhile.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace slicestream::cuda {

// One kernel launch with a private copy of its arguments (trivially copyable values, each stored
// as the kernel's parameter type).
class KernelLaunch {
 public:
  template <class... Params, class... Args>
  KernelLaunch(void (*kernel)(Params...), dim3 grid, dim3 block, const Args&... args)
      : function_(reinterpret_cast<const void*>(kernel)), grid_(grid), block_(block) {
    static_assert(sizeof...(Params) == sizeof...(Args), "one argument per kernel parameter");
    static_assert((std::is_trivially_copyable_v<Params> && ...),
                  "kernel parameters must be trivially copyable");
    static_assert(((alignof(Params) <= kStorageAlignment) && ...),
                  "kernel parameter over-aligned for the argument storage");
    std::size_t size = 0;
    ((size = align_up(size, alignof(Params)) + sizeof(Params)), ...);
    // new[] returns storage aligned for any fundamental type (kStorageAlignment). Zeroed, so that
    // padding between arguments compares equal (argument_bytes).
    size_ = size;
    storage_.reset(new unsigned char[size > 0 ? size : 1]());
    args_.reserve(sizeof...(Params));
    std::size_t offset = 0;
    (place<Params>(offset, args), ...);
  }
  // A launch of a kernel with one parameter, value-initialised in the launch's own argument
  // storage and filled in there (parameter<P>()), its grid set once known (set_grid): a large
  // parameter block is written once instead of built on the stack and copied.
  template <class P>
  static KernelLaunch in_place(void (*kernel)(P), dim3 block) {
    static_assert(std::is_trivially_copyable_v<P>, "kernel parameters must be trivially copyable");
    static_assert(alignof(P) <= kStorageAlignment,
                  "kernel parameter over-aligned for the argument storage");
    KernelLaunch launch(reinterpret_cast<const void*>(kernel), block, sizeof(P));
    new (launch.storage_.get()) P();  // value-initialised: zero bytes, padding included
    return launch;
  }
  // The parameter of an in_place launch.
  template <class P>
  P& parameter() {
    if (args_.size() != 1 || size_ != sizeof(P)) {
      throw std::logic_error("KernelLaunch::parameter: not the launch's single parameter");
    }
    return *std::launder(reinterpret_cast<P*>(storage_.get()));
  }
  void set_grid(dim3 grid) { grid_ = grid; }
  // Lets the launch start while the previous kernel on its stream still runs (programmatic
  // dependent launch: its blocks begin once every block of that kernel has signalled that they may,
  // griddepcontrol.launch_dependents). Only for kernels that wait for the previous one
  // (griddepcontrol.wait) before they touch anything it may write.
  void set_start_early(bool early) { start_early_ = early; }
  bool starts_early() const { return start_early_; }

  KernelLaunch(KernelLaunch&&) noexcept = default;
  KernelLaunch& operator=(KernelLaunch&&) noexcept = default;
  KernelLaunch(const KernelLaunch&) = delete;
  KernelLaunch& operator=(const KernelLaunch&) = delete;

  const void* function() const { return function_; }
  dim3 grid() const { return grid_; }
  dim3 block() const { return block_; }
  // The arguments as stored (graph replay skips updates of nodes whose arguments did not change).
  const unsigned char* argument_bytes() const { return storage_.get(); }
  std::size_t argument_size() const { return size_; }
  // Kernel node parameters pointing into this launch's argument storage (valid while it lives;
  // the driver copies them).
  cudaKernelNodeParams node_params() const;
  void enqueue(cudaStream_t stream) const;  // cudaLaunchKernel(Ex), checked

 private:
  static constexpr std::size_t kStorageAlignment = alignof(std::max_align_t);
  KernelLaunch(const void* function, dim3 block, std::size_t size)
      : function_(function), block_(block), size_(size), storage_(new unsigned char[size]) {
    args_.push_back(storage_.get());
  }
  static constexpr std::size_t align_up(std::size_t value, std::size_t alignment) {
    return (value + alignment - 1) / alignment * alignment;
  }
  template <class P, class A>
  void place(std::size_t& offset, const A& arg) {
    offset = align_up(offset, alignof(P));
    const P value = static_cast<P>(arg);
    std::memcpy(storage_.get() + offset, &value, sizeof(P));
    args_.push_back(storage_.get() + offset);
    offset += sizeof(P);
  }

  const void* function_;
  dim3 grid_;
  dim3 block_;
  std::size_t size_ = 0;
  std::unique_ptr<unsigned char[]> storage_;
  std::vector<void*> args_;
  bool start_early_ = false;
};

class LaunchSequence {
 public:
  void add(KernelLaunch launch);
  // A 1D copy whose pointers may change from frame to frame (the memory kinds may not).
  void add_copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind);
  // A step that enqueues the same work every time it runs. `key` names it: graph replay keeps the
  // work captured under the same key and does not call `step` again.
  void add_fixed(const void* key, std::function<void(cudaStream_t)> step);
  void append(LaunchSequence&& other);

  // Eager: every step in order on `stream`.
  void enqueue(cudaStream_t stream) const;
  std::size_t size() const { return steps_.size(); }
  bool empty() const { return steps_.empty(); }
  std::size_t kernel_count() const;
  // The kernel launch of step `step`, or null where that step is a copy or a fixed step.
  const KernelLaunch* kernel(std::size_t step) const;

  enum class Kind { kKernel, kCopy, kFixed };
  // What must agree for an executable graph to be updated in place rather than captured anew:
  // per step its kind and the kernel's function, the copy's kind and size, or the fixed step's
  // key.
  struct StepShape {
    Kind kind;
    const void* what;
    cudaMemcpyKind copy_kind;
    std::size_t bytes;
    bool starts_early;  // a kernel's: graph capture makes its edge a programmatic one
    bool operator==(const StepShape& o) const {
      return kind == o.kind && what == o.what && copy_kind == o.copy_kind && bytes == o.bytes &&
             starts_early == o.starts_early;
    }
  };
  std::vector<StepShape> shape() const;

 private:
  friend class GraphReplayer;
  struct Step {
    Kind kind = Kind::kFixed;
    std::optional<KernelLaunch> kernel;
    void* dst = nullptr;
    const void* src = nullptr;
    std::size_t bytes = 0;
    cudaMemcpyKind copy_kind = cudaMemcpyDefault;
    const void* key = nullptr;
    std::function<void(cudaStream_t)> fixed;
  };
  static void enqueue_step(const Step& step, cudaStream_t stream);
  std::vector<Step> steps_;
};

// Replays LaunchSequences as CUDA graphs: one executable graph per sequence shape (the step kinds,
// each kernel's function, each copy's kind and each fixed step's key), captured the first time the
// shape is seen and updated in place afterwards. At most `max_graphs` are kept (least recently
// used dropped). One replayer per stream-owning thread; not thread-safe.
class GraphReplayer {
 public:
  explicit GraphReplayer(std::size_t max_graphs = 8);
  ~GraphReplayer();
  GraphReplayer(const GraphReplayer&) = delete;
  GraphReplayer& operator=(const GraphReplayer&) = delete;

  // Enqueues `sequence` on `stream` as one graph launch (capturing it first for a new shape).
  void launch(const LaunchSequence& sequence, cudaStream_t stream);

  std::size_t captures() const { return captures_; }  // graphs captured and instantiated so far
  std::size_t launches() const { return launches_; }
  std::size_t cached() const { return entries_.size(); }
  // In-place updates the driver refused (the graph was then captured anew; none expected).
  std::size_t update_failures() const { return update_failures_; }

 private:
  struct Entry;
  Entry* find(const LaunchSequence& sequence);
  std::unique_ptr<Entry> capture(const LaunchSequence& sequence, cudaStream_t stream) const;
  void update(Entry& entry, const LaunchSequence& sequence) const;

  std::size_t max_graphs_;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::size_t captures_ = 0;
  std::size_t launches_ = 0;
  std::size_t update_failures_ = 0;
  std::size_t clock_ = 0;
};

}  // namespace slicestream::cuda
