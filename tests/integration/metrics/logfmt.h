// Small readers for what gearboxd emits, so metrics tests assert on parsed
// figures instead of substrings:
//   - logfmt log lines (`ts=... level=info pid=N event=stats key=value ...`),
//   - the /status JSON (a minimal JSON reader: objects, arrays, strings,
//     numbers, true/false/null),
//   - one sample of the /status?format=openmetrics exposition.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gearbox::testing {

// --- logfmt -----------------------------------------------------------------

// key=value pairs separated by spaces. A value may be "quoted" (backslash
// escapes \" and \\); a bare key (no '=') maps to "". Later duplicates overwrite
// earlier ones.
using LogfmtFields = std::map<std::string, std::string, std::less<>>;
LogfmtFields ParseLogfmt(std::string_view line);

struct LogLine {
  size_t line_no = 0;  // 0-based among the complete lines of the log
  std::string raw;
  LogfmtFields fields;

  bool Has(std::string_view key) const { return fields.count(key) != 0; }
  // The value, or "" when absent.
  std::string Get(std::string_view key) const;
  // The value as a number; nullopt when absent or not entirely numeric.
  std::optional<int64_t> Int(std::string_view key) const;
  std::optional<double> Num(std::string_view key) const;
};

// The complete ('\n'-terminated) lines of `log` whose event= is `event` (every
// line when `event` is empty). A trailing partial line is ignored.
std::vector<LogLine> ParseLogLines(std::string_view log,
                                   std::string_view event = {});

// --- JSON -------------------------------------------------------------------

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  std::string text;  // kString: the decoded string; kNumber: the literal
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;

  // Object member, or null when absent / not an object.
  const JsonValue* Find(std::string_view key) const;
  // Dotted path through objects: "status.2xx", "latency_ms.p50".
  const JsonValue* Path(std::string_view dotted) const;
  // kNumber as an exact integer (nullopt for fractions or other types).
  std::optional<int64_t> Int() const;
  std::optional<double> Num() const;
};

// Parses a whole JSON document (surrounding whitespace allowed). On failure
// returns nullopt and sets *error to what and where.
std::optional<JsonValue> ParseJson(std::string_view text, std::string* error);

// --- OpenMetrics ------------------------------------------------------------

// The value of the first sample whose name and labels start with `prefix`
// (e.g. "gearbox_requests_total{" or
// "gearbox_responses_total{model=\"async\",class=\"2xx\"}"), or nullopt.
std::optional<double> OpenMetricsSample(std::string_view exposition,
                                        std::string_view prefix);

}  // namespace gearbox::testing
