// threadpool's handler waits: a worker thread sleeps until the wait's end,
// and a forced stop (the drain out of time) cuts every sleep short.
//
// A futex on an abort flag, waited on with an absolute CLOCK_MONOTONIC
// deadline: one system call per wait. A condition variable costs two, because
// glibc marks its mutex contended when a wait ends, so the unlock that
// follows always makes a FUTEX_WAKE call.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "models/blocking_connection.h"

namespace gearbox {

class InterruptibleSleeper final : public Sleeper {
 public:
  // False when Abort() cut it short (or came before it).
  bool SleepFor(std::chrono::microseconds d) override;
  // Any thread: wakes the sleeper now and makes every later sleep return
  // at once.
  void Abort();

 private:
  std::atomic<uint32_t> aborted_{0};
};

}  // namespace gearbox
