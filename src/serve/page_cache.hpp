#pragma once
// `vitattn serve`'s report pages, kept while the server runs: id → the page's bytes, within a
// byte budget (`--cache-mb`), the least recently used out first. The id is the hash of the
// image's bytes and the query (report_job.hpp), so an upload of the same bytes with the same
// options finds its page without computing it again, and `GET /api/report/<id>` serves it.
//
// Thread-safe: one mutex around the index. A page found is handed out as a shared_ptr, so a
// page being sent stays alive after it is evicted: the memory held is the budget plus the
// pages in flight (at most one per connection thread).
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace vitattn::serve {

struct CachedPage {
  std::string name;  // the upload's file name (the page's title, the download's stem)
  std::string html;  // the page, as `--report` writes it
};

class PageCache {
 public:
  explicit PageCache(std::uint64_t budget_bytes) : budget_(budget_bytes) {}

  // The page of `id`, now the most recently used; null when it is not (or no longer) held.
  std::shared_ptr<const CachedPage> find(const std::string& id);

  // Keeps `page` under `id` (replacing what it held), evicting the least recently used until
  // the total is within the budget. A page whose cost alone is over the budget is not kept
  // (nothing is evicted for it): false. What a page costs: cost().
  bool put(const std::string& id, std::shared_ptr<const CachedPage> page);

  // The bytes a page counts against the budget: its html, name and id.
  static std::uint64_t cost(const std::string& id, const CachedPage& page) {
    return id.size() + page.name.size() + page.html.size();
  }

  std::uint64_t bytes() const;  // the sum of the held pages' costs, ≤ the budget
  std::size_t size() const;     // pages held
  std::uint64_t budget() const { return budget_; }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const CachedPage>>;
  mutable std::mutex m_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  std::uint64_t bytes_ = 0;
  const std::uint64_t budget_;
};

}  // namespace vitattn::serve
