// A complete request head as a record that another process's parser resumes
// from (ServerCodec::SaveHead/ResumeHead): what llhttp and the head checks
// found, as plain data, so the head is parsed once. The fields travel as
// "name\0value\0" (a field line cannot hold a NUL: CheckFieldLine refuses
// control characters), which keeps the record no larger than the head.
#include <cstring>

#include "daemon/codec.h"
#include "daemon/http/http_parser.h"

namespace gearbox {
namespace {

// The fixed part; the target and the fields follow it.
struct HeadRecord {
  char tag[4] = {'H', 'T', 'T', 'P'};
  uint8_t method = 0;
  uint8_t minor = 1;
  uint8_t form = 0;
  uint8_t framing = 0;
  uint8_t keep_alive = 1;
  uint8_t expects_continue = 0;
  uint8_t continue_sent = 0;
  uint64_t content_length = 0;
  uint32_t target_bytes = 0;
  uint32_t fields = 0;
};
static_assert(sizeof(HeadRecord) <= kHeadRecordOverhead);

}  // namespace

size_t HttpRequestParser::SaveHead(std::string_view buffer,
                                   std::string& record) const {
  // Only a head stopped at its body (nothing of the body read) is complete
  // and plain: before it, llhttp's state is what would have to travel.
  if (!stop_at_body_ || phase_ != Phase::kBody) return 0;
  if (buffer.size() < body_start_) return 0;  // not the buffer it parsed
  const char* head = resumed_ ? scratch_->resumed.data() : buffer.data();
  HeadRecord r;
  r.method = parser_.method;
  r.minor = minor_;
  r.form = static_cast<uint8_t>(form_);
  r.framing = static_cast<uint8_t>(framing_);
  r.keep_alive = keep_alive_;
  r.expects_continue = expects_continue_;
  r.continue_sent = continue_sent_;
  r.content_length = content_length_;
  r.target_bytes = url_.length;
  r.fields = static_cast<uint32_t>(header_spans_.size());
  record.append(reinterpret_cast<const char*>(&r), sizeof(r));
  record.append(head + url_.offset, url_.length);
  for (const HeaderSpan& h : header_spans_) {
    record.append(head + h.name.offset, h.name.length).push_back('\0');
    record.append(head + h.value.offset, h.value.length).push_back('\0');
  }
  return body_start_;
}

bool HttpRequestParser::ResumeHead(std::string_view record) {
  HeadRecord r;
  if (record.size() < sizeof(r)) return false;
  memcpy(&r, record.data(), sizeof(r));
  if (memcmp(r.tag, HeadRecord{}.tag, sizeof(r.tag)) != 0 ||
      r.framing > static_cast<uint8_t>(Framing::kChunked) ||
      r.form > static_cast<uint8_t>(http::TargetForm::kAsterisk))
    return false;
  std::string& head = scratch().resumed;
  head.assign(record.substr(sizeof(r)));
  if (r.target_bytes > head.size()) return false;
  StartRequest();
  url_ = {0, r.target_bytes};
  uint32_t at = r.target_bytes;
  for (uint32_t i = 0; i < r.fields; ++i) {
    HeaderSpan h;
    for (Span* s : {&h.name, &h.value}) {
      const void* nul = memchr(head.data() + at, '\0', head.size() - at);
      if (!nul) return false;
      const auto end =
          static_cast<uint32_t>(static_cast<const char*>(nul) - head.data());
      *s = {at, end - at};
      at = end + 1;
    }
    header_spans_.push_back(h);
  }
  if (at != head.size()) return false;
  // llhttp is between messages; only the method of this one is read from it.
  parser_.method = r.method;
  minor_ = r.minor;
  form_ = static_cast<http::TargetForm>(r.form);
  framing_ = static_cast<Framing>(r.framing);
  keep_alive_ = r.keep_alive;
  expects_continue_ = r.expects_continue;
  continue_sent_ = r.continue_sent;
  content_length_ = r.content_length;
  started_ = true;
  request_line_done_ = true;
  phase_ = Phase::kBody;
  resumed_ = true;
  body_start_ = 0;  // the buffer starts with the body
  StartBody();
  return true;
}

}  // namespace gearbox
