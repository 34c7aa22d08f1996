// A worker's spare blocks for requests whose handler waits
// (Connection::Pending, ~800 bytes): a wait takes one instead of allocating,
// and gives it back once its response is framed. One per worker, used only
// by the thread that runs it, like the rest of its ConnectionEnv. Bounded
// both ways: waits past kKeptPending at once allocate, and a block that comes
// back past that, or holding a large response, is freed.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "daemon/connection/connection.h"

namespace gearbox {

inline constexpr size_t kKeptPending = 32;
// A response body (or header block) above this is not kept in a spare: one
// large answer must not pin its size in every worker.
inline constexpr size_t kKeptPendingBytes = 64 * 1024;

class PendingSpares {
 public:
  PendingSpares();
  ~PendingSpares();
  PendingSpares(const PendingSpares&) = delete;
  PendingSpares& operator=(const PendingSpares&) = delete;

  // A kept block, or a new one.
  std::unique_ptr<Connection::Pending> Take();
  // Destroys the block's exchange (as freeing it would), then keeps it or
  // frees it.
  void Give(std::unique_ptr<Connection::Pending> block);
  size_t kept() const { return kept_.size(); }

 private:
  std::vector<std::unique_ptr<Connection::Pending>> kept_;
};

}  // namespace gearbox
