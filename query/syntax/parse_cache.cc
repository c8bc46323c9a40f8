#include "query/syntax/parse_cache.h"

namespace gpulse::query {

Result<std::shared_ptr<const StatementList>> ParseCache::Parse(std::string_view text,
                                                               ParseError* error, bool* hit) {
  if (hit) *hit = false;
  if (text.size() <= kMaxTextBytes && capacity_ > 0) {
    MutexLock l(&mu_);
    const auto it = index_.find(text);
    if (it != index_.end()) {
      ++hits_;
      if (hit) *hit = true;
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
    ++misses_;
  }
  // Parsed outside the lock: a long text must not hold up other requests.
  Result<StatementList> parsed = ParseQuery(text, error);
  if (!parsed.ok()) return parsed.status();
  auto tree = std::make_shared<const StatementList>(std::move(*parsed));
  if (text.size() > kMaxTextBytes || capacity_ == 0) return tree;
  MutexLock l(&mu_);
  if (index_.find(text) != index_.end()) return tree;  // another request parsed it meanwhile
  order_.emplace_front(std::string(text), tree);
  index_.emplace(order_.front().first, order_.begin());
  if (order_.size() > capacity_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
  return tree;
}

ParseCache::Stats ParseCache::stats() const {
  MutexLock l(&mu_);
  return {hits_, misses_, order_.size()};
}

}  // namespace gpulse::query
