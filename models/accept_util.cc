#include "models/accept_util.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "daemon/logging.h"

namespace gearbox {
namespace {

std::atomic<unsigned long> emfile_events{0};
std::atomic<int64_t> last_log_s{0};

void LogRateLimited(int listen_fd, int err) {
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  int64_t last = last_log_s.load(std::memory_order_relaxed);
  if (now != last && last_log_s.compare_exchange_strong(last, now)) {
    LogError("accept_failed", "call=\"accept4(fd={})\" error={}", listen_fd,
             LogQuote(strerror(err)));
  }
}

}  // namespace

unsigned long EmfileEvents() { return emfile_events.load(); }

namespace {

// The peer accept() filled in (no extra system call).
IpAddress PeerOf(const sockaddr_storage& addr) {
  IpAddress peer;
  if (addr.ss_family == AF_UNIX) {
    peer.family = IpAddress::Family::kUnix;
  } else if (addr.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(addr);
    peer.family = IpAddress::Family::kV4;
    memcpy(peer.bytes.data(), &in.sin_addr, 4);
  } else if (addr.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(addr);
    // An IPv4-mapped peer (a dual-stack listener) is an IPv4 one.
    const bool mapped = IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr);
    peer.family = mapped ? IpAddress::Family::kV4 : IpAddress::Family::kV6;
    memcpy(peer.bytes.data(), in6.sin6_addr.s6_addr + (mapped ? 12 : 0),
           mapped ? 4 : 16);
  }
  return peer;
}

}  // namespace

int AcceptConnection(int listen_fd, AcceptError& error, IpAddress& peer) {
  error = AcceptError::kNone;
  for (;;) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      peer = PeerOf(addr);
      int one = 1;
      // Fails harmlessly (EOPNOTSUPP) on unix sockets.
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return fd;
    }
    switch (errno) {
      case EINTR:
      case ECONNABORTED:
      case EPROTO:
        continue;
      case EAGAIN:
        error = AcceptError::kAgain;
        return -1;
      case EMFILE:
      case ENFILE:
      case ENOBUFS:
      case ENOMEM:
        emfile_events.fetch_add(1, std::memory_order_relaxed);
        LogRateLimited(listen_fd, errno);
        error = AcceptError::kExhausted;
        return -1;
      default:
        LogRateLimited(listen_fd, errno);
        error = AcceptError::kOther;
        return -1;
    }
  }
}

int AcceptGate::Accept(int listen_fd, int64_t open, Clock::time_point now,
                       IpAddress& peer) {
  if (!Open(open, now)) return -1;
  AcceptError error;
  const int fd = AcceptConnection(listen_fd, error, peer);
  if (fd < 0 && error == AcceptError::kExhausted) {
    paused_until_ = now + kAcceptPause;
  }
  return fd;
}

}  // namespace gearbox
