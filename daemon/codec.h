// The codec seam: a per-connection, pure translator between bytes and requests.
// HTTP/1.1 (llhttp) and FastCGI implement it; models drive it without knowing
// which.
#pragma once

#include <ctime>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "config/config.h"
#include "daemon/request.h"
#include "daemon/response.h"

namespace gearbox {

// A head record (ServerCodec::SaveHead) is at most this many bytes beyond the
// request head it holds (max_header_bytes bounds that).
inline constexpr size_t kHeadRecordOverhead = 64;

class ServerCodec {
 public:
  enum class Status {
    kComplete,    // a request is ready in `request`; drop `consumed` bytes
    kIncomplete,  // need more bytes (anything in `out` must be sent first)
    kError,       // bad input: `out` holds the answer (if any); then close
    kClose,  // the peer asked to end the connection cleanly; close after `out`
  };
  struct Result {
    Status status = Status::kIncomplete;
    size_t consumed = 0;
    int error_status = 0;  // kError: the HTTP status sent (0 = closed silently)
    const char* error_reason =
        "";  // kError: a short token for logs and counters
  };

  virtual ~ServerCodec() = default;

  // `buffer` holds every unconsumed byte; each call sees what the previous one
  // saw plus more. Protocol-level replies that are not responses (HTTP "100
  // Continue", FastCGI management records, error answers) are appended to
  // `out`.
  virtual Result Parse(std::string_view buffer, Request& request,
                       std::string& out) = 0;

  // Appends the response to the request last returned by Parse(). Returns true
  // when the connection must close after `out` is written.
  virtual bool AppendResponse(const Request& request, const Response& response,
                              bool close, std::string& out) = 0;

  // Appends an overload/timeout answer outside any parsed request (503, 408).
  virtual void AppendError(int status, std::string_view extra_headers,
                           std::string& out) = 0;

  // True while part of a request has been received (header/body timeout
  // applies) rather than the connection sitting idle between requests.
  virtual bool InRequest() const = 0;
  // True once the request head is complete and its body is being received.
  virtual bool InBody() const = 0;
  // True when a response can tell the peer that the connection closes after it
  // (HTTP's "Connection: close"). FastCGI cannot once the web server asked to
  // keep the connection: a close after END_REQUEST is unannounced, and the
  // server may already be reusing the connection.
  virtual bool AnnouncesClose() const { return true; }

  // From now on Parse() stops once a request's head is complete: InBody()
  // turns true and the body stays unread in the buffer, so nothing is served
  // here. For a connection whose head goes on to another process (prefork's
  // head guard), which resumes from the head and reads the body itself.
  virtual void StopAtBody() = 0;

  // A connection moves to another process: appends to `record` what this
  // codec has parsed of the request in hand (`buffer`: every unconsumed
  // byte, as Parse() last saw them, perhaps since moved), as plain data
  // (llhttp's own state holds pointers and does not travel), and returns how
  // many leading bytes of the buffer the record stands for; the bytes after
  // them travel as they are. HTTP writes a record once a head is complete
  // (StopAtBody); before that it returns 0 (a partial head is read again, and
  // nothing was answered for it). FastCGI's state is plain data and travels
  // whole, management replies included, so none is sent twice.
  virtual size_t SaveHead(std::string_view buffer,
                          std::string& record) const = 0;
  // A fresh codec takes over from `record`: the buffer of its next Parse()
  // starts with the bytes after what the record stands for. False when the
  // record is not one this protocol's SaveHead() wrote.
  virtual bool ResumeHead(std::string_view record) = 0;

  // Fills in, in `answer` (bytes AppendResponse rendered ahead of time, before
  // the request existed), what only the moment of sending knows: the request
  // last returned by Parse() (FastCGI's request id) and the time (HTTP's
  // Date). Async-signal-safe: no allocation, no lock, plain memory writes.
  virtual void StampAnswer(std::span<char> answer, time_t now) const = 0;
};

// One codec per connection for the listener's protocol.
std::unique_ptr<ServerCodec> MakeCodec(Protocol protocol,
                                       const LimitsConfig& limits);

}  // namespace gearbox
