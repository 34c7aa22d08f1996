// Faults, garbage: a burst of invalid requests of six kinds. The daemon
// rejects or closes each one, counts them as bad input, and keeps serving.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/hardening/faults_fixture.h"
#include "tests/hardening/hardening.h"

namespace gearbox::hardening {
namespace {

using gearbox::testing::GetRequest;
using gearbox::testing::WaitUntil;

// --- garbage ----------------------------------------------------------------

// Request bytes that no correct server may accept, of six kinds. Each kind is
// invalid by construction (not just by chance), so any 2xx/3xx/404 is a bug.
std::string Garbage(int index, std::mt19937_64& rng) {
  auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  auto printable = [&](int n, std::string_view avoid = {}) {
    std::string s;
    while (static_cast<int>(s.size()) < n) {
      char c = static_cast<char>(uniform(0x20, 0x7e));
      if (avoid.find(c) == std::string_view::npos) s.push_back(c);
    }
    return s;
  };
  switch (index % 6) {
    case 0: {  // random bytes
      std::string s(static_cast<size_t>(uniform(1, 4096)), '\0');
      for (char& c : s) c = static_cast<char>(uniform(0, 255));
      return s;
    }
    case 1:  // printable noise with line breaks; '@' is no method character
      return "@" + printable(uniform(10, 300)) + "\r\n" +
             printable(uniform(0, 300)) + "\r\n\r\n";
    case 2: {  // a good request line, then broken header lines
      std::string s = "GET /hello HTTP/1.1\r\nHost: t\r\n";
      for (int k = uniform(1, 8); k > 0; --k) {
        switch (uniform(0, 3)) {
          case 0:  // no colon
            s += "X" + printable(uniform(1, 80), ":") + "\r\n";
            break;
          case 1:  // space inside the name
            s += "Bad Name: " + printable(uniform(0, 40)) + "\r\n";
            break;
          case 2:  // control byte in the value
            s += "X-Ctl: a" + std::string(1, static_cast<char>(uniform(1, 8))) +
                 "b\r\n";
            break;
          default:  // separator in the name
            s += "X(" + printable(uniform(1, 10), ":") + "): v\r\n";
            break;
        }
      }
      return s + "\r\n";
    }
    case 3:  // giant request line (max_header_bytes is 16 KiB)
      return "GET /" +
             std::string(static_cast<size_t>(uniform(17000, 60000)), 'a') +
             " HTTP/1.1\r\nHost: t\r\n\r\n";
    case 4:  // giant header line, or a giant line with no end at all
      if (uniform(0, 1)) {
        return "GET /hello HTTP/1.1\r\nHost: t\r\nX-Big: " +
               std::string(static_cast<size_t>(uniform(17000, 100000)), 'b') +
               "\r\n\r\n";
      }
      return std::string(static_cast<size_t>(uniform(17000, 100000)), 'A');
    default: {  // framing lies
      static const char* kLies[] = {
          "Content-Length: abc\r\n",
          "Content-Length: -1\r\n",
          "Content-Length: 5\r\nContent-Length: 6\r\n",
          "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
          "Transfer-Encoding: chunked\r\n\r\nzz\r\n",
          "Content-Length: 99999999999\r\n",
      };
      std::string lie = kLies[uniform(0, 5)];
      std::string s = "POST /echo HTTP/1.1\r\nHost: t\r\n" + lie;
      if (lie.find("\r\n\r\n") == std::string::npos) s += "\r\nhello";
      return s;
    }
  }
}

// Bytes as a C-like string literal, for failure messages.
std::string Escaped(std::string_view bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

struct GarbageOutcome {
  bool closed = false;
  int status = 0;
  std::string head;  // first bytes received, for messages
};

// One connection: send the garbage (the server may cut us off early), end the
// stream, and read until the server closes.
GarbageOutcome SendGarbage(int port, const std::string& bytes) {
  GarbageOutcome out;
  std::string error;
  int fd = StartConnect(port, 0, &error);
  if (fd < 0 || !FinishConnect(fd, Millis(3000), &error)) {
    if (fd >= 0) close(fd);
    out.head = "connect failed: " + error;
    return out;
  }
  SendAll(fd, bytes, Millis(3000), &error);  // failure: the server closed
  shutdown(fd,
           SHUT_WR);  // an incomplete prefix ends here instead of timing out
  Ending e = ReadUntilClosed(fd, Millis(5000), Clock::now());
  close(fd);
  out.closed = e.closed;
  out.status = e.status;
  out.head = e.bytes.substr(0, 120);
  return out;
}

// 7. 1,000 garbage requests over separate connections, 4 at a time: each is
// answered 400/413/431 (a giant target 414, a giant method 501, a giant field
// 431) or closed, nothing crashes, and /status counts them.
TEST_F(FaultTest, GarbageBurstIsRejectedCountedAndSurvived) {
  constexpr int kRequests = 1000;
  constexpr int kThreads = 4;
  const uint64_t seed = 0x6ea7b0c5ull;
  Settings s;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  const int64_t bad_before = JsonNumber(StatusJson(), "bad_input");
  ASSERT_GE(bad_before, 0);

  std::mutex mu;
  std::map<int, int> by_status;  // 0 = closed without an answer
  std::vector<std::string> wrong;
  std::atomic<int> next{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < kRequests && MsSince(t0) < 120000; i = next++) {
        std::mt19937_64 rng(seed + static_cast<uint64_t>(i));
        const std::string bytes = Garbage(i, rng);
        GarbageOutcome o = SendGarbage(port(), bytes);
        // The giant kinds each have one right answer: a request-target too
        // long gets 414 (RFC 9112 3: MUST), a method too long 501 (RFC 9112
        // 3: SHOULD), a header line too long 431.
        const bool giant_target = i % 6 == 3;
        const bool giant_method = i % 6 == 4 && bytes[0] == 'A';
        const bool giant_field = i % 6 == 4 && bytes[0] != 'A';
        const bool allowed =
            o.closed && (o.status == 0 ||
                         (giant_target   ? o.status == 414
                          : giant_method ? o.status == 501
                          : giant_field  ? o.status == 431
                                         : o.status == 400 || o.status == 413 ||
                                              o.status == 431));
        std::lock_guard<std::mutex> lock(mu);
        ++by_status[o.closed ? o.status : -1];
        if (!allowed && wrong.size() < 20) {
          wrong.push_back(
              "#" + std::to_string(i) + " kind " + std::to_string(i % 6) +
              " (" + std::to_string(bytes.size()) +
              " bytes) closed=" + std::to_string(o.closed) + " sent " +
              Escaped(bytes.substr(0, 300)) + " got " + Escaped(o.head));
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double burst_ms = MsSince(t0);
  const int64_t bad_after = JsonNumber(StatusJson(), "bad_input");
  int answered_4xx = 0, total = 0;
  std::string tally;
  for (const auto& [status, n] : by_status) {
    total += n;
    if (status >= 400) answered_4xx += n;
    tally += (status < 0    ? std::string("hung")
              : status == 0 ? "closed"
                            : std::to_string(status)) +
             "=" + std::to_string(n) + " ";
  }
  Report("requests=" + std::to_string(total) +
         " burst_ms=" + std::to_string(burst_ms) + " outcomes: " + tally +
         "bad_input_counted=" + std::to_string(bad_after - bad_before));
  EXPECT_EQ(total, kRequests);
  std::string examples;
  for (const std::string& w : wrong) examples += "  " + w + "\n";
  EXPECT_TRUE(wrong.empty())
      << "not answered as expected (414 for a giant target, 501 for a giant "
         "method, 431 for a giant field, else 400/413/431) or closed:\n"
      << examples;
  EXPECT_TRUE(Alive()) << "gearboxd died on garbage";
  ExpectHealthy("after the garbage burst");
  EXPECT_GE(bad_after - bad_before, answered_4xx)
      << "every 4xx answer to garbage is bad input";
  EXPECT_GT(answered_4xx, kRequests / 2);
  if (IsModel("prefork")) {
    EXPECT_EQ(daemon_->Log().find("event=child_died"), std::string::npos)
        << "a prefork child died on garbage";
  }
}

}  // namespace
}  // namespace gearbox::hardening

int main(int argc, char** argv) {
  return gearbox::hardening::HardeningMain(argc, argv);
}
