#include "tests/unit/fastcgi/fastcgi_harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

namespace gearbox::testing::fastcgi_codec {
namespace {

std::string EndBody(uint32_t app_status, uint8_t protocol_status) {
  std::string s;
  s.push_back(static_cast<char>(app_status >> 24));
  s.push_back(static_cast<char>((app_status >> 16) & 0xff));
  s.push_back(static_cast<char>((app_status >> 8) & 0xff));
  s.push_back(static_cast<char>(app_status & 0xff));
  s.push_back(static_cast<char>(protocol_status));
  s.append(3, '\0');
  return s;
}

}  // namespace

std::string Rec(uint8_t type, uint16_t id, std::string_view content,
                int padding) {
  const size_t pad =
      padding == kAutoPad ? (8 - content.size() % 8) % 8 : size_t(padding);
  std::string r;
  r.push_back(1);
  r.push_back(static_cast<char>(type));
  r.push_back(static_cast<char>(id >> 8));
  r.push_back(static_cast<char>(id & 0xff));
  r.push_back(static_cast<char>(content.size() >> 8));
  r.push_back(static_cast<char>(content.size() & 0xff));
  r.push_back(static_cast<char>(pad));
  r.push_back(0);
  r.append(content);
  r.append(pad, '\x5a');  // padding content is arbitrary: must be ignored
  return r;
}

std::string Begin(uint16_t id, uint8_t flags, uint16_t role) {
  const char body[8] = {static_cast<char>(role >> 8),
                        static_cast<char>(role & 0xff),
                        static_cast<char>(flags),
                        0,
                        0,
                        0,
                        0,
                        0};
  return Rec(kBegin, id, std::string_view(body, 8));
}

void PutLength(std::string& s, size_t n, bool four) {
  if (!four && n < 128) {
    s.push_back(static_cast<char>(n));
    return;
  }
  s.push_back(static_cast<char>(0x80 | (n >> 24)));
  s.push_back(static_cast<char>((n >> 16) & 0xff));
  s.push_back(static_cast<char>((n >> 8) & 0xff));
  s.push_back(static_cast<char>(n & 0xff));
}

std::string Pair(std::string_view name, std::string_view value, bool four_name,
                 bool four_value) {
  std::string s;
  PutLength(s, name.size(), four_name);
  PutLength(s, value.size(), four_value);
  s.append(name);
  s.append(value);
  return s;
}

std::string ParamStream(const Params& params) {
  std::string s;
  for (const auto& [n, v] : params) s += Pair(n, v);
  return s;
}

std::string Stream(uint8_t type, uint16_t id, std::string_view content,
                   size_t piece) {
  std::string s;
  while (!content.empty()) {
    const size_t n = std::min(piece, content.size());
    s += Rec(type, id, content.substr(0, n));
    content.remove_prefix(n);
  }
  return s + Rec(type, id, "");
}

Params GetParams(std::string uri) {
  const size_t q = uri.find('?');
  return {{"REQUEST_METHOD", "GET"},
          {"REQUEST_URI", uri},
          {"QUERY_STRING", q == std::string::npos ? "" : uri.substr(q + 1)},
          {"SCRIPT_NAME", uri.substr(0, q)},
          {"SERVER_PROTOCOL", "HTTP/1.1"},
          {"CONTENT_TYPE", ""},
          {"CONTENT_LENGTH", ""},
          {"HTTP_USER_AGENT", "curl/8.0"},
          {"HTTP_X_REQUEST_ID", "abc"}};
}

std::string Request1(uint16_t id, const Params& params, std::string_view body,
                     uint8_t flags) {
  return Begin(id, flags) + Stream(kParams, id, ParamStream(params)) +
         Stream(kStdin, id, body);
}

std::vector<OutRecord> Decode(std::string_view out) {
  std::vector<OutRecord> records;
  while (!out.empty()) {
    EXPECT_GE(out.size(), 8u) << "truncated record header";
    if (out.size() < 8) break;
    auto b = [&](int i) { return static_cast<uint8_t>(out[i]); };
    EXPECT_EQ(b(0), 1) << "version";
    OutRecord r;
    r.type = b(1);
    r.id = static_cast<uint16_t>(b(2) << 8 | b(3));
    const size_t len = size_t(b(4)) << 8 | b(5);
    const size_t pad = b(6);
    EXPECT_EQ((len + pad) % 8, 0u) << "padding to a multiple of 8";
    EXPECT_LT(pad, 8u);
    EXPECT_GE(out.size(), 8 + len + pad) << "truncated record";
    if (out.size() < 8 + len + pad) break;
    r.content = std::string(out.substr(8, len));
    records.push_back(r);
    out.remove_prefix(8 + len + pad);
  }
  return records;
}

OutRecord EndRecord(uint16_t id, uint8_t protocol_status) {
  return OutRecord{kEnd, id, EndBody(0, protocol_status)};
}

std::string StdoutOf(const std::vector<OutRecord>& records, uint16_t id,
                     bool* terminated) {
  std::string s;
  bool ended = false, closed = false;
  for (const OutRecord& r : records) {
    if (r.id != id) continue;
    if (r.type == kStdout) {
      EXPECT_FALSE(ended) << "STDOUT after its end";
      if (r.content.empty()) ended = true;
      s += r.content;
    } else if (r.type == kEnd) {
      EXPECT_TRUE(ended) << "END_REQUEST before the end of STDOUT";
      EXPECT_EQ(r.content, EndBody(0, 0));
      closed = true;
    }
  }
  if (terminated) *terminated = ended && closed;
  return s;
}

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  PrintVerdict(os, o);
  if (o.status == Status::kIncomplete) {
    os << " in_request=" << o.in_request << " in_body=" << o.in_body;
  }
  if (o.status == Status::kComplete) {
    os << " " << o.method << " " << Clip(o.target) << " path=" << o.path
       << " query=" << o.query;
    PrintFields(os, o);
    os << " close=" << o.close;
  }
  return os << "}";
}

std::ostream& operator<<(std::ostream& os, const Trace& t) {
  for (const Outcome& o : t.outcomes) os << "  " << o << "\n";
  return os << "  out: " << t.out.size() << " bytes\n";
}

Response SayWhatWasSeen(const Request& r) {
  Response resp;
  resp.body = std::string(r.method) + " " + std::string(r.target) +
              " path=" + std::string(r.path) +
              " query=" + std::string(r.query) + " body=" + std::string(r.body);
  return resp;
}

LimitsConfig TestLimits() {
  LimitsConfig l;
  l.max_header_bytes = 65536;  // nginx sends up to ~64 KB of params
  l.max_body_bytes = 1 << 20;
  l.max_connections = 7;
  return l;
}

Trace Play(std::string_view input, const std::vector<size_t>& cuts,
           const LimitsConfig& limits, Responder respond) {
  std::unique_ptr<ServerCodec> codec = MakeCodec(Protocol::kFastCgi, limits);
  Request request;
  Trace run;
  std::string data;
  const bool ran_out = Deliver(input, cuts, data, [&] {
    for (;;) {
      // Large inputs are not copied per call (that alone would be quadratic).
      std::string copy;
      if (data.size() <= 65536) copy = data;
      std::string_view view = data.size() <= 65536 ? copy : data;
      ServerCodec::Result r = codec->Parse(view, request, run.out);
      if (r.status == Status::kComplete) {
        Outcome o = Snapshot<Outcome>(r, request);
        EXPECT_GT(r.consumed, 0u);
        EXPECT_LE(r.consumed, view.size());
        o.close =
            codec->AppendResponse(request, respond(request), false, run.out);
        run.outcomes.push_back(o);
        data.erase(0, r.consumed);
        if (o.close) return false;
        continue;
      }
      if (r.status != Status::kIncomplete) {
        run.outcomes.push_back(Snapshot<Outcome>(r, request));
        return false;
      }
      return true;
    }
  });
  if (!ran_out) return run;
  Outcome o;  // where the input ran out
  o.consumed = data.size();
  o.in_request = codec->InRequest();
  o.in_body = codec->InBody();
  run.outcomes.push_back(o);
  return run;
}

Trace PlayAllSplits(std::string_view input, const LimitsConfig& limits,
                    Responder respond) {
  return PlayEverySchedule(input.size(), [&](const std::vector<size_t>& cuts) {
    return Play(input, cuts, limits, respond);
  });
}

Trace PlayWholeAndBytewise(std::string_view input, const LimitsConfig& limits,
                           Responder respond) {
  Trace whole = Play(input, {input.size()}, limits, respond);
  EXPECT_EQ(Play(input, Bytewise(input.size()), limits, respond), whole)
      << "byte by byte";
  return whole;
}

const Outcome& Final(const Trace& t) { return t.outcomes.back(); }

}  // namespace gearbox::testing::fastcgi_codec
