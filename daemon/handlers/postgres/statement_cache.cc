#include "daemon/handlers/postgres/statement_cache.h"

namespace gearbox::postgres {

const std::string* StatementCache::Find(std::string_view sql) {
  // A route runs one statement: the most recent is the one asked for, found
  // with a compare instead of hashing the text.
  if (!lru_.empty() && lru_.front().sql == sql) return &lru_.front().name;
  auto it = by_sql_.find(sql);
  if (it == by_sql_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);  // iterators stay valid
  return &it->second->name;
}

std::string StatementCache::Victim() const {
  return lru_.size() >= capacity_ ? lru_.back().name : std::string();
}

void StatementCache::Forget(const std::string& name) {
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    if (it->name != name) continue;
    by_sql_.erase(it->sql);
    lru_.erase(it);
    return;
  }
}

void StatementCache::Evict() {
  if (lru_.size() < capacity_) return;
  evicted_.push_back(std::move(lru_.back().name));
  by_sql_.erase(lru_.back().sql);
  lru_.pop_back();
}

void StatementCache::Add(std::string sql, std::string name) {
  lru_.push_front({std::move(sql), std::move(name)});
  by_sql_[lru_.front().sql] = lru_.begin();
}

void StatementCache::Clear() {
  by_sql_.clear();
  lru_.clear();
  evicted_.clear();
}

}  // namespace gearbox::postgres
