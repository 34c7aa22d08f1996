// The fixture of the connection state machine's tests without sockets
// (connection_<topic>_test.cc): MachineTest with distinct header, body, idle
// and send timeouts, a 100-byte body limit, and the routes /hello (text) and
// /sleep (wait); its tests' vocabulary (Kind, milliseconds, kHello) comes
// with it.
#ifndef GEARBOX_TESTS_UNIT_CONNECTION_CONNECTION_FIXTURE_H_
#define GEARBOX_TESTS_UNIT_CONNECTION_CONNECTION_FIXTURE_H_

#include <chrono>
#include <string_view>
#include <vector>

#include "daemon/router.h"
#include "tests/support/machine_test.h"

namespace gearbox::testing {

class ConnectionTest : public MachineTest {
 protected:
  using Kind = Interest::Kind;
  using milliseconds = std::chrono::milliseconds;
  static constexpr std::string_view kHello =
      "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n";

  ConnectionTest() {
    limits_.header_timeout = milliseconds(1000);
    limits_.body_timeout = milliseconds(2000);
    limits_.idle_timeout = milliseconds(3000);
    limits_.send_timeout = milliseconds(4000);
    limits_.max_body_bytes = 100;
    std::vector<RouteConfig> routes;
    routes.push_back(DefaultRoute("/hello", "text"));  // every param default
    routes.push_back(DefaultRoute("/sleep", "wait"));
    Build(routes);
  }
};

}  // namespace gearbox::testing

#endif  // GEARBOX_TESTS_UNIT_CONNECTION_CONNECTION_FIXTURE_H_
