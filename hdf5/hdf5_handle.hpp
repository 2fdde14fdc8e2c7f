// An HDF5 identifier (file, group, dataset, dataspace, type, attribute, property list) that its
// matching H5*close closes exactly once: when the handle goes out of scope, when another handle is
// moved into it, or at close(). Move-only, so one identifier never has two owners.
#pragma once

#include <hdf5.h>

namespace slicestream::hdf5 {

class Handle {
 public:
  using Closer = herr_t (*)(hid_t);

  Handle() = default;
  // Takes `id` (negative: a failed H5*create/open, which is held but never closed).
  Handle(hid_t id, Closer closer) noexcept : id_(id), closer_(closer) {}
  Handle(Handle&& other) noexcept;
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { close(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes the identifier now; false when HDF5 reports a failure (a file whose last writes could
  // not be flushed). Closing an empty or already closed handle does nothing and returns true.
  bool close() noexcept;

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

}  // namespace slicestream::hdf5
