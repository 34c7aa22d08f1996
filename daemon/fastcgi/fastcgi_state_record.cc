// The FastCGI parser's state as a record another process's parser resumes
// from (ServerCodec::SaveHead/ResumeHead). All of it is plain data: where the
// record framing stands, the active request and its PARAMS stream so far. The
// bytes it stands for (records answered already, management ones included)
// do not travel, so nothing is parsed or answered twice.
#include <cstring>

#include "daemon/fastcgi/fastcgi_parser.h"

namespace gearbox {
namespace {

// The fixed part; the PARAMS and STDIN streams so far follow it.
struct StateRecord {
  char tag[4] = {'F', 'C', 'G', 'I'};
  uint8_t in_record = 0;
  uint8_t content = 0;
  uint8_t active = 0;
  uint8_t keep_conn = 0;
  uint8_t params_done = 0;
  uint8_t uri_form = 0;
  uint16_t id = 0;
  fcgi::RecordHeader header;
  uint32_t content_left = 0;
  uint32_t padding_left = 0;
  int64_t expected_body = -1;
  uint32_t params_bytes = 0;
  uint32_t body_bytes = 0;
};
static_assert(sizeof(StateRecord) <= kHeadRecordOverhead);

}  // namespace

size_t FastCgiParser::SaveHead(std::string& record) const {
  if (pos_ == 0 && !in_record_ && !active_) return 0;  // nothing parsed yet
  StateRecord r;
  r.in_record = in_record_;
  r.content = static_cast<uint8_t>(content_);
  r.active = active_;
  r.keep_conn = keep_conn_;
  r.params_done = params_done_;
  r.uri_form = static_cast<uint8_t>(uri_form_);
  r.id = id_;
  r.header = header_;
  r.content_left = static_cast<uint32_t>(content_left_);
  r.padding_left = static_cast<uint32_t>(padding_left_);
  r.expected_body = expected_body_;
  r.params_bytes = static_cast<uint32_t>(params_.size());
  r.body_bytes = static_cast<uint32_t>(body_.size());
  record.append(reinterpret_cast<const char*>(&r), sizeof(r));
  record.append(params_).append(body_);
  return pos_;
}

bool FastCgiParser::ResumeHead(std::string_view record) {
  StateRecord r;
  if (record.size() < sizeof(r)) return false;
  memcpy(&r, record.data(), sizeof(r));
  if (memcmp(r.tag, StateRecord{}.tag, sizeof(r.tag)) != 0 ||
      r.content > static_cast<uint8_t>(Content::kSkip) ||
      r.uri_form > static_cast<uint8_t>(http::TargetForm::kAsterisk) ||
      record.size() - sizeof(r) != size_t{r.params_bytes} + r.body_bytes ||
      r.params_bytes > max_header_bytes_ || r.body_bytes > max_body_bytes_)
    return false;
  StartRequest(r.id, r.keep_conn);
  active_ = r.active;
  params_done_ = r.params_done;
  uri_form_ = static_cast<http::TargetForm>(r.uri_form);
  expected_body_ = r.expected_body;
  params_.assign(record.substr(sizeof(r), r.params_bytes));
  body_.assign(record.substr(sizeof(r) + r.params_bytes));
  // The pairs are the stream's length-prefixed split, not a check: the
  // checks ran where the stream ended (EndParams).
  fcgi::PairSpan pair;
  while (fcgi::DecodePair(params_, params_parsed_, pair)) {
    pairs_.push_back(pair);
    params_parsed_ = pair.end;
  }
  in_record_ = r.in_record;
  content_ = static_cast<Content>(r.content);
  header_ = r.header;
  content_left_ = r.content_left;
  padding_left_ = r.padding_left;
  pos_ = 0;  // the buffer starts with the bytes after the record's
  seen_ = 0;
  return true;
}

}  // namespace gearbox
