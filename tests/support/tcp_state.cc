#include "tests/support/tcp_state.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>

namespace gearbox::testing {
namespace {

bool Held(const TcpSocket& s) {
  return s.state == TCP_ESTABLISHED || s.state == TCP_CLOSE_WAIT;
}

// True when one of `pid`'s descriptors links to `link` ("socket:[inode]").
bool HasOpen(pid_t pid, std::string_view link) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (!d) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    char target[64] = {};
    const std::string path = dir + "/" + e->d_name;
    const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
    if (n > 0 && link == std::string_view(target, static_cast<size_t>(n))) {
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

}  // namespace

std::vector<TcpSocket> TcpSockets() {
  std::vector<TcpSocket> out;
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    // "  0: 0100007F:1F90 0100007F:C350 01 00000000:00000000 ..."
    // "... tr:when retrnsmt uid timeout inode ..."
    unsigned local_port = 0, remote_port = 0, state = 0, tx = 0, rx = 0;
    unsigned long long inode = 0;
    if (sscanf(line.c_str(),
               " %*u: %*x:%x %*x:%x %x %x:%x %*x:%*x %*x %*u %*u %llu",
               &local_port, &remote_port, &state, &tx, &rx, &inode) != 6)
      continue;
    out.push_back({static_cast<int>(state), static_cast<int>(local_port),
                   static_cast<int>(remote_port), tx, rx, inode});
  }
  return out;
}

TcpPorts PortsOf(int client_fd) {
  sockaddr_in self{}, peer{};
  socklen_t self_len = sizeof(self), peer_len = sizeof(peer);
  if (getsockname(client_fd, reinterpret_cast<sockaddr*>(&self), &self_len) !=
          0 ||
      getpeername(client_fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) !=
          0 ||
      self.sin_family != AF_INET)
    return {};
  return {ntohs(peer.sin_port), ntohs(self.sin_port)};
}

std::optional<TcpSocket> ServerEnd(TcpPorts ports) {
  for (const TcpSocket& s : TcpSockets()) {
    if (s.local_port == ports.server && s.remote_port == ports.client) return s;
  }
  return std::nullopt;
}

bool ServerHolds(TcpPorts ports) {
  std::optional<TcpSocket> end = ServerEnd(ports);
  return end && Held(*end);
}

pid_t ServerEndOwner(TcpPorts ports, const std::vector<pid_t>& pids) {
  uint64_t inode = 0;  // 0 for an end no process has (e.g. TIME_WAIT)
  for (const TcpSocket& s : TcpSockets()) {
    if (s.local_port == ports.server && s.remote_port == ports.client &&
        s.inode != 0)
      inode = s.inode;
  }
  if (inode == 0) return -1;
  const std::string link = "socket:[" + std::to_string(inode) + "]";
  for (pid_t pid : pids) {
    if (HasOpen(pid, link)) return pid;
  }
  return -1;
}

int ServerHeldEnds(int port) {
  int n = 0;
  for (const TcpSocket& s : TcpSockets()) {
    n += s.local_port == port && Held(s) ? 1 : 0;
  }
  return n;
}

int AcceptQueue(int port) {
  for (const TcpSocket& s : TcpSockets()) {
    if (s.local_port == port && s.state == TCP_LISTEN) {
      return static_cast<int>(s.rx_queue);
    }
  }
  return -1;
}

}  // namespace gearbox::testing
