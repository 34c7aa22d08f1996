// Two parameter kinds a backend handler needs (the postgres handler's params
// and dsn): an array of strings, and a string the handler checks at load and
// redacts wherever the config is printed. With schemas of the test's own.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <variant>

#include "config/config.h"
#include "config/loader.h"
#include "config/params.h"

namespace gearbox {
namespace {

// Models of the test's own, without keys: the default model must be one.
constexpr ModelSchema kModels[] = {
    {"prefork", {}}, {"threadpool", {}}, {"async", {}}};

std::string NeedsAt(std::string_view value) {
  return value.find('@') == std::string_view::npos ? "no '@' in it" : "";
}
std::string HideAfterAt(std::string_view value) {
  return std::string(value.substr(0, value.find('@'))) + "@***";
}

constexpr ParamSpec kListerParams[] = {
    StringListParam("args", "Arguments"),
    CheckedStringParam("secret", "", "A user@password pair", &NeedsAt,
                       &HideAfterAt),
};
constexpr HandlerSchema kSchemas[] = {
    {"lister", "takes lists", kListerParams},
};
const ConfigVocabulary kVocabulary{kModels, kSchemas};

std::string Route(std::string_view keys) {
  return "[[route]]\npath = \"/l\"\nhandler = \"lister\"\n" + std::string(keys);
}

ConfigResult LoadIt(const std::string& toml) {
  return LoadConfigString(toml, "l.toml", kVocabulary);
}

std::string Error(const std::string& toml) {
  ConfigResult result = LoadIt(toml);
  const auto* error = std::get_if<ConfigError>(&result);
  if (!error) {
    ADD_FAILURE() << "loaded without error:\n" << toml;
    return "";
  }
  return error->ToString();
}

TEST(ListParamTest, ReadInOrderAndDefaultsEmpty) {
  ConfigResult result =
      LoadIt(Route("args = [\"n\", \"m\"]\nsecret = \"a@b\"\n"));
  ASSERT_TRUE(std::holds_alternative<Config>(result))
      << std::get<ConfigError>(result).ToString();
  const RouteConfig& r = std::get<Config>(result).routes[0];
  EXPECT_EQ(r.params.List("args"), (std::vector<std::string>{"n", "m"}));
  EXPECT_EQ(r.params.Find("args")->where.line, 4);

  ConfigResult bare = LoadIt(Route("secret = \"a@b\"\n"));
  ASSERT_TRUE(std::holds_alternative<Config>(bare));
  EXPECT_TRUE(std::get<Config>(bare).routes[0].params.List("args").empty());
}

TEST(ListParamTest, WrongTypesNameTheElement) {
  EXPECT_EQ(Error(Route("args = \"n\"\nsecret = \"a@b\"\n")),
            "l.toml:4:8: [[route]] #1 args: expected an array of strings, got "
            "string \"n\"");
  EXPECT_EQ(Error(Route("args = [\"n\", 3]\nsecret = \"a@b\"\n")),
            "l.toml:4:8: [[route]] #1 args: element 1: expected a string, got "
            "integer 3");
}

TEST(CheckedParamTest, CheckedWhereWrittenAndWhenLeftOut) {
  EXPECT_EQ(Error(Route("secret = \"nothing\"\n")),
            "l.toml:4:10: [[route]] #1 secret: no '@' in it");
  // Left out, its default fails the check: the error is the route's.
  EXPECT_EQ(Error(Route("")),
            "l.toml:1:1: [[route]] #1: missing key secret (no '@' in it)");
}

TEST(CheckedParamTest, PrintConfigRedactsAndListsRoundTrip) {
  ConfigResult result =
      LoadIt(Route("args = [\"a\", \"b\\\"c\"]\nsecret = \"user@hunter2\"\n"));
  ASSERT_TRUE(std::holds_alternative<Config>(result));
  const std::string text = FormatConfig(std::get<Config>(result), kSchemas);
  EXPECT_EQ(text.find("hunter2"), std::string::npos) << text;
  EXPECT_NE(text.find("secret = \"user@***\"\n"), std::string::npos) << text;
  EXPECT_NE(
      text.find("# Arguments (default []).\nargs = [\"a\", \"b\\\"c\"]\n"),
      std::string::npos)
      << text;
  ConfigResult again = LoadIt(text);
  ASSERT_TRUE(std::holds_alternative<Config>(again))
      << std::get<ConfigError>(again).ToString();
  EXPECT_EQ(std::get<Config>(again).routes[0].params.List("args"),
            (std::vector<std::string>{"a", "b\"c"}));
}

TEST(CheckedParamTest, CheckSchemaRejectsChecksOnOtherTypes) {
  ParamSpec spec = IntParam("n", 1, 0, 2, "N");
  spec.check = &NeedsAt;
  const ParamSpec specs[] = {spec};
  const HandlerSchema schema{"odd", "odd", specs};
  const auto problem = CheckSchema(schema);
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("check and redact apply to strings only"),
            std::string::npos)
      << *problem;
}

}  // namespace
}  // namespace gearbox
