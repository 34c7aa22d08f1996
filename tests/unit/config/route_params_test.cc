// The loader checks a route's keys against the schema it is handed, knowing
// no handler itself: these tests hand it schemas of their own (no
// //daemon:handlers here), so what they show holds for any handler table.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <string_view>
#include <variant>

#include "config/config.h"
#include "config/loader.h"
#include "config/params.h"

namespace gearbox {
namespace {

// Models of the test's own (the default model must be one of them), with
// sections described as a model's row describes its own.
constexpr ModelKey kPoolKeys[] = {
    SectionKey<&ModelSections::threadpool, &ThreadPoolConfig::threads>(
        "threads", 1, 100),
    SectionKey<&ModelSections::threadpool, &ThreadPoolConfig::max_threads>(
        "max_threads", 1, 100, "threads"),
    SectionKey<&ModelSections::threadpool,
               &ThreadPoolConfig::idle_thread_timeout>(
        "idle_thread_timeout", std::chrono::seconds(1), std::chrono::hours(1)),
};
constexpr ModelKey kLoopKeys[] = {
    SectionKey<&ModelSections::async, &AsyncConfig::loops>("loops", 1, 256),
};
constexpr ModelSchema kModels[] = {
    {"prefork", {}}, {"threadpool", kPoolKeys}, {"async", kLoopKeys}};

constexpr ParamSpec kGadgetParams[] = {
    IntParam("size", 3, 1, 10, "Gadget size", "limit"),
    IntParam("limit", 5, 0, 100, "Largest size a query may ask for"),
    BoolParam("shiny", true, "Polish it"),
    StringParam("label", "plain", "What it says"),
    HeaderValueParam("mime", "x/gadget", "Its Content-Type"),
};
constexpr HandlerSchema kSchemas[] = {
    {"gadget", "a handler these tests made up", kGadgetParams},
    {"bare", "no parameters", {}},
    {"breaker", "breaks things", {}, /*fault_test_only=*/true},
};
const ConfigVocabulary kVocabulary{kModels, kSchemas};

std::string Route(std::string_view handler, std::string_view keys = "") {
  return "[[route]]\npath = \"/g\"\nhandler = \"" + std::string(handler) +
         "\"\n" + std::string(keys);
}

Config Load(const std::string& toml) {
  ConfigResult result = LoadConfigString(toml, "g.toml", kVocabulary);
  if (auto* error = std::get_if<ConfigError>(&result)) {
    ADD_FAILURE() << error->ToString() << "\n" << toml;
    return Config{};
  }
  return std::get<Config>(result);
}

// The whole one-line error, file:line:col included.
std::string Error(const std::string& toml) {
  ConfigResult result = LoadConfigString(toml, "g.toml", kVocabulary);
  const auto* error = std::get_if<ConfigError>(&result);
  if (!error) {
    ADD_FAILURE() << "loaded without error:\n" << toml;
    return "";
  }
  return error->ToString();
}

TEST(RouteParamsTest, DefaultsFilledInSchemaOrderWithoutPosition) {
  const Config c = Load(Route("gadget", "label = \"hi\"\n"));
  ASSERT_EQ(c.routes.size(), 1u);
  const RouteConfig& r = c.routes[0];
  EXPECT_EQ(r.where.line, 1);
  EXPECT_EQ(r.where.column, 1);
  ASSERT_EQ(r.params.entries().size(), 5u);
  const char* order[] = {"size", "limit", "shiny", "label", "mime"};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(r.params.entries()[i].key, order[i]);
  }
  EXPECT_EQ(r.params.Int("size"), 3);
  EXPECT_EQ(r.params.Int("limit"), 5);
  EXPECT_TRUE(r.params.Bool("shiny"));
  EXPECT_EQ(r.params.Text("mime"), "x/gadget");
  EXPECT_FALSE(r.params.Find("size")->where.in_file());
  // The value the file set, and where it set it (line 4, after "label = ").
  EXPECT_EQ(r.params.Text("label"), "hi");
  EXPECT_EQ(r.params.Find("label")->where.line, 4);
  EXPECT_EQ(r.params.Find("label")->where.column, 9);
  EXPECT_EQ(r.params.Find("nonesuch"), nullptr);
}

TEST(RouteParamsTest, EveryTypeRead) {
  const Config c = Load(Route("gadget",
                              "size = 10\nlimit = 10\nshiny = false\n"
                              "label = \"\"\nmime = \"text/x; a=b\"\n"));
  const RouteParams& p = c.routes[0].params;
  EXPECT_EQ(p.Int("size"), 10);
  EXPECT_EQ(p.Int("limit"), 10);
  EXPECT_FALSE(p.Bool("shiny"));
  EXPECT_EQ(p.Text("label"), "");
  EXPECT_EQ(p.Text("mime"), "text/x; a=b");
  EXPECT_TRUE(Load(Route("bare")).routes[0].params.empty());
}

TEST(RouteParamsTest, UnknownKeyListsTheRouteKeysAndTheSchema) {
  EXPECT_EQ(
      Error(Route("gadget", "colour = 1\n")),
      "g.toml:4:1: [[route]] #1 colour: unknown key for handler "
      "\"gadget\" (valid: path, methods, handler, timeout, size, limit, shiny, "
      "label, mime)");
  EXPECT_EQ(Error(Route("bare", "size = 1\n")),
            "g.toml:4:1: [[route]] #1 size: unknown key for handler \"bare\" "
            "(valid: path, methods, handler, timeout)");
}

TEST(RouteParamsTest, WrongType) {
  EXPECT_EQ(Error(Route("gadget", "size = \"3\"\n")),
            "g.toml:4:8: [[route]] #1 size: expected an integer, got string "
            "\"3\"");
  EXPECT_EQ(Error(Route("gadget", "shiny = 1\n")),
            "g.toml:4:9: [[route]] #1 shiny: expected true or false, got "
            "integer 1");
  EXPECT_EQ(Error(Route("gadget", "label = 2.5\n")),
            "g.toml:4:9: [[route]] #1 label: expected a string, got float 2.5");
  EXPECT_EQ(Error(Route("gadget", "mime = \"\"\n")),
            "g.toml:4:8: [[route]] #1 mime: bad header value \"\" (must be "
            "non-empty, without control characters)");
}

TEST(RouteParamsTest, OutOfBounds) {
  EXPECT_EQ(Error(Route("gadget", "size = 0\n")),
            "g.toml:4:8: [[route]] #1 size: 0 out of range (1..10)");
  EXPECT_EQ(Error(Route("gadget", "limit = 101\n")),
            "g.toml:4:9: [[route]] #1 limit: 101 out of range (0..100)");
}

TEST(RouteParamsTest, CapPointsAtTheKeyTheFileSet) {
  // The cap was set: the error is at the cap.
  EXPECT_EQ(Error(Route("gadget", "size = 4\nlimit = 2\n")),
            "g.toml:5:9: [[route]] #1 limit: 2 is less than size (4)");
  EXPECT_EQ(Error(Route("gadget", "limit = 2\n")),
            "g.toml:4:9: [[route]] #1 limit: 2 is less than size (3)");
  // Only the value was set: the error is at the value.
  EXPECT_EQ(Error(Route("gadget", "size = 6\n")),
            "g.toml:4:8: [[route]] #1 size: 6 exceeds the default limit (5); "
            "set limit too");
  EXPECT_EQ(Load(Route("gadget", "size = 6\nlimit = 6\n"))
                .routes[0]
                .params.Int("size"),
            6);
}

TEST(RouteParamsTest, FaultTestOnlyNeedsTheServerFlag) {
  EXPECT_EQ(Error(Route("breaker")),
            "g.toml:3:11: [[route]] handler: \"breaker\" is for fault tests "
            "only; set [server] enable_crash_handler = true to allow it");
  Load(Route("breaker") + "[server]\nenable_crash_handler = true\n");
}

TEST(RouteParamsTest, UnknownHandlerNamesTheSchemas) {
  EXPECT_EQ(Error(Route("text")),
            "g.toml:3:11: [[route]] #1 handler: unknown handler \"text\" "
            "(valid: gadget, bare)")
      << "a fault-test-only handler is accepted but never suggested";
}

TEST(RouteParamsTest, ModelSectionsFollowTheirSchema) {
  const std::string route = Route("bare");
  Config c = Load(route + "[threadpool]\nthreads = 3\n");
  EXPECT_EQ(c.threadpool.threads, 3);
  EXPECT_EQ(c.threadpool.max_threads, 3);  // a ceiling left out: its minimum
  c = Load(route +
           "[threadpool]\nthreads = 2\nmax_threads = 9\nidle_thread_timeout = "
           "\"2s\"\n[async]\nloops = 7\n");
  EXPECT_EQ(c.threadpool.max_threads, 9);
  EXPECT_EQ(c.threadpool.idle_thread_timeout, std::chrono::seconds(2));
  EXPECT_EQ(c.async.loops, 7);
  EXPECT_EQ(Error(route + "[threadpool]\nthreads = 5\nmax_threads = 4\n"),
            "g.toml:6:15: [threadpool] max_threads: 4 is less than threads "
            "(5)");
  EXPECT_EQ(Error(route + "[threadpool]\nthreads = 101\n"),
            "g.toml:5:11: [threadpool] threads: 101 out of range (1..100)");
  EXPECT_EQ(Error(route + "[threadpool]\nidle_thread_timeout = \"2h\"\n"),
            "g.toml:5:23: [threadpool] idle_thread_timeout: 2h is above the "
            "maximum 1h");
  EXPECT_EQ(Error(route + "[threadpool]\nqueue = 5\n"),
            "g.toml:5:1: [threadpool] queue: unknown key (valid: threads, "
            "max_threads, idle_thread_timeout)");
  // -p prints each section from its schema, in the table's order; a section
  // without keys is an empty table.
  const std::string text = FormatConfig(c, kSchemas);
  EXPECT_NE(text.find("\n[prefork]\n\n[threadpool]\nthreads = 2\n"
                      "max_threads = 9\nidle_thread_timeout = \"2s\"\n\n"
                      "[async]\nloops = 7\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(Load(text).threadpool.max_threads, 9);
}

TEST(RouteParamsTest, ModelSectionsFollowTheVocabulary) {
  constexpr ModelSchema kOnlyAsync[] = {{"async", kLoopKeys}};
  ConfigResult result = LoadConfigString(
      "[server]\nmodel = \"async\"\n[threadpool]\nthreads = 2\n", "g.toml",
      {kOnlyAsync, kSchemas});
  ASSERT_TRUE(std::holds_alternative<ConfigError>(result));
  EXPECT_EQ(std::get<ConfigError>(result).ToString(),
            "g.toml:3:2: unknown table [threadpool] (valid tables: server, "
            "listen, async, limits, log, metrics, lua, module, route)");
  // (route = []: the embedded default's routes name handlers kSchemas lacks.)
  result = LoadConfigString(
      "route = []\n[server]\nmodel = \"async\"\n[async]\nloops = 2\n", "g.toml",
      {kOnlyAsync, kSchemas});
  ASSERT_TRUE(std::holds_alternative<Config>(result));
  EXPECT_EQ(std::get<Config>(result).async.loops, 2);
}

TEST(RouteParamsTest, PrintConfigShowsEveryParamWithItsDescription) {
  const Config c = Load(Route("gadget", "size = 2\n"));
  const std::string text = FormatConfig(c, kSchemas);
  EXPECT_NE(text.find("# gadget: a handler these tests made up\n[[route]]\n"
                      "path = \"/g\"\nhandler = \"gadget\"\n"
                      "# Gadget size: 1..10 (default 3).\nsize = 2\n"
                      "# Largest size a query may ask for: size..100 (default "
                      "5).\nlimit = 5\n"
                      "# Polish it (default true).\nshiny = true\n"
                      "# What it says (default \"plain\").\nlabel = \"plain\"\n"
                      "# Its Content-Type (default \"x/gadget\").\n"
                      "mime = \"x/gadget\"\n"),
            std::string::npos)
      << text;
  const Config again = Load(text);
  ASSERT_EQ(again.routes.size(), 1u);
  EXPECT_EQ(again.routes[0].params.Int("size"), 2);
  EXPECT_TRUE(again.routes[0].params.Find("shiny")->where.in_file());
}

TEST(RouteParamsTest, PrintConfigQuotesKeysThatAreNotBare) {
  // Keys nobody declared (a module's, later) may need quotes.
  Config c;
  RouteConfig r;
  r.path = "/m";
  r.handler = "module";
  r.params.Set("a b", int64_t{1}, {7, 3});
  r.params.Set("ok-key_2", true);
  c.routes.push_back(r);
  const std::string text = FormatConfig(c);
  EXPECT_NE(text.find("handler = \"module\"\n\"a b\" = 1\nok-key_2 = true\n"),
            std::string::npos)
      << text;
}

TEST(RouteParamsTest, SetReplacesInPlace) {
  RouteParams p;
  p.Set("a", int64_t{1});
  p.Set("b", std::string("x"), {2, 5});
  p.Set("a", int64_t{9}, {3, 1});
  ASSERT_EQ(p.entries().size(), 2u);
  EXPECT_EQ(p.entries()[0].key, "a");
  EXPECT_EQ(p.Int("a"), 9);
  EXPECT_EQ(p.Find("a")->where.line, 3);
  EXPECT_EQ(p.Text("b"), "x");
}

TEST(RouteParamsDeathTest, ReadingAnUndeclaredKeyAborts) {
  RouteParams p;
  p.Set("n", int64_t{1});
  EXPECT_DEATH(p.Int("m"),
               "route parameter \"m\": missing, expected an "
               "integer");
  EXPECT_DEATH(p.Text("n"),
               "route parameter \"n\": another type, expected a "
               "string");
}

TEST(RouteParamsTest, DescribeParam) {
  const HandlerSchema& g = kSchemas[0];
  EXPECT_EQ(DescribeParam(g, kGadgetParams[0]),
            "Gadget size: 1..10 (default 3).");
  EXPECT_EQ(DescribeParam(g, kGadgetParams[1]),
            "Largest size a query may ask for: size..100 (default 5).");
  constexpr ParamSpec kOpen = IntParam("n", 0, 0, kNoMax, "Count");
  EXPECT_EQ(DescribeParam(g, kOpen), "Count: >= 0 (default 0).");
}

TEST(RouteParamsTest, CheckSchema) {
  for (const HandlerSchema& schema : kSchemas) {
    EXPECT_EQ(CheckSchema(schema), std::nullopt) << schema.name;
  }
  const auto check = [](std::initializer_list<ParamSpec> params) {
    const std::vector<ParamSpec> list(params);
    return CheckSchema({"h", "", list}).value_or("ok");
  };
  EXPECT_EQ(check({IntParam("path", 0, 0, 1, "")}),
            "h: key path is a key of every route");
  EXPECT_EQ(check({IntParam("a b", 0, 0, 1, "")}),
            "h: key \"a b\" is not a bare TOML key");
  EXPECT_EQ(check({IntParam("n", 5, 0, 1, "")}),
            "h: n: default 5 outside 0..1");
  EXPECT_EQ(check({IntParam("n", 0, 0, 1, ""), BoolParam("n", true, "")}),
            "h: key n declared twice");
  EXPECT_EQ(check({IntParam("n", 0, 0, 9, "", "cap")}),
            "h: n at_most cap: not another integer key");
  EXPECT_EQ(check({IntParam("n", 0, 0, 9, "", "n")}),
            "h: n at_most n: not another integer key");
  EXPECT_EQ(
      check({IntParam("n", 5, 0, 9, "", "c"), IntParam("c", 4, 0, 9, "")}),
      "h: default n exceeds default c");
  ParamSpec flag = BoolParam("b", true, "");
  flag.at_most = "n";
  EXPECT_EQ(check({IntParam("n", 0, 0, 9, ""), flag}),
            "h: b: at_most applies to integers only");
  EXPECT_EQ(check({HeaderValueParam("m", "", "")}),
            "h: m: a header value needs a non-empty default");
  EXPECT_EQ(CheckSchema({"", "", {}}).value_or("ok"),
            "a handler schema without a name");
  EXPECT_EQ(RouteKeys(), (std::vector<std::string_view>{"path", "methods",
                                                        "handler", "timeout"}));
}

}  // namespace
}  // namespace gearbox
