#include "models/driver.h"

#include <sys/socket.h>

#include <cerrno>

namespace gearbox {

void SendPending(int fd, Connection& conn, Clock::time_point now) {
  for (;;) {
    const std::string_view out = conn.pending_out();
    if (out.empty()) return;
    const ssize_t n =
        send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      conn.Sent(static_cast<size_t>(n), now);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      conn.WriteBlocked(now);
      return;
    } else {
      conn.PeerClosed();
      return;
    }
  }
}

void ShutWrite(int fd, Connection& conn) {
  if (shutdown(fd, SHUT_WR) == 0) return conn.WriteShut();
  conn.PeerClosed();  // ENOTCONN: the peer is gone already
}

}  // namespace gearbox
