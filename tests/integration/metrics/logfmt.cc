#include "tests/integration/metrics/logfmt.h"

#include <cerrno>
#include <cstdlib>

namespace gearbox::testing {

// --- logfmt -----------------------------------------------------------------

LogfmtFields ParseLogfmt(std::string_view line) {
  LogfmtFields out;
  size_t i = 0;
  const size_t n = line.size();
  while (i < n) {
    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    if (i >= n) break;
    size_t key_start = i;
    while (i < n && line[i] != '=' && line[i] != ' ') ++i;
    std::string key(line.substr(key_start, i - key_start));
    std::string value;
    if (i < n && line[i] == '=') {
      ++i;
      if (i < n && line[i] == '"') {
        ++i;
        while (i < n && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < n) ++i;
          value.push_back(line[i++]);
        }
        if (i < n) ++i;  // closing quote
      } else {
        size_t v = i;
        while (i < n && line[i] != ' ') ++i;
        value = std::string(line.substr(v, i - v));
      }
    }
    if (!key.empty()) out[key] = std::move(value);
  }
  return out;
}

std::string LogLine::Get(std::string_view key) const {
  auto it = fields.find(key);
  return it == fields.end() ? std::string() : it->second;
}

std::optional<int64_t> LogLine::Int(std::string_view key) const {
  auto it = fields.find(key);
  if (it == fields.end() || it->second.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = strtoll(it->second.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return v;
}

std::optional<double> LogLine::Num(std::string_view key) const {
  auto it = fields.find(key);
  if (it == fields.end() || it->second.empty()) return std::nullopt;
  char* end = nullptr;
  double v = strtod(it->second.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return v;
}

std::vector<LogLine> ParseLogLines(std::string_view log, std::string_view event) {
  std::vector<LogLine> out;
  size_t pos = 0;
  size_t line_no = 0;
  while (pos < log.size()) {
    size_t eol = log.find('\n', pos);
    if (eol == std::string_view::npos) break;  // partial last line
    std::string_view raw = log.substr(pos, eol - pos);
    pos = eol + 1;
    LogLine line;
    line.line_no = line_no++;
    line.raw = std::string(raw);
    line.fields = ParseLogfmt(raw);
    if (!event.empty() && line.Get("event") != event) continue;
    out.push_back(std::move(line));
  }
  return out;
}

// --- JSON -------------------------------------------------------------------

namespace {

class JsonReader {
 public:
  explicit JsonReader(std::string_view s) : s_(s) {}

  bool Document(JsonValue& out, std::string* error) {
    bool ok = Value(out, 0);
    if (ok) {
      Space();
      if (i_ != s_.size()) ok = Fail("trailing characters");
    }
    if (!ok && error) *error = error_;
    return ok;
  }

 private:
  bool Fail(const std::string& why) {
    if (error_.empty()) {
      error_ = why + " at offset " + std::to_string(i_) + " near \"" +
               std::string(s_.substr(i_, 30)) + "\"";
    }
    return false;
  }
  void Space() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool Literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return Fail("bad literal");
    i_ += word.size();
    return true;
  }
  bool String(std::string& out) {
    if (i_ >= s_.size() || s_[i_] != '"') return Fail("expected '\"'");
    ++i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) return Fail("control character in string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (i_ >= s_.size()) return Fail("unterminated escape");
      char e = s_[i_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          if (i_ + 4 > s_.size()) return Fail("short \\u escape");
          unsigned cp = static_cast<unsigned>(
              strtoul(std::string(s_.substr(i_, 4)).c_str(), nullptr, 16));
          i_ += 4;
          // ASCII is all the daemon emits; anything else is kept as UTF-8.
          if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
          } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          } else {
            out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          }
          break;
        }
        default:
          return Fail("bad escape");
      }
    }
    if (i_ >= s_.size()) return Fail("unterminated string");
    ++i_;
    return true;
  }
  bool Number(JsonValue& out) {
    size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    auto digits = [&] {
      size_t d = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ > d;
    };
    if (!digits()) return Fail("bad number");
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digits()) return Fail("bad fraction");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return Fail("bad exponent");
    }
    out.type = JsonValue::Type::kNumber;
    out.text = std::string(s_.substr(start, i_ - start));
    return true;
  }
  bool Value(JsonValue& out, int depth) {
    if (depth > 64) return Fail("nested too deep");
    Space();
    if (i_ >= s_.size()) return Fail("unexpected end");
    char c = s_[i_];
    if (c == '{') {
      ++i_;
      out.type = JsonValue::Type::kObject;
      Space();
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return true;
      }
      for (;;) {
        Space();
        std::string key;
        if (!String(key)) return false;
        Space();
        if (i_ >= s_.size() || s_[i_] != ':') return Fail("expected ':'");
        ++i_;
        JsonValue v;
        if (!Value(v, depth + 1)) return false;
        out.object.emplace_back(std::move(key), std::move(v));
        Space();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == '}') {
          ++i_;
          return true;
        }
        return Fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      ++i_;
      out.type = JsonValue::Type::kArray;
      Space();
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return true;
      }
      for (;;) {
        JsonValue v;
        if (!Value(v, depth + 1)) return false;
        out.array.push_back(std::move(v));
        Space();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == ']') {
          ++i_;
          return true;
        }
        return Fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      out.type = JsonValue::Type::kString;
      return String(out.text);
    }
    if (c == 't' || c == 'f') {
      out.type = JsonValue::Type::kBool;
      out.boolean = c == 't';
      return Literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      out.type = JsonValue::Type::kNull;
      return Literal("null");
    }
    return Number(out);
  }

  std::string_view s_;
  size_t i_ = 0;
  std::string error_;
};

}  // namespace

const JsonValue* JsonValue::Find(std::string_view key) const {
  if (type != Type::kObject) return nullptr;
  for (const auto& [k, v] : object)
    if (k == key) return &v;
  return nullptr;
}

const JsonValue* JsonValue::Path(std::string_view dotted) const {
  const JsonValue* v = this;
  while (v && !dotted.empty()) {
    size_t dot = dotted.find('.');
    v = v->Find(dotted.substr(0, dot));
    dotted = dot == std::string_view::npos ? std::string_view() : dotted.substr(dot + 1);
  }
  return v;
}

std::optional<int64_t> JsonValue::Int() const {
  if (type != Type::kNumber) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return v;
}

std::optional<double> JsonValue::Num() const {
  if (type != Type::kNumber) return std::nullopt;
  return strtod(text.c_str(), nullptr);
}

std::optional<JsonValue> ParseJson(std::string_view text, std::string* error) {
  JsonValue v;
  JsonReader reader(text);
  if (!reader.Document(v, error)) return std::nullopt;
  return v;
}

// --- OpenMetrics ------------------------------------------------------------

std::optional<double> OpenMetricsSample(std::string_view exposition,
                                        std::string_view prefix) {
  size_t pos = 0;
  while (pos < exposition.size()) {
    size_t eol = exposition.find('\n', pos);
    if (eol == std::string_view::npos) eol = exposition.size();
    std::string_view line = exposition.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty() || line[0] == '#') continue;
    if (line.substr(0, prefix.size()) != prefix) continue;
    size_t sp = line.rfind(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    std::string value(line.substr(sp + 1));
    char* end = nullptr;
    double v = strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0') return std::nullopt;
    return v;
  }
  return std::nullopt;
}

}  // namespace gearbox::testing
