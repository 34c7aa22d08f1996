// gearboxd: an nginx upstream whose concurrency model is one line of config.
#include <getopt.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "config/loader.h"
#include "daemon/advisor/advise_client.h"
#include "daemon/handlers/handlers.h"
#include "daemon/handlers/lua/lua_check.h"
#include "daemon/logging.h"
#include "daemon/metrics/route_history.h"
#include "daemon/modules/modules.h"
#include "daemon/supervisor.h"
#include "models/model.h"

namespace {

constexpr const char* kVersion = "0.1.0";

constexpr const char* kUsage =
    "Usage: gearboxd [options]\n"
    "  -c, --config FILE    run with FILE (default: the embedded config,\n"
    "                       127.0.0.1:8080 with /hello, /sleep, /echo,\n"
    "                       /burn and /status)\n"
    "  -t, --test           check the config and exit: 0 if valid, 2 with\n"
    "                       file:line:col: error otherwise\n"
    "  -p, --print-config   print the effective config (defaults filled in)\n"
    "  -a, --advise [URL]   read a running gearboxd's /status and print which\n"
    "                       model and size fit its traffic: one line per "
    "route,\n"
    "                       then a summary. URL: http://HOST:PORT[/PATH] or\n"
    "                       unix:/path/to.sock; without one, the [[listen]]\n"
    "                       entries of -c FILE (or of the embedded config)\n"
    "  -w, --window DURATION\n"
    "                       with --advise: the traffic of the last DURATION\n"
    "                       (1s to 15m; default 60s, or since the daemon's\n"
    "                       config was loaded, if shorter)\n"
    "  -F, --foreground-single\n"
    "                       one worker only (1 child / 1 thread / 1 loop), for "
    "a\n"
    "                       debugger\n"
    "  -v, --version        print the version\n"
    "  -h, --help           this text\n"
    "Signals: TERM graceful stop, INT/QUIT fast stop, HUP reload.\n";

int AdviseUrl(const std::string& url, gearbox::Duration window) {
  const gearbox::advisor::ParsedUrl parsed =
      gearbox::advisor::ParseAdviseUrl(url);
  if (!parsed.error.empty()) {
    fprintf(stderr, "gearboxd --advise: %s\n", parsed.error.c_str());
    return 2;
  }
  return gearbox::advisor::RunAdvise({parsed.target}, window, stdout, stderr);
}

int AdviseConfig(const gearbox::Config& config, gearbox::Duration window) {
  std::string error;
  const auto targets = gearbox::advisor::TargetsFromConfig(config, &error);
  if (targets.empty()) {
    fprintf(stderr, "gearboxd --advise: %s\n", error.c_str());
    return 2;
  }
  return gearbox::advisor::RunAdvise(targets, window, stdout, stderr);
}

struct Options {
  std::string path, advise_url;
  bool test = false, print = false, single = false, advise = false;
  std::optional<gearbox::Duration> window;
};

// Applies one option getopt_long returned. Returns an exit code when the
// process is done (--version, --help, a usage error), else -1.
int ApplyOption(int opt, const char* arg, Options& o) {
  switch (opt) {
    case 'c':
      o.path = arg;
      return -1;
    case 't':
      o.test = true;
      return -1;
    case 'p':
      o.print = true;
      return -1;
    case 'a':
      o.advise = true;
      if (arg) o.advise_url = arg;
      return -1;
    case 'w': {
      std::string error;
      o.window = gearbox::ParseWindow(arg, "--window ", &error);
      if (!o.window) {
        fprintf(stderr, "gearboxd: %s\n", error.c_str());
        return 2;
      }
      return -1;
    }
    case 'F':
      o.single = true;
      return -1;
    case 'v':
      printf("gearboxd %s\n", kVersion);
      return 0;
    case 'h':
      fputs(kUsage, stdout);
      return 0;
    default:
      fputs(kUsage, stderr);
      return 2;
  }
}

// What follows the options: only --advise's URL, and --window only with
// --advise. Returns 2 on a usage error, else -1.
int CheckOperands(int argc, char** argv, Options& o) {
  if (o.advise && o.advise_url.empty() && optind + 1 == argc) {
    o.advise_url = argv[optind++];
  }
  if (optind < argc) {
    fprintf(stderr, "gearboxd: unexpected argument '%s'\n%s", argv[optind],
            kUsage);
    return 2;
  }
  if (o.window && !o.advise) {
    fprintf(stderr, "gearboxd: --window goes with --advise\n%s", kUsage);
    return 2;
  }
  return -1;
}

// Fills `o` from the command line. Returns an exit code when the process is
// done (--version, --help, a usage error), else -1.
int ParseOptions(int argc, char** argv, Options& o) {
  static const option kOptions[] = {
      {"config", required_argument, nullptr, 'c'},
      {"test", no_argument, nullptr, 't'},
      {"print-config", no_argument, nullptr, 'p'},
      {"advise", optional_argument, nullptr, 'a'},
      {"window", required_argument, nullptr, 'w'},
      {"foreground-single", no_argument, nullptr, 'F'},
      {"version", no_argument, nullptr, 'v'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  int opt;
  while ((opt = getopt_long(argc, argv, "c:tpa::w:Fvh", kOptions, nullptr)) !=
         -1) {
    if (int rc = ApplyOption(opt, optarg, o); rc >= 0) return rc;
  }
  return CheckOperands(argc, argv, o);
}

// Prints a config error as file:line:col: message; the exit code is 2.
int ConfigFailed(const gearbox::ConfigError& e) {
  fprintf(stderr, "%s\n", e.ToString().c_str());
  return 2;
}

// The file -c names, or the embedded config.
gearbox::ConfigResult LoadConfig(const std::string& path) {
  gearbox::ConfigVocabulary vocab{gearbox::ModelSchemas(),
                                  gearbox::HandlerSchemas()};
  return path.empty()
             ? gearbox::LoadConfigString(gearbox::EmbeddedDefaultConfig(),
                                         "<embedded>", vocab)
             : gearbox::LoadConfigFile(path, vocab);
}

// -p: the effective config; a module's declared keys are printed with their
// defaults, as a built-in handler's are.
int PrintConfig(const gearbox::Config& config,
                const gearbox::Modules& modules) {
  std::vector<gearbox::HandlerSchema> schemas(gearbox::HandlerSchemas().begin(),
                                              gearbox::HandlerSchemas().end());
  for (const gearbox::HandlerSchema& s : modules.Schemas()) {
    schemas.push_back(s);
  }
  fputs(gearbox::FormatConfig(config, schemas).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = ParseOptions(argc, argv, o); rc >= 0) return rc;
  const gearbox::Duration window =
      o.window.value_or(gearbox::advisor::kDefaultAdviseWindow);
  if (o.advise && !o.advise_url.empty()) return AdviseUrl(o.advise_url, window);
  gearbox::ConfigResult loaded = LoadConfig(o.path);
  if (auto* e = std::get_if<gearbox::ConfigError>(&loaded)) {
    return ConfigFailed(*e);
  }
  gearbox::Config config = std::get<gearbox::Config>(std::move(loaded));
  config.foreground = o.single;
  if (o.advise) return AdviseConfig(config, window);
  // -t and -p say only what is wrong; a run logs what it loads.
  gearbox::InitLogging(o.test || o.print ? "warn" : config.log.level);
  if (!o.test && !o.print) {
    gearbox::LogInfo("starting", "version={} model={} config={} pid={}",
                     kVersion, config.server.model,
                     gearbox::LogQuote(config.source), getpid());
  }
  // Modules load here, in the master, before any worker exists (prefork
  // children share the pages); -t and -p load them too, so a missing file, a
  // wrong ABI or a route key a module rejects is a config error.
  gearbox::ModulesResult loaded_modules = gearbox::Modules::Load(config);
  if (auto* e = std::get_if<gearbox::ConfigError>(&loaded_modules)) {
    return ConfigFailed(*e);
  }
  auto modules = std::get<std::shared_ptr<const gearbox::Modules>>(
      std::move(loaded_modules));
  if (o.print) return PrintConfig(config, *modules);
  // Every Lua script compiled, its top level run in a throwaway state.
  if (auto e = gearbox::CheckLuaScripts(&config)) return ConfigFailed(*e);
  if (o.test) {
    fprintf(stderr, "gearboxd: configuration %s is valid\n",
            config.source.c_str());
    return 0;
  }
  prctl(PR_SET_TIMERSLACK, 1UL);
  return gearbox::RunSupervisor(std::move(config), std::move(modules), o.path);
}
