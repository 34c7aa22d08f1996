// gearboxd -t with modules: every way a module can be wrong is a config
// error (exit 2, one line, file:line:col where the file says it), checked
// before any worker starts.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <string>

#include "daemon/handlers/handlers.h"
#include "tests/integration/harness.h"
#include "tests/integration/modules/modules_fixture.h"

namespace gearbox::testing {
namespace {

// The built-in handlers' names as messages list them, from the handler
// table (so a new handler changes no test).
std::string BuiltInNames() {
  std::string names;
  for (const HandlerSchema& schema : HandlerSchemas()) {
    if (!names.empty()) names += ", ";
    names += schema.name;
  }
  return names;
}

struct Check {
  int exit_code = -1;
  std::string output;
};

std::string Tmp() {
  const char* tmp = getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

// Runs gearboxd -t on `toml` (written to g.toml in $TEST_TMPDIR).
Check RunCheck(const std::string& toml) {
  const std::string path = Tmp() + "/g.toml", log = Tmp() + "/check.log";
  std::ofstream(path) << toml;
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

std::string ModuleConfig(const std::string& path, const std::string& route) {
  return "[server]\nmodel = \"async\"\n" +                       // line 1-2
         ModuleTable("m", path) +                                // lines 3-6
         "[[route]]\npath = \"/m\"\nhandler = \"m\"\n" + route;  // 7-9, 10-
}

// The message of a one-line error at line:col of g.toml.
void ExpectError(const Check& check, int line, int col,
                 const std::string& message) {
  EXPECT_EQ(check.exit_code, 2) << check.output;
  EXPECT_EQ(check.output, Tmp() + "/g.toml:" + std::to_string(line) + ":" +
                              std::to_string(col) + ": " + message + "\n");
}

TEST(ModuleCheckTest, ValidModulesPass) {
  Check check = RunCheck(
      ModuleConfig(Runfile("sdk/libtimerwait.so"), "ms = 20\nmax_ms = 100\n"));
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(check.output,
            "gearboxd: configuration " + Tmp() + "/g.toml is valid\n");
}

TEST(ModuleCheckTest, MissingFile) {
  ExpectError(RunCheck(ModuleConfig("/nonexistent/libm.so", "")), 5, 8,
              "[[module]] #1 path: cannot open \"/nonexistent/libm.so\": No "
              "such file or directory");
}

TEST(ModuleCheckTest, NotASharedObject) {
  const std::string junk = Tmp() + "/junk.so";
  std::ofstream(junk) << std::string(4096, 'x');  // no ELF header
  ExpectError(
      RunCheck(ModuleConfig(junk, "")), 5, 8,
      "[[module]] #1 path: dlopen(\"" + junk + "\"): invalid ELF header");
}

TEST(ModuleCheckTest, NoEntryPoint) {
  const std::string so = Runfile("tests/modules/libnot_a_module.so");
  ExpectError(RunCheck(ModuleConfig(so, "")), 5, 8,
              "[[module]] #1 path: \"" + so +
                  "\" is not a gearbox module: it exports no "
                  "gearbox_module_init() (see gearbox/module.h)");
}

TEST(ModuleCheckTest, WrongAbiMajor) {
  const std::string so = Runfile("tests/modules/libabi_major2.so");
  ExpectError(RunCheck(ModuleConfig(so, "")), 5, 8,
              "[[module]] #1 path: \"" + so +
                  "\" is built for module ABI 2.0; this gearboxd provides "
                  "1.1 and loads major 1 only (rebuild the module against "
                  "this gearbox's gearbox/module.h)");
}

TEST(ModuleCheckTest, NewerAbiMinor) {
  const std::string so = Runfile("tests/modules/libabi_minor99.so");
  ExpectError(RunCheck(ModuleConfig(so, "")), 5, 8,
              "[[module]] #1 path: \"" + so +
                  "\" is built for module ABI 1.99; this gearboxd provides "
                  "1.1, an older minor (upgrade gearboxd, or rebuild the "
                  "module against its gearbox/module.h)");
}

TEST(ModuleCheckTest, ModuleRejectsARouteKey) {
  // timerwait's own check: ms may not exceed max_ms (at ms's value).
  ExpectError(RunCheck(ModuleConfig(Runfile("sdk/libtimerwait.so"),
                                    "max_ms = 10\nms = 50\n")),
              11, 6,
              "[[route]] #1 ms: module \"m\": ms (50) exceeds max_ms (10)");
  // A wrong type, found against the key list timerwait declares.
  ExpectError(RunCheck(ModuleConfig(Runfile("sdk/libtimerwait.so"),
                                    "max_ms = \"lots\"\n")),
              10, 10,
              "[[route]] #1 max_ms: module \"m\": expected an integer, got a "
              "string");
  // The C++ layer's route.Error().
  ExpectError(RunCheck(ModuleConfig(Runfile("tests/modules/libprobe.so"),
                                    "greeting = \"bad\"\n")),
              10, 12,
              "[[route]] #1 greeting: module \"m\": \"bad\" is no greeting");
}

// A module without a key list (ABI 1.0's way) declares a key by reading it.
TEST(ModuleCheckTest, KeyTheModuleNeverReads) {
  ExpectError(RunCheck(ModuleConfig(Runfile("tests/modules/libprobe.so"),
                                    "greeting = \"x\"\ngreetin = 1\n")),
              11, 11,
              "[[route]] #1 greetin: unknown key for module \"m\" (it "
              "reads: greeting, fail)");
  // The same from a module built against the 1.0 header.
  ExpectError(RunCheck(ModuleConfig(Runfile("tests/modules/libabi10.so"),
                                    "ms = 5\nmsx = 1\n")),
              11, 7,
              "[[route]] #1 msx: unknown key for module \"m\" (it reads: "
              "greeting, ms)");
}

// A module with a key list (ABI 1.1): an unknown key lists the declared
// ones, a missing required key is an error at the [[route]], a bound is
// checked before create().
TEST(ModuleCheckTest, DeclaredKeys) {
  ExpectError(RunCheck(ModuleConfig(Runfile("sdk/libtimerwait.so"),
                                    "ms = 5\nmsx = 1\n")),
              11, 7,
              "[[route]] #1 msx: unknown key for module \"m\" (valid: ms, "
              "max_ms)");
  ExpectError(
      RunCheck(ModuleConfig(Runfile("sdk/libtimerwait.so"), "ms = -1\n")), 10,
      6, "[[route]] #1 ms: module \"m\": -1 out of range (0..3600000)");
  ExpectError(RunCheck(ModuleConfig(Runfile("tests/modules/libcontract.so"),
                                    "fail_worker_init = false\n")),
              7, 1, "[[route]] #1: module \"m\": missing required key label");
}

// gearboxd -p prints a module's declared keys with their docs and defaults,
// as it prints a built-in handler's.
TEST(ModuleCheckTest, PrintShowsDeclaredKeys) {
  const std::string path = Tmp() + "/p.toml", log = Tmp() + "/print.log";
  std::ofstream(path) << ModuleConfig(Runfile("sdk/libtimerwait.so"),
                                      "max_ms = 500\n");
  std::string error;
  const pid_t pid =
      SpawnLogged({Runfile("daemon/gearboxd"), "-p", "-c", path}, log, &error);
  ASSERT_GT(pid, 0) << error;
  std::optional<int> status = WaitChild(pid, Millis(10000));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  std::ifstream in(log);
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("[[route]]\npath = \"/m\"\nhandler = \"m\"\n"
                            "# The wait without ?ms=N, in ms: 0..3600000 "
                            "(default 10).\nms = 10\n"
                            "# The largest wait ?ms=N may ask for, in ms: "
                            "0..3600000 (default 1000).\nmax_ms = 500\n"),
            std::string::npos)
      << text.str();
}

TEST(ModuleCheckTest, NameClashesWithABuiltIn) {
  Check check = RunCheck("[[module]]\nname = \"echo\"\npath = \"" +
                         Runfile("sdk/libhello.so") + "\"\n");
  ExpectError(check, 2, 8,
              "[[module]] #1 name: \"echo\" is a built-in handler; give the "
              "module another name (built-in: " +
                  BuiltInNames() + ")");
}

}  // namespace
}  // namespace gearbox::testing
