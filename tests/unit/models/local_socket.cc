#include "tests/unit/models/local_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>

namespace gearbox::testing {
namespace {

// An abstract socket (Linux): no file, so no path-length limit from a deep
// $TEST_TMPDIR, and nothing to unlink.
struct Address {
  explicit Address(const std::string& name) {
    a.sun_family = AF_UNIX;
    const size_t n = std::min(name.size(), sizeof(a.sun_path) - 1);
    std::memcpy(a.sun_path + 1, name.data(), n);
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&a); }
  sockaddr_un a{};
  socklen_t len = 0;
};

}  // namespace

LocalListener::LocalListener() {
  static std::atomic<int> n{0};
  path = "gearbox-test-" + std::to_string(getpid()) + "-" + std::to_string(n++);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const Address a(path);
  if (fd < 0 || bind(fd, a.get(), a.len) || listen(fd, 64)) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

LocalListener::~LocalListener() {
  if (fd >= 0) close(fd);
}

int ConnectLocal(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const Address a(path);
  if (fd >= 0 && connect(fd, a.get(), a.len) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

std::string ReadToEof(int fd, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  std::string got;
  char buf[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) != 1)
      return got;
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) return got;
    got.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace gearbox::testing
