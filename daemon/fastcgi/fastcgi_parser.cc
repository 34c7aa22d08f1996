#include "daemon/fastcgi/fastcgi_parser.h"

#include <algorithm>
#include <charconv>

#include "daemon/fastcgi/fastcgi_writer.h"

namespace gearbox {
namespace {

using Status = ServerCodec::Status;

// Bodies above this are not kept between requests: an idle keep-alive
// connection should not hold on to the largest body it ever received.
constexpr size_t kKeepCapacity = 65536;

uint16_t ReadU16(std::string_view s, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(s[at]) << 8 |
                               static_cast<uint8_t>(s[at + 1]));
}

}  // namespace

FastCgiParser::FastCgiParser(const LimitsConfig& limits)
    : max_header_bytes_(static_cast<size_t>(limits.max_header_bytes)),
      max_body_bytes_(static_cast<size_t>(limits.max_body_bytes)),
      max_connections_(limits.max_connections),
      max_window_bytes_(2 * (max_header_bytes_ + max_body_bytes_) +
                        (size_t{1} << 20)) {}

FastCgiParser::Result FastCgiParser::Fail(const char* reason) {
  Result r;
  r.status = Status::kError;
  r.error_reason = reason;
  return r;
}

FastCgiParser::Result FastCgiParser::Answer(int status, const char* reason,
                                            std::string& out) {
  fcgi::AppendErrorRecords(out, head_scratch_, id_, status, {});
  Result r;
  r.status = Status::kError;
  r.error_status = status;
  r.error_reason = reason;
  return r;
}

FastCgiParser::Result FastCgiParser::Parse(std::string_view buffer,
                                           Request& request, std::string& out) {
  // The caller may only drop bytes we reported consumed.
  if (buffer.size() < pos_) return Fail("bad_call");
  seen_ = buffer.size();
  for (;;) {
    if (!in_record_) {
      if (stop_at_body_ && InBody()) return Continue();
      if (pos_ == buffer.size()) return Continue();
      // Checked on the first byte: an HTTP request sent to the FastCGI socket
      // (or any garbage) fails at once instead of waiting for a header.
      if (static_cast<uint8_t>(buffer[pos_]) != fcgi::kVersion1) {
        return Fail("bad_version");
      }
      if (buffer.size() - pos_ < fcgi::kHeaderSize) return Continue();
      header_ = fcgi::DecodeHeader(buffer.data() + pos_);
      pos_ += fcgi::kHeaderSize;
      in_record_ = true;
      content_left_ = header_.content_length;
      padding_left_ = header_.padding_length;
      if (Result r = OnHeader(out); Stop(r)) return r;
    }
    if (content_ == Content::kWhole) {
      if (buffer.size() - pos_ < content_left_) return Continue();
      std::string_view content = buffer.substr(pos_, content_left_);
      pos_ += content_left_;
      content_left_ = 0;
      content_ = Content::kSkip;  // handled: a later call must not redo it
      if (Result r = OnWhole(content, out); Stop(r)) return r;
    } else if (content_left_ > 0) {
      const size_t n = std::min(content_left_, buffer.size() - pos_);
      if (content_ == Content::kStream) {
        if (Result r = OnStream(buffer.substr(pos_, n), out); Stop(r)) return r;
      }
      pos_ += n;
      content_left_ -= n;
      if (content_left_ > 0) return Continue();
    }
    const size_t n = std::min(padding_left_, buffer.size() - pos_);
    pos_ += n;
    padding_left_ -= n;
    if (padding_left_ > 0) return Continue();
    in_record_ = false;
    if (Result r = OnRecordEnd(request, out); Stop(r)) return r;
  }
}

FastCgiParser::Result FastCgiParser::OnHeader(std::string& out) {
  const fcgi::RecordHeader& h = header_;
  content_ = Content::kSkip;
  if (pos_ + content_left_ + padding_left_ > max_window_bytes_) {
    return Fail("too_large");
  }
  if (h.request_id == fcgi::kNullRequestId) {
    // A management record, whatever its type (as libfcgi does): GET_VALUES is
    // answered, anything else gets UNKNOWN_TYPE.
    content_ = Content::kWhole;
    return Continue();
  }
  switch (h.type) {
    case fcgi::kBeginRequest:
      if (h.content_length != fcgi::kBeginRequestBodySize) {
        return Fail("bad_length");
      }
      content_ = Content::kWhole;
      return Continue();
    case fcgi::kAbortRequest:
      content_ = Content::kWhole;  // the body is empty by spec; ignored if not
      return Continue();
    case fcgi::kParams:
      if (!IsActive(h.request_id)) return Continue();
      if (params_done_) return Fail("bad_order");
      // Refused from the record header: no need to buffer what cannot fit.
      if (params_.size() + h.content_length > max_header_bytes_) {
        return Answer(431, "header_too_large", out);
      }
      content_ = Content::kStream;
      return Continue();
    case fcgi::kStdin:
      if (!IsActive(h.request_id)) return Continue();
      if (!params_done_) return Fail("bad_order");
      // More STDIN than CONTENT_LENGTH announced: the framing is invalid, as
      // over HTTP a body that does not end where Content-Length says would be.
      if (expected_body_ >= 0 && body_.size() + h.content_length >
                                     static_cast<uint64_t>(expected_body_)) {
        return Answer(400, "bad_framing", out);
      }
      if (body_.size() + h.content_length > max_body_bytes_) {
        return Answer(413, "body_too_large", out);
      }
      content_ = Content::kStream;
      return Continue();
    case fcgi::kData:
      return Continue();  // the Filter role's second stream; a responder has
                          // none
    default:
      // Application-to-server types (STDOUT, END_REQUEST...) or unknown ones.
      return Fail("unexpected_type");
  }
}

FastCgiParser::Result FastCgiParser::OnWhole(std::string_view content,
                                             std::string& out) {
  const uint16_t id = header_.request_id;
  if (id == fcgi::kNullRequestId) {
    if (header_.type == fcgi::kGetValues) return AnswerGetValues(content, out);
    fcgi::AppendUnknownType(out, header_.type);
    return Continue();
  }
  if (header_.type == fcgi::kAbortRequest) {
    if (!IsActive(id)) return Continue();  // stale or unknown id
    fcgi::AppendEndRequest(out, id, 0, fcgi::kRequestComplete);
    active_ = false;
    if (!keep_conn_) {
      // Without FCGI_KEEP_CONN the application closes after each request.
      Result r;
      r.status = Status::kClose;
      return r;
    }
    return Continue();
  }
  // BEGIN_REQUEST: role (2 bytes), flags, 5 reserved.
  const uint16_t role = ReadU16(content, 0);
  const bool keep_conn = (static_cast<uint8_t>(content[2]) & fcgi::kKeepConn);
  if (active_) {
    if (id == id_) return Fail("bad_order");
    // One request at a time (we announce FCGI_MPXS_CONNS=0): refuse, never
    // drop.
    fcgi::AppendEndRequest(out, id, 0, fcgi::kCantMpxConn);
    return Continue();
  }
  if (role != fcgi::kResponder) {
    fcgi::AppendEndRequest(out, id, 0, fcgi::kUnknownRole);
    if (!keep_conn) {
      Result r;
      r.status = Status::kClose;
      return r;
    }
    return Continue();
  }
  StartRequest(id, keep_conn);
  return Continue();
}

FastCgiParser::Result FastCgiParser::OnStream(std::string_view chunk,
                                              std::string& out) {
  if (header_.type == fcgi::kStdin) {
    body_.append(chunk);
    return Continue();
  }
  // PARAMS: a pair may straddle records, so pairs are decoded from the
  // concatenated stream, each as soon as it is whole.
  params_.append(chunk);
  fcgi::PairSpan pair;
  while (fcgi::DecodePair(params_, params_parsed_, pair)) {
    pairs_.push_back(pair);
    params_parsed_ = pair.end;
  }
  if (pair.end > max_header_bytes_) {
    return Answer(431, "header_too_large", out);  // declared lengths cannot fit
  }
  return Continue();
}

FastCgiParser::Result FastCgiParser::OnRecordEnd(Request& request,
                                                 std::string& out) {
  // Only the empty records that end the active request's streams matter here.
  if (!IsActive(header_.request_id) || header_.content_length != 0) {
    return Continue();
  }
  if (header_.type == fcgi::kParams) return EndParams(out);
  if (header_.type != fcgi::kStdin) return Continue();
  if (expected_body_ >= 0 &&
      body_.size() != static_cast<uint64_t>(expected_body_)) {
    return Answer(400, "bad_framing", out);  // STDIN ended short
  }
  BuildRequest(request);
  done_id_ = id_;
  done_keep_conn_ = keep_conn_;
  done_is_head_ = request.is_head;
  active_ = false;
  Result r;
  r.status = Status::kComplete;
  r.consumed = pos_;
  pos_ = 0;  // the caller drops `consumed` bytes: offsets restart
  seen_ = 0;
  return r;
}

FastCgiParser::Result FastCgiParser::AnswerGetValues(std::string_view content,
                                                     std::string& out) {
  std::string& result = head_scratch_;
  result.clear();
  unsigned answered = 0;  // each variable at most once, however often asked
  fcgi::PairSpan pair;
  for (size_t pos = 0; pos < content.size(); pos = pair.end) {
    if (!fcgi::DecodePair(content, pos, pair)) return Fail("bad_params");
    std::string_view name = content.substr(pair.name_offset, pair.name_length);
    int64_t value = 0;
    unsigned bit = 0;
    if (name == fcgi::kMaxConns) {
      bit = 1;
      value = max_connections_;
    } else if (name == fcgi::kMaxReqs) {
      bit = 2;  // one request per connection at a time
      value = max_connections_;
    } else if (name == fcgi::kMpxsConns) {
      bit = 4;
      value = 0;
    }
    if (bit == 0 || (answered & bit)) continue;
    answered |= bit;
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), value);
    (void)ec;
    fcgi::AppendPair(result, name, std::string_view(digits, end - digits));
  }
  fcgi::AppendRecord(out, fcgi::kGetValuesResult, fcgi::kNullRequestId, result);
  return Continue();
}

void FastCgiParser::StartRequest(uint16_t id, bool keep_conn) {
  active_ = true;
  id_ = id;
  keep_conn_ = keep_conn;
  params_done_ = false;
  expected_body_ = -1;
  params_.clear();
  params_parsed_ = 0;
  pairs_.clear();
  if (body_.capacity() > kKeepCapacity) std::string().swap(body_);
  body_.clear();
}

}  // namespace gearbox
