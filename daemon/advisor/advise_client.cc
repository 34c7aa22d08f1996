#include "daemon/advisor/advise_client.h"

#include <fmt/format.h>

#include <charconv>
#include <map>

#include "daemon/advisor/machine.h"
#include "daemon/metrics/route_reporter.h"

namespace gearbox::advisor {
namespace {

constexpr std::chrono::milliseconds kFetchTimeout{5000};

// logfmt: key=value pairs, values optionally "quoted" with \" and \\ escapes.
std::map<std::string, std::string> LogfmtPairs(std::string_view line) {
  std::map<std::string, std::string> kv;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const size_t eq = line.find('=', i);
    if (eq == line.npos) break;
    std::string key(line.substr(i, eq - i));
    std::string value;
    i = eq + 1;
    if (i < line.size() && line[i] == '"') {
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) ++i;
        value.push_back(line[i]);
      }
      ++i;  // the closing quote
    } else {
      const size_t end = std::min(line.find(' ', i), line.size());
      value = std::string(line.substr(i, end - i));
      i = end;
    }
    kv[std::move(key)] = std::move(value);
  }
  return kv;
}

uint64_t U64(const std::map<std::string, std::string>& kv,
             const std::string& key) {
  auto it = kv.find(key);
  uint64_t v = 0;
  if (it != kv.end()) {
    std::from_chars(it->second.data(), it->second.data() + it->second.size(),
                    v);
  }
  return v;
}

// The window's figures (prefix "w_") or the route's since the generation
// started (no prefix).
RouteTotals Totals(const std::map<std::string, std::string>& kv,
                   const std::string& prefix) {
  RouteTotals t;
  t.requests = U64(kv, prefix + "requests");
  t.service_us = U64(kv, prefix + "service_us");
  t.queue_us = U64(kv, prefix + "queue_us");
  t.wait_us = U64(kv, prefix + "wait_us");
  t.cpu_ns = U64(kv, prefix + "cpu_ns");
  t.cpu_samples = U64(kv, prefix + "cpu_samples");
  return t;
}

struct TextRoute {
  std::string name;
  RouteTotals window, all_time;
};

}  // namespace

ParsedStatus ParseStatusText(std::string_view body) {
  ParsedStatus p;
  StatusFigures& f = p.figures;
  std::vector<TextRoute> routes;
  bool has_model = false, has_window = false;
  while (!body.empty()) {
    const size_t nl = body.find('\n');
    const std::string_view line = body.substr(0, nl);
    body = nl == body.npos ? std::string_view() : body.substr(nl + 1);
    const size_t colon = line.find(": ");
    if (colon == line.npos) continue;
    const std::string_view key = line.substr(0, colon);
    const std::string value(line.substr(colon + 2));
    if (key == "model") {
      f.machine.model = value;
      has_model = true;
    } else if (key == "cores") {
      f.machine.cores = std::max(1, atoi(value.c_str()));
    } else if (key == "window_workers") {
      f.machine.size = atoi(value.c_str());
    } else if (key == "window_asked_s") {
      f.window_asked_s = atof(value.c_str());
    } else if (key == "window_s") {
      f.window_s = atof(value.c_str());
      has_window = true;
    } else if (key == "route") {
      const auto kv = LogfmtPairs(value);
      auto name = kv.find("name");
      if (name != kv.end()) {
        routes.push_back({name->second, Totals(kv, "w_"), Totals(kv, "")});
      }
    }
  }
  if (!has_model || !has_window) {
    p.error = "not a gearbox /status?format=text answer with per-route figures";
    return p;
  }
  for (const TextRoute& r : routes) {
    f.routes.push_back(FiguresOf(r.name, r.window, f.window_s, &r.all_time));
  }
  f.machine.thread_stack_mib = ThreadStackMiB();
  return p;
}

std::vector<StatusTarget> TargetsFromConfig(const Config& config,
                                            std::string* error) {
  std::string path;
  for (const RouteConfig& r : config.routes) {
    if (r.handler == "status") {
      path = r.path;
      break;
    }
  }
  if (path.empty()) {
    *error = config.source +
             ": no [[route]] with handler = \"status\": --advise reads it";
    return {};
  }
  std::vector<StatusTarget> targets;
  for (const ListenConfig& l : config.listen) {
    if (l.protocol != Protocol::kHttp) continue;
    targets.push_back({ConnectAddress(l.address), path});
  }
  if (targets.empty()) {
    *error = config.source + ": no HTTP [[listen]] to read " + path + " from";
  }
  return targets;
}

int RunAdvise(const std::vector<StatusTarget>& targets, Duration window,
              FILE* out, FILE* err) {
  std::string failures;
  const std::string query = fmt::format(
      "?format=text&window={}ms",
      std::chrono::duration_cast<std::chrono::milliseconds>(window).count());
  for (const StatusTarget& target : targets) {
    const FetchResult fetched = FetchStatus(target, query, kFetchTimeout);
    if (!fetched.error.empty()) {
      failures += "\n  " + fetched.error;
      continue;
    }
    const ParsedStatus parsed = ParseStatusText(fetched.body);
    if (!parsed.error.empty()) {
      failures += "\n  " + target.address + target.path + ": " + parsed.error;
      continue;
    }
    const StatusFigures& f = parsed.figures;
    if (f.window_s <= 0) {
      fprintf(err,
              "gearboxd --advise: %s%s has no figures yet: the first stats "
              "interval ([metrics] interval) has not completed; try again\n",
              target.address.c_str(), target.path.c_str());
      return 1;
    }
    const Advice advice = Advise(f.routes, f.machine);
    for (const RouteAdvice& r : advice.routes) {
      fprintf(out, "%s\n", FormatRouteLine(r).c_str());
    }
    fprintf(out, "%s\n",
            FormatSummaryLine(advice, f.machine, {f.window_s, f.window_asked_s})
                .c_str());
    return 0;
  }
  fprintf(err, "gearboxd --advise: no daemon answered:%s\n", failures.c_str());
  return 1;
}

}  // namespace gearbox::advisor
