// The fixture of the operator controls' tests (controls_<topic>_test.cc):
// HardeningTest with the daemon's log (WaitForLog, LineWith) and a /status
// counter (Status) at hand.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tests/hardening/hardening.h"

namespace gearbox::hardening {

class ControlsTest : public HardeningTest {
 protected:
  // Waits (bounded) until the log contains `needle`; returns the log.
  std::string WaitForLog(std::string_view needle, Millis timeout) {
    return gearbox::testing::WaitForLog(*daemon_, needle, timeout);
  }
  // The log line holding `needle`, or "".
  static std::string LineWith(const std::string& log, std::string_view needle) {
    const size_t at = log.find(needle);
    if (at == std::string::npos) return "";
    const size_t begin = log.rfind('\n', at);
    const size_t end = log.find('\n', at);
    return log.substr(
        begin == std::string::npos ? 0 : begin + 1,
        end == std::string::npos ? std::string::npos : end - (begin + 1));
  }
  int64_t Status(std::string_view key) { return JsonNumber(StatusJson(), key); }
};

}  // namespace gearbox::hardening
