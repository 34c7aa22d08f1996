#include "models/threadpool/parked_set.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace gearbox {
namespace {

// Event data: the generation in the high half (31 bits, so kTagBit stays
// clear), the slot in the low half.
uint64_t EventData(uint32_t slot, uint32_t generation) {
  return (static_cast<uint64_t>(generation) << 32) | slot;
}

}  // namespace

ParkedSet::~ParkedSet() {
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

Status ParkedSet::Init() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0)
    return Status::Error(std::string("epoll_create1: ") + strerror(errno));
  return Status::Ok();
}

// Adding reports the fd at once if bytes came before (edge-triggered too).
bool ParkedSet::Register(PooledConnection* c) {
  uint32_t index;
  if (!free_slots_.empty()) {
    index = free_slots_.back();
    free_slots_.pop_back();
  } else {
    index = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& slot = slots_[index];
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
  ev.data.u64 = EventData(index, slot.generation);
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
    free_slots_.push_back(index);
    return false;
  }
  slot.c = c;
  slot.edge = false;
  c->park_slot = index;
  c->registered = true;
  return true;
}

ParkedSet::Armed ParkedSet::Arm(PooledConnection* c) {
  if (!c->registered && !Register(c)) return Armed::kFailed;
  Slot& slot = slots_[c->park_slot];
  if (slot.edge) {
    slot.edge = false;
    return Armed::kReady;
  }
  slot.parked = true;
  if (c->park_node) {
    c->park_node.key() = c->conn.deadline();
    c->park_entry = by_deadline_.insert(std::move(c->park_node));
  } else {
    c->park_entry = by_deadline_.emplace(c->conn.deadline(), c);
  }
  return Armed::kParked;
}

PooledConnection* ParkedSet::Take(uint64_t data) {
  const auto index = static_cast<uint32_t>(data);
  const auto generation = static_cast<uint32_t>(data >> 32);
  if (index >= slots_.size()) return nullptr;
  Slot& slot = slots_[index];
  if (slot.generation != generation || slot.c == nullptr) return nullptr;
  if (!slot.parked) {
    slot.edge = true;  // whoever holds it reads before it parks again
    return nullptr;
  }
  PooledConnection* c = slot.c;
  Remove(c);
  return c;
}

// Out of the index; the fd stays in the epoll set, and its slot with it.
void ParkedSet::Remove(PooledConnection* c) {
  c->park_node = by_deadline_.extract(c->park_entry);
  slots_[c->park_slot].parked = false;
}

// Should it fail, the close takes the fd out, as it would without it.
void ParkedSet::Unwatch(const PooledConnection* c) const {
  if (!c->registered || c->fd < 0) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
}

// Unwatch (or the close) took the fd out of the epoll set; an event a worker
// fetched before names an old generation now.
void ParkedSet::Forget(PooledConnection* c) {
  if (!c->registered) return;
  Slot& slot = slots_[c->park_slot];
  if (slot.parked) Remove(c);
  slot.c = nullptr;
  slot.edge = false;
  slot.generation = (slot.generation + 1) & 0x7fffffffu;
  free_slots_.push_back(c->park_slot);
  c->registered = false;
}

// O(expired * log n): the index is ordered by deadline.
void ParkedSet::TakeExpired(Clock::time_point now,
                            std::vector<PooledConnection*>& out) {
  while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
    PooledConnection* c = by_deadline_.begin()->second;
    Remove(c);
    out.push_back(c);
  }
}

void ParkedSet::TakeIdle(std::vector<PooledConnection*>& out) {
  const size_t first = out.size();
  for (const auto& [deadline, c] : by_deadline_) {
    if (c->conn.phase() == Phase::kIdle && !c->conn.drain_lingering())
      out.push_back(c);
  }
  for (size_t i = first; i < out.size(); ++i) Remove(out[i]);
}

void ParkedSet::TakeAll(std::vector<PooledConnection*>& out) {
  while (!by_deadline_.empty()) {
    PooledConnection* c = by_deadline_.begin()->second;
    Remove(c);
    out.push_back(c);
  }
}

Clock::time_point ParkedSet::NextDeadline() const {
  return by_deadline_.empty() ? Clock::time_point::max()
                              : by_deadline_.begin()->first;
}

}  // namespace gearbox
