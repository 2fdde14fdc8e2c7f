// The float values of a slice image: either its own vector, or a view of a buffer somebody else
// owns (a GPU readback's page-locked buffer), kept alive by a shared owner for as long as any
// copy of the values exists. The publish stage hands a readback's buffer to the viewers this way
// instead of copying 13 MB per image out of it on one thread.
//
// Reading is the same either way (data(), size(), operator[], begin()/end() on a const object).
// Writing through a non-const accessor first gives shared values a copy of their own ("detach"),
// so an image being built (resize, then fill) behaves like a std::vector, and a published image's
// values, read through `const SliceImage&`, are never copied by accident.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace slicestream {

class SliceValues {
 public:
  using value_type = float;
  using iterator = float*;
  using const_iterator = const float*;

  SliceValues() = default;
  // Implicit, so that `image.values = std::move(vector)` and `image.values = {1, 2}` read as they
  // do for a vector.
  SliceValues(std::vector<float> values) : own_(std::move(values)) {}  // NOLINT
  SliceValues(std::initializer_list<float> values) : own_(values) {}
  // A view of `size` floats at `data`, which stay valid while `owner` lives.
  static SliceValues shared(std::shared_ptr<const void> owner, const float* data,
                            std::size_t size) {
    SliceValues v;
    v.owner_ = std::move(owner);
    v.shared_data_ = data;
    v.shared_size_ = size;
    return v;
  }

  // Own values move into a buffer of their own that every copy of this object then shares (an
  // image handed to several sinks, each keeping a copy, is not copied that many times).
  void share() {
    if (owner_) return;
    auto buffer = std::make_shared<const std::vector<float>>(std::move(own_));
    own_ = std::vector<float>();
    shared_data_ = buffer->data();
    shared_size_ = buffer->size();
    owner_ = std::move(buffer);
  }

  bool is_shared() const { return owner_ != nullptr; }
  std::size_t size() const { return owner_ ? shared_size_ : own_.size(); }
  bool empty() const { return size() == 0; }
  const float* data() const { return owner_ ? shared_data_ : own_.data(); }
  const float* begin() const { return data(); }
  const float* end() const { return data() + size(); }
  const float& operator[](std::size_t i) const { return data()[i]; }

  // Writable access: shared values get a copy of their own first.
  float* data() { return own().data(); }
  float* begin() { return own().data(); }
  float* end() { return data() + size(); }
  float& operator[](std::size_t i) { return own()[i]; }
  void resize(std::size_t n) { own().resize(n); }
  template <typename It>
  void assign(It first, It last) {
    release_shared();
    own_.assign(first, last);
  }

  std::vector<float> to_vector() const { return std::vector<float>(begin(), end()); }
  // The values as a vector: moved out when they are this object's own, copied when shared.
  std::vector<float> take_vector() && {
    if (owner_) return to_vector();
    return std::move(own_);
  }

  friend bool operator==(const SliceValues& a, const SliceValues& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const SliceValues& a, const SliceValues& b) { return !(a == b); }

 private:
  std::vector<float>& own() {
    if (owner_) {
      own_.assign(shared_data_, shared_data_ + shared_size_);
      release_shared();
    }
    return own_;
  }
  void release_shared() {
    owner_.reset();
    shared_data_ = nullptr;
    shared_size_ = 0;
  }

  std::vector<float> own_;
  std::shared_ptr<const void> owner_;
  const float* shared_data_ = nullptr;
  std::size_t shared_size_ = 0;
};

}  // namespace slicestream
