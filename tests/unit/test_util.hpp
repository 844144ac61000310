#pragma once
// Small helpers shared by the unit tests.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <random>
#include <string>

#include "core/error.hpp"
#include "core/image_tensor.hpp"
#include "core/tensor.hpp"

namespace vitattn::test {

inline Matrix random_matrix(Eigen::Index rows, Eigen::Index cols, std::mt19937& rng, float scale = 1.0f) {
  std::uniform_real_distribution<float> u(-scale, scale);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = u(rng);
  return m;
}

// A matrix of standard normal values (mean 0, deviation 1) from a fresh std::mt19937 seeded
// with `seed`, filled in storage order: the same values for the same seed and shape, whatever
// else the test draws (random_matrix above shares the caller's generator instead). The GEMM
// tests draw their operands here; their bit-for-bit checks hold for any values.
inline Matrix random_normal_matrix(Eigen::Index rows, Eigen::Index cols, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Matrix m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

// An image tensor (3, h, w) of uniform values in [−scale, scale]: a normalised input.
inline ImageTensor random_image(int h, int w, std::mt19937& rng, float scale) {
  ImageTensor t;
  t.height = h;
  t.width = w;
  std::uniform_real_distribution<float> u(-scale, scale);
  t.chw.resize(static_cast<std::size_t>(3 * h * w));
  for (float& v : t.chw) v = u(rng);
  return t;
}

// A fresh empty folder under the system temp folder, removed when the object goes.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("vitattn-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// What `f` throws as Error, or "" when it throws nothing.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace vitattn::test
