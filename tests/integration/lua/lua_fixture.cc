#include "tests/integration/lua/lua_fixture.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <vector>

namespace gearbox::testing {
namespace {

int ListenLoopback(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(fd, 256) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "cannot listen on 127.0.0.1:0";
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace

LineBackend::LineBackend() {
  listen_fd_ = ListenLoopback(&port_);
  if (pipe2(wake_, O_CLOEXEC) != 0) ADD_FAILURE() << "pipe2";
  thread_ = std::thread([this] { Serve(); });
}

LineBackend::~LineBackend() {
  if (write(wake_[1], "x", 1) != 1) ADD_FAILURE() << "wake the backend";
  thread_.join();
  close(listen_fd_);
  close(wake_[0]);
  close(wake_[1]);
}

void LineBackend::Serve() {
  std::map<int, std::string> conns;  // fd -> bytes not yet a full line
  for (;;) {
    std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (const auto& [fd, _] : conns) fds.push_back({fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 10000) < 0) continue;
    if (fds[0].revents) break;
    if (fds[1].revents & POLLIN) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        conns[fd];
        ++accepted_;
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      const int fd = fds[i].fd;
      char buf[4096];
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) {
        close(fd);
        conns.erase(fd);
        continue;
      }
      std::string& in = conns[fd];
      in.append(buf, static_cast<size_t>(n));
      for (size_t nl; (nl = in.find('\n')) != std::string::npos;) {
        const std::string line = in.substr(0, nl);
        in.erase(0, nl + 1);
        std::string reply;
        if (line == "ping") reply = "pong\n";
        if (line.rfind("echo ", 0) == 0) reply = line.substr(5) + "\n";
        if (line == "close") {
          close(fd);
          conns.erase(fd);
          break;
        }
        if (!reply.empty() && write(fd, reply.data(), reply.size()) < 0) {
          ADD_FAILURE() << "backend write";
        }
      }
    }
  }
  for (const auto& [fd, _] : conns) close(fd);
}

int ClosedPort() {
  int port = 0;
  const int fd = ListenLoopback(&port);
  close(fd);
  return port;
}

std::string TestScript(const std::string& name) {
  return Runfile("tests/integration/lua/scripts/" + name);
}

std::string LuaRoute(const std::string& path, const std::string& script,
                     const std::string& extra) {
  return "[[route]]\npath = \"" + path + "\"\nhandler = \"lua\"\nscript = \"" +
         script + "\"\n" + extra + "\n";
}

size_t WaitForLog(const Daemon& daemon, const std::string& text,
                  Millis timeout) {
  return WaitForLog(daemon, std::string_view(text), timeout).find(text);
}

int LineOf(const std::string& script, const std::string& text) {
  std::ifstream in(script);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(text) != std::string::npos) return n;
  }
  return 0;
}

}  // namespace gearbox::testing
