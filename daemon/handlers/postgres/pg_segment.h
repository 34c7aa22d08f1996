// A pipelined connection's segments (libpq's pipeline mode: an exchange's
// commands, then a sync point), as the connection's reader (PgPool::Drain)
// sees them, and the bookkeeping of one segment's commands.
#pragma once

#include <postgresql/libpq-fe.h>

#include <cstdint>
#include <string>

#include "daemon/handlers/postgres/pg_compat.h"
#include "daemon/handlers/postgres/statement_cache.h"

namespace gearbox::postgres {

// One exchange's query on a pipelined connection: the connection's reader
// hands it its results in order. Every call is on the worker's thread.
class PgSegment {
 public:
  virtual void OnResult(PGresult* result) = 0;  // the callee owns it
  virtual void OnCommandEnd() = 0;              // PQgetResult returned null
  virtual void OnSync() = 0;  // its sync point: the segment is over
  virtual void OnLost() = 0;  // the connection broke first
  // The segment at the head of the connection went away while its query
  // runs: a segment behind it bounds its wait (PgExchange::AwaitStalled).
  virtual void OnStalled() {}

 protected:
  ~PgSegment() = default;
};

// A segment's commands in the order their results come, and what their
// results mean for the connection's prepared statements.
struct SegmentCommands {
  enum class Kind : uint8_t { kCheckBudget, kDeallocate, kPrepare, kExecute };
  static constexpr int kMaxDeallocations = 2;  // per segment

  void Clear() { count = current = 0; }
  void Add(Kind kind) { kinds[count++] = kind; }
  Kind Current() const { return kinds[current]; }
  // PQgetResult returned null: the next command's results come now.
  void Advance() {
    if (current + 1 < count) ++current;
  }
  // Whether a command still to end is a PREPARE or a DEALLOCATE, whose
  // outcome the cache must learn.
  bool TouchesStatements() const;
  // A DEALLOCATE's result: one aborted by an earlier failure in the segment
  // leaves its statement on the server, so it is queued again.
  void Deallocated(const PGresult* result, StatementCache& cache);

  Kind kinds[3 + kMaxDeallocations] = {};
  std::string deallocating[kMaxDeallocations];  // names, in command order
  uint8_t count = 0;
  uint8_t current = 0;             // the command whose results come now
  uint8_t first_deallocation = 0;  // kinds' index of the first
};

// What is left of a segment whose exchange went away before its sync point
// while other segments ride on the connection. Its results are dropped as
// they come, but what they say about the connection's statements still
// counts: a failed PREPARE leaves the cache (else later segments would
// execute a name the server does not have), and an aborted DEALLOCATE is
// queued again (else the server keeps a statement the cache no longer
// counts). Owned by its slot (PgSlot::orphans) until done.
class OrphanSegment final : public PgSegment {
 public:
  // statement: the name the segment prepares; prepare_failed: its PREPARE's
  // result already came, and was an error.
  OrphanSegment(SegmentCommands commands, std::string statement,
                bool prepare_failed, StatementCache* cache)
      : commands_(std::move(commands)),
        statement_(std::move(statement)),
        prepare_failed_(prepare_failed),
        cache_(cache) {}
  ~OrphanSegment() = default;

  void OnResult(PGresult* result) override;
  void OnCommandEnd() override;
  void OnSync() override { done_ = true; }
  void OnLost() override { done_ = true; }
  bool done() const { return done_; }

 private:
  SegmentCommands commands_;
  const std::string statement_;
  bool prepare_failed_;
  StatementCache* const cache_;
  bool done_ = false;
};

}  // namespace gearbox::postgres
