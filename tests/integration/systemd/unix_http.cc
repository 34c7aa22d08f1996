#include "tests/integration/systemd/unix_http.h"

#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace gearbox::testing {
namespace {

using Clock = std::chrono::steady_clock;
using Failure = UnixResponse::Failure;

std::string Errno(const std::string& call) {
  return call + ": " + strerror(errno);
}

UnixResponse Fail(Failure f, std::string error) {
  UnixResponse r;
  r.failure = f;
  r.error = std::move(error);
  return r;
}

int MillisLeft(Clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(left + 1);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

UnixConnection::~UnixConnection() { Close(); }

UnixConnection::UnixConnection(UnixConnection&& other) noexcept
    : fd_(other.fd_),
      used_(other.used_),
      in_(std::move(other.in_)),
      error_(std::move(other.error_)) {
  other.fd_ = -1;
}

UnixConnection& UnixConnection::operator=(UnixConnection&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    used_ = other.used_;
    in_ = std::move(other.in_);
    error_ = std::move(other.error_);
    other.fd_ = -1;
  }
  return *this;
}

void UnixConnection::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  in_.clear();
}

UnixConnection UnixConnection::Open(const std::string& path, Millis timeout) {
  UnixConnection c;
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  if (path.size() >= sizeof(sun.sun_path)) {
    c.error_ = "unix path too long: " + path;
    return c;
  }
  memcpy(sun.sun_path, path.data(), path.size());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    c.error_ = Errno("socket(AF_UNIX)");
    return c;
  }
  // A unix-socket connect() blocks while the backlog is full; SO_SNDTIMEO
  // bounds it (and every later send()).
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&sun), sizeof(sun)) != 0) {
    c.error_ = Errno("connect(" + path + ")");
    close(fd);
    return c;
  }
  c.fd_ = fd;
  return c;
}

bool UnixConnection::SendPart(std::string_view bytes) {
  if (fd_ < 0) return false;
  // A short head on a fresh socket: the send buffer always takes it at once.
  ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  if (n == static_cast<ssize_t>(bytes.size())) return true;
  error_ = Errno("send");
  return false;
}

UnixResponse UnixConnection::RoundTrip(std::string_view request,
                                       Millis timeout) {
  if (fd_ < 0) return Fail(Failure::kOther, "not connected: " + error_);
  const auto deadline = Clock::now() + timeout;
  in_.clear();
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n =
        send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const int err = errno;
    std::string e = Errno("send");
    Close();
    if (err == EPIPE || err == ECONNRESET)
      return Fail(Failure::kClosedBeforeAny, e);
    if (err == EAGAIN || err == EWOULDBLOCK) return Fail(Failure::kTimeout, e);
    return Fail(Failure::kOther, e);
  }
  size_t head_end = std::string::npos;
  UnixResponse r;
  size_t content_length = 0;
  for (;;) {
    if (head_end == std::string::npos) {
      head_end = in_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::string_view head(in_.data(), head_end);
        // Status line: HTTP/1.1 200 OK
        size_t sp = head.find(' ');
        if (head.substr(0, 5) != "HTTP/" || sp == std::string_view::npos) {
          Close();
          return Fail(Failure::kMalformed,
                      "bad status line: " + in_.substr(0, 80));
        }
        r.status = atoi(std::string(head.substr(sp + 1, 3)).c_str());
        size_t pos = head.find("\r\n");
        while (pos != std::string_view::npos && pos < head.size()) {
          size_t start = pos + 2;
          size_t eol = head.find("\r\n", start);
          std::string_view line = head.substr(
              start,
              (eol == std::string_view::npos ? head.size() : eol) - start);
          size_t colon = line.find(':');
          if (colon != std::string_view::npos) {
            std::string name = Lower(line.substr(0, colon));
            std::string_view value = line.substr(colon + 1);
            while (!value.empty() && value.front() == ' ')
              value.remove_prefix(1);
            if (name == "content-length")
              content_length =
                  static_cast<size_t>(atoll(std::string(value).c_str()));
            if (name == "connection" && Lower(value) == "close") r.close = true;
          }
          pos = eol;
        }
      }
    }
    if (head_end != std::string::npos &&
        in_.size() >= head_end + 4 + content_length) {
      r.body = in_.substr(head_end + 4, content_length);
      ++used_;
      if (r.close) Close();
      return r;
    }
    pollfd p{fd_, POLLIN, 0};
    int left = MillisLeft(deadline);
    int pn = left > 0 ? poll(&p, 1, left) : 0;
    if (pn < 0 && errno == EINTR) continue;
    if (pn == 0) {
      std::string got = std::to_string(in_.size());
      Close();
      return Fail(Failure::kTimeout, "no complete response within " +
                                         std::to_string(timeout.count()) +
                                         " ms (got " + got + " bytes)");
    }
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const bool nothing = in_.empty();
    const int err = n == 0 ? 0 : errno;
    std::string e = n == 0 ? std::string("EOF") : Errno("recv");
    e += " after " + std::to_string(in_.size()) + " response bytes";
    Close();
    if (n == 0 || err == ECONNRESET) {
      return Fail(nothing ? Failure::kClosedBeforeAny : Failure::kClosedMidway,
                  e);
    }
    return Fail(Failure::kOther, e);
  }
}

UnixResponse UnixExchange(const std::string& path, std::string_view target,
                          Millis timeout) {
  UnixConnection c = UnixConnection::Open(path, timeout);
  if (!c.ok()) return Fail(Failure::kConnect, c.error());
  return c.RoundTrip(UnixGet(target, "Connection: close\r\n"), timeout);
}

std::string UnixGet(std::string_view target, std::string_view extra) {
  std::string r = "GET ";
  r += target;
  r += " HTTP/1.1\r\nHost: test\r\n";
  r += extra;
  r += "\r\n";
  return r;
}

}  // namespace gearbox::testing
