// [[module]] tables and the routes that name a module, as config/ reads them
// (loading the .so and the module's own checks are daemon/modules/, tested in
// tests/integration/modules).
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "config/loader.h"
#include "daemon/handlers/handlers.h"
#include "tests/unit/config/builtin_vocabulary.h"

namespace gearbox {
namespace {

using testing::BuiltInNames;
using testing::kVocabulary;

ConfigResult Load(std::string_view toml,
                  std::string_view source = "/etc/gearbox/g.toml") {
  return LoadConfigString(toml, source, kVocabulary);
}

std::string Error(std::string_view toml) {
  ConfigResult result = Load(toml);
  if (auto* e = std::get_if<ConfigError>(&result)) return e->ToString();
  return "(loaded)";
}

constexpr std::string_view kTimerwait =
    "[[module]]\n"
    "name = \"timerwait\"\n"
    "path = \"/usr/lib64/gearbox/modules/libtimerwait.so\"\n";

TEST(ModuleConfigTest, ModuleRouteKeepsEveryOtherKeyAsWritten) {
  ConfigResult result = Load(std::string(kTimerwait) +
                             "[[route]]\n"
                             "path = \"/tw\"\n"
                             "handler = \"timerwait\"\n"
                             "ms = 50\n"
                             "verbose = true\n"
                             "backend = \"db:5432\"\n");
  ASSERT_TRUE(std::holds_alternative<Config>(result))
      << std::get<ConfigError>(result).ToString();
  const Config& c = std::get<Config>(result);
  ASSERT_EQ(c.modules.size(), 1u);
  EXPECT_EQ(c.modules[0].name, "timerwait");
  EXPECT_EQ(c.modules[0].path, "/usr/lib64/gearbox/modules/libtimerwait.so");
  EXPECT_EQ(c.modules[0].path_at.line, 3);
  EXPECT_EQ(c.modules[0].path_at.column, 8);
  ASSERT_EQ(c.routes.size(), 1u);
  const RouteConfig& r = c.routes[0];
  EXPECT_TRUE(r.module);
  EXPECT_EQ(r.handler, "timerwait");
  EXPECT_EQ(r.handler_at.line, 6);
  ASSERT_EQ(r.params.entries().size(), 3u);
  EXPECT_EQ(r.params.Int("ms"), 50);
  EXPECT_EQ(r.params.Find("ms")->where.line, 7);
  EXPECT_EQ(r.params.Find("ms")->where.column, 6);
  EXPECT_TRUE(r.params.Bool("verbose"));
  EXPECT_EQ(r.params.Text("backend"), "db:5432");
}

TEST(ModuleConfigTest, ModuleMayComeAfterItsRoutes) {
  ConfigResult result =
      Load("[[route]]\npath = \"/tw\"\nhandler = \"timerwait\"\n" +
           std::string(kTimerwait));
  ASSERT_TRUE(std::holds_alternative<Config>(result))
      << std::get<ConfigError>(result).ToString();
  EXPECT_TRUE(std::get<Config>(result).routes[0].module);
}

TEST(ModuleConfigTest, RelativePathIsRelativeToTheConfigFile) {
  ConfigResult result =
      Load("[[module]]\nname = \"m\"\npath = \"modules/libm.so\"\n");
  ASSERT_TRUE(std::holds_alternative<Config>(result));
  EXPECT_EQ(std::get<Config>(result).modules[0].path,
            "/etc/gearbox/modules/libm.so");
}

TEST(ModuleConfigTest, NameClashesAreErrors) {
  EXPECT_EQ(Error("[[module]]\nname = \"wait\"\npath = \"/x.so\"\n"),
            "/etc/gearbox/g.toml:2:8: [[module]] #1 name: \"wait\" is a "
            "built-in handler; give the module another name (built-in: text, "
            "wait, burn, echo, status, postgres, lua, crash)");
  EXPECT_EQ(Error(std::string(kTimerwait) +
                  "[[module]]\nname = \"timerwait\"\npath = \"/y.so\"\n"),
            "/etc/gearbox/g.toml:5:8: [[module]] #2 name: duplicate module "
            "name \"timerwait\" (first at line 1)");
}

TEST(ModuleConfigTest, BadModuleTables) {
  EXPECT_EQ(Error("[[module]]\nname = \"m\"\n"),
            "/etc/gearbox/g.toml:1:1: [[module]] #1: missing required key "
            "\"path\" (the .so file)");
  EXPECT_EQ(Error("[[module]]\npath = \"/x.so\"\n"),
            "/etc/gearbox/g.toml:1:1: [[module]] #1: missing required key "
            "\"name\" (what routes' handler = names)");
  EXPECT_EQ(Error("[[module]]\nname = \"a b\"\npath = \"/x.so\"\n"),
            "/etc/gearbox/g.toml:2:8: [[module]] #1 name: bad module name "
            "\"a b\" (1..64 letters, digits, '_' or '-')");
  EXPECT_EQ(Error("[[module]]\nname = \"m\"\npath = \"\"\n"),
            "/etc/gearbox/g.toml:3:8: [[module]] #1 path: bad path \"\" (a "
            "shared object: non-empty, no control characters)");
  EXPECT_EQ(Error("[[module]]\nname = \"m\"\npath = \"/x.so\"\nsize = 1\n"),
            "/etc/gearbox/g.toml:4:1: [[module]] #1 size: unknown key "
            "(valid: name, path)");
  EXPECT_EQ(Error("module = 1\n"),
            "/etc/gearbox/g.toml:1:10: [[module]]: expected an array of "
            "tables [[module]], got integer 1");
}

TEST(ModuleConfigTest, ModuleRouteValuesAreScalars) {
  EXPECT_EQ(Error(std::string(kTimerwait) +
                  "[[route]]\npath = \"/tw\"\nhandler = \"timerwait\"\n"
                  "ms = 1.5\n"),
            "/etc/gearbox/g.toml:7:6: [[route]] #1 ms: a module's route key "
            "takes an integer, a boolean or a string, got float 1.5");
}

TEST(ModuleConfigTest, UnknownHandlerListsModulesToo) {
  EXPECT_EQ(Error(std::string(kTimerwait) +
                  "[[route]]\npath = \"/x\"\nhandler = \"timerwat\"\n"),
            "/etc/gearbox/g.toml:6:11: [[route]] #1 handler: unknown handler "
            "\"timerwat\" (valid: " +
                BuiltInNames() + ", timerwait)");
}

TEST(ModuleConfigTest, PrintConfigRoundTrips) {
  ConfigResult first = Load(std::string(kTimerwait) +
                            "[[route]]\npath = \"/tw\"\nhandler = "
                            "\"timerwait\"\nms = 5\nname = \"x\"\n");
  ASSERT_TRUE(std::holds_alternative<Config>(first));
  const std::string text =
      FormatConfig(std::get<Config>(first), HandlerSchemas());
  EXPECT_NE(text.find("[[module]]\nname = \"timerwait\"\npath = "
                      "\"/usr/lib64/gearbox/modules/libtimerwait.so\"\n"),
            std::string::npos)
      << text;
  ConfigResult again = Load(text, "/elsewhere/p.toml");
  ASSERT_TRUE(std::holds_alternative<Config>(again))
      << std::get<ConfigError>(again).ToString() << "\n"
      << text;
  // The same text but its first line (which names the source).
  const std::string again_text =
      FormatConfig(std::get<Config>(again), HandlerSchemas());
  EXPECT_EQ(again_text.substr(again_text.find('\n')),
            text.substr(text.find('\n')));
  const RouteConfig& r = std::get<Config>(again).routes[0];
  EXPECT_EQ(r.params.Int("ms"), 5);
  EXPECT_EQ(r.params.Text("name"), "x");
}

}  // namespace
}  // namespace gearbox
