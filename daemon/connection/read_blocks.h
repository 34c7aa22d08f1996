// A worker's spare read blocks. A blocking worker reads a request into a
// 16 KiB buffer, and frees it when the connection goes back to wait for its
// next request (Connection::Trim: an idle keep-alive connection should cost
// little); the next request on any connection then allocated 16 KiB again,
// on every keep-alive request. Here the freed block waits for the next
// connection this worker reads instead (an async loop reads into its own
// buffer and needs none). One per worker, used only by the
// thread that runs it, like the rest of its ConnectionEnv; it keeps at most
// kKeptReadBlocks, none over kKeptReadBlockBytes (one large request must not
// pin its size in every worker).
#pragma once

#include <array>
#include <cstddef>
#include <cstdlib>

#include "daemon/buffer.h"

namespace gearbox {

// A blocking worker reads one connection at a time; a few cover a prefork
// child that moves between the connections it holds.
inline constexpr size_t kKeptReadBlocks = 4;
inline constexpr size_t kKeptReadBlockBytes = 64 * 1024;

class ReadBlocks {
 public:
  ReadBlocks() = default;
  ~ReadBlocks() {
    for (size_t i = 0; i < kept_count_; ++i) free(kept_[i].data);
  }
  ReadBlocks(const ReadBlocks&) = delete;
  ReadBlocks& operator=(const ReadBlocks&) = delete;

  // A kept block, or none ({}: the buffer allocates as usual).
  Buffer::Block Take() {
    return kept_count_ > 0 ? kept_[--kept_count_] : Buffer::Block{};
  }
  // Keeps the block, or frees it (full, or too large).
  void Give(Buffer::Block b) {
    if (!b.data) return;
    if (kept_count_ == kKeptReadBlocks || b.capacity > kKeptReadBlockBytes)
      return free(b.data);
    kept_[kept_count_++] = b;
  }
  size_t kept() const { return kept_count_; }

 private:
  std::array<Buffer::Block, kKeptReadBlocks> kept_{};
  size_t kept_count_ = 0;
};

}  // namespace gearbox
