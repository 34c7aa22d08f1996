#include "daemon/listeners.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "daemon/logging.h"

namespace gearbox {
namespace {

std::string Errno(const std::string& call) {
  return call + ": " + strerror(errno);
}

std::string_view ProtocolName(Protocol p) {
  return p == Protocol::kHttp ? "http" : "fastcgi";
}

int SoMaxConn() {
  std::ifstream f("/proc/sys/net/core/somaxconn");
  int n = 0;
  return (f >> n) ? n : 0;
}

// A resolved [[listen]] address, ready for socket() and bind().
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t len = 0;
  int family = AF_INET;
};

// "unix:/path".
std::variant<SocketAddress, std::string> UnixAddress(std::string_view path) {
  SocketAddress sa;
  auto* sun = reinterpret_cast<sockaddr_un*>(&sa.storage);
  sun->sun_family = AF_UNIX;
  if (path.size() >= sizeof(sun->sun_path))
    return "unix path too long: " + std::string(path);
  memcpy(sun->sun_path, path.data(), path.size());
  sa.len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  sa.family = AF_UNIX;
  return sa;
}

// A stale socket file from a previous run would make bind() fail.
void RemoveStaleSocket(const char* path) {
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path);
}

// "host:port", "[v6]:port", "*:port" or ":port" (all IPv4 interfaces).
std::variant<SocketAddress, std::string> InetAddress(
    const std::string& address) {
  std::string_view a = address;
  size_t colon = a.rfind(':');
  std::string host(a.substr(0, colon));
  int port = atoi(std::string(a.substr(colon + 1)).c_str());
  SocketAddress sa;
  if (!host.empty() && host.front() == '[') {
    host = host.substr(1, host.size() - 2);
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&sa.storage);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET6, host.c_str(), &s6->sin6_addr) != 1)
      return "bad IPv6 address: " + address;
    sa.len = sizeof(*s6);
    sa.family = AF_INET6;
    return sa;
  }
  auto* s4 = reinterpret_cast<sockaddr_in*>(&sa.storage);
  s4->sin_family = AF_INET;
  s4->sin_port = htons(static_cast<uint16_t>(port));
  if (host == "*" || host.empty()) host = "0.0.0.0";
  if (host == "localhost") host = "127.0.0.1";
  if (inet_pton(AF_INET, host.c_str(), &s4->sin_addr) != 1)
    return "bad IPv4 address: " + address;
  sa.len = sizeof(*s4);
  return sa;
}

std::variant<SocketAddress, std::string> ResolveAddress(
    const std::string& address) {
  std::string_view a = address;
  if (a.substr(0, 5) == "unix:") return UnixAddress(a.substr(5));
  return InetAddress(address);
}

// Closes fd and returns the error of `call` on it, for the bind/listen steps.
std::string CloseWithError(int fd, const char* call,
                           const std::string& address) {
  std::string e = Errno(std::string(call) + "(fd=" + std::to_string(fd) + ", " +
                        address + ")");
  close(fd);
  return e;
}

// socket(), bind() and listen() on an address resolved from lc.
std::variant<int, std::string> OpenListeningSocket(const ListenConfig& lc,
                                                   const SocketAddress& sa) {
  int fd = socket(sa.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket(" + lc.address + ")");
  int one = 1;
  if (sa.family != AF_UNIX) {
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (sa.family == AF_INET6)
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  }
  if (sa.family == AF_UNIX) RemoveStaleSocket(lc.address.c_str() + 5);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&sa.storage), sa.len) != 0)
    return CloseWithError(fd, "bind", lc.address);
  if (sa.family == AF_UNIX) chmod(lc.address.c_str() + 5, lc.unix_mode);
  int somaxconn = SoMaxConn();
  if (somaxconn > 0 && lc.backlog > somaxconn) {
    LogWarn("listen_backlog_capped",
            "address={} backlog={} net.core.somaxconn={}", lc.address,
            lc.backlog, somaxconn);
  }
  if (listen(fd, lc.backlog) != 0)
    return CloseWithError(fd, "listen", lc.address);
  return fd;
}

std::variant<Listener, std::string> Bind(const ListenConfig& lc) {
  auto sa = ResolveAddress(lc.address);
  if (auto* e = std::get_if<std::string>(&sa)) return *e;
  auto fd = OpenListeningSocket(lc, std::get<SocketAddress>(sa));
  if (auto* e = std::get_if<std::string>(&fd)) return *e;
  Listener l;
  l.protocol = lc.protocol;
  l.name = lc.name;
  l.address = lc.address;
  l.fd = std::get<int>(fd);
  return l;
}

// Takes the n sockets systemd passed (fds from SD_LISTEN_FDS_START, named by
// FileDescriptorName=) into out, each matched to the [[listen]] entry of its
// name; frees names. Returns the first error, or "".
std::string AdoptPassedSockets(int n, char** names,
                               const std::vector<ListenConfig>& config,
                               Listeners& out) {
  std::string error;
  for (int i = 0; i < n; ++i) {
    int fd = SD_LISTEN_FDS_START + i;
    std::string name = names && names[i] ? names[i] : "unknown";
    const ListenConfig* match = nullptr;
    for (const ListenConfig& lc : config)
      if (lc.name == name) match = &lc;
    if (error.empty() && !match) {
      error = "systemd passed socket fd=" + std::to_string(fd) + " named \"" +
              name + "\" but no [[listen]] entry has that name";
    }
    if (error.empty() && sd_is_socket(fd, AF_UNSPEC, SOCK_STREAM, 1) <= 0) {
      error = "systemd passed fd=" + std::to_string(fd) + " named \"" + name +
              "\" which is not a listening stream socket";
    }
    if (error.empty() && match) {
      fcntl(fd, F_SETFD, FD_CLOEXEC);
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      out.push_back({fd, match->protocol, name, match->address, true});
    }
    if (names) free(names[i]);
  }
  free(names);
  return error;
}

bool HasListener(const Listeners& listeners, const std::string& name) {
  for (const Listener& l : listeners)
    if (l.name == name) return true;
  return false;
}

}  // namespace

std::variant<Listeners, std::string> AcquireListeners(
    const std::vector<ListenConfig>& config) {
  Listeners out;
  char** names = nullptr;
  int n = sd_listen_fds_with_names(/*unset_environment=*/1, &names);
  if (n < 0) return std::string("sd_listen_fds_with_names: ") + strerror(-n);
  if (n > 0) {
    std::string error = AdoptPassedSockets(n, names, config, out);
    if (!error.empty()) return error;
  }
  // Entries systemd did not pass are bound here, so a socket unit may carry
  // only some of the listeners (say, HTTP) while gearboxd binds the rest.
  for (const ListenConfig& lc : config) {
    if (HasListener(out, lc.name)) continue;
    if (n > 0) {
      LogInfo("listener_not_passed",
              "name={} address={} protocol={} msg=\"systemd passed no socket "
              "with this name; binding it\"",
              lc.name, lc.address, ProtocolName(lc.protocol));
    }
    auto r = Bind(lc);
    if (auto* e = std::get_if<std::string>(&r)) {
      ReleaseListeners(out);
      return *e;
    }
    out.push_back(std::get<Listener>(r));
  }
  return out;
}

std::string BoundAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char host[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET) {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(s4->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
    return "[" + std::string(host) +
           "]:" + std::to_string(ntohs(s6->sin6_port));
  }
  if (ss.ss_family == AF_UNIX) {
    auto* sun = reinterpret_cast<sockaddr_un*>(&ss);
    return "unix:" + std::string(sun->sun_path);
  }
  return "?";
}

void ReleaseListeners(Listeners& listeners) {
  for (Listener& l : listeners) {
    if (l.fd >= 0) close(l.fd);
    if (!l.from_systemd && l.address.rfind("unix:", 0) == 0)
      unlink(l.address.c_str() + 5);
    l.fd = -1;
  }
  listeners.clear();
}

}  // namespace gearbox
