#include "models/threadpool/park_when_idle.h"

#include "models/threadpool/pooled_connection.h"

namespace gearbox {

bool ParkWhenIdle::TurnOver(const BlockingConnection& c) {
  if (Clock::now() - c.turn_started < kTurnSlice) return false;
  const int idle = queue_.idle_workers();
  return idle == 0 || queue_.queued().load(std::memory_order_relaxed) > idle;
}

void ParkWhenIdle::WillClose(BlockingConnection& c) {
  // Every connection a threadpool worker serves is a PooledConnection.
  queue_.Unwatch(static_cast<const PooledConnection*>(&c));
}

}  // namespace gearbox
