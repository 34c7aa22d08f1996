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

int AcceptConnection(int listen_fd, AcceptError& error) {
  error = AcceptError::kNone;
  for (;;) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
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

int AcceptGate::Accept(int listen_fd, int64_t open, Clock::time_point now) {
  if (!Open(open, now)) return -1;
  AcceptError error;
  const int fd = AcceptConnection(listen_fd, error);
  if (fd < 0 && error == AcceptError::kExhausted) {
    paused_until_ = now + kAcceptPause;
  }
  return fd;
}

}  // namespace gearbox
