// Whether a blocking worker reads a connection once right after sending a
// query, before it waits. The backend often answers a fast query while the
// worker is switched out by its own send: one recv() then saves a poll() and
// a sleep. A slow query's answer is never there yet, so that recv() is a
// wasted system call on every request. Each connection learns which kind its
// queries are: after kMisses reads in a row found no complete answer it reads
// ahead only on every kProbeEvery-th query, and one that finds an answer
// trusts read-ahead again.
#pragma once

#include <cstdint>

namespace gearbox::postgres {

class ReadAhead {
 public:
  static constexpr uint8_t kMisses = 4;
  static constexpr uint8_t kProbeEvery = 8;

  // Read now, after this query's send?
  bool Wanted() {
    if (trust_ > 0) return true;
    return ++skipped_ % kProbeEvery == 0;
  }
  // What a read-ahead found: a complete answer (hit) or not.
  void Found(bool hit) {
    if (hit) {
      trust_ = kMisses;
      skipped_ = 0;
    } else if (trust_ > 0) {
      --trust_;
    }
  }

 private:
  uint8_t trust_ = kMisses;
  uint8_t skipped_ = 0;
};

}  // namespace gearbox::postgres
