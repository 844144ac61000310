#pragma once
// What the benchmark helpers (forward_bench.cpp, backward_bench.cpp, dnnl_products.cpp) share: the fixed input,
// the medians, the process's memory from /proc, and their integer flags.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/image_tensor.hpp"

namespace vitattn::bench {

// A fixed normal(0, 1) image: what a normalised photo looks like to the model, same every run.
inline ImageTensor random_image(int size) {
  ImageTensor x;
  x.height = x.width = size;
  x.chw.resize(3 * static_cast<std::size_t>(size) * static_cast<std::size_t>(size));
  std::mt19937 rng(20240229u);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x.chw) v = normal(rng);
  return x;
}

// "VmRSS" / "VmHWM" of this process in MB (0 when /proc is not there).
inline double proc_status_mb(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) / 1024.0;
  return 0.0;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The whole of `text` as an integer in [minimum, 1'000'000], or nothing.
inline std::optional<int> parse_int(const char* text, int minimum) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v < minimum || v > 1'000'000) return std::nullopt;
  return static_cast<int>(v);
}

// Flag `flag`'s value `text` as an integer ≥ minimum, else the program's usage(why), which does
// not return: each helper's own usage line, one rule for their integer flags.
template <class Usage>
int int_flag(const std::string& flag, const char* text, int minimum, Usage&& usage) {
  if (const std::optional<int> v = parse_int(text, minimum)) return *v;
  usage(flag + " needs an integer ≥ " + std::to_string(minimum));
  std::abort();  // not reached: usage exits
}

}  // namespace vitattn::bench
