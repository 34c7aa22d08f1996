// The FastCGI codec is pure (records in -> Request, Response -> records), so
// every test plays its input under every schedule: one buffer, every two-piece
// split, a repeated call with no new bytes, and byte by byte. Each schedule
// must produce the same requests, the same output bytes and the same final
// verdict.
//
// Records are built by a small encoder written here from the spec, independent
// of the codec's own writer, and the codec's output is decoded and checked
// record by record (version, padding to a multiple of 8, lengths).
#include "daemon/fastcgi/fastcgi_codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/codec.h"

namespace gearbox {
namespace {

using Status = ServerCodec::Status;

// --- a test encoder ---------------------------------------------------------

enum : uint8_t {
  kBegin = 1,
  kAbort = 2,
  kEnd = 3,
  kParams = 4,
  kStdin = 5,
  kStdout = 6,
  kData = 8,
  kGetValues = 9,
  kGetValuesResult = 10,
  kUnknownType = 11,
};
constexpr uint8_t kKeep = 1;
constexpr int kAutoPad = -1;

std::string Rec(uint8_t type, uint16_t id, std::string_view content,
                int padding = kAutoPad) {
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

std::string Begin(uint16_t id, uint8_t flags = kKeep, uint16_t role = 1) {
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

std::string Pair(std::string_view name, std::string_view value,
                 bool four_name = false, bool four_value = false) {
  std::string s;
  PutLength(s, name.size(), four_name);
  PutLength(s, value.size(), four_value);
  s.append(name);
  s.append(value);
  return s;
}

using Params = std::vector<std::pair<std::string, std::string>>;

std::string ParamStream(const Params& params) {
  std::string s;
  for (const auto& [n, v] : params) s += Pair(n, v);
  return s;
}

// `content` as records of at most `piece` bytes, then the empty record.
std::string Stream(uint8_t type, uint16_t id, std::string_view content,
                   size_t piece = 65535) {
  std::string s;
  while (!content.empty()) {
    const size_t n = std::min(piece, content.size());
    s += Rec(type, id, content.substr(0, n));
    content.remove_prefix(n);
  }
  return s + Rec(type, id, "");
}

Params GetParams(std::string uri = "/hello?x=1") {
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

std::string Request1(uint16_t id, const Params& params,
                     std::string_view body = "", uint8_t flags = kKeep) {
  return Begin(id, flags) + Stream(kParams, id, ParamStream(params)) +
         Stream(kStdin, id, body);
}

// --- a decoder for the codec's output ---------------------------------------

struct OutRecord {
  uint8_t type = 0;
  uint16_t id = 0;
  std::string content;
  bool operator==(const OutRecord&) const = default;
};

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

OutRecord EndRecord(uint16_t id, uint8_t protocol_status) {
  return OutRecord{kEnd, id, EndBody(0, protocol_status)};
}

// The STDOUT stream of `id` (concatenated), and whether it was ended by an
// empty STDOUT record followed by END_REQUEST(complete).
std::string StdoutOf(const std::vector<OutRecord>& records, uint16_t id,
                     bool* terminated = nullptr) {
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

// --- playing a connection under every schedule ------------------------------

struct Outcome {
  Status status = Status::kIncomplete;
  size_t consumed = 0;
  int error_status = 0;
  std::string error_reason;
  std::string method, target, path, query;
  int major = 0, minor = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool keep_alive = false;
  bool is_head = false;
  bool close = false;       // AppendResponse's answer
  bool in_request = false;  // final incomplete state
  bool in_body = false;

  bool operator==(const Outcome&) const = default;
};

const char* StatusName(Status s) {
  switch (s) {
    case Status::kComplete:
      return "complete";
    case Status::kIncomplete:
      return "incomplete";
    case Status::kError:
      return "error";
    case Status::kClose:
      return "close";
  }
  return "?";
}

std::string Clip(std::string_view s) {
  if (s.size() <= 60) return std::string(s);
  return std::string(s.substr(0, 60)) + "...(" + std::to_string(s.size()) +
         " bytes)";
}

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  os << "{" << StatusName(o.status) << " consumed=" << o.consumed;
  if (o.status == Status::kError) {
    os << " error=" << o.error_status << " reason=" << o.error_reason;
  }
  if (o.status == Status::kIncomplete) {
    os << " in_request=" << o.in_request << " in_body=" << o.in_body;
  }
  if (o.status == Status::kComplete) {
    os << " " << o.method << " " << Clip(o.target) << " path=" << o.path
       << " query=" << o.query << " headers=[";
    for (const auto& [n, v] : o.headers) os << n << ": " << Clip(v) << "; ";
    os << "] body=\"" << Clip(o.body) << "\" keep_alive=" << o.keep_alive
       << " is_head=" << o.is_head << " close=" << o.close;
  }
  return os << "}";
}

struct Trace {
  std::vector<Outcome> outcomes;  // completed requests, then the final verdict
  std::string out;                // every byte the codec produced
  bool operator==(const Trace&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Trace& t) {
  for (const Outcome& o : t.outcomes) os << "  " << o << "\n";
  return os << "  out: " << t.out.size() << " bytes\n";
}

// The handler of these tests: says what it saw.
using Responder = Response (*)(const Request&);
Response SayWhatWasSeen(const Request& r) {
  Response resp;
  resp.body = std::string(r.method) + " " + std::string(r.target) +
              " path=" + std::string(r.path) +
              " query=" + std::string(r.query) + " body=" + std::string(r.body);
  return resp;
}

Outcome Snapshot(const ServerCodec::Result& r, const Request& req) {
  Outcome o;
  o.status = r.status;
  o.consumed = r.consumed;
  o.error_status = r.error_status;
  o.error_reason = r.error_reason;
  if (r.status == Status::kComplete) {
    o.method = req.method;
    o.target = req.target;
    o.path = req.path;
    o.query = req.query;
    o.major = req.version_major;
    o.minor = req.version_minor;
    for (const Header& h : req.headers) {
      o.headers.emplace_back(std::string(h.name), std::string(h.value));
    }
    o.body = req.body;
    o.keep_alive = req.keep_alive;
    o.is_head = req.is_head;
  }
  return o;
}

LimitsConfig TestLimits() {
  LimitsConfig l;
  l.max_header_bytes = 65536;  // nginx sends up to ~64 KB of params
  l.max_body_bytes = 1 << 20;
  l.max_connections = 7;
  return l;
}

// Plays a connection the way the models drive a codec: bytes arrive in pieces
// ending at `cuts`; after each arrival Parse runs until it needs more bytes; a
// complete request is answered (AppendResponse) before the next Parse and its
// bytes dropped. Every call gets a fresh copy of the buffer (a new address).
Trace Play(std::string_view input, const std::vector<size_t>& cuts,
           const LimitsConfig& limits, Responder respond) {
  std::unique_ptr<ServerCodec> codec = MakeCodec(Protocol::kFastCgi, limits);
  Request request;
  Trace run;
  std::string data;
  size_t arrived = 0;
  for (size_t cut : cuts) {
    data.append(input.substr(arrived, cut - arrived));
    arrived = cut;
    for (;;) {
      // Large inputs are not copied per call (that alone would be quadratic).
      std::string copy;
      if (data.size() <= 65536) copy = data;
      std::string_view view = data.size() <= 65536 ? copy : data;
      ServerCodec::Result r = codec->Parse(view, request, run.out);
      if (r.status == Status::kComplete) {
        Outcome o = Snapshot(r, request);
        EXPECT_GT(r.consumed, 0u);
        EXPECT_LE(r.consumed, view.size());
        o.close =
            codec->AppendResponse(request, respond(request), false, run.out);
        run.outcomes.push_back(o);
        data.erase(0, r.consumed);
        if (o.close) return run;
        continue;
      }
      if (r.status != Status::kIncomplete) {
        run.outcomes.push_back(Snapshot(r, request));
        return run;
      }
      break;
    }
  }
  Outcome o;  // where the input ran out
  o.consumed = data.size();
  o.in_request = codec->InRequest();
  o.in_body = codec->InBody();
  run.outcomes.push_back(o);
  return run;
}

// Runs `input` whole, split at every point (also with a repeated call that
// brings nothing new), and byte by byte; all must agree. Returns the whole run.
Trace PlayAllSplits(std::string_view input,
                    const LimitsConfig& limits = TestLimits(),
                    Responder respond = SayWhatWasSeen) {
  const size_t n = input.size();
  Trace whole = Play(input, {n}, limits, respond);
  for (size_t k = 1; k < n; ++k) {
    Trace split = Play(input, {k, n}, limits, respond);
    if (split != whole) {
      ADD_FAILURE() << "split at " << k << " of " << n << ":\n"
                    << split << "whole buffer:\n"
                    << whole;
      break;
    }
    Trace again = Play(input, {k, k, n}, limits, respond);
    if (again != whole) {
      ADD_FAILURE() << "repeated split at " << k << " of " << n << ":\n"
                    << again << "whole buffer:\n"
                    << whole;
      break;
    }
  }
  std::vector<size_t> bytewise;
  for (size_t k = 1; k <= n; ++k) bytewise.push_back(k);
  EXPECT_EQ(Play(input, bytewise, limits, respond), whole) << "byte by byte";
  return whole;
}

// Whole and byte by byte only (large inputs).
Trace PlayWholeAndBytewise(std::string_view input,
                           const LimitsConfig& limits = TestLimits(),
                           Responder respond = SayWhatWasSeen) {
  Trace whole = Play(input, {input.size()}, limits, respond);
  std::vector<size_t> bytewise;
  for (size_t k = 1; k <= input.size(); ++k) bytewise.push_back(k);
  EXPECT_EQ(Play(input, bytewise, limits, respond), whole) << "byte by byte";
  return whole;
}

std::string_view FindHeader(const Outcome& o, std::string_view name) {
  for (const auto& [n, v] : o.headers) {
    if (n == name) return v;
  }
  return {};
}

const Outcome& Final(const Trace& t) { return t.outcomes.back(); }

std::string ExpectedHead(size_t length, std::string_view type = "text/plain") {
  return "Status: 200 OK\r\nContent-Type: " + std::string(type) +
         "\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n";
}

// ---------------------------------------------------------------------------
// Well-formed requests.

TEST(FastCgiCodecTest, SimpleGet) {
  const std::string input = Request1(1, GetParams("/hello?x=1"));
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  const Outcome& o = run.outcomes[0];
  EXPECT_EQ(o.status, Status::kComplete);
  EXPECT_EQ(o.consumed, input.size());
  EXPECT_EQ(o.method, "GET");
  EXPECT_EQ(o.target, "/hello?x=1");
  EXPECT_EQ(o.path, "/hello");
  EXPECT_EQ(o.query, "x=1");
  EXPECT_EQ(o.major, 1);
  EXPECT_EQ(o.minor, 1);
  EXPECT_TRUE(o.keep_alive);
  EXPECT_FALSE(o.is_head);
  EXPECT_FALSE(o.close);
  // Empty CONTENT_TYPE / CONTENT_LENGTH (nginx sends them so) are not headers.
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"User-Agent", "curl/8.0"}, {"X-Request-Id", "abc"}};
  EXPECT_EQ(o.headers, headers);
  EXPECT_EQ(o.body, "");
  EXPECT_FALSE(Final(run).in_request);

  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 3u);
  const std::string body = "GET /hello?x=1 path=/hello query=x=1 body=";
  EXPECT_EQ(records[0],
            (OutRecord{kStdout, 1, ExpectedHead(body.size()) + body}));
  EXPECT_EQ(records[1], (OutRecord{kStdout, 1, ""}));
  EXPECT_EQ(records[2], EndRecord(1, 0));
}

TEST(FastCgiCodecTest, PostBodyAcrossStdinRecords) {
  Params p = {{"REQUEST_METHOD", "POST"},
              {"REQUEST_URI", "/echo"},
              {"CONTENT_TYPE", "application/json"},
              {"CONTENT_LENGTH", "13"}};
  const std::string input = Begin(3) + Stream(kParams, 3, ParamStream(p)) +
                            Stream(kStdin, 3, "{\"a\": \"bcd\"}\n", 5);
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  const Outcome& o = run.outcomes[0];
  EXPECT_EQ(o.method, "POST");
  EXPECT_EQ(o.path, "/echo");
  EXPECT_EQ(o.query, "");
  EXPECT_EQ(o.body, "{\"a\": \"bcd\"}\n");
  EXPECT_EQ(FindHeader(o, "Content-Type"), "application/json");
  EXPECT_EQ(FindHeader(o, "Content-Length"), "13");
  std::vector<OutRecord> records = Decode(run.out);
  bool terminated = false;
  EXPECT_NE(StdoutOf(records, 3, &terminated).find("body={\"a\""),
            std::string::npos);
  EXPECT_TRUE(terminated);
}

TEST(FastCgiCodecTest, KeepConnOffClosesAfterResponse) {
  const std::string input = Request1(1, GetParams(), "", /*flags=*/0);
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_FALSE(run.outcomes[0].keep_alive);
  EXPECT_TRUE(run.outcomes[0].close);
  bool terminated = false;
  StdoutOf(Decode(run.out), 1, &terminated);
  EXPECT_TRUE(terminated);
}

TEST(FastCgiCodecTest, KeepConnOnServesPipelinedRequests) {
  const std::string input = Request1(1, GetParams("/a")) +
                            Request1(1, GetParams("/b?q")) +
                            Request1(2, GetParams("/c"));
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 4u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/a");
  EXPECT_EQ(run.outcomes[1].path, "/b");
  EXPECT_EQ(run.outcomes[1].query, "q");
  EXPECT_EQ(run.outcomes[2].path, "/c");
  EXPECT_EQ(run.outcomes[0].consumed + run.outcomes[1].consumed +
                run.outcomes[2].consumed,
            input.size());
  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 9u);
  EXPECT_EQ(records[8], EndRecord(2, 0));
}

TEST(FastCgiCodecTest, OneAndFourByteLengths) {
  const std::string long_name = "HTTP_X_" + std::string(194, 'L');  // 201
  const std::string long_value(300, 'v');
  std::string params =
      ParamStream({{"REQUEST_METHOD", "GET"}, {"REQUEST_URI", "/hello"}});
  params += Pair(long_name, long_value);  // both 4-byte lengths
  params += Pair("HTTP_SHORT", "s", /*four_name=*/true, /*four_value=*/true);
  params += Pair("HTTP_EMPTY", "");
  params += Pair(std::string(127, 'A'), std::string(128, 'b'));  // 1 and 4
  const std::string input =
      Begin(1) + Stream(kParams, 1, params) + Stream(kStdin, 1, "");
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  const Outcome& o = run.outcomes[0];
  ASSERT_EQ(o.status, Status::kComplete);
  const std::string header_name =
      "X-" + std::string(1, 'L') + std::string(193, 'l');  // "X-Lllll..."
  EXPECT_EQ(FindHeader(o, header_name), long_value);
  EXPECT_EQ(FindHeader(o, "Short"), "s");
  ASSERT_EQ(o.headers.size(), 3u);
  EXPECT_EQ(o.headers[2].first, "Empty");
  EXPECT_EQ(o.headers[2].second, "");
}

TEST(FastCgiCodecTest, PairSplitAcrossParamsRecords) {
  Params p = GetParams("/split?me=1");
  p.emplace_back("HTTP_X_LONG", std::string(200, 'x'));
  const std::string stream = ParamStream(p);
  Trace reference = Play(Request1(1, p), {Request1(1, p).size()}, TestLimits(),
                         SayWhatWasSeen);
  ASSERT_EQ(reference.outcomes.size(), 2u) << reference;
  ASSERT_EQ(reference.outcomes[0].status, Status::kComplete);
  // Every cut of the PARAMS stream into two records (lengths, names and values
  // all end up straddling), then one record per byte.
  for (size_t k = 1; k < stream.size(); ++k) {
    const std::string input =
        Begin(1) + Rec(kParams, 1, std::string_view(stream).substr(0, k)) +
        Rec(kParams, 1, std::string_view(stream).substr(k)) +
        Rec(kParams, 1, "") + Stream(kStdin, 1, "");
    Trace run = Play(input, {input.size()}, TestLimits(), SayWhatWasSeen);
    ASSERT_EQ(run.outcomes.size(), 2u) << "cut " << k << "\n" << run;
    Outcome o = run.outcomes[0];
    o.consumed =
        reference.outcomes[0].consumed;  // framing differs, nothing else
    EXPECT_EQ(o, reference.outcomes[0]) << "cut " << k;
    EXPECT_EQ(run.out, reference.out) << "cut " << k;
  }
  std::string input = Begin(1);
  for (char c : stream) input += Rec(kParams, 1, std::string_view(&c, 1));
  input += Rec(kParams, 1, "") + Stream(kStdin, 1, "");
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].headers, reference.outcomes[0].headers);
  EXPECT_EQ(run.out, reference.out);
}

TEST(FastCgiCodecTest, PaddingBothWays) {
  const std::string params = ParamStream(GetParams("/pad"));
  // No padding at all (lengths not multiples of 8), odd padding, and the
  // maximum; on every record, including the empty ones that end the streams.
  for (int pad : {0, 3, 255}) {
    const std::string input =
        Rec(kBegin, 1, std::string("\0\1\1\0\0\0\0\0", 8), pad) +
        Rec(kParams, 1, params, pad) + Rec(kParams, 1, "", pad) +
        Rec(kStdin, 1, "abcde", pad) + Rec(kStdin, 1, "", pad);
    Trace run = PlayAllSplits(input);
    ASSERT_EQ(run.outcomes.size(), 2u) << "pad " << pad << "\n" << run;
    EXPECT_EQ(run.outcomes[0].consumed, input.size()) << "pad " << pad;
    EXPECT_EQ(run.outcomes[0].body, "abcde");
    EXPECT_EQ(run.outcomes[0].path, "/pad");
    EXPECT_FALSE(Final(run).in_request);
  }
}

TEST(FastCgiCodecTest, LargeResponseSplitIntoMaxRecords) {
  static std::string big;
  big.clear();
  for (size_t i = 0; i < 200000; ++i)
    big.push_back(static_cast<char>('a' + i % 26));
  Trace run = Play(Request1(9, GetParams("/big")),
                   {Request1(9, GetParams("/big")).size()}, TestLimits(),
                   [](const Request&) {
                     Response r;
                     r.body = big;
                     return r;
                   });
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  std::vector<OutRecord> records = Decode(run.out);
  const std::string expected = ExpectedHead(big.size()) + big;
  ASSERT_EQ(records.size(), 4u + 2u);  // ceil(200068 / 65535) = 4
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(records[i].type, kStdout);
    EXPECT_EQ(records[i].content.size(), 65535u);
  }
  EXPECT_EQ(records[3].content.size(), expected.size() - 3 * 65535);
  bool terminated = false;
  EXPECT_EQ(StdoutOf(records, 9, &terminated), expected);
  EXPECT_TRUE(terminated);
}

TEST(FastCgiCodecTest, HeadHasLengthButNoBody) {
  Params p = GetParams("/hello");
  p[0].second = "HEAD";
  Trace run = PlayAllSplits(Request1(1, p));
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_TRUE(run.outcomes[0].is_head);
  const std::string body = "HEAD /hello path=/hello query= body=";
  EXPECT_EQ(StdoutOf(Decode(run.out), 1), ExpectedHead(body.size()));
}

TEST(FastCgiCodecTest, NoContentResponseHasNoEntityHeaders) {
  Trace run = Play(Request1(1, GetParams()), {Request1(1, GetParams()).size()},
                   TestLimits(), [](const Request&) {
                     Response r;
                     r.status = 204;
                     r.body = "ignored";
                     r.extra_headers = "X-A: b\r\n";
                     return r;
                   });
  EXPECT_EQ(StdoutOf(Decode(run.out), 1),
            "Status: 204 No Content\r\nX-A: b\r\n\r\n");
}

TEST(FastCgiCodecTest, ResponseCloseAndCallerClose) {
  const std::string input = Request1(1, GetParams());
  Trace run = Play(input, {input.size()}, TestLimits(), [](const Request&) {
    Response r;
    r.close = true;
    return r;
  });
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_TRUE(run.outcomes[0].close);

  std::unique_ptr<ServerCodec> codec =
      MakeCodec(Protocol::kFastCgi, TestLimits());
  Request request;
  std::string out;
  ASSERT_EQ(codec->Parse(input, request, out).status, Status::kComplete);
  EXPECT_TRUE(codec->AppendResponse(request, Response{}, /*close=*/true, out));
}

// An answer rendered before the request existed (prefork's cut-off 504) is
// stamped with the id of the request the codec parsed last: every record.
TEST(FastCgiCodecTest, StampAnswerFillsInTheRequestId) {
  std::unique_ptr<ServerCodec> ahead =
      MakeCodec(Protocol::kFastCgi, TestLimits());
  Response timeout;
  timeout.status = 504;
  timeout.body = std::string(70000, 'x');  // two STDOUT records of content
  std::string answer;
  ahead->AppendResponse(gearbox::Request{}, timeout, /*close=*/true, answer);

  std::unique_ptr<ServerCodec> codec =
      MakeCodec(Protocol::kFastCgi, TestLimits());
  const std::string input = Request1(0x1234, GetParams());
  gearbox::Request request;
  std::string out;
  ASSERT_EQ(codec->Parse(input, request, out).status, Status::kComplete);
  codec->StampAnswer(answer, 0);
  std::vector<uint8_t> types;
  for (size_t at = 0; at + 8 <= answer.size();) {
    const auto* h = reinterpret_cast<const unsigned char*>(answer.data() + at);
    EXPECT_EQ(h[2] << 8 | h[3], 0x1234) << "record " << types.size();
    types.push_back(h[1]);
    at += 8 + (size_t{h[4]} << 8 | h[5]) + h[6];
  }
  EXPECT_EQ(types, (std::vector<uint8_t>{kStdout, kStdout, kStdout, kEnd}));
}

TEST(FastCgiCodecTest, ScriptNameAndPathInfoWithoutRequestUri) {
  Params p = {{"REQUEST_METHOD", "GET"},
              {"SCRIPT_NAME", "/app"},
              {"PATH_INFO", "/x/y"},
              {"QUERY_STRING", "k=v"}};
  Trace run = PlayAllSplits(Request1(1, p));
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/app/x/y");
  EXPECT_EQ(run.outcomes[0].query, "k=v");
  EXPECT_EQ(run.outcomes[0].target, "/app/x/y?k=v");
}

// ---------------------------------------------------------------------------
// Management records, roles, multiplexing, abort.

std::string GetValuesResult(const Params& p) { return ParamStream(p); }

TEST(FastCgiCodecTest, GetValuesThenRequest) {
  const std::string ask = ParamStream({{"FCGI_MAX_CONNS", ""},
                                       {"FCGI_UNKNOWN_THING", ""},
                                       {"FCGI_MPXS_CONNS", ""},
                                       {"FCGI_MAX_CONNS", ""}});
  const std::string input =
      Rec(kGetValues, 0, ask) + Request1(1, GetParams("/after"));
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/after");
  EXPECT_EQ(run.outcomes[0].consumed, input.size());
  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0],
            (OutRecord{kGetValuesResult, 0,
                       GetValuesResult({{"FCGI_MAX_CONNS", "7"},
                                        {"FCGI_MPXS_CONNS", "0"}})}));
  EXPECT_EQ(records[3], EndRecord(1, 0));

  Trace reqs = PlayAllSplits(Rec(kGetValues, 0, Pair("FCGI_MAX_REQS", "")));
  EXPECT_EQ(Decode(reqs.out),
            (std::vector<OutRecord>{
                {kGetValuesResult, 0, Pair("FCGI_MAX_REQS", "7")}}));
  EXPECT_FALSE(Final(reqs).in_request);  // a management record is no request

  Trace none = PlayAllSplits(Rec(kGetValues, 0, ""));
  EXPECT_EQ(Decode(none.out),
            (std::vector<OutRecord>{{kGetValuesResult, 0, ""}}));
}

TEST(FastCgiCodecTest, GetValuesDuringRequest) {
  const std::string input = Begin(1) +
                            Rec(kParams, 1, Pair("REQUEST_METHOD", "GET")) +
                            Rec(kGetValues, 0, Pair("FCGI_MPXS_CONNS", "")) +
                            Rec(kParams, 1, Pair("REQUEST_URI", "/x")) +
                            Rec(kParams, 1, "") + Stream(kStdin, 1, "");
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/x");
  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].type, kGetValuesResult);
}

TEST(FastCgiCodecTest, UnknownManagementType) {
  const std::string input = Rec(42, 0, "whatever") +
                            Rec(kBegin, 0, std::string(8, '\0')) +
                            Request1(1, GetParams());
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[0],
            (OutRecord{kUnknownType, 0, std::string("\x2a\0\0\0\0\0\0\0", 8)}));
  EXPECT_EQ(records[1],
            (OutRecord{kUnknownType, 0, std::string("\x01\0\0\0\0\0\0\0", 8)}));
}

TEST(FastCgiCodecTest, UnknownRole) {
  // With KEEP_CONN the connection stays usable; the refused request's records
  // are ignored.
  const std::string input = Begin(1, kKeep, /*role=*/2) +
                            Stream(kParams, 1, ParamStream(GetParams())) +
                            Stream(kStdin, 1, "") +
                            Request1(2, GetParams("/ok"));
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/ok");
  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0], EndRecord(1, /*FCGI_UNKNOWN_ROLE=*/3));
  EXPECT_EQ(records[3], EndRecord(2, 0));

  // Without it, the application closes after answering.
  Trace closed =
      PlayAllSplits(Begin(1, 0, /*role=*/3) + Request1(2, GetParams()));
  ASSERT_EQ(closed.outcomes.size(), 1u) << closed;
  EXPECT_EQ(closed.outcomes[0].status, Status::kClose);
  EXPECT_EQ(Decode(closed.out), (std::vector<OutRecord>{EndRecord(1, 3)}));
}

TEST(FastCgiCodecTest, SecondRequestIdIsRefusedNotDropped) {
  const std::string input =
      Begin(1) + Rec(kParams, 1, ParamStream(GetParams("/first"))) + Begin(2) +
      Rec(kParams, 2, ParamStream(GetParams("/second"))) + Rec(kParams, 1, "") +
      Stream(kParams, 2, "") + Rec(kStdin, 1, "body1") +
      Stream(kStdin, 2, "b2") + Rec(kStdin, 1, "");
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/first");
  EXPECT_EQ(run.outcomes[0].body, "body1");
  std::vector<OutRecord> records = Decode(run.out);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0], EndRecord(2, /*FCGI_CANT_MPX_CONN=*/1));
  EXPECT_EQ(records[3], EndRecord(1, 0));
}

TEST(FastCgiCodecTest, AbortRequest) {
  const std::string aborted = Begin(1) +
                              Rec(kParams, 1, ParamStream(GetParams("/gone"))) +
                              Rec(kAbort, 1, "");
  {
    Trace run = PlayAllSplits(aborted);
    ASSERT_EQ(run.outcomes.size(), 1u) << run;
    EXPECT_EQ(run.outcomes[0].status, Status::kIncomplete);
    EXPECT_FALSE(run.outcomes[0].in_request);  // back to idle
    EXPECT_EQ(Decode(run.out), (std::vector<OutRecord>{EndRecord(1, 0)}));
  }
  {
    // The connection goes on; the aborted request's late records are ignored.
    const std::string input = aborted + Rec(kParams, 1, "") +
                              Rec(kStdin, 1, "late") + Rec(kAbort, 1, "") +
                              Request1(1, GetParams("/next"));
    Trace run = PlayAllSplits(input);
    ASSERT_EQ(run.outcomes.size(), 2u) << run;
    EXPECT_EQ(run.outcomes[0].path, "/next");
    EXPECT_EQ(run.outcomes[0].body, "");
    EXPECT_EQ(run.outcomes[0].consumed, input.size());
    std::vector<OutRecord> records = Decode(run.out);
    ASSERT_EQ(records.size(), 4u);
    EXPECT_EQ(records[0], EndRecord(1, 0));
  }
  {
    // Without KEEP_CONN the connection ends after the acknowledgement.
    Trace run = PlayAllSplits(Begin(1, 0) + Rec(kAbort, 1, "") +
                              Request1(1, GetParams()));
    ASSERT_EQ(run.outcomes.size(), 1u) << run;
    EXPECT_EQ(run.outcomes[0].status, Status::kClose);
    EXPECT_EQ(Decode(run.out), (std::vector<OutRecord>{EndRecord(1, 0)}));
  }
}

TEST(FastCgiCodecTest, RecordsForInactiveIdsAreIgnored) {
  const std::string input =
      Rec(kParams, 9, "garbage that is never parsed") + Rec(kStdin, 9, "x") +
      Rec(kAbort, 9, "") + Begin(1) + Rec(kStdin, 4, "zz") +
      Rec(kParams, 1, ParamStream(GetParams("/live"))) + Rec(kData, 1, "data") +
      Rec(kParams, 1, "") + Rec(kStdin, 1, "real") + Rec(kParams, 9, "") +
      Rec(kStdin, 1, "");
  Trace run = PlayAllSplits(input);
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/live");
  EXPECT_EQ(run.outcomes[0].body, "real");
  EXPECT_EQ(Decode(run.out).size(), 3u);
}

// ---------------------------------------------------------------------------
// State for timeouts.

TEST(FastCgiCodecTest, InRequestAndInBody) {
  std::unique_ptr<ServerCodec> codec =
      MakeCodec(Protocol::kFastCgi, TestLimits());
  Request request;
  std::string out;
  EXPECT_FALSE(codec->InRequest());
  EXPECT_FALSE(codec->InBody());
  const std::string begin = Begin(1);
  const std::string params = Stream(kParams, 1, ParamStream(GetParams()));
  const std::string input = begin + params + Stream(kStdin, 1, "abc");
  std::string buf = input.substr(0, 3);
  EXPECT_EQ(codec->Parse(buf, request, out).status, Status::kIncomplete);
  EXPECT_TRUE(codec->InRequest());  // part of a record
  EXPECT_FALSE(codec->InBody());
  buf = input.substr(0, begin.size() + 10);
  EXPECT_EQ(codec->Parse(buf, request, out).status, Status::kIncomplete);
  EXPECT_TRUE(codec->InRequest());
  EXPECT_FALSE(codec->InBody());
  buf = input.substr(0, begin.size() + params.size());
  EXPECT_EQ(codec->Parse(buf, request, out).status, Status::kIncomplete);
  EXPECT_TRUE(codec->InBody());
  ServerCodec::Result r = codec->Parse(input, request, out);
  EXPECT_EQ(r.status, Status::kComplete);
  EXPECT_FALSE(codec->InRequest());
  EXPECT_FALSE(codec->InBody());
  EXPECT_TRUE(out.empty());
}

TEST(FastCgiCodecTest, RepeatedCallsDoNotRepeatReplies) {
  std::unique_ptr<ServerCodec> codec =
      MakeCodec(Protocol::kFastCgi, TestLimits());
  Request request;
  std::string out;
  const std::string input =
      Rec(kGetValues, 0, Pair("FCGI_MAX_CONNS", "")) + Rec(77, 0, "");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(codec->Parse(input, request, out).status, Status::kIncomplete);
  }
  EXPECT_EQ(Decode(out).size(), 2u);
  EXPECT_FALSE(codec->InRequest());
}

// ---------------------------------------------------------------------------
// Limits: answered in the protocol, then the connection closes.

TEST(FastCgiCodecTest, ParamsOverMaxHeaderBytesIs431) {
  LimitsConfig limits = TestLimits();
  limits.max_header_bytes = 200;
  Params p = GetParams();
  p.emplace_back("HTTP_COOKIE", std::string(150, 'c'));
  Trace run = PlayAllSplits(Request1(5, p), limits);
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_EQ(run.outcomes[0].status, Status::kError);
  EXPECT_EQ(run.outcomes[0].error_status, 431);
  EXPECT_EQ(run.outcomes[0].error_reason, "header_too_large");
  bool terminated = false;
  const std::string reply = StdoutOf(Decode(run.out), 5, &terminated);
  EXPECT_TRUE(terminated);
  EXPECT_EQ(reply.rfind("Status: 431 Request Header Fields Too Large\r\n", 0),
            0u)
      << reply;

  // Split into small records: caught by the running total.
  std::string input = Begin(5);
  const std::string stream = ParamStream(p);
  for (size_t i = 0; i < stream.size(); i += 16) {
    input += Rec(kParams, 5, std::string_view(stream).substr(i, 16));
  }
  Trace small = PlayAllSplits(input, limits);
  ASSERT_EQ(small.outcomes.size(), 1u) << small;
  EXPECT_EQ(small.outcomes[0].error_status, 431);

  // A pair whose declared length alone cannot fit: refused before its bytes.
  std::string huge = Pair("HTTP_X", "");
  huge.resize(1);
  PutLength(huge, 1000000, true);
  Trace declared =
      PlayAllSplits(Begin(5) + Rec(kParams, 5, huge + "HTTP_X"), limits);
  ASSERT_EQ(declared.outcomes.size(), 1u) << declared;
  EXPECT_EQ(declared.outcomes[0].error_status, 431);
}

TEST(FastCgiCodecTest, BodyOverMaxBodyBytesIs413) {
  LimitsConfig limits = TestLimits();
  limits.max_body_bytes = 10;
  // Exactly at the limit is fine.
  Trace ok = PlayAllSplits(Request1(1, GetParams(), "0123456789"), limits);
  ASSERT_EQ(ok.outcomes.size(), 2u) << ok;
  EXPECT_EQ(ok.outcomes[0].body, "0123456789");

  Trace run =
      PlayAllSplits(Begin(1) + Stream(kParams, 1, ParamStream(GetParams())) +
                        Rec(kStdin, 1, "012345") + Rec(kStdin, 1, "6789A") +
                        Rec(kStdin, 1, ""),
                    limits);
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_EQ(run.outcomes[0].status, Status::kError);
  EXPECT_EQ(run.outcomes[0].error_status, 413);
  EXPECT_EQ(run.outcomes[0].error_reason, "body_too_large");
  bool terminated = false;
  const std::string reply = StdoutOf(Decode(run.out), 1, &terminated);
  EXPECT_EQ(reply.rfind("Status: 413 Content Too Large\r\n", 0), 0u) << reply;
  EXPECT_TRUE(terminated);

  // CONTENT_LENGTH announces too much: refused when PARAMS ends.
  Params p = GetParams();
  p[6].second = "11";
  Trace announced =
      PlayAllSplits(Begin(1) + Stream(kParams, 1, ParamStream(p)), limits);
  ASSERT_EQ(announced.outcomes.size(), 1u) << announced;
  EXPECT_EQ(announced.outcomes[0].error_status, 413);
  // Changed (issue 14): a CONTENT_LENGTH that does not fit in 64 bits was
  // 413 here; it is now 400, as the same Content-Length gets over HTTP (one
  // that fits but exceeds the limit stays 413, above).
  p[6].second = "99999999999999999999999";
  announced =
      PlayAllSplits(Begin(1) + Stream(kParams, 1, ParamStream(p)), limits);
  ASSERT_EQ(announced.outcomes.size(), 1u) << announced;
  EXPECT_EQ(announced.outcomes[0].error_status, 400);
}

// --- the questions an HTTP head raises, asked through PARAMS (issue 14) ----
// Answered as the HTTP codec answers them; the HTTP case of each is named
// (tests/conformance/cases.toml).

Params With(Params p, const std::string& name, const std::string& value) {
  for (auto& [n, v] : p) {
    if (n == name) {
      v = value;
      return p;
    }
  }
  p.emplace_back(name, value);
  return p;
}

Params Plus(Params p, const std::string& name, const std::string& value) {
  p.emplace_back(name, value);
  return p;
}

struct ParamsCase {
  const char* http_case;  // its counterpart in cases.toml
  Params params;
  std::string body;
  int status;  // 0: a request
};

TEST(FastCgiCodecTest, HttpQuestionsThroughParamsGetHttpAnswers) {
  const Params get = GetParams("/hello");
  const Params post = With(get, "REQUEST_METHOD", "POST");
  const std::vector<ParamsCase> cases = {
      {"cl_body", With(post, "CONTENT_LENGTH", "5"), "hello", 0},
      {"cl_hex", With(post, "CONTENT_LENGTH", "0x5"), "hello", 400},
      {"cl_plus_sign", With(post, "CONTENT_LENGTH", "+5"), "hello", 400},
      {"cl_negative", With(post, "CONTENT_LENGTH", "-5"), "hello", 400},
      {"cl_inner_space", With(post, "CONTENT_LENGTH", "1 0"), "helloworld",
       400},
      {"cl_list_same", With(post, "CONTENT_LENGTH", "5, 5"), "hello", 400},
      {"(not a number)", With(post, "CONTENT_LENGTH", "abc"), "", 400},
      {"cl_overflow", With(post, "CONTENT_LENGTH", "99999999999999999999999"),
       "", 400},
      {"cl_over_limit", With(post, "CONTENT_LENGTH", "2000000"), "", 413},
      {"cl_two_fields_same",
       Plus(With(post, "CONTENT_LENGTH", "5"), "CONTENT_LENGTH", "5"), "hello",
       400},
      {"(STDIN longer than CONTENT_LENGTH)", With(post, "CONTENT_LENGTH", "5"),
       "hello!", 400},
      {"(STDIN shorter than CONTENT_LENGTH)", With(post, "CONTENT_LENGTH", "5"),
       "hell", 400},
      {"host_with_port", Plus(get, "HTTP_HOST", "t.example:8080"), "", 0},
      {"host_empty", Plus(get, "HTTP_HOST", ""), "", 0},
      {"host_duplicate", Plus(Plus(get, "HTTP_HOST", "t"), "HTTP_HOST", "t"),
       "", 400},
      {"host_space_inside", Plus(get, "HTTP_HOST", "a b"), "", 400},
      {"host_userinfo", Plus(get, "HTTP_HOST", "user@t"), "", 400},
      {"host_bad_port", Plus(get, "HTTP_HOST", "t:80x"), "", 400},
      {"field_value_nul", Plus(get, "HTTP_X_A", std::string("a\0b", 3)), "",
       400},
      {"field_value_ctl", Plus(get, "HTTP_X_A", "a\x01b"), "", 400},
      {"field_value_del",
       Plus(get, "HTTP_X_A",
            "a\x7f"
            "b"),
       "", 400},
      {"field_value_obs_text", Plus(get, "HTTP_X_A", "caf\xc3\xa9"), "", 0},
      {"field_value_inner_tab", Plus(get, "HTTP_X_A", "a\tb c"), "", 0},
      {"method_not_a_token", With(get, "REQUEST_METHOD", "G@T"), "", 400},
      {"method_lowercase", With(get, "REQUEST_METHOD", "get"), "", 501},
      {"method_unknown", With(get, "REQUEST_METHOD", "FROB"), "", 501},
      {"method_connect",
       With(With(get, "REQUEST_METHOD", "CONNECT"), "REQUEST_URI", "t:443"), "",
       501},
      {"target_fragment", With(get, "REQUEST_URI", "/hello#frag"), "", 400},
      {"target_bad_pct_encoding", With(get, "REQUEST_URI", "/a%zz"), "", 400},
      {"target_8bit", With(get, "REQUEST_URI", "/caf\xc3\xa9"), "", 400},
      {"asterisk_form_not_options", With(get, "REQUEST_URI", "*"), "", 400},
      {"authority_form_not_connect", With(get, "REQUEST_URI", "t:80"), "", 400},
      {"absolute_form_userinfo",
       With(get, "REQUEST_URI", "http://user@t/hello"), "", 400},
  };
  for (const ParamsCase& c : cases) {
    SCOPED_TRACE(c.http_case);
    Trace run = PlayAllSplits(Request1(1, c.params, c.body));
    ASSERT_FALSE(run.outcomes.empty());
    const Outcome& first = run.outcomes[0];
    if (c.status == 0) {
      EXPECT_EQ(first.status, Status::kComplete) << run;
      EXPECT_EQ(first.body, c.body) << run;
    } else {
      EXPECT_EQ(first.status, Status::kError) << run;
      EXPECT_EQ(first.error_status, c.status) << run;
      bool terminated = false;
      const std::string reply = StdoutOf(Decode(run.out), 1, &terminated);
      EXPECT_EQ(reply.rfind("Status: " + std::to_string(c.status), 0), 0u)
          << reply;
      EXPECT_TRUE(terminated);
    }
  }
}

TEST(FastCgiCodecTest, AbsoluteAndAsteriskRequestUri) {
  // absolute_form: route on the path, the host from the target (RFC 9112
  // 3.2.2), as over HTTP.
  Trace run = PlayAllSplits(Request1(
      1, Plus(With(GetParams(), "REQUEST_URI", "http://other.example:81/p?q=1"),
              "HTTP_HOST", "t")));
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/p");
  std::string host;
  for (const auto& [n, v] : run.outcomes[0].headers) {
    if (n == "Host") host = v;
  }
  EXPECT_EQ(host, "other.example:81");
  // absolute_form_empty_path: "/".
  run = PlayAllSplits(
      Request1(1, With(GetParams(), "REQUEST_URI", "https://h.example")));
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "/");
  // asterisk_form_options: path "*", which the router answers for OPTIONS.
  run = PlayAllSplits(
      Request1(1, With(With(GetParams(), "REQUEST_METHOD", "OPTIONS"),
                       "REQUEST_URI", "*")));
  ASSERT_EQ(run.outcomes.size(), 2u) << run;
  EXPECT_EQ(run.outcomes[0].path, "*");
}

TEST(FastCgiCodecTest, MissingMethodIs400) {
  Trace run = PlayAllSplits(Request1(1, {{"REQUEST_URI", "/x"}}));
  ASSERT_EQ(run.outcomes.size(), 1u) << run;
  EXPECT_EQ(run.outcomes[0].error_status, 400);
  bool terminated = false;
  StdoutOf(Decode(run.out), 1, &terminated);
  EXPECT_TRUE(terminated);
}

TEST(FastCgiCodecTest, CrLfInAHeaderValueIs400) {
  for (const char* name : {"HTTP_X_EVIL", "CONTENT_TYPE"}) {
    Trace run = PlayAllSplits(Request1(1, {{"REQUEST_METHOD", "GET"},
                                           {"REQUEST_URI", "/x"},
                                           {name, "a\r\nSet-Cookie: x=1"}}));
    ASSERT_EQ(run.outcomes.size(), 1u) << run;
    EXPECT_EQ(run.outcomes[0].error_status, 400) << name;
  }
}

// ---------------------------------------------------------------------------
// Bad input: closed silently.

void ExpectSilentError(const std::string& input, std::string_view reason,
                       const LimitsConfig& limits = TestLimits()) {
  Trace run = PlayAllSplits(input, limits);
  ASSERT_FALSE(run.outcomes.empty());
  const Outcome& o = Final(run);
  EXPECT_EQ(o.status, Status::kError) << run;
  EXPECT_EQ(o.error_status, 0);
  EXPECT_EQ(o.error_reason, reason);
}

TEST(FastCgiCodecTest, BadInputIsAnError) {
  // HTTP on the FastCGI socket: refused on the first byte.
  ExpectSilentError("GET / HTTP/1.1\r\nHost: a\r\n\r\n", "bad_version");
  {
    std::unique_ptr<ServerCodec> codec =
        MakeCodec(Protocol::kFastCgi, TestLimits());
    Request request;
    std::string out;
    EXPECT_EQ(codec->Parse("G", request, out).status, Status::kError);
  }
  std::string v2 = Begin(1);
  v2[0] = 2;
  ExpectSilentError(v2, "bad_version");
  std::string later = Request1(1, GetParams());
  later[Begin(1).size()] = 0;  // the PARAMS record's version
  ExpectSilentError(later, "bad_version");
  ExpectSilentError(Rec(kBegin, 1, std::string(9, '\1')), "bad_length");
  ExpectSilentError(Rec(kBegin, 1, ""), "bad_length");
  ExpectSilentError(Begin(1) + Rec(kStdout, 1, "x"), "unexpected_type");
  ExpectSilentError(Rec(kEnd, 3, std::string(8, '\0')), "unexpected_type");
  ExpectSilentError(Rec(200, 1, "x"), "unexpected_type");
  // A pair longer than the stream that carries it.
  ExpectSilentError(
      Begin(1) + Rec(kParams, 1, "\x05\x09HTTP_") + Rec(kParams, 1, ""),
      "bad_params");
  ExpectSilentError(Rec(kGetValues, 0, std::string("\x0e\x00\x46", 3)),
                    "bad_params");
  // Streams out of order, or the same id begun twice.
  ExpectSilentError(Begin(1) + Rec(kStdin, 1, "x"), "bad_order");
  ExpectSilentError(
      Begin(1) + Rec(kParams, 1, Pair("REQUEST_METHOD", "GET")) + Begin(1),
      "bad_order");
  ExpectSilentError(Begin(1) + Stream(kParams, 1, ParamStream(GetParams())) +
                        Rec(kParams, 1, ""),
                    "bad_order");
}

TEST(FastCgiCodecTest, UnboundedWindowIsAnError) {
  // Records for an id nobody began never complete a request; their bytes cannot
  // pile up without bound.
  LimitsConfig limits = TestLimits();
  limits.max_header_bytes = 100;
  limits.max_body_bytes = 100;
  std::string input;
  while (input.size() < (size_t{1} << 20) + 70000) {
    input += Rec(kStdin, 9, std::string(65535, 's'));
  }
  Trace run = PlayWholeAndBytewise(input, limits);
  EXPECT_EQ(Final(run).status, Status::kError);
  EXPECT_EQ(Final(run).error_reason, "too_large");
}

// ---------------------------------------------------------------------------
// AppendError (overload, timeouts).

TEST(FastCgiCodecTest, AppendErrorUsesTheActiveIdOrOne) {
  {
    std::unique_ptr<ServerCodec> codec =
        MakeCodec(Protocol::kFastCgi, TestLimits());
    std::string out;
    codec->AppendError(503, "Retry-After: 1\r\n", out);
    bool terminated = false;
    EXPECT_EQ(StdoutOf(Decode(out), 1, &terminated),
              "Status: 503 Service Unavailable\r\nContent-Type: "
              "text/plain\r\nContent-Length: 20\r\nRetry-After: 1\r\n\r\n"
              "Service Unavailable\n");
    EXPECT_TRUE(terminated);
  }
  {
    std::unique_ptr<ServerCodec> codec =
        MakeCodec(Protocol::kFastCgi, TestLimits());
    Request request;
    std::string out;
    std::string input =
        Begin(5) + Rec(kParams, 5, Pair("REQUEST_METHOD", "GET"));
    EXPECT_EQ(codec->Parse(input, request, out).status, Status::kIncomplete);
    codec->AppendError(408, {}, out);
    std::vector<OutRecord> records = Decode(out);
    ASSERT_EQ(records.size(), 3u);
    EXPECT_EQ(records[0].id, 5);
    EXPECT_EQ(records[2], EndRecord(5, 0));
  }
}

// ---------------------------------------------------------------------------
// Cost and robustness.

TEST(FastCgiCodecTest, ByteByByteIsLinear) {
  // 512 KiB of body delivered one byte per call: quadratic re-parsing would
  // take ~10^11 steps; linear takes milliseconds.
  const std::string body(512 * 1024, 'b');
  const std::string input = Begin(1) +
                            Stream(kParams, 1, ParamStream(GetParams())) +
                            Stream(kStdin, 1, body, 32768);
  std::unique_ptr<ServerCodec> codec =
      MakeCodec(Protocol::kFastCgi, TestLimits());
  Request request;
  std::string out;
  ServerCodec::Result r;
  for (size_t k = 1; k <= input.size(); ++k) {
    r = codec->Parse(std::string_view(input).substr(0, k), request, out);
    if (r.status != Status::kIncomplete) break;
  }
  EXPECT_EQ(r.status, Status::kComplete);
  EXPECT_EQ(r.consumed, input.size());
  EXPECT_EQ(request.body.size(), body.size());
}

TEST(FastCgiCodecTest, RandomMutationsNeverCrashAndAgree) {
  std::mt19937 rng(12345);
  const std::string base = Rec(kGetValues, 0, Pair("FCGI_MAX_CONNS", "")) +
                           Request1(1, GetParams("/m?x"), "body") +
                           Request1(2, GetParams("/n"), "", 0);
  LimitsConfig limits = TestLimits();
  limits.max_header_bytes = 300;
  limits.max_body_bytes = 50;
  for (int i = 0; i < 2000; ++i) {
    std::string input = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % input.size();
      switch (rng() % 3) {
        case 0:
          input[at] = static_cast<char>(rng());
          break;
        case 1:
          input.erase(at, 1 + rng() % 8);
          break;
        default:
          input.insert(at,
                       std::string(1 + rng() % 8, static_cast<char>(rng())));
      }
      if (input.empty()) input = "x";
    }
    PlayWholeAndBytewise(input, limits);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "mutation " << i;
      break;
    }
  }
}

}  // namespace
}  // namespace gearbox
