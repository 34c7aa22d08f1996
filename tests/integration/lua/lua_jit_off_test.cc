// Where the host forbids turning written memory into code, LuaJIT's first
// trace would exit() the worker. gearboxd probes at start, turns the JIT off
// and logs event=lua_jit_off. The host's rule here is the kernel's own
// prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN), the mechanism behind
// systemd's MemoryDenyWriteExecute= on current kernels: set on this test
// process before anything starts, inherited by every gearboxd it spawns.
#include <gtest/gtest.h>
#include <sys/prctl.h>

#include <string>

#include "tests/integration/lua/lua_fixture.h"

#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#define PR_MDWE_REFUSE_EXEC_GAIN 1
#endif

namespace gearbox::testing {
namespace {

class LuaJitOffTest : public ModuleTest {};

TEST_F(LuaJitOffTest, HotLoopServesWithTheJitOff) {
  ASSERT_NO_FATAL_FAILURE(
      StartWith(ModelSections(2) + LuaRoute("/app", TestScript("app.lua"))));
  for (int i = 0; i < 4; ++i) {  // every worker runs the hot loop
    HttpResponse r = Exchange(port(), GetRequest("/app?do=hot"));
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_NE(r.body.find("jit=false"), std::string::npos) << r.body;
  }
  EXPECT_NE(WaitForLog(*daemon_,
                       "event=lua_jit_off reason=\"mprotect("
                       "PROT_READ|PROT_EXEC): Permission denied\""),
            std::string::npos);
  EXPECT_EQ(daemon_->Log().find("PANIC"), std::string::npos);
}

}  // namespace
}  // namespace gearbox::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!gearbox::testing::InitModelFromArgs(argc, argv)) return 2;
  if (prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0) {
    perror("prctl(PR_SET_MDWE) (Linux 6.3 or later)");
    return 1;
  }
  return RUN_ALL_TESTS();
}
