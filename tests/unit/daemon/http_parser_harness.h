// The HTTP/1.1 codec is pure (bytes in -> Request), so every test runs its
// input under every possible split: one buffer, every two-piece split, and byte
// by byte. Each schedule must produce exactly the same requests and the same
// final verdict. What the http_parser_*_test files share to play them.
#pragma once

#include <cstddef>
#include <ostream>
#include <string_view>
#include <vector>

#include "daemon/http/http_parser.h"
#include "tests/support/codec_play.h"

namespace gearbox::testing::http_parser {

using Status = HttpRequestParser::Status;

// An owned copy of one parse result (Request views die with the buffer).
struct Outcome : CodecOutcome<Status> {
  bool operator==(const Outcome&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o);

struct Trace {
  std::vector<Outcome> outcomes;  // completed requests, then the final verdict
  int continues = 0;              // how many times send_continue was set
  bool operator==(const Trace& o) const { return outcomes == o.outcomes; }
};

std::ostream& operator<<(std::ostream& os, const Trace& r);

// Plays a connection: bytes arrive in pieces ending at `cuts` (increasing, the
// last one == input.size()). After each arrival the parser is called until it
// needs more bytes; complete requests are dropped from the buffer like a model
// would. Every call gets a fresh copy of the buffer, at a new address, so the
// parser cannot keep pointers from one call to the next (a real Buffer compacts
// and reallocates).
Trace Play(std::string_view input, const std::vector<size_t>& cuts,
           HttpLimits limits);

// Runs `input` whole, split at every point, byte by byte, and with a repeated
// call that brings no new bytes; asserts every schedule agrees, returns the
// whole-buffer run.
Trace PlayAllSplits(std::string_view input, HttpLimits limits = HttpLimits{});

}  // namespace gearbox::testing::http_parser
