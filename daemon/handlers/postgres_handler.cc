// `postgres`: runs the route's SQL statement on PostgreSQL through libpq's
// non-blocking API and answers its rows as JSON. Each worker has its own
// pool (this handler instance); the exchange is daemon/handlers/postgres/.
#include <optional>

#include "daemon/handlers/handlers.h"
#include "daemon/handlers/postgres/conninfo.h"
#include "daemon/handlers/postgres/pg_exchange.h"
#include "daemon/handlers/postgres/route_params.h"
#include "daemon/http/http_syntax.h"
#include "daemon/logging.h"

namespace gearbox {
namespace {

// Appends a query-string value to out, form-decoded ('+' is a space, %XX a
// byte; a malformed escape stays as written).
void FormDecode(std::string_view raw, std::string& out) {
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '+') {
      out += ' ';
    } else if (raw[i] == '%' && i + 2 < raw.size() &&
               http::HexDigitValue(raw[i + 1]) >= 0 &&
               http::HexDigitValue(raw[i + 2]) >= 0) {
      out += static_cast<char>(http::HexDigitValue(raw[i + 1]) * 16 +
                               http::HexDigitValue(raw[i + 2]));
      i += 2;
    } else {
      out += raw[i];
    }
  }
}

// The value of key in query ("" for "key" or "key="), or nullopt when the
// query does not name it (Request::QueryParam cannot tell these apart).
std::optional<std::string_view> FindQueryArg(std::string_view query,
                                             std::string_view key) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key) {
      return eq == std::string_view::npos ? std::string_view{}
                                          : pair.substr(eq + 1);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

class PostgresHandler final : public Handler {
 public:
  PostgresHandler(const RouteConfig& route, const ServerInfo& info)
      : pool_(route.params.Text("dsn"),
              postgres::RedactConninfo(route.params.Text("dsn")), route.path,
              static_cast<int>(route.params.Int("pool")), info.home,
              static_cast<int>(route.params.Int("pipeline"))),
        params_(route.params.List("params")) {
    route_.query = route.params.Text("query");
    route_.max_rows = route.params.Int("max_rows");
    route_.max_bytes = route.params.Int("max_bytes");
    route_.connect_timeout =
        postgres::ConnectTimeout(route.params.Text("connect_timeout"));
    route_.json.big_numbers_as_strings =
        postgres::Int8AsString(route.params.Text("int8"));
    route_.nparams = static_cast<int>(params_.size());
    route_.connections_max = info.workers * pool_.size();
    route_.check_budget = true;
    // One worker speaks for the generation: the budget once, not per worker.
    if (info.worker == 0) {
      LogInfo("postgres_pool",
              "route={} dsn={} pool={} workers={} connections_max={}",
              LogQuote(route.path), LogQuote(pool_.shown_dsn()), pool_.size(),
              info.workers, route_.connections_max);
    }
  }

  std::unique_ptr<Exchange> Start(const Request& request) override {
    postgres::PgParams values;
    for (const std::string& name : params_) {
      // A capture of the route's pattern wins over a query argument; it is
      // percent-decoded already.
      if (const PathParam* capture = request.FindParam(name)) {
        values.Add(capture->value);
        continue;
      }
      std::optional<std::string_view> raw = FindQueryArg(request.query, name);
      if (!raw) return MissingParam(name);
      values.AddWith([raw](std::string& out) { FormDecode(*raw, out); });
    }
    return postgres::PgExchange::Make(&pool_, &route_, std::move(values));
  }

 private:
  std::unique_ptr<Exchange> MissingParam(const std::string& name) {
    LogInfo("postgres_bad_request", "route={} missing_param={}",
            LogQuote(pool_.route()), LogQuote(name));
    return Immediately([name](Response& response) {
      postgres::Answer(response, postgres::kMissingParameter, {}, name);
    });
  }

  postgres::PgPool pool_;
  postgres::PgRoute route_;
  const std::vector<std::string> params_;
};

}  // namespace

std::unique_ptr<Handler> MakePostgresHandler(const RouteConfig& route,
                                             const ServerInfo& info) {
  return std::make_unique<PostgresHandler>(route, info);
}

}  // namespace gearbox
