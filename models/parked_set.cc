#include "models/parked_set.h"

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

bool ParkedSet::Arm(BlockingConnection* c) {
  uint32_t index;
  if (!free_slots_.empty()) {
    index = free_slots_.back();
    free_slots_.pop_back();
  } else {
    index = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& slot = slots_[index];
  slot.generation = (slot.generation + 1) & 0x7fffffffu;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
  ev.data.u64 = EventData(index, slot.generation);
  // Each connection is added once and re-armed with MOD afterwards; MOD
  // reports it at once if bytes came while it was disarmed.
  if (epoll_ctl(epoll_fd_, c->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd,
                &ev) != 0) {
    free_slots_.push_back(index);
    return false;
  }
  c->registered = true;
  slot.c = c;
  c->park_slot = index;
  c->park_entry = by_deadline_.emplace(c->conn.deadline(), c);
  return true;
}

BlockingConnection* ParkedSet::Take(uint64_t data) {
  const auto index = static_cast<uint32_t>(data);
  const auto generation = static_cast<uint32_t>(data >> 32);
  if (index >= slots_.size()) return nullptr;
  Slot& slot = slots_[index];
  if (slot.generation != generation || slot.c == nullptr) return nullptr;
  BlockingConnection* c = slot.c;
  Remove(c);
  return c;
}

// The fd stays in the epoll set, armed or not: an event it raises later
// names a freed slot or an old generation, and is dropped.
void ParkedSet::Remove(BlockingConnection* c) {
  by_deadline_.erase(c->park_entry);
  slots_[c->park_slot].c = nullptr;
  free_slots_.push_back(c->park_slot);
}

// O(expired * log n): the index is ordered by deadline.
void ParkedSet::TakeExpired(Clock::time_point now,
                            std::vector<BlockingConnection*>& out) {
  while (!by_deadline_.empty() && by_deadline_.begin()->first <= now) {
    BlockingConnection* c = by_deadline_.begin()->second;
    Remove(c);
    out.push_back(c);
  }
}

void ParkedSet::TakeIdle(std::vector<BlockingConnection*>& out) {
  const size_t first = out.size();
  for (const auto& [deadline, c] : by_deadline_) {
    if (c->conn.phase() == Phase::kIdle && !c->conn.drain_lingering())
      out.push_back(c);
  }
  for (size_t i = first; i < out.size(); ++i) Remove(out[i]);
}

void ParkedSet::TakeAll(std::vector<BlockingConnection*>& out) {
  while (!by_deadline_.empty()) {
    BlockingConnection* c = by_deadline_.begin()->second;
    Remove(c);
    out.push_back(c);
  }
}

Clock::time_point ParkedSet::NextDeadline() const {
  return by_deadline_.empty() ? Clock::time_point::max()
                              : by_deadline_.begin()->first;
}

}  // namespace gearbox
