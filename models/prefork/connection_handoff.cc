#include "models/prefork/connection_handoff.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gearbox {
namespace {

// What the kernel charges per queued message beyond its payload, roughly
// (sk_buff + cmsg); used only to size the send buffer generously.
constexpr size_t kPerMessageOverhead = 1024;

}  // namespace

bool MakeHandoffChannel(int fds[2], size_t message_bytes) {
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                 fds) != 0)
    return false;
  // The kernel doubles the value and caps it at net.core.wmem_max; a smaller
  // result only means fewer parked heads fit in flight (HandoffCapacity
  // reports what a single message may be).
  int want = static_cast<int>(std::min<size_t>(
      4 * (message_bytes + kPerMessageOverhead), size_t{1} << 30));
  setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
  setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
  return true;
}

size_t HandoffCapacity(int send_fd) {
  int sndbuf = 0;
  socklen_t len = sizeof(sndbuf);
  if (getsockopt(send_fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len) != 0) return 0;
  // A datagram larger than sk_sndbuf - 32 fails with EMSGSIZE; keep headroom
  // for the header and the kernel's own accounting.
  size_t usable = static_cast<size_t>(sndbuf);
  return usable > 2 * kPerMessageOverhead ? usable - 2 * kPerMessageOverhead
                                          : 0;
}

int SendConnection(int channel, int fd, HandoffHeader& header,
                   std::string_view record, std::string_view bytes) {
  header.record_bytes = static_cast<uint32_t>(record.size());
  iovec iov[3] = {
      {&header, sizeof(header)},
      {const_cast<char*>(record.data()), record.size()},
      {const_cast<char*>(bytes.data()), bytes.size()},
  };
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg = {};
  msg.msg_iov = iov;
  msg.msg_iovlen = 3;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cm), &fd, sizeof(int));
  for (;;) {
    ssize_t n = sendmsg(channel, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) return 0;
    if (errno != EINTR) return errno;
  }
}

int ReceiveConnection(int channel, size_t max_bytes, HandoffHeader& header,
                      Buffer& bytes) {
  iovec iov[2] = {
      {&header, sizeof(header)},
      {bytes.Reserve(max_bytes), max_bytes},
  };
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg = {};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(channel, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -1;
  if (n == 0) return kHandoffEnd;
  int fd = -1;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
        cm->cmsg_len >= CMSG_LEN(sizeof(int)))
      memcpy(&fd, CMSG_DATA(cm), sizeof(int));
  }
  const bool whole =
      !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
      static_cast<size_t>(n) >= sizeof(header) &&
      header.record_bytes <= static_cast<size_t>(n) - sizeof(header);
  if (fd < 0 || !whole) {
    if (fd >= 0) close(fd);
    errno = EPROTO;
    return -1;
  }
  bytes.Commit(static_cast<size_t>(n) - sizeof(header));
  return fd;
}

}  // namespace gearbox
