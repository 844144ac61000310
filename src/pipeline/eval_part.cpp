#include "eval_part.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;
namespace {

constexpr const char* kHeader = "method,measure,values";

// Exact: 17 significant digits read back give the same double.
std::string exact(double v) { return fmt::format("{:.17g}", v); }

std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : " ") + v;
  return out;
}

std::string curve_values(const PerturbationCurve& c) {
  std::vector<std::string> v{exact(c.auc)};
  for (double h : c.hits) v.push_back(exact(h));
  return joined(v);
}

void line(std::string& out, const std::string& method, const char* measure, const std::string& values) {
  out += fmt::format("{},{},{}\n", method, measure, values);
}

// A part being read: its file for messages, the line at hand.
struct PartReader {
  const fs::path& path;
  std::size_t line_no = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("{}:{}: not a vitattn eval part of this run: {}", files::display(path), line_no, what));
  }

  std::vector<std::string> words(const std::string& text) const {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size() && !text.empty()) {
      std::size_t end = text.find(' ', start);
      if (end == std::string::npos) end = text.size();
      out.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    return out;
  }

  double real(const std::string& word) const {
    double v = 0.0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || end != word.data() + word.size()) fail("not a number: " + word);
    return v;
  }

  std::int64_t whole(const std::string& word) const {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || end != word.data() + word.size()) fail("not a whole number: " + word);
    return v;
  }

  std::vector<double> reals(const std::vector<std::string>& words) const {
    std::vector<double> out;
    for (const std::string& w : words) out.push_back(real(w));
    return out;
  }

  PerturbationCurve curve(const std::vector<std::string>& w) const {
    if (w.size() < 2) fail("a curve needs its AUC and hits");
    PerturbationCurve c;
    c.auc = real(w.front());
    c.hits = reals({w.begin() + 1, w.end()});
    return c;
  }

  void measure(MapScores& s, const std::string& name, const std::vector<std::string>& w) const {
    const auto count = [&](std::size_t n) {
      if (w.size() != n) fail(fmt::format("{} needs {} values, has {}", name, n, w.size()));
    };
    if (name == "counts") {
      count(6);
      SegmentationCounts c;
      c.correct = whole(w[0]);
      c.labeled = whole(w[1]);
      c.intersection = {whole(w[2]), whole(w[3])};
      c.union_ = {whole(w[4]), whole(w[5])};
      s.counts = c;
    } else if (name == "ap") {
      count(1);
      s.ap = real(w[0]);
    } else if (name == "pointing") {
      count(1);
      if (w[0] != "0" && w[0] != "1") fail("pointing is 0 or 1");
      s.pointing = w[0] == "1";
    } else if (name == "positive") {
      s.positive = curve(w);
    } else if (name == "negative") {
      s.negative = curve(w);
    } else if (name == "sanity") {
      s.sanity = reals(w);
    } else {
      fail("unknown measure " + name);
    }
  }
};

}  // namespace

std::string eval_part_text(const ImageScores& scores) {
  std::string out = std::string(kHeader) + "\n";
  for (const MapScores& s : scores.maps) {
    line(out, s.method, "map", "");
    if (s.counts) {
      const SegmentationCounts& c = *s.counts;
      line(out, s.method, "counts",
           fmt::format("{} {} {} {} {} {}", c.correct, c.labeled, c.intersection[0], c.intersection[1], c.union_[0],
                       c.union_[1]));
    }
    if (s.ap) line(out, s.method, "ap", exact(*s.ap));
    if (s.pointing) line(out, s.method, "pointing", *s.pointing ? "1" : "0");
    if (s.positive) line(out, s.method, "positive", curve_values(*s.positive));
    if (s.negative) line(out, s.method, "negative", curve_values(*s.negative));
    if (!s.sanity.empty()) {
      std::vector<std::string> v;
      for (double d : s.sanity) v.push_back(exact(d));
      line(out, s.method, "sanity", joined(v));
    }
  }
  return out;
}

ImageScores read_eval_part(const fs::path& path, const fs::path& input, const std::vector<std::string>& methods) {
  const std::vector<std::uint8_t> bytes = files::read_file(path);
  const std::string text(bytes.begin(), bytes.end());
  PartReader r{path};
  ImageScores out;
  out.input = input;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) r.fail("its last line is cut short");
    const std::string row = text.substr(start, end - start);
    start = end + 1;
    ++r.line_no;
    if (r.line_no == 1) {
      if (row != kHeader) r.fail(fmt::format("its first line is not {}", kHeader));
      continue;
    }
    const std::size_t a = row.find(','), b = a == std::string::npos ? a : row.find(',', a + 1);
    if (b == std::string::npos) r.fail("not a method,measure,values row");
    const std::string method = row.substr(0, a), name = row.substr(a + 1, b - a - 1);
    if (name == "map") {
      if (out.maps.size() == methods.size() || methods[out.maps.size()] != method || b + 1 != row.size())
        r.fail(fmt::format("map {} where the run's methods are {}", method, joined(methods)));
      out.maps.push_back(MapScores{method, {}, {}, {}, {}, {}, {}});
      continue;
    }
    if (out.maps.empty() || out.maps.back().method != method) r.fail(fmt::format("{} before its map line", method));
    r.measure(out.maps.back(), name, r.words(row.substr(b + 1)));
  }
  if (r.line_no == 0) r.fail("it is empty");
  if (out.maps.size() != methods.size())
    r.fail(fmt::format("{} of the run's {} methods", out.maps.size(), methods.size()));
  out.done = true;
  return out;
}

}  // namespace vitattn::pipeline
