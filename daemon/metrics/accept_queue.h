// The kernel accept-queue depth of a listening socket: connections the kernel
// has completed that no worker has accepted yet. php-fpm's "listen queue" is
// always 0 on Linux unix sockets; this reads the real figure.
//   TCP:  getsockopt(TCP_INFO).tcpi_unacked on a listener is the queue length.
//   unix: sock_diag (NETLINK_SOCK_DIAG) with UDIAG_SHOW_RQLEN, looked up by
//   inode.
#pragma once

#include <cstdint>

namespace gearbox {

class AcceptQueueProbe {
 public:
  AcceptQueueProbe();
  ~AcceptQueueProbe();
  AcceptQueueProbe(const AcceptQueueProbe&) = delete;
  AcceptQueueProbe& operator=(const AcceptQueueProbe&) = delete;

  // Current queue length of `listen_fd`, or -1 when it cannot be read.
  int64_t Length(int listen_fd);

 private:
  int64_t UnixLength(int listen_fd);
  int netlink_fd_ = -1;  // opened lazily for unix sockets
};

}  // namespace gearbox
