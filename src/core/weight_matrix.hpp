#pragma once
// A weight matrix the forward reads and never writes: row-major float32 values either owned
// (a Matrix of its own) or held by someone else, such as a checkpoint's bytes mapped from the
// file, which it then reads in place: no copy, no second allocation of the weights.
//
// It is an Eigen::Map<const Matrix>, so every read-only Eigen expression works on it as on a
// Matrix, and gemm's views (gemm.hpp) bind to it without a copy. The map is unaligned: its
// data needs only float alignment (4 bytes), as gemm packs its operands before its kernels
// read them and Eigen reads an unaligned map with unaligned loads. The values stay alive while
// any copy of the WeightMatrix does, through `owner` (type-erased: the core neither knows nor
// cares what holds them). Copies share the values, which no one writes.
//
// To change values, assign a new Matrix (m.w_patch = m.w_patch * 0.5f): the model is built,
// then read. The GEMM's panels of the values (packed_panels.hpp) are cached beside them, made
// when read again and shared by the copies; new values get a new, empty cache.
#include <memory>
#include <new>
#include <utility>

#include "packed_panels.hpp"
#include "tensor.hpp"

namespace vitattn {

class WeightMatrix : public Eigen::Map<const Matrix> {
 public:
  using View = Eigen::Map<const Matrix>;

  WeightMatrix() : View(nullptr, 0, 0) {}
  // Owns `values` (moved in, not copied).
  WeightMatrix(Matrix values) : View(nullptr, 0, 0) { own(std::move(values)); }  // implicit: where a Matrix was
  // rows·cols floats at `data`, row-major, kept alive by `owner`.
  WeightMatrix(const float* data, Eigen::Index rows, Eigen::Index cols, std::shared_ptr<const void> owner)
      : View(data, rows, cols), owner_(std::move(owner)) {}

  WeightMatrix(const WeightMatrix& other)
      : View(other.data(), other.rows(), other.cols()), owner_(other.owner_), owned_(other.owned_), panels_(other.panels_) {}
  WeightMatrix& operator=(const WeightMatrix& other) {
    if (this != &other) {
      point_at(other.data(), other.rows(), other.cols(), other.owner_, other.owned_);
      panels_ = other.panels_;
    }
    return *this;
  }
  WeightMatrix& operator=(Matrix values) {
    own(std::move(values));
    return *this;
  }
  ~WeightMatrix() = default;

  // Whether the values live in a storage of their own, not in the holder's (a test's question).
  bool owned() const { return owned_; }

  // The GEMM's panels of these values (gemm.cpp fills them when the values are read again; thread-safe).
  PanelCache& panels() const { return *panels_; }

 private:
  void own(Matrix values) {
    auto held = std::make_shared<const Matrix>(std::move(values));
    point_at(held->data(), held->rows(), held->cols(), held, true);
  }
  // Eigen's documented way to point a Map elsewhere: construct it again in place.
  void point_at(const float* data, Eigen::Index rows, Eigen::Index cols, std::shared_ptr<const void> owner, bool owned) {
    View* self = this;
    self->~View();
    new (self) View(data, rows, cols);
    owner_ = std::move(owner);
    owned_ = owned;
    panels_ = std::make_shared<PanelCache>();  // new values: nothing packed yet
  }

  std::shared_ptr<const void> owner_;
  bool owned_ = false;
  std::shared_ptr<PanelCache> panels_ = std::make_shared<PanelCache>();
};

}  // namespace vitattn
