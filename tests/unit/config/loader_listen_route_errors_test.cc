// Errors in [[listen]] and [[route]] tables: addresses, handlers, paths and
// patterns, methods, and the listeners or routes that conflict.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "config/config.h"
#include "tests/unit/config/loader_harness.h"

namespace gearbox::testing::loader {
namespace {

TEST(LoaderErrorTest, BadAddress) {
  const auto expect = [](std::string_view address, std::string_view why) {
    const std::string toml =
        "[[listen]]\naddress = \"" + std::string(address) + "\"\n";
    ExpectError(toml, 2, 11,
                "[[listen]] #1 address: bad address \"" + std::string(address) +
                    "\": " + std::string(why));
  };
  expect("127.0.0.1:99999", "port 99999 out of range (0..65535)");
  expect("127.0.0.1:http", "port \"http\" is not a number");
  expect("127.0.0.1:", "missing port");
  expect("127.0.0.1", "missing \":PORT\"");
  expect(":8080", "missing host");
  expect("::1:8080", "IPv6 addresses need brackets");
  expect("[::1]", "missing \":PORT\" after \"[::1]\"");
  expect("[::g]:80", "\"::g\" is not an IPv6 address");
  expect("[::1:80", "missing ']'");
  expect("300.0.0.1:80", "\"300.0.0.1\" is not an IPv4 address");
  expect("bad host:80", "\"bad host\" is not a valid host name");
  expect("unix:run/g.sock", "unix socket path must be absolute");
  expect("unix:/" + std::string(107, 'x'),
         "unix socket path is 108 bytes, longer than the limit of 107");
  // The longest path that fits sun_path, and the other accepted forms.
  for (const std::string& good :
       {"unix:/" + std::string(106, 'x'), std::string("[::]:0"),
        std::string("[2001:db8::1]:65535"), std::string("localhost:8080"),
        std::string("0.0.0.0:80")}) {
    Load("[[listen]]\naddress = \"" + good + "\"\n");
  }
}

TEST(LoaderErrorTest, UnknownHandler) {
  ExpectError("[[route]]\npath = \"/x\"\nhandler = \"nope\"\n", 3, 11,
              "[[route]] #1 handler: unknown handler \"nope\" (valid: " +
                  BuiltInNames() + ")");
  ExpectError("[[listen]]\naddress = \"127.0.0.1:1\"\nprotocol = \"spdy\"\n", 3,
              12, "unknown protocol \"spdy\" (valid: http, fastcgi)");
  ExpectError("[log]\nlevel = \"verbose\"\n", 2, 9,
              "unknown log level \"verbose\" (valid: trace, debug, info, warn, "
              "error, critical, off)");
}

TEST(LoaderErrorTest, MissingRequiredKey) {
  ExpectError(
      "[[route]]\npath = \"/x\"\nhandler = \"echo\"\n\n"
      "[[route]]\nhandler = \"echo\"\n",
      5, 1, "[[route]] #2: missing required key \"path\"");
  ExpectError("[[route]]\npath = \"/x\"\n", 1, 1,
              "[[route]] #1: missing required key \"handler\"");
  ExpectError("[[listen]]\nname = \"x\"\n", 1, 1,
              "[[listen]] #1: missing required key \"address\"");
  ExpectError("listen = []\n", 1, 10, "at least one listener is required");
}

TEST(LoaderErrorTest, BadRoutePath) {
  ExpectError("[[route]]\npath = \"x\"\nhandler = \"echo\"\n", 2, 8,
              "[[route]] #1 path: path \"x\" must start with '/'");
  ExpectError("[[route]]\npath = \"/a?b=1\"\nhandler = \"echo\"\n", 2, 8,
              "must not contain");
  ExpectError(
      "[[route]]\npath = \"/t\"\nhandler = \"text\"\ncontent_type = "
      "\"a\\r\\nb\"\n",
      4, 16, "[[route]] #1 content_type: bad header value \"a\\r\\nb\"");
}

TEST(LoaderErrorTest, DuplicateRoute) {
  ExpectError(
      "[[route]]\npath = \"/a\"\nhandler = \"echo\"\n\n"
      "[[route]]\nhandler = \"echo\"\npath = \"/a\"\n",
      7, 8,
      "[[route]] #2 path: \"/a\" conflicts with [[route]] #1 \"/a\" (line 2, "
      "column 8): duplicate route");
}

TEST(LoaderErrorTest, ConflictingRoutesNameBoth) {
  ExpectError(
      "[[route]]\npath = \"/posts/{id}\"\nhandler = \"echo\"\n"
      "[[route]]\nhandler = \"echo\"\npath = \"/{resource}/latest\"\n",
      6, 8,
      "[[route]] #2 path: \"/{resource}/latest\" conflicts with [[route]] #1 "
      "\"/posts/{id}\" (line 2, column 8): both match /posts/latest and "
      "neither is more specific");
  // Overlapping method sets on one pattern.
  ExpectError(
      "[[route]]\npath = \"/a\"\nmethods = [\"GET\", \"POST\"]\n"
      "handler = \"echo\"\n"
      "[[route]]\npath = \"/a\"\nmethods = [\"POST\"]\nhandler = \"echo\"\n",
      6, 8,
      "\"POST /a\" conflicts with [[route]] #1 \"GET,POST /a\" (line 2, "
      "column 8): the same pattern with overlapping methods");
  // Go's consequence: a method-restricted catch-all against a plain route.
  ExpectError(
      "[[route]]\npath = \"/index.html\"\nhandler = \"echo\"\n"
      "[[route]]\npath = \"/\"\nmethods = [\"GET\"]\nhandler = \"echo\"\n",
      5, 8, "both match /index.html and neither is more specific");
}

TEST(LoaderErrorTest, MalformedPatterns) {
  for (const char* bad : {"/a/{", "/a/{x}{y}", "/a/{x...}/b"}) {
    ExpectError(
        "[[route]]\npath = \"" + std::string(bad) + "\"\nhandler = \"echo\"\n",
        2, 8, "[[route]] #1 path: path \"" + std::string(bad) + "\": ");
  }
}

TEST(LoaderErrorTest, BadMethods) {
  ExpectError("[[route]]\npath = \"/a\"\nmethods = []\nhandler = \"echo\"\n", 3,
              11, "[[route]] #1 methods: empty list");
  ExpectError(
      "[[route]]\npath = \"/a\"\nmethods = [\"GET\", \"G T\"]\n"
      "handler = \"echo\"\n",
      3, 11, "element 1: \"G T\" is not a method name");
  ExpectError(
      "[[route]]\npath = \"/a\"\nmethods = [\"GET\", \"GET\"]\n"
      "handler = \"echo\"\n",
      3, 11, "element 1: duplicate method \"GET\"");
}

TEST(LoaderErrorTest, DuplicateListener) {
  // Both names default to "http": the error points at the second table.
  ExpectError(
      "[[listen]]\naddress = \"127.0.0.1:1\"\n"
      "[[listen]]\naddress = \"127.0.0.1:2\"\n",
      3, 1,
      "[[listen]] #2 name: duplicate listener name \"http\" (first at line 1)");
  ExpectError(
      "[[listen]]\naddress = \"127.0.0.1:1\"\nname = \"a\"\n"
      "[[listen]]\naddress = \"127.0.0.1:2\"\nname = \"a\"\n",
      6, 8, "[[listen]] #2 name: duplicate listener name \"a\"");
  ExpectError(
      "[[listen]]\naddress = \"127.0.0.1:1\"\n"
      "[[listen]]\naddress = \"127.0.0.1:1\"\nname = \"b\"\n",
      4, 11,
      "[[listen]] #2 address: duplicate address \"127.0.0.1:1\" (first at "
      "line 1)");
  ExpectError("[[listen]]\naddress = \"127.0.0.1:1\"\nname = \"a:b\"\n", 3, 8,
              "[[listen]] #1 name: bad name \"a:b\"");
}

TEST(LoaderErrorTest, CrashHandlerNeedsTheServerFlag) {
  ExpectError("[[route]]\npath = \"/c\"\nhandler = \"crash\"\n", 3, 11,
              "enable_crash_handler = true");
  // The flag may come after the route.
  Config c = Load(
      "[[route]]\npath = \"/c\"\nhandler = \"crash\"\n"
      "[server]\nenable_crash_handler = true\n");
  ASSERT_EQ(c.routes.size(), 1u);
  EXPECT_EQ(c.routes[0].handler, "crash");
  EXPECT_TRUE(c.server.enable_crash_handler);
}

}  // namespace
}  // namespace gearbox::testing::loader
