// Slow and stalled clients: slowloris request heads, trickled bodies and a
// client that never reads its response. Each must cost the server at most its
// timeout, and other clients must keep being served meanwhile.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/hardening/hardening.h"

namespace gearbox::hardening {
namespace {

// A request head that never ends: after the prefix, one more header byte
// forever, never a CRLF.
constexpr std::string_view kEndlessHead =
    "GET /hello HTTP/1.1\r\nHost: slowloris\r\nX-Slow: ";

struct SlowClient {
  int fd = -1;
  Clock::time_point opened;
  double closed_ms = -1;  // since opened; -1 while open
  size_t sent = 0;
  std::string received;
};

// The slowloris crowd: every `interval`, one more byte on each connection
// still open; notes when the server closes each. Returns when all are closed
// or at `stop_at`.
void Trickle(std::vector<SlowClient>& clients, Millis interval,
             Clock::time_point stop_at) {
  auto next_byte = [](const SlowClient& c) {
    return c.sent < kEndlessHead.size() ? kEndlessHead[c.sent] : 'a';
  };
  auto mark_closed = [](SlowClient& c) {
    c.closed_ms = MsSince(c.opened);
    close(c.fd);
    c.fd = -1;
  };
  Clock::time_point next_send = Clock::now();
  std::vector<pollfd> pfds;
  std::vector<size_t> index;
  for (;;) {
    const auto now = Clock::now();
    if (now >= stop_at) break;
    if (now >= next_send) {
      for (SlowClient& c : clients) {
        if (c.fd < 0) continue;
        char b = next_byte(c);
        ssize_t n = send(c.fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n == 1) {
          ++c.sent;
        } else if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
          mark_closed(c);
        }
      }
      next_send += interval;
    }
    pfds.clear();
    index.clear();
    for (size_t i = 0; i < clients.size(); ++i) {
      if (clients[i].fd < 0) continue;
      pfds.push_back({clients[i].fd, POLLIN | POLLRDHUP, 0});
      index.push_back(i);
    }
    if (pfds.empty()) break;
    auto wait = std::min(next_send, stop_at) - Clock::now();
    int ms = static_cast<int>(
        std::max<int64_t>(0, std::chrono::duration_cast<Millis>(wait).count()));
    int n = poll(pfds.data(), pfds.size(), std::min(ms, 50));
    if (n <= 0) continue;
    for (size_t k = 0; k < pfds.size(); ++k) {
      if (!pfds[k].revents) continue;
      SlowClient& c = clients[index[k]];
      for (;;) {
        char buf[4096];
        ssize_t r = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (r > 0) {
          c.received.append(buf, static_cast<size_t>(r));
          continue;
        }
        if (r == 0 || errno == ECONNRESET || errno == EPIPE) mark_closed(c);
        break;
      }
    }
  }
}

struct CrowdFigures {
  int total = 0;
  int closed = 0;
  int with_408 = 0;
  double first_ms = -1, last_ms = -1;  // closes, since each one's connect
  std::vector<double> sorted_ms;
};

CrowdFigures Summarize(const std::vector<SlowClient>& clients) {
  CrowdFigures f;
  f.total = static_cast<int>(clients.size());
  for (const SlowClient& c : clients) {
    if (c.closed_ms < 0) continue;
    ++f.closed;
    f.sorted_ms.push_back(c.closed_ms);
    if (StatusOf(c.received) == 408) ++f.with_408;
  }
  std::sort(f.sorted_ms.begin(), f.sorted_ms.end());
  if (!f.sorted_ms.empty()) {
    f.first_ms = f.sorted_ms.front();
    f.last_ms = f.sorted_ms.back();
  }
  return f;
}

bool OpenCrowd(int port, int n, std::vector<SlowClient>& out,
               std::string* error) {
  out.resize(static_cast<size_t>(n));
  for (SlowClient& c : out) {
    c.fd = StartConnect(port, 0, error);
    if (c.fd < 0) return false;
    if (!FinishConnect(c.fd, Millis(5000), error)) return false;
    c.opened = Clock::now();
  }
  return true;
}

void CloseCrowd(std::vector<SlowClient>& clients) {
  for (SlowClient& c : clients) {
    if (c.fd >= 0) close(c.fd);
    c.fd = -1;
  }
}

int EnvInt(const char* name, int fallback) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

// The response a non-reading client is sent must outgrow what the kernel
// buffers on its own: 900 KB does not (a loopback sender's buffer autotunes up
// to tcp_wmem's maximum; ~2.8 MB were absorbed with the default 4 MB), so take
// twice that maximum (at least 900 KB, at most 32 MB).
size_t StalledResponseBytes() {
  if (int env = EnvInt("HARDENING_STALL_BODY", 0); env > 0)
    return static_cast<size_t>(env);
  size_t wmem_max = 4 << 20;
  if (FILE* f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r")) {
    unsigned long lo, def, hi;
    if (fscanf(f, "%lu %lu %lu", &lo, &def, &hi) == 3) wmem_max = hi;
    fclose(f);
  }
  return std::clamp<size_t>(2 * wmem_max, 900 * 1000, 32u << 20);
}

class SlowClientTest : public HardeningTest {};

// 1. 200 slowloris heads pin nothing and are cut off at header_timeout
// counted from the start of the head, not per byte. threadpool parks them in
// its poller, async in its loop, prefork children hand them to the master's
// head guard after a few milliseconds: in every model a fresh client is
// served meanwhile, and every slow one is answered 408 on time.
TEST_F(SlowClientTest, SlowlorisHeadsAreCutAtHeaderTimeout) {
  const int clients = EnvInt("HARDENING_SLOWLORIS", 200);
  Settings s;
  s.header_timeout = "2s";
  s.threads = 8;  // far fewer threads than slow clients
  s.workers = 4;  // ... and far fewer children
  ASSERT_NO_FATAL_FAILURE(Start(s));
  const int64_t timeouts_before = JsonNumber(StatusJson(), "header_timeout");

  std::vector<SlowClient> crowd;
  std::string error;
  ASSERT_TRUE(OpenCrowd(port(), clients, crowd, &error)) << error;
  const auto opened = Clock::now();
  std::thread trickler(
      [&] { Trickle(crowd, Millis(500), opened + Millis(6000)); });

  // Fresh clients while the crowd trickles (before anyone is cut off).
  std::vector<double> probes;
  for (int at_ms : {300, 800, 1300}) {
    // The probes come at set points of the crowd's trickle: the timeline
    // under test.
    std::this_thread::sleep_until(opened + Millis(at_ms));
    double ms = TimedHello(Millis(3000), &error);
    EXPECT_GE(ms, 0) << "probe at " << at_ms << " ms: " << error;
    probes.push_back(ms);
  }
  trickler.join();
  CloseCrowd(crowd);
  const double after_ms = TimedHello(Millis(3000), &error);
  EXPECT_GE(after_ms, 0) << "after the crowd: " << error;
  const std::string status = StatusJson();
  const int64_t timeouts =
      JsonNumber(status, "header_timeout") - timeouts_before;
  const int64_t parked = JsonNumber(status, "parked");

  CrowdFigures f = Summarize(crowd);
  const double worst_probe = *std::max_element(probes.begin(), probes.end());
  Report("clients=" + std::to_string(f.total) +
         " closed=" + std::to_string(f.closed) +
         " answered_408=" + std::to_string(f.with_408) +
         " header_timeouts_counted=" + std::to_string(timeouts) +
         " parked=" + std::to_string(parked) +
         " first_close_ms=" + std::to_string(f.first_ms) +
         " last_close_ms=" + std::to_string(f.last_ms) +
         " hello_probe_ms=" + std::to_string(probes[0]) + "," +
         std::to_string(probes[1]) + "," + std::to_string(probes[2]) +
         " hello_after_ms=" + std::to_string(after_ms));
  EXPECT_EQ(f.closed, clients)
      << "slowloris connections still open 6 s after connecting: the head "
         "deadline is not enforced (or reset per byte)";
  EXPECT_EQ(f.with_408, clients) << "a slow head was closed without its 408";
  EXPECT_EQ(timeouts, clients) << "header timeouts not counted in /status";
  // prefork: every slow head went to the head guard (the others never park).
  EXPECT_EQ(parked, IsModel("prefork") ? clients : 0);
  EXPECT_LT(worst_probe, 1000) << "a fresh /hello waited behind slow clients";
  EXPECT_LT(after_ms, 1000) << "service did not return after the crowd";
  // header_timeout 2 s: the first byte went out right after connect, so the
  // head deadline is ~2 s (+0.5 s at most if it starts at the first byte).
  EXPECT_GE(f.first_ms, 1800) << "cut off before header_timeout";
  EXPECT_LE(f.last_ms, 3000) << "head deadline overran header_timeout + 1 s";
  EXPECT_TRUE(Alive());
  ExpectHealthy("after the slowloris crowd");
}

// 1b. A slow but honest client is served: its head arrives in pieces 300 ms
// apart (prefork: parked with the head guard after the first piece and
// handed back to a child once complete), and the keep-alive connection then
// serves a second, equally slow request. A POST body follows the same way.
TEST_F(SlowClientTest, SlowHeadIsServedWhenItCompletes) {
  Settings s;
  s.header_timeout = "5s";
  ASSERT_NO_FATAL_FAILURE(Start(s));
  std::string error;
  int fd = StartConnect(port(), 0, &error);
  ASSERT_GE(fd, 0) << error;
  ASSERT_TRUE(FinishConnect(fd, Millis(5000), &error)) << error;
  const std::vector<std::string> pieces = {
      "GET /hello HTTP/1.1\r\n",
      "Host: slow\r\n",
      "X-A: 1\r\n",
      "\r\n",
      "POST /echo HTTP/1.1\r\nHost: slow\r\n",
      "Content-Length: 5\r\n\r\n",
      "he",
      "llo"};
  std::string received;
  const auto started = Clock::now();
  for (const std::string& piece : pieces) {
    // The client's pace is what the test is about (a slow sender), not a
    // wait for the server.
    std::this_thread::sleep_for(Millis(300));
    ASSERT_TRUE(SendAll(fd, piece, Millis(2000), &error)) << error;
  }
  // Both responses, then the connection stays open (keep-alive).
  const auto until = Clock::now() + Millis(3000);
  while (Clock::now() < until &&
         received.find("\r\n\r\nhello", received.find("HTTP/1.1 200", 1)) ==
             std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;
    received.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  Report("slow_requests_ms=" + std::to_string(MsSince(started)) +
         " received_bytes=" + std::to_string(received.size()));
  EXPECT_EQ(StatusOf(received), 200) << received;
  EXPECT_NE(received.find("hello world\n"), std::string::npos) << received;
  const size_t second = received.find("HTTP/1.1 200", 1);
  ASSERT_NE(second, std::string::npos) << received;
  EXPECT_NE(received.find("\r\n\r\nhello", second), std::string::npos)
      << received;
  EXPECT_TRUE(Alive());
}

// 1c. A connection that never sends a byte is closed at header_timeout
// without an answer (nginx does the same: there is no request to answer),
// and counted as a header timeout. prefork hands it to the head guard first.
TEST_F(SlowClientTest, SilentConnectionIsClosedUnansweredAtHeaderTimeout) {
  Settings s;
  s.header_timeout = "1s";
  ASSERT_NO_FATAL_FAILURE(Start(s));
  const int64_t before = JsonNumber(StatusJson(), "header_timeout");
  std::string error;
  int fd = StartConnect(port(), 0, &error);
  ASSERT_GE(fd, 0) << error;
  ASSERT_TRUE(FinishConnect(fd, Millis(2000), &error)) << error;
  const auto connected = Clock::now();
  Ending e = ReadUntilClosed(fd, Millis(4000), connected);
  close(fd);
  const int64_t counted = JsonNumber(StatusJson(), "header_timeout") - before;
  Report("closed=" + std::to_string(e.closed) + " after_ms=" +
         std::to_string(e.at_ms) + " bytes=" + std::to_string(e.bytes.size()) +
         " counted=" + std::to_string(counted));
  EXPECT_TRUE(e.closed);
  EXPECT_EQ(e.bytes, "") << "answered a connection that sent nothing";
  EXPECT_GE(e.at_ms, 900);
  EXPECT_LE(e.at_ms, 2000);
  EXPECT_EQ(counted, 1);
}

// 2. A body trickled at 1 byte / 200 ms is cut at body_timeout (counted from
// the end of the head, not per read) with 408.
TEST_F(SlowClientTest, TrickledBodyIsCutAtBodyTimeout) {
  Settings s;
  s.body_timeout = "2s";
  ASSERT_NO_FATAL_FAILURE(Start(s));
  std::string error;
  int fd = StartConnect(port(), 0, &error);
  ASSERT_GE(fd, 0) << error;
  ASSERT_TRUE(FinishConnect(fd, Millis(5000), &error)) << error;
  ASSERT_TRUE(SendAll(fd,
                      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: "
                      "1000\r\n\r\n",
                      Millis(5000), &error))
      << error;
  const auto head_sent = Clock::now();
  Ending e;
  int trickled = 0;
  while (MsSince(head_sent) < 6000) {
    char b = 'b';
    if (send(fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) ++trickled;
    pollfd p{fd, POLLIN | POLLRDHUP, 0};
    if (poll(&p, 1, 200) > 0) {
      e = ReadUntilClosed(fd, Millis(2000), head_sent);
      break;
    }
  }
  close(fd);
  Report("closed=" + std::to_string(e.closed) +
         " status=" + std::to_string(e.status) +
         " closed_after_ms=" + std::to_string(e.at_ms) +
         " body_bytes_trickled=" + std::to_string(trickled));
  ASSERT_TRUE(e.closed) << "a trickled body held the connection for 6 s";
  EXPECT_EQ(e.status, 408) << "got: " << e.bytes.substr(0, 200);
  EXPECT_GE(e.at_ms, 1800) << "cut before body_timeout";
  EXPECT_LE(e.at_ms, 3000) << "body deadline overran (reset per read?)";
  EXPECT_TRUE(Alive());
  ExpectHealthy("after the trickled body");
}

// 3. A client that never reads a large response is dropped after send_timeout,
// and nobody else notices.
TEST_F(SlowClientTest, ClientThatNeverReadsIsDroppedAtSendTimeout) {
  const size_t kBody = StalledResponseBytes();
  Settings s;
  s.send_timeout = "2s";
  s.max_body_bytes = 64 * 1024 * 1024;
  ASSERT_NO_FATAL_FAILURE(Start(s));
  const int64_t timeouts_before = JsonNumber(StatusJson(), "send_timeout");
  ASSERT_GE(timeouts_before, 0);

  std::string error;
  int fd = StartConnect(port(), /*rcvbuf=*/4096, &error);
  ASSERT_GE(fd, 0) << error;
  ASSERT_TRUE(FinishConnect(fd, Millis(5000), &error)) << error;
  const std::string request =
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: " +
      std::to_string(kBody) + "\r\n\r\n" + std::string(kBody, 'x');
  ASSERT_TRUE(SendAll(fd, request, Millis(10000), &error)) << error;
  const auto sent = Clock::now();

  double during_ms = -1, dropped_ms = -1;
  std::string during_error;
  gearbox::testing::WaitUntil(
      [&] {
        if (during_ms < 0 && MsSince(sent) >= 1000) {
          during_ms = TimedHello(Millis(3000), &during_error);
          EXPECT_GE(during_ms, 0) << "during the stall: " << during_error;
          if (during_ms < 0) during_ms = 0;
        }
        if (JsonNumber(StatusJson(), "send_timeout") <= timeouts_before)
          return false;
        dropped_ms = MsSince(sent);
        return true;
      },
      Millis(8000), Millis(50));
  // Now read: a dropped connection delivers what was in the kernel buffers,
  // then EOF, short of the full response.
  Ending e = ReadUntilClosed(fd, Millis(5000), sent);
  close(fd);
  Report("dropped_after_ms=" + std::to_string(dropped_ms) +
         " hello_during_ms=" + std::to_string(during_ms) +
         " bytes_received_after=" + std::to_string(e.bytes.size()) + " of >" +
         std::to_string(kBody) + " eof=" + std::to_string(e.closed));
  EXPECT_GE(dropped_ms, 0) << "not dropped within 8 s of a stalled response";
  EXPECT_GE(dropped_ms, 1500) << "dropped before send_timeout";
  EXPECT_LE(dropped_ms, 3000) << "send_timeout 2 s: dropped late";
  EXPECT_TRUE(e.closed);
  EXPECT_LT(e.bytes.size(), kBody) << "the whole response was delivered";
  EXPECT_TRUE(Alive());
  ExpectHealthy("after the stalled reader");
}

}  // namespace
}  // namespace gearbox::hardening

int main(int argc, char** argv) {
  return gearbox::hardening::HardeningMain(argc, argv);
}
