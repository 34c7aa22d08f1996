// libFuzzer target: the config loader (config/*.cc with toml++, plus the
// embedded default that files without [[listen]] or [[route]] fall back to),
// handed the real handler table's schemas (daemon/handlers/).
//
// The input is a TOML file (the seed corpus holds config/gearbox.toml,
// config/default.toml and variations, good and bad).
//
// Oracles, besides ASan/UBSan and "no exception escapes":
//  - an error names a position inside the file (or none), and a message;
//  - an accepted config satisfies what models and handlers rely on
//    (listeners, valid addresses, routes that do not conflict, every schema key
//    present with its type and within its bounds, caps >= defaults);
//  - FormatConfig (--print-config) round-trips: its output loads again and
//    formats to the same text;
//  - ParseDuration(FormatDuration(d)) == d, and QuoteToml'd text reads back
//    as the same string.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <variant>

#include "config/config.h"
#include "config/internal.h"
#include "config/loader.h"
#include "config/params.h"
#include "daemon/handlers/handlers.h"
#include "models/async/async_section.h"
#include "models/prefork/prefork_section.h"
#include "models/threadpool/thread_pool_section.h"
#include "tests/fuzz/fuzz_util.h"

namespace gearbox {
namespace {

using fuzz::Fail;
using fuzz::Printable;

// The model table's sections (models/registry.cc lists the same rows; its
// factories would link every model into the fuzzer).
constexpr ModelSchema kModels[] = {{"prefork", kPreforkKeys},
                                   {"threadpool", kThreadPoolKeys},
                                   {"async", kAsyncKeys}};
constexpr std::string_view kSource = "fuzz.toml";

// What a handler may rely on when it reads its params (RouteParams aborts
// otherwise): exactly its schema's keys, in schema order, each with its type,
// integers within bounds and under their cap.
template <typename Fail>
void CheckParams(const HandlerSchema& schema, const RouteParams& params,
                 const Fail& fail) {
  if (params.entries().size() != schema.params.size()) {
    fail("route params are not its schema's keys");
    return;
  }
  for (size_t i = 0; i < schema.params.size(); ++i) {
    const ParamSpec& spec = schema.params[i];
    const RouteParam& param = params.entries()[i];
    if (param.key != spec.key) fail("route param out of schema order");
    if (spec.type == ParamType::kBool) {
      if (!std::holds_alternative<bool>(param.value)) fail("bool param type");
    } else if (spec.type != ParamType::kInt) {
      const auto* text = std::get_if<std::string>(&param.value);
      if (!text) fail("string param type");
      if (text && spec.type == ParamType::kHeaderValue && text->empty()) {
        fail("empty header value accepted");
      }
    } else if (const auto* n = std::get_if<int64_t>(&param.value)) {
      if (*n < spec.min || *n > spec.max) fail("int param out of bounds");
      if (!spec.at_most.empty() && *n > params.Int(spec.at_most)) {
        fail("param above its cap accepted");
      }
    } else {
      fail("int param type");
    }
  }
}

void CheckConfig(const Config& c, const std::string& text) {
  auto fail = [&](const char* what) { Fail(what, Printable(text, 2000)); };
  if (c.listen.empty()) fail("accepted config has no listener");
  std::set<std::string> addresses, names;
  for (const ListenConfig& l : c.listen) {
    if (config_internal::CheckAddress(l.address)) {
      fail("accepted listener address fails CheckAddress");
    }
    if (!addresses.insert(l.address).second) fail("duplicate address accepted");
    if (!names.insert(l.name).second) fail("duplicate listener name accepted");
    if (l.name.empty()) fail("empty listener name");
  }
  std::set<std::string> modules;
  for (const ModuleConfig& m : c.modules) {
    if (!modules.insert(m.name).second) fail("duplicate module name accepted");
    if (FindSchema(HandlerSchemas(), m.name)) fail("module named a built-in");
    if (m.path.empty()) fail("module without a path");
  }
  for (const RouteConfig& r : c.routes) {
    if (r.path.empty() || r.path[0] != '/') fail("route path without '/'");
    for (const RouteConfig& other : c.routes) {
      if (&other == &r) break;
      if (RouteConflict(r.pattern, r.methods, other.pattern, other.methods)) {
        fail("conflicting routes accepted");
      }
    }
    if (r.module) {
      // Its keys are the module's to check (at load, not in config/).
      if (!modules.count(r.handler)) fail("module route without its module");
      continue;
    }
    const HandlerSchema* schema = FindSchema(HandlerSchemas(), r.handler);
    if (!schema) {
      fail("route with a handler not in the table");
      continue;
    }
    CheckParams(*schema, r.params, fail);
    if (schema->fault_test_only && !c.server.enable_crash_handler) {
      fail("fault-test-only route without enable_crash_handler");
    }
  }
  if (c.limits.max_header_bytes < 1024) fail("max_header_bytes < 1024");
  if (c.limits.max_body_bytes < 0) fail("negative max_body_bytes");
  if (c.threadpool.threads < 1 || c.prefork.workers < 1 || c.async.loops < 1) {
    fail("worker count < 1");
  }
}

void CheckError(const ConfigError& e, const std::string& text) {
  const std::string detail =
      e.ToString() + "\ninput:\n" + Printable(text, 2000);
  if (e.message.empty()) Fail("error without a message", detail);
  if (e.line < 0 || e.column < 0) Fail("negative error position", detail);
  if (e.file == kSource && e.line > 0) {
    size_t lines = 1;
    for (char c : text) lines += c == '\n';
    // toml++ may point one line past the end (unterminated constructs).
    if (static_cast<size_t>(e.line) > lines + 1) {
      Fail("error line beyond the end of the file", detail);
    }
  }
}

void CheckDuration(std::string_view text) {
  std::optional<Duration> d = ParseDuration(text);
  if (!d) return;
  if (d->count() < 0) Fail("negative duration parsed", std::string(text));
  const std::string formatted = config_internal::FormatDuration(*d);
  std::optional<Duration> again = ParseDuration(formatted);
  if (!again || *again != *d) {
    Fail("ParseDuration(FormatDuration(d)) != d",
         Printable(text) + " -> " + formatted);
  }
}

// QuoteToml'd text must read back as the same string. Read through the
// loader (a text route's body) so that this file does not include toml++
// itself: every translation unit that does must see the same toml++
// configuration macros.
void CheckQuote(std::string_view text) {
  const ConfigVocabulary vocab{kModels, HandlerSchemas()};
  const std::string doc =
      "[[route]]\npath = \"/q\"\nhandler = \"text\"\nbody = " +
      config_internal::QuoteToml(text) + "\n";
  ConfigResult result = LoadConfigString(doc, kSource, vocab);
  const Config* config = std::get_if<Config>(&result);
  // Invalid UTF-8 passes through QuoteToml (its input is always validated
  // TOML text) and is then refused: not a QuoteToml bug.
  if (!config) return;
  if (config->routes.size() != 1 ||
      config->routes[0].params.Text("body") != text) {
    Fail("QuoteToml does not read back", Printable(text) + " -> " + doc);
  }
}

}  // namespace
}  // namespace gearbox

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gearbox;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const ConfigVocabulary vocab{kModels, HandlerSchemas()};

  // Short inputs double as a duration and as a string to quote.
  if (size <= 64) {
    CheckDuration(text);
    CheckQuote(text);
  }

  ConfigResult result = LoadConfigString(text, kSource, vocab);
  if (const ConfigError* e = std::get_if<ConfigError>(&result)) {
    CheckError(*e, text);
    return 0;
  }
  const Config& config = std::get<Config>(result);
  CheckConfig(config, text);
  const std::string formatted = FormatConfig(config, HandlerSchemas());
  ConfigResult again = LoadConfigString(formatted, kSource, vocab);
  if (const ConfigError* e = std::get_if<ConfigError>(&again)) {
    fuzz::Fail("FormatConfig output does not load",
               e->ToString() + "\ninput:\n" + fuzz::Printable(text, 2000) +
                   "\nformatted:\n" + formatted);
  }
  const std::string formatted_again =
      FormatConfig(std::get<Config>(again), HandlerSchemas());
  if (formatted_again != formatted) {
    fuzz::Fail("FormatConfig does not round-trip",
               "input:\n" + fuzz::Printable(text, 2000) + "\nfirst:\n" +
                   formatted + "\nsecond:\n" + formatted_again);
  }
  return 0;
}
