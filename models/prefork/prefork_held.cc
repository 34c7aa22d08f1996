#include "models/prefork/prefork_held.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "models/prefork/connection_handoff.h"

namespace gearbox {

bool ParkWithGuard(int park_fd, size_t capacity, BlockingConnection& c,
                   uint32_t listener) {
  if (park_fd < 0) return false;
  // A slow path (a head that did not come within the grace): the record's
  // string is made here rather than kept per child.
  std::string record;
  const std::string_view bytes = c.conn.SaveParsed(record);
  if (record.size() + bytes.size() > capacity) return false;
  HandoffHeader header;
  header.listener = listener;
  header.progress = c.conn.Progress();
  if (SendConnection(park_fd, c.fd, header, record, bytes) != 0) return false;
  close(c.fd);  // the guard has its own copy; not a close for the stats
  c.fd = -1;
  return true;
}

HeldConnections::HeldConnections(size_t capacity, std::atomic<uint64_t>* gauge)
    : capacity_(capacity), gauge_(gauge) {
  held_.reserve(capacity + 1);
  fds_.reserve(capacity + 1);
}

void HeldConnections::Hold(std::unique_ptr<BlockingConnection> c,
                           uint32_t listener, Clock::time_point now) {
  c->conn.Trim();  // an idle connection keeps no read buffer while it waits
  const Clock::time_point deadline = c->conn.Next(now).deadline;
  fds_.push_back(c->fd);
  held_.push_back({std::move(c), listener, deadline});
  earliest_ = std::min(earliest_, deadline);
  if (gauge_) gauge_->store(held_.size(), std::memory_order_relaxed);
}

// O(n) in the held count: n <= capacity + 1, a few.
HeldConnections::Held HeldConnections::RemoveAt(size_t i) {
  Held out = std::move(held_[i]);
  held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
  fds_.erase(fds_.begin() + static_cast<std::ptrdiff_t>(i));
  if (out.deadline == earliest_) UpdateEarliest();
  if (gauge_) gauge_->store(held_.size(), std::memory_order_relaxed);
  return out;
}

void HeldConnections::UpdateEarliest() {
  earliest_ = Clock::time_point::max();
  for (const Held& h : held_) earliest_ = std::min(earliest_, h.deadline);
}

HeldConnections::Held HeldConnections::Take(int fd) {
  auto it = std::find(fds_.begin(), fds_.end(), fd);
  if (it == fds_.end()) return {};
  return RemoveAt(static_cast<size_t>(it - fds_.begin()));
}

HeldConnections::Held HeldConnections::TakeExpired(Clock::time_point now) {
  if (earliest_ > now) return {};
  for (size_t i = 0; i < held_.size(); ++i)
    if (held_[i].deadline <= now) return RemoveAt(i);
  return {};
}

void HeldConnections::Refresh(Clock::time_point now) {
  for (Held& h : held_) h.deadline = h.c->conn.Next(now).deadline;
  UpdateEarliest();
}

bool HeldConnections::ParkOldest() {
  if (held_.empty()) return false;
  Held& h = held_.front();
  if (!ParkWithGuard(park_fd_, park_capacity_, *h.c, h.listener)) return false;
  RemoveAt(0);
  return true;
}

// Oldest first, as ParkOldest: a channel that fills keeps the ones served last.
// The first refusal ends it (the channel will not take the next one either).
size_t HeldConnections::ParkAll() {
  size_t parked = 0;
  while (!held_.empty() && ParkOldest()) ++parked;
  return parked;
}

}  // namespace gearbox
