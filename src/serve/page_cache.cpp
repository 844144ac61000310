#include "page_cache.hpp"

namespace vitattn::serve {

std::shared_ptr<const CachedPage> PageCache::find(const std::string& id) {
  std::lock_guard lock(m_);
  const auto it = index_.find(id);
  if (it == index_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);  // now the most recently used
  return it->second->second;
}

bool PageCache::put(const std::string& id, std::shared_ptr<const CachedPage> page) {
  const std::uint64_t c = cost(id, *page);
  if (c > budget_) return false;
  std::lock_guard lock(m_);
  if (const auto it = index_.find(id); it != index_.end()) {
    bytes_ -= cost(id, *it->second->second);
    order_.erase(it->second);
    index_.erase(it);
  }
  while (bytes_ + c > budget_ && !order_.empty()) {
    const Entry& last = order_.back();
    bytes_ -= cost(last.first, *last.second);
    index_.erase(last.first);
    order_.pop_back();
  }
  order_.emplace_front(id, std::move(page));
  index_[id] = order_.begin();
  bytes_ += c;
  return true;
}

std::uint64_t PageCache::bytes() const {
  std::lock_guard lock(m_);
  return bytes_;
}

std::size_t PageCache::size() const {
  std::lock_guard lock(m_);
  return order_.size();
}

}  // namespace vitattn::serve
