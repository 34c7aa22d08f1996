// What the codec tests (tests/unit/daemon http_parser_*, tests/unit/fastcgi)
// share: an owned copy of one parse result, how it prints in a failure, and
// the schedules an input is played under (one buffer, every two-piece split,
// a repeated call with no new bytes, byte by byte), which must all agree.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/request.h"

namespace gearbox::testing {

// An owned copy of one parse result (Request views die with the buffer), for
// a codec whose Result says `Status`.
template <typename Status>
struct CodecOutcome {
  Status status = Status::kIncomplete;
  size_t consumed = 0;
  int error_status = 0;
  std::string error_reason;
  std::string method, target, path, query;
  int major = 0, minor = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool keep_alive = false;
  bool is_head = false;

  bool operator==(const CodecOutcome&) const = default;
};

// The verdict of `r` and, when it is a complete request, `req`'s fields.
template <typename Outcome, typename Result>
Outcome Snapshot(const Result& r, const Request& req) {
  Outcome o;
  o.status = r.status;
  o.consumed = r.consumed;
  o.error_status = r.error_status;
  o.error_reason = r.error_reason;
  if (r.status == decltype(r.status)::kComplete) {
    o.method = req.method;
    o.target = req.target;
    o.path = req.path;
    o.query = req.query;
    o.major = req.version_major;
    o.minor = req.version_minor;
    for (const Header& h : req.headers) {
      o.headers.emplace_back(std::string(h.name), std::string(h.value));
    }
    o.body = req.body;
    o.keep_alive = req.keep_alive;
    o.is_head = req.is_head;
  }
  return o;
}

// The value of the first header `name` of `o`; empty when there is none.
template <typename Status>
std::string_view FindHeader(const CodecOutcome<Status>& o,
                            std::string_view name) {
  for (const auto& [n, v] : o.headers) {
    if (n == name) return v;
  }
  return {};
}

template <typename Status>
const char* StatusName(Status s) {
  if (s == Status::kComplete) return "complete";
  if (s == Status::kIncomplete) return "incomplete";
  if (s == Status::kError) return "error";
  if constexpr (requires { Status::kClose; }) {
    if (s == Status::kClose) return "close";
  }
  return "?";
}

// Long fields are cut so a failure stays readable.
inline std::string Clip(std::string_view s) {
  if (s.size() <= 60) return std::string(s);
  return std::string(s.substr(0, 60)) + "...(" + std::to_string(s.size()) +
         " bytes)";
}

// "{<status> consumed=N", and the error's status and reason if it is one.
template <typename Status>
void PrintVerdict(std::ostream& os, const CodecOutcome<Status>& o) {
  os << "{" << StatusName(o.status) << " consumed=" << o.consumed;
  if (o.status == Status::kError) {
    os << " error=" << o.error_status << " reason=" << o.error_reason;
  }
}

// " headers=[...] body=... keep_alive=... is_head=..." of a complete request.
template <typename Status>
void PrintFields(std::ostream& os, const CodecOutcome<Status>& o) {
  os << " headers=[";
  for (const auto& [n, v] : o.headers) os << n << ": " << Clip(v) << "; ";
  os << "] body=\"" << Clip(o.body) << "\" keep_alive=" << o.keep_alive
     << " is_head=" << o.is_head;
}

// Plays `input` arriving in pieces that end at `cuts` (increasing, the last
// one == input.size()): appends each piece to `data`, then calls `drain()`,
// which parses what it can and erases what was consumed, and returns false
// when the connection ends. True when the input ran out first.
template <typename Drain>
bool Deliver(std::string_view input, const std::vector<size_t>& cuts,
             std::string& data, Drain drain) {
  size_t arrived = 0;
  for (size_t cut : cuts) {
    data.append(input.substr(arrived, cut - arrived));
    arrived = cut;
    if (!drain()) return false;
  }
  return true;
}

// The cuts 1, 2, ..., n: the input arriving one byte at a time.
inline std::vector<size_t> Bytewise(size_t n) {
  std::vector<size_t> cuts;
  for (size_t k = 1; k <= n; ++k) cuts.push_back(k);
  return cuts;
}

// Runs `play(cuts)` for an input of `n` bytes whole ({n}), split at every
// point ({k, n}), with a repeated call that brings no new bytes ({k, k, n}),
// and byte by byte; every run must equal the whole-buffer one, which it
// returns. Stops at the first split that disagrees: one is enough to read.
template <typename PlayCuts>
auto PlayEverySchedule(size_t n, PlayCuts play) {
  auto whole = play(std::vector<size_t>{n});
  for (size_t k = 1; k < n; ++k) {
    const auto split = play(std::vector<size_t>{k, n});
    if (split != whole) {
      ADD_FAILURE() << "split at " << k << " of " << n << ":\n"
                    << split << "whole buffer:\n"
                    << whole;
      break;
    }
    const auto again = play(std::vector<size_t>{k, k, n});
    if (again != whole) {
      ADD_FAILURE() << "repeated split at " << k << " of " << n << ":\n"
                    << again << "whole buffer:\n"
                    << whole;
      break;
    }
  }
  EXPECT_EQ(play(Bytewise(n)), whole) << "byte by byte";
  return whole;
}

}  // namespace gearbox::testing
