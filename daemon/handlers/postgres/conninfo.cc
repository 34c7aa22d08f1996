#include "daemon/handlers/postgres/conninfo.h"

#include <postgresql/libpq-fe.h>

#include <cctype>
#include <memory>

namespace gearbox::postgres {
namespace {

struct OptionsFree {
  void operator()(PQconninfoOption* options) const { PQconninfoFree(options); }
};
using Options = std::unique_ptr<PQconninfoOption, OptionsFree>;

// PQconninfoParse with its error message (freed here).
Options Parse(std::string_view dsn, std::string* error) {
  char* message = nullptr;
  Options options(PQconninfoParse(std::string(dsn).c_str(), &message));
  if (!options) {
    *error = message ? message : "out of memory";
    while (!error->empty() && error->back() == '\n') error->pop_back();
  }
  PQfreemem(message);
  return options;
}

// A conninfo value, quoted when it must be (libpq's rules: single quotes,
// backslash escapes).
std::string Quote(std::string_view value) {
  const bool bare = !value.empty() &&
                    value.find_first_of(" \t\n'\\") == std::string_view::npos;
  if (bare) return std::string(value);
  std::string quoted = "'";
  for (const char c : value) {
    if (c == '\'' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "'";
}

}  // namespace

std::string CheckConninfo(std::string_view dsn) {
  if (dsn.find('\0') != std::string_view::npos) return "contains a NUL byte";
  std::string error;
  if (Parse(dsn, &error)) return "";
  // libpq quotes the token it choked on, which may be a piece of a password.
  std::string lower(dsn);
  for (char& c : lower) c = static_cast<char>(tolower(c));
  if (lower.find("password") != std::string::npos) {
    return "not a libpq conninfo (libpq's message withheld: the dsn has a "
           "password)";
  }
  return "not a libpq conninfo: " + error;
}

std::string RedactConninfo(std::string_view dsn) {
  std::string error;
  Options options = Parse(dsn, &error);
  if (!options) return "<unparsable conninfo>";
  std::string shown;
  for (const PQconninfoOption* o = options.get(); o->keyword; ++o) {
    if (!o->val) continue;
    if (!shown.empty()) shown += ' ';
    shown += o->keyword;
    shown += '=';
    shown +=
        std::string_view(o->keyword) == "password" ? "********" : Quote(o->val);
  }
  return shown;
}

std::string CheckQuery(std::string_view query) {
  if (query.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return "a postgres route needs a query";
  }
  if (query.find('\0') != std::string_view::npos) return "contains a NUL byte";
  return "";
}

}  // namespace gearbox::postgres
