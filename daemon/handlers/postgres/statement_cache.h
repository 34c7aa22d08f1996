// One connection's prepared statements, keyed by SQL text: a statement is
// prepared once per connection and executed by name after that. Bounded
// (LRU): a route or a script with dynamic SQL cannot grow the server's
// prepared statements without limit. The evicted one is DEALLOCATEd: before
// the next PREPARE on a connection that runs one command at a time
// (PgExchange's deallocate phase), in the same segment before the PREPARE on
// a pipelined one (Evict, then evicted()).
#pragma once

#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gearbox::postgres {

// Statements one connection keeps prepared at most (docs/handlers.md).
inline constexpr size_t kStatementsPerConnection = 64;

class StatementCache {
 public:
  explicit StatementCache(size_t capacity = kStatementsPerConnection)
      : capacity_(capacity) {}

  // The name `sql` is prepared under, or null; a hit becomes the most
  // recently used.
  const std::string* Find(std::string_view sql);
  // The least recently used statement's name when the cache is full (it
  // must be DEALLOCATEd and Forget()-ten before Add), else "".
  std::string Victim() const;
  void Forget(const std::string& name);
  // Pipelined: when full, the least recently used statement leaves now and
  // its name waits in evicted() for a segment to DEALLOCATE it.
  void Evict();
  std::vector<std::string>& evicted() { return evicted_; }
  // A fresh name for the next PREPARE ("gearbox_1", "gearbox_2", ...).
  std::string NextName() { return "gearbox_" + std::to_string(++serial_); }
  // `sql` is now prepared as `name`.
  void Add(std::string sql, std::string name);
  // The connection is new: nothing is prepared on it, nothing to evict.
  void Clear();
  size_t size() const { return lru_.size(); }

 private:
  struct Entry {
    std::string sql, name;
  };
  const size_t capacity_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> by_sql_;
  std::vector<std::string> evicted_;
  unsigned serial_ = 0;
};

}  // namespace gearbox::postgres
