// What a module built against ABI 1.1 reads of a request, through gearboxd's
// own module loader and handler adapter (no sockets: the request is built
// here, so every field, path captures included, has a known value).
#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "config/loader.h"
#include "daemon/handlers/handlers.h"
#include "daemon/modules/modules.h"
#include "models/model.h"
#include "tests/integration/modules/modules_fixture.h"

namespace gearbox::testing {
namespace {

std::string Body(Handler& handler, const Request& request) {
  std::unique_ptr<gearbox::Exchange> exchange = handler.Start(request);
  Response response;
  EXPECT_TRUE(exchange->Resume(Wake{}, response).done());
  return response.body;
}

TEST(ModuleRequestTest, ReadsCapturesClientAndVersion) {
  const std::string toml =
      ModuleTable("contract", Runfile("tests/modules/libcontract.so")) +
      "[[route]]\npath = \"/c\"\nhandler = \"contract\"\nlabel = \"x\"\n";
  ConfigVocabulary vocab{ModelSchemas(), HandlerSchemas()};
  ConfigResult loaded = LoadConfigString(toml, "<test>", vocab);
  ASSERT_TRUE(std::holds_alternative<Config>(loaded))
      << std::get<ConfigError>(loaded).ToString();
  Config config = std::get<Config>(std::move(loaded));
  ModulesResult modules = Modules::Load(config);
  ASSERT_TRUE(std::holds_alternative<std::shared_ptr<const Modules>>(modules))
      << std::get<ConfigError>(modules).ToString();
  std::unique_ptr<Handler> handler =
      std::get<std::shared_ptr<const Modules>>(modules)->MakeHandler("/c", 0,
                                                                     1);
  ASSERT_NE(handler, nullptr);

  // A FastCGI request from a trusted (unix) peer: REMOTE_ADDR is the client.
  std::vector<IpNet> trusted = DefaultTrustedProxies();
  RequestOrigin origin;
  origin.listener = "fcgi-main";
  origin.protocol = "fastcgi";
  origin.peer.family = IpAddress::Family::kUnix;
  origin.trusted = trusted;
  Request request;
  request.method = "GET";
  request.SetTarget("/items/123/files/a%2Fb?do=request");
  request.version_major = 2;
  request.version_minor = 0;
  request.remote_addr = "203.0.113.20";
  request.params[0] = {"id", "123"};
  request.params[1] = {"rest", "a/b"};
  request.param_count = 2;
  request.SetOrigin(origin);
  EXPECT_EQ(Body(*handler, request),
            "version=2.0 listener=fcgi-main protocol=fastcgi "
            "client=203.0.113.20 captures=id:123,rest:a/b id=123\n");

  // No captures, an HTTP peer that is not trusted.
  origin.protocol = "http";
  origin.peer = ParseIp("198.51.100.7").value();
  request.version_major = 1;
  request.version_minor = 1;
  request.param_count = 0;
  request.SetOrigin(origin);
  EXPECT_EQ(Body(*handler, request),
            "version=1.1 listener=fcgi-main protocol=http "
            "client=198.51.100.7 captures= id=\n");
}

}  // namespace
}  // namespace gearbox::testing
