// A reload loads the module file again: a rebuilt .so is picked up by the new
// generation while the old one finishes on its own copy, which is unloaded
// only after that generation has drained. A broken rebuild fails the reload
// and the running generation keeps serving.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/integration/modules/modules_fixture.h"

namespace gearbox::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Rewrites `path` in place (same inode, as `cp` does): a process that had
// mapped the file itself would see its code change under it.
void Overwrite(const std::string& path, const std::string& bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  close(fd);
}

// Waits for `text` in the daemon's log; its offset, or npos.
size_t LogOffset(const Daemon& daemon, const std::string& text) {
  return WaitForLog(daemon, text, Millis(10000)).find(text);
}

TEST_F(ModuleTest, ReloadPicksUpARebuiltModule) {
  const char* tmp = getenv("TEST_TMPDIR");
  ASSERT_NE(tmp, nullptr);
  const std::string installed =
      std::string(tmp) + "/libversion-" + std::to_string(getpid()) + ".so";
  ASSERT_NO_FATAL_FAILURE(
      Overwrite(installed, Slurp(Runfile("tests/modules/libversion1.so"))));
  ASSERT_NO_FATAL_FAILURE(
      StartWith(ModelSections(2) + ModuleTable("v", installed) +
                "[[route]]\npath = \"/v\"\nhandler = \"v\"\n\n"));
  EXPECT_EQ(Exchange(port(), GetRequest("/v")).body, "version 1\n");
  // Generation 1 is all up (prefork: every child in its accept loop) before
  // the reload. A child still starting when the reload came was seen to go
  // on accepting after generation 2 had started.
  ASSERT_TRUE(
      WaitUntil([&] { return ChildrenWaiting(daemon_->pid()); }, Millis(5000)));

  // In flight on generation 1 across the reload.
  Connection old = Connection::Open(port());
  ASSERT_TRUE(old.ok());
  ASSERT_TRUE(old.Send(GetRequest("/v?ms=1500", "Connection: close\r\n")));
  ASSERT_TRUE(
      WaitUntil([&] { return JsonNumber(StatusJson(port()), "inflight") >= 2; },
                Millis(5000)))
      << "the request never started on generation 1";

  // "Rebuild" the module where it is installed, then reload.
  ASSERT_NO_FATAL_FAILURE(
      Overwrite(installed, Slurp(Runfile("tests/modules/libversion2.so"))));
  ASSERT_TRUE(daemon_->Signal(SIGHUP));
  // The reload is done once the old generation was told to stop accepting
  // (after generation 2 started, and before READY=1): from then on new
  // clients reach generation 2 only. generation_started alone is too early:
  // both generations accept until then.
  ASSERT_NE(LogOffset(*daemon_, "event=generation_draining gen=1 next=2"),
            std::string::npos);
  std::string body;
  const auto until = Clock::now() + Millis(5000);
  do {
    body = Exchange(port(), GetRequest("/v")).body;
  } while (body != "version 2\n" && Clock::now() < until);
  EXPECT_EQ(body, "version 2\n");
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Exchange(port(), GetRequest("/v")).body, "version 2\n");
  }
  // The old copy was never touched by the overwrite: it finishes as version 1.
  HttpResponse in_flight = old.ReadResponse(Millis(5000));
  EXPECT_EQ(in_flight.status, 200) << in_flight.raw;
  EXPECT_EQ(in_flight.body, "version 1\n");

  // Generation 1's copy goes only once generation 1 has drained.
  const size_t drained = LogOffset(*daemon_, "event=generation_drained gen=1");
  ASSERT_NE(drained, std::string::npos);
  const size_t unloaded = LogOffset(*daemon_, "event=module_unloaded module=v");
  ASSERT_NE(unloaded, std::string::npos);
  EXPECT_GT(unloaded, drained) << "a module copy was unloaded before its "
                                  "generation drained";

  // A broken rebuild: the reload fails, generation 2 keeps serving.
  ASSERT_NO_FATAL_FAILURE(
      Overwrite(installed, Slurp(Runfile("tests/modules/libabi_major2.so"))));
  ASSERT_TRUE(daemon_->Signal(SIGHUP));
  const size_t failed = LogOffset(*daemon_, "event=reload_failed");
  ASSERT_NE(failed, std::string::npos);
  const std::string log = daemon_->Log();
  const std::string line = log.substr(failed, log.find('\n', failed) - failed);
  EXPECT_NE(line.find("built for module ABI 2.0; this gearboxd provides 1.1"),
            std::string::npos)
      << line;
  EXPECT_EQ(Exchange(port(), GetRequest("/v")).body, "version 2\n");
  EXPECT_EQ(log.find("event=generation_started gen=3"), std::string::npos);
}

}  // namespace
}  // namespace gearbox::testing
