// Moving a client connection between processes: the fd (SCM_RIGHTS) plus the
// bytes already read from it, as one SOCK_SEQPACKET message. Prefork children
// park slow request heads with the master's head guard this way, and the guard
// hands them back once the head is complete.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "daemon/buffer.h"

namespace gearbox {

struct HandoffHeader {
  uint32_t listener = 0;    // index into the generation's listeners
  uint32_t fresh = 1;       // no request served on this connection yet
  int64_t deadline_ns = 0;  // head deadline, steady_clock (CLOCK_MONOTONIC)
  uint64_t ready_us = 0;    // accept time, for the queue-wait figure
  // Bytes the codec will produce again when it re-parses `bytes` from the
  // start (FastCGI management replies) that the peer has already been sent.
  uint64_t replayed_out = 0;
};

// A connected SOCK_SEQPACKET pair: [0] receives, [1] sends. Both ends are
// non-blocking and close-on-exec; the send buffer is raised towards
// `message_bytes` * 4 so several parked heads fit. Returns false with errno.
bool MakeHandoffChannel(int fds[2], size_t message_bytes);

// The largest message (header + bytes) the channel's send end accepts.
size_t HandoffCapacity(int send_fd);

// Sends `fd` with its header and bytes without blocking. Returns 0, or the
// errno (EAGAIN: channel full; EMSGSIZE: too large). The caller still owns
// and must close its copy of `fd`.
int SendConnection(int channel, int fd, const HandoffHeader& header,
                   std::string_view bytes);

inline constexpr int kHandoffEnd = -2;

// Receives one connection without blocking: returns its fd (close-on-exec)
// and appends its bytes to `bytes` (at most `max_bytes`). Returns -1 with
// errno EAGAIN when nothing is queued (another reader may have taken it),
// kHandoffEnd once every sender has closed its end, -1 on other errors.
int ReceiveConnection(int channel, size_t max_bytes, HandoffHeader& header,
                      Buffer& bytes);

}  // namespace gearbox
