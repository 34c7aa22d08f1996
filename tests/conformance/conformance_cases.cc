#include "tests/conformance/conformance_cases.h"

#include <strings.h>

#include <cstdio>
#include <cstdlib>
#include <set>

// As config/toml.h does (every includer of toml++ in one binary must see the
// same macros).
#define TOML_ASSERT(expr) static_cast<void>(0)
#include <toml++/toml.h>

namespace gearbox::conformance {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// One escape at text[i] == '\\' (not a repeat); returns its length or 0.
size_t DecodeOne(std::string_view text, size_t i, std::string* out) {
  if (i + 1 >= text.size()) return 0;
  switch (text[i + 1]) {
    case 'r':
      out->push_back('\r');
      return 2;
    case 'n':
      out->push_back('\n');
      return 2;
    case 't':
      out->push_back('\t');
      return 2;
    case '0':
      out->push_back('\0');
      return 2;
    case '\\':
      out->push_back('\\');
      return 2;
    case 'x': {
      if (i + 3 >= text.size()) return 0;
      int hi = HexDigit(text[i + 2]), lo = HexDigit(text[i + 3]);
      if (hi < 0 || lo < 0) return 0;
      out->push_back(static_cast<char>(hi * 16 + lo));
      return 4;
    }
    default:
      return 0;
  }
}

bool Decode(std::string_view text, std::string* out, std::string* error) {
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '\\') {
      out->push_back(text[i++]);
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '(') {
      const size_t close = text.find(')', i);
      if (close == std::string_view::npos || close + 1 >= text.size()) {
        *error = "unterminated \\(N) repeat";
        return false;
      }
      const long n = strtol(
          std::string(text.substr(i + 2, close - i - 2)).c_str(), nullptr, 10);
      if (n <= 0 || n > 1000000) {
        *error = "bad repeat count";
        return false;
      }
      std::string unit;
      size_t next;
      if (text[close + 1] == '{') {
        const size_t end = text.find('}', close);
        if (end == std::string_view::npos) {
          *error = "unterminated \\(N){...} group";
          return false;
        }
        if (!Decode(text.substr(close + 2, end - close - 2), &unit, error))
          return false;
        next = end + 1;
      } else if (text[close + 1] == '\\') {
        size_t used = DecodeOne(text, close + 1, &unit);
        if (used == 0) {
          *error = "bad escape after \\(N)";
          return false;
        }
        next = close + 1 + used;
      } else {
        unit.push_back(text[close + 1]);
        next = close + 2;
      }
      for (long k = 0; k < n; ++k) out->append(unit);
      i = next;
      continue;
    }
    size_t used = DecodeOne(text, i, out);
    if (used == 0) {
      *error = "bad escape at offset " + std::to_string(i);
      return false;
    }
    i += used;
  }
  return true;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string Statuses(const std::vector<int>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

}  // namespace

bool Case::Rejected() const {
  return !expect.empty() && expect.back() != 200 && expect.back() != 404;
}

size_t Case::HeadSize() const {
  const size_t end = bytes.find("\r\n\r\n");
  return end == std::string::npos ? bytes.size() : end + 4;
}

std::string DecodeEscapes(std::string_view text, std::string* error) {
  std::string out;
  if (!Decode(text, &out, error)) return {};
  return out;
}

std::string DefaultSuitePath() {
  // Under `bazel test` the cwd is the runfiles root of the main workspace.
  return "tests/conformance/cases.toml";
}

bool LoadSuite(const std::string& path, Suite* suite, std::string* error) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    *error = path + ": " + std::string(e.description());
    return false;
  }
  suite->max_header_bytes = root["limits"]["max_header_bytes"].value_or(0);
  suite->max_body_bytes = root["limits"]["max_body_bytes"].value_or(0);
  if (suite->max_header_bytes <= 0 || suite->max_body_bytes <= 0) {
    *error = path + ": [limits] needs max_header_bytes and max_body_bytes";
    return false;
  }
  const toml::array* cases = root["case"].as_array();
  if (!cases || cases->empty()) {
    *error = path + ": no [[case]]";
    return false;
  }
  std::set<std::string> ids;
  for (const toml::node& node : *cases) {
    const toml::table* t = node.as_table();
    Case c;
    auto where = [&](const std::string& what) {
      const auto& src = node.source().begin;
      *error = path + ":" + std::to_string(src.line) + ": case " +
               (c.id.empty() ? "?" : c.id) + ": " + what;
      return false;
    };
    if (!t) return where("not a table");
    c.id = (*t)["id"].value_or(std::string());
    c.section = (*t)["section"].value_or(std::string());
    std::string send = (*t)["send"].value_or(std::string());
    std::string after = (*t)["after"].value_or(std::string());
    if (c.id.empty() || c.section.empty() || send.empty()) {
      return where("needs id, section and send");
    }
    if (!ids.insert(c.id).second) return where("duplicate id");
    std::string decode_error;
    c.bytes = DecodeEscapes(send, &decode_error);
    if (!decode_error.empty()) return where("send: " + decode_error);
    const toml::array* expect = (*t)["expect"].as_array();
    if (!expect || expect->empty()) return where("needs expect = [status...]");
    for (const toml::node& s : *expect) {
      int64_t status = s.value_or(int64_t{0});
      if (status < 200 || status > 599) return where("bad status in expect");
      c.expect.push_back(static_cast<int>(status));
    }
    if (after != "open" && after != "close") {
      return where("after must be \"open\" or \"close\"");
    }
    c.close_after = after == "close";
    if (c.Rejected() && !c.close_after) {
      return where("a rejection always closes (after = \"close\")");
    }
    if (auto body = (*t)["body"].value<std::string>()) c.body = *body;
    std::string interim = (*t)["interim"].value_or(std::string());
    if (interim == "100") {
      c.interim = Interim::kContinue;
    } else if (interim == "none") {
      c.interim = Interim::kAbsent;
    } else if (!interim.empty()) {
      return where("interim must be \"100\" or \"none\"");
    }
    c.head = (*t)["head"].value_or(false);
    c.nginx = (*t)["nginx"].value_or(std::string());
    suite->cases.push_back(std::move(c));
  }
  return true;
}

bool TakeResponse(std::string& bytes, bool head, Response* out,
                  bool* malformed) {
  *malformed = false;
  const size_t end = bytes.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  std::string_view head_text(bytes.data(), end);
  if (head_text.substr(0, 9) != "HTTP/1.1 " || head_text.size() < 12) {
    *malformed = true;
    return false;
  }
  Response r;
  r.status = atoi(std::string(head_text.substr(9, 3)).c_str());
  size_t length = 0;
  size_t pos = head_text.find("\r\n");
  while (pos != std::string_view::npos) {
    size_t next = head_text.find("\r\n", pos + 2);
    std::string_view line = head_text.substr(
        pos + 2, next == std::string_view::npos ? std::string_view::npos
                                                : next - pos - 2);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      std::string_view name = line.substr(0, colon);
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (EqualsNoCase(name, "content-length")) {
        length = static_cast<size_t>(atoll(std::string(value).c_str()));
      } else if (EqualsNoCase(name, "connection") &&
                 EqualsNoCase(value, "close")) {
        r.connection_close = true;
      }
    }
    pos = next;
  }
  const bool bodiless =
      head || r.status < 200 || r.status == 204 || r.status == 304;
  if (bodiless) length = 0;
  if (bytes.size() < end + 4 + length) return false;
  r.body = bytes.substr(end + 4, length);
  bytes.erase(0, end + 4 + length);
  *out = std::move(r);
  return true;
}

std::string Describe(const Verdict& v) {
  std::string out = "statuses " + Statuses(v.statuses);
  if (!v.interim.empty()) out += ", interim " + Statuses(v.interim);
  out += v.closed ? ", then closed" : ", connection open";
  if (v.follow_up_served) out += ", follow-up served";
  if (v.first_body) out += ", first body " + Printable(*v.first_body, 60);
  if (!v.trouble.empty()) out += ", " + v.trouble;
  return out;
}

std::string Compare(const Case& c, const Verdict& v) {
  std::vector<std::string> wrong;
  if (!v.trouble.empty()) wrong.push_back(v.trouble);
  if (v.statuses != c.expect) {
    wrong.push_back("statuses " + Statuses(v.statuses) + ", want " +
                    Statuses(c.expect));
  }
  if (c.close_after && !v.closed) {
    wrong.push_back("the connection stayed open, want closed");
  }
  if (!c.close_after && (v.closed || !v.follow_up_served)) {
    wrong.push_back("the connection is not usable after it (follow-up " +
                    std::string(v.follow_up_served ? "served" : "not served") +
                    (v.closed ? ", closed" : "") + "), want open");
  }
  if (c.body && v.first_body != c.body) {
    wrong.push_back("first body " +
                    (v.first_body ? Printable(*v.first_body, 60) : "none") +
                    ", want " + Printable(*c.body, 60));
  }
  std::string out;
  for (const std::string& w : wrong) out += (out.empty() ? "" : "; ") + w;
  return out;
}

std::string Printable(std::string_view bytes, size_t limit) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < limit; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '\r') {
      out += "\\r";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (bytes.size() > limit) {
    out += "...(" + std::to_string(bytes.size()) + " bytes)";
  }
  return "\"" + out + "\"";
}

}  // namespace gearbox::conformance
