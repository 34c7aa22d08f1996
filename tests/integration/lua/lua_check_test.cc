// gearboxd -t with Lua routes: each script is compiled and its top level run
// in a throwaway state, so a syntax error, an error at the top level, a wait
// at the top level or a wrong returned value is a config error (exit 2) that
// names the script's file:line.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/integration/lua/lua_fixture.h"

namespace gearbox::testing {
namespace {

struct Check {
  int exit_code = -1;
  std::string output;
};

Check RunCheck(const std::string& toml) {
  const std::string path = TestTempDir() + "/g.toml";
  const std::string log = TestTempDir() + "/check.log";
  std::ofstream(path) << toml;
  std::ofstream(log, std::ios::trunc).flush();
  std::string error;
  const pid_t pid =
      SpawnLogged({Runfile("daemon/gearboxd"), "-t", "-c", path}, log, &error);
  EXPECT_GT(pid, 0) << error;
  Check check;
  std::optional<int> status = WaitChild(pid, Millis(10000));
  EXPECT_TRUE(status.has_value());
  if (status && WIFEXITED(*status)) check.exit_code = WEXITSTATUS(*status);
  std::ifstream in(log);
  std::ostringstream text;
  text << in.rdbuf();
  check.output = text.str();
  return check;
}

// Line 4, column 10 of g.toml: the script value.
std::string Config(const std::string& script) {
  return "[server]\nmodel = \"async\"\n" + LuaRoute("/x", script);
}

TEST(LuaCheckTest, ValidScriptPasses) {
  const Check check = RunCheck(Config(TestScript("app.lua")));
  EXPECT_EQ(check.exit_code, 0) << check.output;
}

TEST(LuaCheckTest, SyntaxErrorNamesTheScriptLine) {
  const std::string script = TestScript("syntax_error.lua");
  const Check check = RunCheck(Config(script));
  EXPECT_EQ(check.exit_code, 2) << check.output;
  EXPECT_EQ(check.output.rfind(TestTempDir() +
                                   "/g.toml:6:10: [[route]] #1 "
                                   "script: " +
                                   script + ":3: ",
                               0),
            0u)
      << check.output;
  EXPECT_EQ(std::count(check.output.begin(), check.output.end(), '\n'), 1)
      << "one line: " << check.output;
}

TEST(LuaCheckTest, ErrorInTheTopLevelNamesTheScriptLine) {
  const std::string script = TestScript("runtime_error_at_load.lua");
  const Check check = RunCheck(Config(script));
  EXPECT_EQ(check.exit_code, 2) << check.output;
  EXPECT_NE(check.output.find(script + ":2: attempt to index local 'config'"),
            std::string::npos)
      << check.output;
}

TEST(LuaCheckTest, AWaitInTheTopLevelIsRefused) {
  const std::string script = TestScript("toplevel_wait.lua");
  const Check check = RunCheck(Config(script));
  EXPECT_EQ(check.exit_code, 2) << check.output;
  EXPECT_NE(check.output.find(
                script + ":1: gearbox.sleep: not available while the script "
                         "loads; use init or the handler"),
            std::string::npos)
      << check.output;
}

TEST(LuaCheckTest, MissingScriptAndWrongShape) {
  Check check = RunCheck(Config(TestTempDir() + "/nope.lua"));
  EXPECT_EQ(check.exit_code, 2) << check.output;
  EXPECT_NE(check.output.find("cannot open " + TestTempDir() + "/nope.lua"),
            std::string::npos)
      << check.output;
  const std::string script = TestTempDir() + "/shape.lua";
  std::ofstream(script) << "return { get = function() end }\n";
  check = RunCheck(Config(script));
  EXPECT_EQ(check.exit_code, 2) << check.output;
  EXPECT_NE(check.output.find("keys are methods (GET, POST, ...) and init; "
                              "got \"get\""),
            std::string::npos)
      << check.output;
}

// gearbox.postgres's sizes are checked when the script loads (nothing
// connects then): a pipeline outside the postgres handler's 1..64 is a -t
// error naming the line.
TEST(LuaCheckTest, PostgresPipelineOutOfRange) {
  const std::string script = TestTempDir() + "/pipeline.lua";
  std::ofstream(script)
      << "local db = gearbox.postgres{ dsn = \"host=/nonexistent\", pool = 2,\n"
         "                             pipeline = 65 }\n"
         "return function() return 200, \"x\" end\n";
  Check check = RunCheck(Config(script));
  EXPECT_EQ(check.exit_code, 2) << check.output;
  EXPECT_NE(check.output.find(
                script + ":1: gearbox.postgres: pipeline 65 is not in 1..64"),
            std::string::npos)
      << check.output;
  std::ofstream(script, std::ios::trunc)
      << "local db = gearbox.postgres{ dsn = \"host=/nonexistent\", pool = 2,\n"
         "                             pipeline = 1 }\n"
         "return function() return 200, \"x\" end\n";
  check = RunCheck(Config(script));
  EXPECT_EQ(check.exit_code, 0) << check.output;
}

}  // namespace
}  // namespace gearbox::testing
