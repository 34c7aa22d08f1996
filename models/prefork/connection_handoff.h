// Moving a client connection between processes: the fd (SCM_RIGHTS), the
// codec's record of what was parsed (Connection::SaveParsed) and the bytes
// read after it, as one SOCK_SEQPACKET message. Prefork children park slow
// request heads with the master's head guard this way, and the guard hands
// them back once the head is complete: the child resumes from the parsed
// head, so a head is parsed once.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "daemon/buffer.h"
#include "daemon/connection/connection.h"

namespace gearbox {

// What travels before the bytes. The connection's progress is the state
// machine's business (Connection::Progress/Adopt): it crosses as it is, between
// processes forked from one binary, and steady_clock is CLOCK_MONOTONIC, the
// same clock in every process.
struct HandoffHeader {
  uint32_t listener = 0;      // index into the generation's listeners
  uint32_t record_bytes = 0;  // the codec's record, ahead of the bytes
  ConnectionProgress progress;
};
static_assert(std::is_trivially_copyable_v<HandoffHeader>,
              "a hand-off header is sent as bytes");

// A connected SOCK_SEQPACKET pair: [0] receives, [1] sends. Both ends are
// non-blocking and close-on-exec; the send buffer is raised towards
// `message_bytes` * 4 so several parked heads fit. Returns false with errno.
bool MakeHandoffChannel(int fds[2], size_t message_bytes);

// The largest message (header + bytes) the channel's send end accepts.
size_t HandoffCapacity(int send_fd);

// Sends `fd` with its header, the codec's record and the bytes without
// blocking (header.record_bytes is set here). Returns 0, or the errno
// (EAGAIN: channel full; EMSGSIZE: too large). The caller still owns and must
// close its copy of `fd`.
int SendConnection(int channel, int fd, HandoffHeader& header,
                   std::string_view record, std::string_view bytes);

inline constexpr int kHandoffEnd = -2;

// Receives one connection without blocking: returns its fd (close-on-exec)
// and appends its record and then its bytes to `bytes` (at most `max_bytes`;
// header.record_bytes says where the record ends). Returns -1 with
// errno EAGAIN when nothing is queued (another reader may have taken it),
// kHandoffEnd once every sender has closed its end, -1 on other errors.
int ReceiveConnection(int channel, size_t max_bytes, HandoffHeader& header,
                      Buffer& bytes);

}  // namespace gearbox
