// The FastCGI codec is pure (records in -> Request, Response -> records), so
// every test plays its input under every schedule: one buffer, every two-piece
// split, a repeated call with no new bytes, and byte by byte. Each schedule
// must produce the same requests, the same output bytes and the same final
// verdict.
//
// Records are built by a small encoder written here from the spec, independent
// of the codec's own writer, and the codec's output is decoded and checked
// record by record (version, padding to a multiple of 8, lengths). What the
// fastcgi_*_test files share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "daemon/codec.h"
#include "daemon/request.h"
#include "daemon/response.h"
#include "tests/support/codec_play.h"

namespace gearbox::testing::fastcgi_codec {

using Status = ServerCodec::Status;

// --- a test encoder ---------------------------------------------------------

enum : uint8_t {
  kBegin = 1,
  kAbort = 2,
  kEnd = 3,
  kParams = 4,
  kStdin = 5,
  kStdout = 6,
  kData = 8,
  kGetValues = 9,
  kGetValuesResult = 10,
  kUnknownType = 11,
};
constexpr uint8_t kKeep = 1;
constexpr int kAutoPad = -1;

std::string Rec(uint8_t type, uint16_t id, std::string_view content,
                int padding = kAutoPad);

std::string Begin(uint16_t id, uint8_t flags = kKeep, uint16_t role = 1);

void PutLength(std::string& s, size_t n, bool four);

std::string Pair(std::string_view name, std::string_view value,
                 bool four_name = false, bool four_value = false);

using Params = std::vector<std::pair<std::string, std::string>>;

std::string ParamStream(const Params& params);

// `content` as records of at most `piece` bytes, then the empty record.
std::string Stream(uint8_t type, uint16_t id, std::string_view content,
                   size_t piece = 65535);

Params GetParams(std::string uri = "/hello?x=1");

std::string Request1(uint16_t id, const Params& params,
                     std::string_view body = "", uint8_t flags = kKeep);

// --- a decoder for the codec's output ---------------------------------------

struct OutRecord {
  uint8_t type = 0;
  uint16_t id = 0;
  std::string content;
  bool operator==(const OutRecord&) const = default;
};

std::vector<OutRecord> Decode(std::string_view out);

OutRecord EndRecord(uint16_t id, uint8_t protocol_status);

// The STDOUT stream of `id` (concatenated), and whether it was ended by an
// empty STDOUT record followed by END_REQUEST(complete).
std::string StdoutOf(const std::vector<OutRecord>& records, uint16_t id,
                     bool* terminated = nullptr);

// --- playing a connection under every schedule ------------------------------

struct Outcome : CodecOutcome<Status> {
  bool close = false;       // AppendResponse's answer
  bool in_request = false;  // final incomplete state
  bool in_body = false;

  bool operator==(const Outcome&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o);

struct Trace {
  std::vector<Outcome> outcomes;  // completed requests, then the final verdict
  std::string out;                // every byte the codec produced
  bool operator==(const Trace&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Trace& t);

// The handler of these tests: says what it saw.
using Responder = Response (*)(const Request&);
Response SayWhatWasSeen(const Request& r);

LimitsConfig TestLimits();

// Plays a connection the way the models drive a codec: bytes arrive in pieces
// ending at `cuts`; after each arrival Parse runs until it needs more bytes; a
// complete request is answered (AppendResponse) before the next Parse and its
// bytes dropped. Every call gets a fresh copy of the buffer (a new address).
Trace Play(std::string_view input, const std::vector<size_t>& cuts,
           const LimitsConfig& limits, Responder respond);

// Runs `input` whole, split at every point (also with a repeated call that
// brings nothing new), and byte by byte; all must agree. Returns the whole run.
Trace PlayAllSplits(std::string_view input,
                    const LimitsConfig& limits = TestLimits(),
                    Responder respond = SayWhatWasSeen);

// Whole and byte by byte only (large inputs).
Trace PlayWholeAndBytewise(std::string_view input,
                           const LimitsConfig& limits = TestLimits(),
                           Responder respond = SayWhatWasSeen);

const Outcome& Final(const Trace& t);

}  // namespace gearbox::testing::fastcgi_codec
