// The HTTP/1.1 conformance table (tests/conformance/cases.toml) as C++ data,
// and what the runners share: the escape decoder, a response splitter and the
// verdict a run produced. The unit test (the codec in memory) and the
// integration test (the real gearboxd, every model) both compare a Verdict
// against the case's expectation with Compare().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gearbox::conformance {

// Sent after the case on the same connection when the case expects it to stay
// usable; its answer is a 200 with kFollowUpBody, which no case's own request
// can produce (a request smuggled inside a case is told apart from it).
inline constexpr std::string_view kFollowUp =
    "POST /echo HTTP/1.1\r\nHost: follow-up\r\nContent-Length: 9\r\n\r\n"
    "follow-up";
inline constexpr std::string_view kFollowUpBody = "follow-up";

enum class Interim {
  kUntested,  // no head-then-body schedule
  kContinue,  // "100": 100 Continue after the head alone
  kAbsent,    // "none": no 1xx after the head alone
};

struct Case {
  std::string id;
  std::string section;
  std::string bytes;  // `send`, decoded
  std::vector<int> expect;
  bool close_after = false;  // after = "close"
  std::optional<std::string> body;
  Interim interim = Interim::kUntested;
  bool head = false;
  std::string nginx;  // why gearbox may differ from nginx ("" = it does not)

  // The codec refuses the request (any final status but the routes' 200 and
  // 404): the connection closes and bad_input grows by one.
  bool Rejected() const;
  // Bytes up to and including the end of the first head (its CRLFCRLF), or
  // the whole input when there is none.
  size_t HeadSize() const;
};

struct Suite {
  int64_t max_header_bytes = 0;
  int64_t max_body_bytes = 0;
  std::vector<Case> cases;
};

// Reads and checks the table. On failure returns false and sets *error.
bool LoadSuite(const std::string& path, Suite* suite, std::string* error);
// The default location under `bazel test` (the runfiles root is the cwd).
std::string DefaultSuitePath();

// Decodes `send`'s escapes (see cases.toml). Sets *error on a bad escape.
std::string DecodeEscapes(std::string_view text, std::string* error);

// One HTTP/1.1 response as gearbox frames it (Content-Length, or none for
// 1xx, 204, 304 and answers to HEAD).
struct Response {
  int status = 0;
  std::string body;
  bool connection_close = false;  // "Connection: close"
};
// Takes one response off the front of `bytes`. Returns false when `bytes`
// does not hold a whole one yet; *malformed is set when it never will.
bool TakeResponse(std::string& bytes, bool head, Response* out,
                  bool* malformed);

// What a run observed.
struct Verdict {
  std::vector<int> statuses;  // final responses, in order
  std::vector<int> interim;   // 1xx responses
  std::optional<std::string> first_body;
  bool closed = false;            // the server closed the connection
  bool follow_up_served = false;  // kFollowUp got its 200 kFollowUpBody
  std::string trouble;            // anything else wrong (malformed bytes...)
};

// "" when `v` is what `c` expects (the follow-up counts as part of an "open"
// case), else a readable description of the difference.
std::string Compare(const Case& c, const Verdict& v);
std::string Describe(const Verdict& v);
// The bytes, printable ("\r\n" for CRLF...), cut after `limit` bytes.
std::string Printable(std::string_view bytes, size_t limit = 160);

}  // namespace gearbox::conformance
