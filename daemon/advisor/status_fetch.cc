#include "daemon/advisor/status_fetch.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gearbox::advisor {
namespace {

using Clock = std::chrono::steady_clock;

// A status body larger than this is not gearbox's.
constexpr size_t kMaxResponse = 4 << 20;

bool ValidPort(std::string_view port) {
  if (port.empty() || port.size() > 5) return false;
  int n = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + (c - '0');
  }
  return n >= 1 && n <= 65535;
}

// "host:port" / "[v6]:port" -> host (brackets removed) and port.
bool SplitHostPort(std::string_view a, std::string* host, std::string* port) {
  size_t colon;
  if (!a.empty() && a.front() == '[') {
    const size_t close = a.find(']');
    if (close == a.npos || close + 1 >= a.size() || a[close + 1] != ':')
      return false;
    *host = std::string(a.substr(1, close - 1));
    colon = close + 1;
  } else {
    colon = a.rfind(':');
    if (colon == a.npos) return false;
    *host = std::string(a.substr(0, colon));
  }
  *port = std::string(a.substr(colon + 1));
  return ValidPort(*port);
}

int PollFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) return 0;
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    return rc;
  }
}

std::string Errno(std::string_view call, std::string_view address) {
  return std::string(call) + "(" + std::string(address) +
         "): " + strerror(errno);
}

// An address to connect() to.
struct PeerAddress {
  sockaddr_storage ss{};
  socklen_t len = 0;
};

// "unix:/path".
bool UnixPeer(const std::string& address, PeerAddress* peer,
              std::string* error) {
  const std::string path = address.substr(5);
  auto* sun = reinterpret_cast<sockaddr_un*>(&peer->ss);
  if (path.empty() || path.size() >= sizeof(sun->sun_path)) {
    *error = address + ": a unix socket path is 1.." +
             std::to_string(sizeof(sun->sun_path) - 1) + " bytes";
    return false;
  }
  sun->sun_family = AF_UNIX;
  memcpy(sun->sun_path, path.data(), path.size());
  peer->len = static_cast<socklen_t>(sizeof(sockaddr_un));
  return true;
}

// "host:port" / "[v6]:port", the host resolved (the port numeric).
bool InetPeer(const std::string& address, PeerAddress* peer,
              std::string* error) {
  std::string host, port;
  if (!SplitHostPort(address, &host, &port)) {
    *error = "bad address " + address + " (expected HOST:PORT)";
    return false;
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || !res) {
    *error = "getaddrinfo(" + host + "): " + gai_strerror(rc);
    return false;
  }
  memcpy(&peer->ss, res->ai_addr, res->ai_addrlen);
  peer->len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

// Waits for a non-blocking connect() in progress to end by the deadline;
// false with *error set when it failed or timed out.
bool ConnectFinished(int fd, const std::string& address,
                     Clock::time_point deadline, std::string* error) {
  int soerr = 0;
  socklen_t sl = sizeof(soerr);
  if (PollFor(fd, POLLOUT, deadline) <= 0) {
    soerr = ETIMEDOUT;
  } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0) {
    soerr = errno;
  }
  if (soerr == 0) return true;
  errno = soerr;
  *error = Errno("connect", address);
  return false;
}

// A connected, non-blocking socket, or -1 with *error set.
int Connect(const std::string& address, Clock::time_point deadline,
            std::string* error) {
  PeerAddress peer;
  const bool resolved = address.rfind("unix:", 0) == 0
                            ? UnixPeer(address, &peer, error)
                            : InetPeer(address, &peer, error);
  if (!resolved) return -1;
  const int fd =
      socket(peer.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = Errno("socket", address);
    return -1;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&peer.ss), peer.len) == 0) {
    return fd;
  }
  if (errno != EINPROGRESS) {
    *error = Errno("connect", address);
  } else if (ConnectFinished(fd, address, deadline, error)) {
    return fd;
  }
  close(fd);
  return -1;
}

bool SendAll(int fd, std::string_view bytes, Clock::time_point deadline) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno == EAGAIN) {
      if (PollFor(fd, POLLOUT, deadline) <= 0) return false;
    } else if (n < 0 && errno != EINTR) {
      return false;
    }
  }
  return true;
}

// Reads until EOF (the request asked for Connection: close).
bool ReadAll(int fd, std::string* out, Clock::time_point deadline) {
  char buf[16384];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      if (out->size() > kMaxResponse) return false;
    } else if (n == 0) {
      return true;
    } else if (errno == EAGAIN) {
      if (PollFor(fd, POLLIN, deadline) <= 0) return false;
    } else if (errno != EINTR) {
      return false;
    }
  }
}

}  // namespace

ParsedUrl ParseAdviseUrl(std::string_view url) {
  ParsedUrl p;
  const std::string expected =
      " (expected http://HOST:PORT[/PATH] or unix:/path/to.sock)";
  if (url.rfind("unix:", 0) == 0) {
    if (url.size() <= 5 || url[5] != '/') {
      p.error = "bad URL '" + std::string(url) + "'" + expected;
    }
    p.target.address = std::string(url);
    return p;
  }
  if (url.rfind("http://", 0) != 0) {
    p.error = "bad URL '" + std::string(url) + "'" + expected;
    return p;
  }
  std::string_view rest = url.substr(7);
  const size_t slash = rest.find('/');
  const std::string_view hostport = rest.substr(0, slash);
  std::string host, port;
  if (!SplitHostPort(hostport, &host, &port) || host.empty()) {
    p.error = "bad URL '" + std::string(url) + "': no HOST:PORT" + expected;
    return p;
  }
  p.target.address = std::string(hostport);
  if (slash != rest.npos && slash + 1 < rest.size()) {
    p.target.path = std::string(rest.substr(slash));
  }
  return p;
}

std::string ConnectAddress(std::string_view a) {
  if (a.rfind("unix:", 0) == 0) return std::string(a);
  std::string host, port;
  if (!SplitHostPort(a, &host, &port)) return std::string(a);
  if (host.empty() || host == "*" || host == "0.0.0.0") {
    return "127.0.0.1:" + port;
  }
  if (host == "::") return "[::1]:" + port;
  return std::string(a);
}

FetchResult FetchStatus(const StatusTarget& target, std::string_view query,
                        std::chrono::milliseconds timeout) {
  FetchResult r;
  const Clock::time_point deadline = Clock::now() + timeout;
  const int fd = Connect(target.address, deadline, &r.error);
  if (fd < 0) return r;
  const std::string request = "GET " + target.path + std::string(query) +
                              " HTTP/1.1\r\nHost: gearboxd-advise\r\n"
                              "Connection: close\r\n\r\n";
  std::string raw;
  const bool ok = SendAll(fd, request, deadline) && ReadAll(fd, &raw, deadline);
  close(fd);
  if (!ok) {
    r.error = "GET " + target.path + " from " + target.address +
              ": no complete answer within " + std::to_string(timeout.count()) +
              " ms";
    return r;
  }
  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == raw.npos) {
    r.error = "GET " + target.path + " from " + target.address +
              ": not an HTTP response";
    return r;
  }
  const std::string status_line = raw.substr(0, raw.find("\r\n"));
  if (status_line.size() < 12 || status_line.compare(9, 3, "200") != 0) {
    r.error =
        "GET " + target.path + " from " + target.address + ": " + status_line;
    return r;
  }
  r.body = raw.substr(head_end + 4);
  return r;
}

}  // namespace gearbox::advisor
