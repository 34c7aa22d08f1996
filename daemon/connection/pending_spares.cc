#include "daemon/connection/pending_spares.h"

#include <utility>

#include "daemon/connection/connection_pending.h"

namespace gearbox {

PendingSpares::PendingSpares() { kept_.reserve(kKeptPending); }

PendingSpares::~PendingSpares() = default;

std::unique_ptr<Connection::Pending> PendingSpares::Take() {
  if (kept_.empty()) return std::make_unique<Connection::Pending>();
  std::unique_ptr<Connection::Pending> block = std::move(kept_.back());
  kept_.pop_back();
  return block;
}

void PendingSpares::Give(std::unique_ptr<Connection::Pending> block) {
  block->exchange.reset();
  Response& r = block->response;
  if (kept_.size() >= kKeptPending || r.body.capacity() > kKeptPendingBytes ||
      r.extra_headers.capacity() > kKeptPendingBytes ||
      block->method_path.capacity() > kKeptPendingBytes)
    return;  // freed here
  r.Reset();
  block->request.method = {};
  block->request.path = {};
  block->method_path.clear();
  block->announce_close = false;
  kept_.push_back(std::move(block));
}

}  // namespace gearbox
