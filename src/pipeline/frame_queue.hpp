#pragma once
// A small bounded queue between the stages of a video's pipeline (decode → model → encode):
// a stage that runs ahead waits once `capacity` items are in flight, so memory holds a few
// frames, not the clip. close() ends it from either side: push then returns false, pop
// returns false once the queue is empty.
// FrameReorder, beside it: the results of several threads working side by side, handed on in
// the order of their frames whatever order they finish in.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

namespace vitattn::pipeline {

template <typename T>
class FrameQueue {
 public:
  explicit FrameQueue(std::size_t capacity) : capacity_(capacity) {}

  // Waits for room; false when the queue was closed (the item is dropped).
  bool push(T item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return closed_ || items_.size() < capacity_; });
    if (closed_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }

  // Waits for an item; nullopt once the queue is closed and empty.
  std::optional<T> pop() {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return item;
  }

  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    not_full_.notify_all();
    not_empty_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
  std::deque<T> items_;
  std::size_t capacity_;
  bool closed_ = false;
};

// Results put by `producers` threads under their sequence numbers (0, 1, 2, … each exactly
// once, as a FrameQueue hands them out), taken one by one in that order. A result `window` or
// more ahead of the next one to take waits for room, so at most `window` results are held
// (window ≥ 1: the next one never waits, so the taker always gets it). Each producer calls
// done() after its last put; take() then returns nullopt once every producer is done and the
// next result is not there. close() ends it from either side: put returns false (the result
// dropped), take returns nullopt.
template <typename T>
class FrameReorder {
 public:
  FrameReorder(std::size_t window, int producers) : window_(static_cast<std::int64_t>(window)), producers_(producers) {}

  bool put(std::int64_t seq, T item) {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return closed_ || seq < next_ + window_; });
    if (closed_) return false;
    held_.emplace(seq, std::move(item));
    if (seq == next_) ready_.notify_one();
    return true;
  }

  void done() {
    std::lock_guard lock(mutex_);
    if (--producers_ == 0) ready_.notify_one();
  }

  // Waits for the next result in order; nullopt when closed, or when no producer is left to put it.
  std::optional<T> take() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return closed_ || producers_ == 0 || held_.count(next_) > 0; });
    const auto it = held_.find(next_);
    if (closed_ || it == held_.end()) return std::nullopt;
    T item = std::move(it->second);
    held_.erase(it);
    ++next_;
    room_.notify_all();  // the producers wait for different sequence numbers
    return item;
  }

  void close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    room_.notify_all();
    ready_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable room_, ready_;
  std::map<std::int64_t, T> held_;
  std::int64_t next_ = 0;
  std::int64_t window_;
  int producers_;
  bool closed_ = false;
};

}  // namespace vitattn::pipeline
