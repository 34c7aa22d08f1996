// The HTTP/1.1 conformance table (tests/conformance/cases.toml) against the
// real gearboxd, one Bazel target per model (models.bzl). Each case is sent
// whole and then one byte per send() on fresh connections, and both must give
// the case's verdict: the final statuses, the first body, and whether the
// connection then closes or stays usable (a follow-up request on it is
// served). Cases with an `interim` expectation are also sent head first.
// After each case a fresh connection is served, and bad_input (read from
// /status) grew by exactly one per refused run.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/conformance/conformance_cases.h"
#include "tests/integration/harness.h"

namespace gearbox::testing {
namespace {

using conformance::Case;
using conformance::Suite;
using conformance::Verdict;
using Clock = std::chrono::steady_clock;

const Suite& TheSuite() {
  static const Suite* suite = [] {
    auto* s = new Suite;
    std::string error;
    if (!conformance::LoadSuite(conformance::DefaultSuitePath(), s, &error)) {
      ADD_FAILURE() << error;
    }
    return s;
  }();
  return *suite;
}

// Reads a connection's bytes (the harness client frames by Content-Length
// only, and a HEAD answer has one without a body).
class Reader {
 public:
  explicit Reader(int fd) : fd_(fd) {}

  // More bytes before `deadline`: true if some came; false on EOF or reset
  // (eof() then) or on timeout.
  bool Fill(Clock::time_point deadline) {
    for (;;) {
      char buf[16384];
      ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        in_.append(buf, static_cast<size_t>(n));
        return true;
      }
      if (n == 0 || (errno == ECONNRESET || errno == EPIPE)) {
        eof_ = true;
        return false;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        eof_ = true;
        return false;
      }
      const auto left =
          std::chrono::duration_cast<Millis>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      poll(&p, 1, static_cast<int>(left.count()) + 1);
    }
  }

  // Takes whole responses into `v` until it holds `want` final ones, the
  // connection ends or the deadline passes.
  void Collect(Verdict& v, bool head, size_t want, Clock::time_point deadline,
               bool* timed_out) {
    *timed_out = false;
    for (;;) {
      conformance::Response r;
      bool malformed = false;
      while (v.statuses.size() < want &&
             conformance::TakeResponse(in_, head, &r, &malformed)) {
        if (r.status < 200) {
          v.interim.push_back(r.status);
          continue;
        }
        if (!v.first_body) v.first_body = r.body;
        v.statuses.push_back(r.status);
      }
      if (malformed) {
        v.trouble = "malformed bytes " + conformance::Printable(in_);
        return;
      }
      if (v.statuses.size() >= want || eof_) return;
      if (!Fill(deadline) && !eof_) {
        *timed_out = true;
        return;
      }
    }
  }

  bool eof() const { return eof_; }
  std::string& in() { return in_; }

 private:
  int fd_;
  std::string in_;
  bool eof_ = false;
};

enum class Schedule { kWhole, kBytewise };

// Sends `bytes` (or as much as the server takes before closing).
void SendBytes(Connection& conn, std::string_view bytes, Schedule s) {
  if (s == Schedule::kWhole) {
    conn.Send(bytes);
    return;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!conn.Send(bytes.substr(i, 1))) return;  // refused and closed
  }
}

// After the case's own responses: the follow-up for an "open" case, the close
// for a "close" one (and any response beyond the expected ones).
void Finish(const Case& c, Connection& conn, Reader& rd, Verdict& v) {
  const auto deadline = Clock::now() + kIoTimeout;
  bool timed_out = false;
  if (!c.close_after && !rd.eof()) {
    conn.Send(conformance::kFollowUp);
    Verdict follow;
    rd.Collect(follow, false, 1, deadline, &timed_out);
    v.follow_up_served = follow.statuses == std::vector<int>{200} &&
                         follow.first_body == conformance::kFollowUpBody;
    if (!v.follow_up_served) {
      v.trouble = "follow-up got " + conformance::Describe(follow);
    }
    // Nothing else may come, and the connection stays open.
    rd.Fill(Clock::now() + Millis(50));
    if (!rd.in().empty()) {
      v.trouble += " extra bytes " + conformance::Printable(rd.in());
    }
  } else {
    // Until the server closes; anything it sends first is part of the verdict.
    rd.Collect(v, c.head, 100, deadline, &timed_out);
    if (timed_out) v.trouble = "no close within the I/O timeout";
  }
  v.closed = rd.eof();
}

Verdict RunCase(int port, const Case& c, Schedule s) {
  Verdict v;
  Connection conn = Connection::Open(port);
  if (!conn.ok()) {
    v.trouble = "connect: " + conn.error();
    return v;
  }
  SendBytes(conn, c.bytes, s);
  Reader rd(conn.fd());
  bool timed_out = false;
  rd.Collect(v, c.head, c.expect.size(), Clock::now() + kIoTimeout, &timed_out);
  if (timed_out) {
    v.trouble = "timed out waiting for " + std::to_string(c.expect.size()) +
                " responses";
    return v;
  }
  Finish(c, conn, rd, v);
  return v;
}

// The head alone first: a 100 Continue (or none) before the body is sent.
Verdict RunHeadFirst(int port, const Case& c, std::string* interim_error) {
  Verdict v;
  Connection conn = Connection::Open(port);
  if (!conn.ok()) {
    v.trouble = "connect: " + conn.error();
    return v;
  }
  const size_t head = c.HeadSize();
  conn.Send(std::string_view(c.bytes).substr(0, head));
  Reader rd(conn.fd());
  bool timed_out = false;
  if (c.interim == conformance::Interim::kContinue) {
    // Only the 100 can come before the body.
    const auto deadline = Clock::now() + kIoTimeout;
    conformance::Response r;
    bool malformed = false;
    for (;;) {
      if (conformance::TakeResponse(rd.in(), c.head, &r, &malformed)) {
        (r.status < 200 ? v.interim : v.statuses).push_back(r.status);
        if (r.status >= 200) v.first_body = r.body;
        break;
      }
      if (malformed || !rd.Fill(deadline)) break;
    }
    if (v.interim != std::vector<int>{100} || !v.statuses.empty()) {
      *interim_error = "after the head alone: " + conformance::Describe(v) +
                       ", want a 100 Continue and nothing else";
    }
  } else {
    // Whatever comes within a short while must not be a 1xx.
    rd.Fill(Clock::now() + Millis(300));
    conformance::Response r;
    bool malformed = false;
    while (conformance::TakeResponse(rd.in(), c.head, &r, &malformed)) {
      (r.status < 200 ? v.interim : v.statuses).push_back(r.status);
      if (r.status >= 200 && !v.first_body) v.first_body = r.body;
    }
    if (!v.interim.empty()) {
      *interim_error = "after the head alone: " + conformance::Describe(v) +
                       ", want no interim response";
    }
  }
  conn.Send(std::string_view(c.bytes).substr(head));
  rd.Collect(v, c.head, c.expect.size(), Clock::now() + kIoTimeout, &timed_out);
  if (timed_out) {
    v.trouble = "timed out waiting for the responses";
    return v;
  }
  Finish(c, conn, rd, v);
  return v;
}

class Conformance : public ::testing::TestWithParam<size_t> {
 protected:
  static void SetUpTestSuite() {
    const Suite& s = TheSuite();
    DaemonConfig config;
    config.model = ModelUnderTest();
    config.sections =
        "[threadpool]\nthreads = 16\nqueue = 256\n"
        "\n[prefork]\nworkers = 4\n"
        "\n[async]\nloops = 1\n"
        "\n[limits]\n"
        "header_timeout = \"30s\"\n"  // a verdict that waits fails the test
        "body_timeout = \"30s\"\n"
        "max_header_bytes = " +
        std::to_string(s.max_header_bytes) +
        "\n"
        "max_body_bytes = " +
        std::to_string(s.max_body_bytes) + "\n";
    std::string error;
    daemon_ = Daemon::Start(config, &error).release();
    if (!daemon_) start_error_ = new std::string(error);
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(daemon_, nullptr) << (start_error_ ? *start_error_ : "");
  }
  void TearDown() override {
    if (HasFailure() && daemon_) {
      std::string log = daemon_->Log();
      if (log.size() > 4000) log = "..." + log.substr(log.size() - 4000);
      ADD_FAILURE() << "model=" << ModelUnderTest() << " gearboxd log tail:\n"
                    << log;
    }
  }

  static int port() { return daemon_->port(); }

  // bad_input from /status (the sum over every worker and process).
  static int64_t BadInput() {
    HttpResponse r = Exchange(port(), GetRequest("/status", ""));
    const std::string key = "\"bad_input\":";
    const size_t at = r.body.find(key);
    if (r.status != 200 || at == std::string::npos) return -1;
    return atoll(r.body.c_str() + at + key.size());
  }

  static Daemon* daemon_;
  static std::string* start_error_;
};

Daemon* Conformance::daemon_ = nullptr;
std::string* Conformance::start_error_ = nullptr;

TEST_P(Conformance, WholeAndByteByByteGiveTheExpectedVerdict) {
  const Case& c = TheSuite().cases[GetParam()];
  SCOPED_TRACE(c.id + " (" + c.section +
               "): " + conformance::Printable(c.bytes));
  const int64_t before = BadInput();
  ASSERT_GE(before, 0) << "no bad_input in /status";
  int runs = 0;
  for (Schedule s : {Schedule::kWhole, Schedule::kBytewise}) {
    Verdict v = RunCase(port(), c, s);
    ++runs;
    EXPECT_EQ(conformance::Compare(c, v), "")
        << (s == Schedule::kWhole ? "whole: " : "byte by byte: ")
        << conformance::Describe(v);
  }
  if (c.interim != conformance::Interim::kUntested) {
    std::string interim_error;
    Verdict v = RunHeadFirst(port(), c, &interim_error);
    ++runs;
    EXPECT_EQ(interim_error, "");
    EXPECT_EQ(conformance::Compare(c, v), "")
        << "head first: " << conformance::Describe(v);
  }
  // The server stays healthy: a fresh connection is served.
  HttpResponse hello = Exchange(port(), GetRequest("/hello"));
  EXPECT_EQ(hello.status, 200) << hello.error << hello.raw;
  EXPECT_EQ(hello.body, "hello world\n");
  // Every refusal is counted, and nothing else.
  EXPECT_EQ(BadInput() - before, c.Rejected() ? runs : 0)
      << "bad_input must grow by one per refused run";
}

std::string CaseName(const ::testing::TestParamInfo<size_t>& info) {
  return TheSuite().cases[info.param].id;
}

std::vector<size_t> CaseIndexes() {
  std::vector<size_t> v;
  for (size_t i = 0; i < TheSuite().cases.size(); ++i) v.push_back(i);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Cases, Conformance, ::testing::ValuesIn(CaseIndexes()),
                         CaseName);

}  // namespace
}  // namespace gearbox::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!gearbox::testing::InitModelFromArgs(argc, argv)) return 2;
  return RUN_ALL_TESTS();
}
