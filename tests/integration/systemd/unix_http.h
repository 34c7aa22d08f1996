// A tiny blocking HTTP/1.1 client over a unix stream socket, for gearboxd
// socket-activated on a unix path (the harness's Connection speaks TCP only).
// Every connect, send and read is bounded by a timeout.
//
// The one thing it adds over a plain client is telling *how* an exchange
// failed: a keep-alive client may retry once when the server closed a reused
// connection while it was idle (EOF / ECONNRESET / EPIPE before any response
// byte), which is what nginx does for an idempotent request on a reused
// upstream connection; anything else is a failure.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace gearbox::testing {

using Millis = std::chrono::milliseconds;

struct UnixResponse {
  enum class Failure {
    kNone,
    kConnect,          // connect() failed
    kClosedBeforeAny,  // EOF / ECONNRESET / EPIPE before the first response
                       // byte
    kClosedMidway,     // the connection ended inside a response
    kTimeout,
    kMalformed,
    kOther,
  };
  Failure failure = Failure::kNone;
  std::string error;  // non-empty when failure != kNone
  int status = 0;
  bool close = false;  // the response said Connection: close
  std::string body;

  bool ok() const { return failure == Failure::kNone; }
};

class UnixConnection {
 public:
  UnixConnection() = default;
  ~UnixConnection();
  UnixConnection(UnixConnection&& other) noexcept;
  UnixConnection& operator=(UnixConnection&& other) noexcept;
  UnixConnection(const UnixConnection&) = delete;
  UnixConnection& operator=(const UnixConnection&) = delete;

  // Connects (non-blocking connect bounded by `timeout`); check ok().
  static UnixConnection Open(const std::string& path, Millis timeout);

  bool ok() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }
  // Requests completed on this connection (0 for a fresh one).
  int used() const { return used_; }

  // Sends part of a request (a head cut short) and returns without reading.
  bool SendPart(std::string_view bytes);
  // Sends `request` and reads one response framed by Content-Length.
  UnixResponse RoundTrip(std::string_view request, Millis timeout);
  void Close();

 private:
  int fd_ = -1;
  int used_ = 0;
  std::string in_;
  std::string error_;
};

// A fresh connection, one request (sent with Connection: close), one response.
UnixResponse UnixExchange(const std::string& path, std::string_view target,
                          Millis timeout);
// "GET <target> HTTP/1.1\r\nHost: test\r\n<extra>\r\n".
std::string UnixGet(std::string_view target, std::string_view extra = {});

}  // namespace gearbox::testing
