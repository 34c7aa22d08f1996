// FastCGI 1.0 responder input: records in, one Request out at a time. Pure: no
// sockets, no clock. One request at a time per connection (FCGI_MPXS_CONNS =
// 0), as nginx uses it: a second BEGIN_REQUEST while one is active is refused
// with FCGI_CANT_MPX_CONN, never dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "daemon/codec.h"
#include "daemon/fastcgi/fastcgi_protocol.h"
#include "daemon/http/http_syntax.h"
#include "daemon/request.h"

namespace gearbox {

class FastCgiParser {
 public:
  using Result = ServerCodec::Result;

  explicit FastCgiParser(const LimitsConfig& limits);
  FastCgiParser(const FastCgiParser&) = delete;
  FastCgiParser& operator=(const FastCgiParser&) = delete;

  // The ServerCodec::Parse contract: `buffer` holds every unconsumed byte and
  // only grows between calls until kComplete, whose `consumed` runs through the
  // end of the request's last record (the empty STDIN record and its padding).
  // Only new bytes are looked at (O(total)). Management replies, refusals
  // (UNKNOWN_ROLE, CANT_MPX_CONN), abort acknowledgements and 400/413/431
  // answers go to `out`. On kComplete the views in `request` point into this
  // parser's own buffers and stay valid until the next Parse() call.
  Result Parse(std::string_view buffer, Request& request, std::string& out);

  // Parse() stops at the record boundary after each PARAMS stream's end
  // (InBody() true), STDIN unread (ServerCodec::StopAtBody).
  void StopAtBody() { stop_at_body_ = true; }
  // ServerCodec::SaveHead and ResumeHead (fastcgi_state_record.cc): the
  // parser's state is plain data and travels whole, at any point.
  size_t SaveHead(std::string& record) const;
  bool ResumeHead(std::string_view record);

  // A request (BEGIN_REQUEST seen) or part of a record is pending.
  bool InRequest() const { return active_ || in_record_ || seen_ > pos_; }
  // The active request's PARAMS stream has ended; STDIN is being received.
  bool InBody() const { return active_ && params_done_; }

  // The request being received, or 0 when none.
  uint16_t active_id() const { return active_ ? id_ : 0; }
  // The request last returned by Parse() (what AppendResponse answers).
  uint16_t done_id() const { return done_id_; }
  bool done_keep_conn() const { return done_keep_conn_; }
  bool done_is_head() const { return done_is_head_; }

  // Reused by the codec for the CGI response head (no per-response allocation).
  std::string& scratch() { return head_scratch_; }

 private:
  // What the loop does with the current record's content.
  enum class Content {
    kWhole,   // wait for all of it, then OnWhole() (BEGIN, ABORT, management)
    kStream,  // hand it over as it arrives (PARAMS, STDIN of the active
              // request)
    kSkip,    // drop it (inactive request ids, DATA, content already handled)
  };
  // Parse steps return kIncomplete to mean "carry on"; anything else ends
  // Parse.
  static Result Continue() { return Result{}; }
  static bool Stop(const Result& r) {
    return r.status != ServerCodec::Status::kIncomplete;
  }
  static Result Fail(const char* reason);
  Result Answer(int status, const char* reason, std::string& out);

  Result OnHeader(std::string& out);
  Result OnWhole(std::string_view content, std::string& out);
  Result OnStream(std::string_view chunk, std::string& out);
  Result OnRecordEnd(Request& request, std::string& out);
  Result AnswerGetValues(std::string_view content, std::string& out);
  // The PARAMS stream as an HTTP request (fastcgi_params.cc).
  Result EndParams(std::string& out);
  http::Verdict CheckTarget(std::string_view method);
  http::Verdict ReadContentLength(int count, std::string_view length);
  void BuildRequest(Request& request);
  std::string_view TargetFromUri(std::string_view uri, Request& request);
  void TargetFromScriptName(std::string_view query, Request& request);
  void AddHeaders(std::string_view authority, Request& request);

  bool IsActive(uint16_t id) const { return active_ && id == id_; }
  void StartRequest(uint16_t id, bool keep_conn);
  // The first param named `name` (present-but-empty differs from absent).
  bool FindParam(std::string_view name, std::string_view* value) const;
  std::string_view Name(const fcgi::PairSpan& p) const {
    return std::string_view(params_).substr(p.name_offset, p.name_length);
  }
  std::string_view Value(const fcgi::PairSpan& p) const {
    return std::string_view(params_).substr(p.value_offset, p.value_length);
  }

  const size_t max_header_bytes_;
  const size_t max_body_bytes_;
  const int64_t max_connections_;
  // Bound on the unconsumed window (record overhead, ignored records and
  // management records included): nothing legitimate comes near it, and it
  // keeps a peer that never completes a request from growing the caller's
  // buffer forever.
  const size_t max_window_bytes_;

  // Record framing, as offsets into the caller's buffer (they survive the
  // caller moving the bytes; they restart at 0 after kComplete).
  size_t pos_ = 0;   // next byte to look at
  size_t seen_ = 0;  // buffer size at the last call (partial header bytes)
  bool in_record_ = false;
  fcgi::RecordHeader header_;
  size_t content_left_ = 0;
  size_t padding_left_ = 0;
  Content content_ = Content::kSkip;

  // The active request. Buffers keep their capacity across requests.
  bool active_ = false;
  uint16_t id_ = 0;
  bool keep_conn_ = false;
  bool params_done_ = false;
  bool stop_at_body_ = false;   // per connection, not reset per request
  int64_t expected_body_ = -1;  // CONTENT_LENGTH, or -1 when not given
  http::TargetForm uri_form_ = http::TargetForm::kOrigin;  // REQUEST_URI's
  std::string params_;        // the PARAMS stream, concatenated across records
  size_t params_parsed_ = 0;  // offset of the first pair not yet decoded
  std::vector<fcgi::PairSpan> pairs_;
  std::string body_;     // the STDIN stream
  std::string derived_;  // target/path built from SCRIPT_NAME + PATH_INFO

  uint16_t done_id_ = 1;
  bool done_keep_conn_ = false;
  bool done_is_head_ = false;

  std::string head_scratch_;
};

}  // namespace gearbox
