// The tiny blocking HTTP/1.1 client of the integration harness: bounded
// connect, send and read; responses framed by Content-Length.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/integration/harness.h"

namespace gearbox::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::string Errno(const char* call) {
  return std::string(call) + ": " + strerror(errno);
}

int MillisLeft(Clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(left + 1);
}

// Bytes as a readable C-ish string for failure messages (bounded length).
std::string Printable(std::string_view bytes, size_t limit = 400) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < limit; ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (bytes.size() > limit) {
    out += "...(" + std::to_string(bytes.size()) + " bytes)";
  }
  return "\"" + out + "\"";
}

std::string_view TrimView(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

// --- HttpResponse -----------------------------------------------------------

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsNoCase(n, name)) return v;
  }
  return "";
}

bool HttpResponse::HasHeader(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsNoCase(n, name)) return true;
  }
  return false;
}

// --- Connection -------------------------------------------------------------

Connection::~Connection() { Close(); }

Connection::Connection(Connection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      in_(std::move(other.in_)),
      eof_(other.eof_),
      error_(std::move(other.error_)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    in_ = std::move(other.in_);
    eof_ = other.eof_;
    error_ = std::move(other.error_);
  }
  return *this;
}

void Connection::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void Connection::ShutdownWrite() {
  if (fd_ >= 0) shutdown(fd_, SHUT_WR);
}

Connection Connection::Open(int port, Millis timeout) {
  Connection c;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    c.error_ = Errno("socket");
    return c;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string what = "connect(127.0.0.1:" + std::to_string(port) + ")";
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS) {
      c.error_ = Errno(what.c_str());
      close(fd);
      return c;
    }
    const auto deadline = Clock::now() + timeout;
    pollfd p{fd, POLLOUT, 0};
    int n;
    do {
      n = poll(&p, 1, MillisLeft(deadline));
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
      c.error_ = what + ": " + (n == 0 ? "timed out" : strerror(errno));
      close(fd);
      return c;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      c.error_ = what + ": " + strerror(err);
      close(fd);
      return c;
    }
  }
  c.fd_ = fd;
  return c;
}

bool Connection::Send(std::string_view bytes, Millis timeout) {
  if (fd_ < 0) {
    error_ = "send on a closed connection";
    return false;
  }
  const auto deadline = Clock::now() + timeout;
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      if (poll(&p, 1, MillisLeft(deadline)) == 0) {
        error_ = "send: timed out after " + std::to_string(off) + " of " +
                 std::to_string(bytes.size()) + " bytes";
        return false;
      }
      continue;
    }
    error_ = Errno("send");
    return false;
  }
  return true;
}

int Connection::Fill(Clock::time_point deadline) {
  if (fd_ < 0) {
    error_ = "read on a closed connection";
    return -2;
  }
  for (;;) {
    char buf[16384];
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      return 1;
    }
    if (n == 0) {
      eof_ = true;
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno == ECONNRESET || errno == EPIPE) {
      eof_ = true;
      error_ = "connection reset by peer";
      return 0;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      error_ = Errno("recv");
      return -2;
    }
    pollfd p{fd_, POLLIN, 0};
    int r = poll(&p, 1, MillisLeft(deadline));
    if (r == 0) {
      error_ = "timed out";
      return -1;
    }
    if (r < 0 && errno != EINTR) {
      error_ = Errno("poll");
      return -2;
    }
  }
}

HttpResponse Connection::ReadResponse(Millis timeout) {
  HttpResponse r;
  const auto deadline = Clock::now() + timeout;
  auto fail = [&](const std::string& why) {
    HttpResponse bad;
    bad.error = why + "; received so far: " + Printable(in_);
    return bad;
  };
  size_t head_end;
  for (;;) {
    head_end = in_.find("\r\n\r\n");
    if (head_end != std::string::npos) break;
    if (eof_) {
      return fail(in_.empty() ? "connection closed, no response"
                              : "connection closed inside the response head");
    }
    int f = Fill(deadline);
    if (f < 0) {
      return fail("waiting " + std::to_string(timeout.count()) +
                  " ms for a response head: " + error_);
    }
  }
  head_end += 4;
  std::string_view head(in_.data(), head_end - 2);  // keep the last CRLF
  size_t eol = head.find("\r\n");
  std::string_view status_line = head.substr(0, eol);
  size_t sp1 = status_line.find(' ');
  if (sp1 == std::string_view::npos) return fail("bad status line");
  r.version = std::string(status_line.substr(0, sp1));
  std::string_view rest = status_line.substr(sp1 + 1);
  size_t sp2 = rest.find(' ');
  r.status = atoi(std::string(rest.substr(0, sp2)).c_str());
  if (sp2 != std::string_view::npos)
    r.reason = std::string(rest.substr(sp2 + 1));
  if (r.version.substr(0, 5) != "HTTP/" || r.status < 100 || r.status > 999) {
    return fail("bad status line " + Printable(status_line));
  }
  size_t pos = eol + 2;
  while (pos < head.size()) {
    size_t end = head.find("\r\n", pos);
    std::string_view line = head.substr(pos, end - pos);
    pos = end + 2;
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return fail("header line without ':' " + Printable(line));
    }
    r.headers.emplace_back(std::string(TrimView(line.substr(0, colon))),
                           std::string(TrimView(line.substr(colon + 1))));
  }
  const bool bodiless = r.status < 200 || r.status == 204 || r.status == 304;
  size_t total;
  if (bodiless) {
    total = head_end;
  } else if (r.HasHeader("content-length")) {
    total = head_end + static_cast<size_t>(strtoull(
                           r.Header("content-length").c_str(), nullptr, 10));
  } else if (r.HasHeader("transfer-encoding")) {
    return fail("Transfer-Encoding responses are not supported by the client");
  } else {
    total = std::string::npos;  // until the server closes
  }
  while (total == std::string::npos ? !eof_ : in_.size() < total) {
    if (eof_) return fail("connection closed inside the response body");
    int f = Fill(deadline);
    if (f < 0) {
      return fail("waiting " + std::to_string(timeout.count()) +
                  " ms for the response body: " + error_);
    }
  }
  if (total == std::string::npos) total = in_.size();
  r.raw = in_.substr(0, total);
  r.body = in_.substr(head_end, total - head_end);
  in_.erase(0, total);
  return r;
}

bool Connection::WaitClosed(Millis timeout) {
  if (eof_) return in_.empty();
  if (!in_.empty()) {
    error_ = "unread bytes " + Printable(in_);
    return false;
  }
  const auto deadline = Clock::now() + timeout;
  int f = Fill(deadline);
  if (f == 0) return true;
  if (f == 1)
    error_ = "received more bytes instead of a close: " + Printable(in_);
  return false;
}

bool Connection::StaysOpen(Millis quiet) {
  if (fd_ < 0 || eof_) return false;
  if (!in_.empty()) {
    error_ = "unread bytes " + Printable(in_);
    return false;
  }
  pollfd p{fd_, POLLIN, 0};
  int n = poll(&p, 1, static_cast<int>(quiet.count()));
  if (n == 0) return true;
  char c;
  ssize_t r = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (r == 0) {
    error_ = "peer closed";
  } else if (r > 0) {
    error_ = "unexpected bytes from the server";
  } else {
    error_ = Errno("recv");
  }
  return false;
}

// --- helpers ----------------------------------------------------------------

HttpResponse Exchange(int port, std::string_view request, Millis timeout) {
  Connection c = Connection::Open(port, timeout);
  if (!c.ok()) {
    HttpResponse r;
    r.error = c.error();
    return r;
  }
  if (!c.Send(request, timeout)) {
    HttpResponse r;
    r.error = c.error();
    return r;
  }
  return c.ReadResponse(timeout);
}

std::string GetRequest(std::string_view target, std::string_view extra) {
  std::string r = "GET ";
  r += target;
  r += " HTTP/1.1\r\nHost: test\r\n";
  r += extra;
  r += "\r\n";
  return r;
}

}  // namespace gearbox::testing
