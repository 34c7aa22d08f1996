#include "tests/unit/daemon/http_parser_harness.h"

#include <gtest/gtest.h>

#include <string>

namespace gearbox::testing::http_parser {

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  PrintVerdict(os, o);
  if (o.status == Status::kComplete) {
    os << " " << o.method << " " << Clip(o.target) << " HTTP/" << o.major << "."
       << o.minor;
    PrintFields(os, o);
  }
  return os << "}";
}

std::ostream& operator<<(std::ostream& os, const Trace& r) {
  for (const Outcome& o : r.outcomes) os << "  " << o << "\n";
  return os;
}

Trace Play(std::string_view input, const std::vector<size_t>& cuts,
           HttpLimits limits) {
  HttpRequestParser parser(limits);
  Request request;
  Trace run;
  std::string data;
  const bool ran_out = Deliver(input, cuts, data, [&] {
    for (;;) {
      std::string copy = data;
      HttpRequestParser::Result r = parser.Parse(copy, request);
      if (r.send_continue) ++run.continues;
      if (r.status == Status::kComplete) {
        run.outcomes.push_back(Snapshot<Outcome>(r, request));
        EXPECT_GT(r.consumed, 0u);
        EXPECT_LE(r.consumed, copy.size());
        data.erase(0, r.consumed);
        if (data.empty()) return true;
        continue;
      }
      if (r.status == Status::kError) {
        run.outcomes.push_back(Snapshot<Outcome>(r, request));
        return false;
      }
      return true;  // incomplete: wait for more bytes
    }
  });
  if (ran_out && !data.empty()) {
    Outcome o;  // the bytes left over when the input ran out
    o.status = Status::kIncomplete;
    o.consumed = data.size();
    run.outcomes.push_back(o);
  }
  return run;
}

Trace PlayAllSplits(std::string_view input, HttpLimits limits) {
  return PlayEverySchedule(input.size(), [&](const std::vector<size_t>& cuts) {
    return Play(input, cuts, limits);
  });
}

}  // namespace gearbox::testing::http_parser
