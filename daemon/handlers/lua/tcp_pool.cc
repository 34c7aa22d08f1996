#include "daemon/handlers/lua/tcp_pool.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace gearbox::lua {
namespace {

// Idle means nothing to read: EOF, an error or unsolicited bytes make the
// fd unusable for the next request.
bool StillIdle(int fd) {
  char byte;
  const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

TcpPool::~TcpPool() {
  for (auto& [key, fds] : idle_) {
    for (const Idle& i : fds) close(i.fd);
  }
}

int TcpPool::Take(const std::string& key) {
  auto it = idle_.find(key);
  if (it == idle_.end()) return -1;
  std::vector<Idle>& fds = it->second;
  const Clock::time_point now = Clock::now();
  while (!fds.empty()) {
    const Idle i = fds.back();  // the most recently used: warmest
    fds.pop_back();
    if (i.until > now && StillIdle(i.fd)) return i.fd;
    close(i.fd);
  }
  return -1;
}

void TcpPool::Put(const std::string& key, int fd,
                  std::chrono::milliseconds idle, size_t size) {
  std::vector<Idle>& fds = idle_[key];
  const Clock::time_point now = Clock::now();
  // Expired ones go first, so a full pool of stale fds still takes this one.
  std::erase_if(fds, [&](const Idle& i) {
    if (i.until > now) return false;
    close(i.fd);
    return true;
  });
  if (fds.size() >= size) {
    close(fd);
    return;
  }
  fds.push_back({fd, now + idle});
}

size_t TcpPool::idle() const {
  size_t n = 0;
  for (const auto& [key, fds] : idle_) n += fds.size();
  return n;
}

}  // namespace gearbox::lua
