// The cosockets' keep-alive pool (sock:setkeepalive()): idle connected fds
// per address, per worker. Bounded per address; an fd idle past its
// timeout, or one its peer closed, is dropped when next looked at.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace gearbox::lua {

class TcpPool {
 public:
  using Clock = std::chrono::steady_clock;
  TcpPool() = default;
  ~TcpPool();
  TcpPool(const TcpPool&) = delete;
  TcpPool& operator=(const TcpPool&) = delete;

  // An idle fd to `key` that is still open, or -1.
  int Take(const std::string& key);
  // Keeps fd for `key` for at most `idle`; closes it when the address
  // already holds `size` idle fds.
  void Put(const std::string& key, int fd, std::chrono::milliseconds idle,
           size_t size);
  size_t idle() const;

 private:
  struct Idle {
    int fd;
    Clock::time_point until;
  };
  std::unordered_map<std::string, std::vector<Idle>> idle_;
};

}  // namespace gearbox::lua
