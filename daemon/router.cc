#include "daemon/router.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "daemon/routing/route_path.h"

namespace gearbox {
namespace {

// A built-in answer: 404, 400, 405 with its Allow header.
std::unique_ptr<Handler> Answer(const ServerInfo& info, int status,
                                std::string body) {
  RouteConfig route = DefaultRoute("", "text");
  route.params.Set("status", int64_t{status});
  route.params.Set("body", std::move(body));
  return MakeHandler(route, info);
}

class NotAllowedHandler final : public Handler {
 public:
  explicit NotAllowedHandler(std::string_view allow)
      : header_("Allow: " + std::string(allow) + "\r\n") {}
  std::unique_ptr<Exchange> Start(const Request&) override {
    return Immediately([this](Response& response) {
      response.status = 405;
      response.body.assign("method not allowed\n");
      response.extra_headers.append(header_);
    });
  }

 private:
  const std::string header_;
};

std::vector<std::string> CaptureNames(const RoutePattern& pattern) {
  std::vector<std::string> names;
  for (const PatternSegment& s : pattern.segments) {
    if (s.kind == PatternSegment::Kind::kWild ||
        s.kind == PatternSegment::Kind::kMulti) {
      names.push_back(s.text);
    }
  }
  return names;
}

// Writes the match's captures to request.params, decoding the %2F and %25
// a canonical value may hold into request.decoded (CanonicalPath reserved
// room for them: no reallocation moves the path's view).
void SetCaptures(const Route& route, const RouteTrie::Match& match,
                 Request& request) {
  uint8_t n = 0;
  for (uint8_t i = 0; i < match.count; ++i) {
    if (route.captures[i].empty()) continue;  // a trailing '/'
    std::string_view value = match.values[i].view();
    if (value.find('%') != std::string_view::npos) {
      std::string& buf = request.decoded;
      const size_t at = buf.size();
      if (at + value.size() > buf.capacity()) abort();  // see CanonicalPath
      buf.resize(at + value.size());
      buf.resize(at + DecodeCanonical(value, buf.data() + at));
      value = std::string_view(buf).substr(at);
    }
    request.params[n++] = {route.captures[i], value};
  }
  request.param_count = n;
}

}  // namespace

Router::Router(const std::vector<RouteConfig>& routes, const ServerInfo& info,
               const Modules* modules, int worker, WorkerStats* slot,
               WorkerHome* home)
    : own_home_(home ? nullptr : std::make_unique<WorkerHome>()),
      info_(info),
      other_id_(OtherRouteId(routes)) {
  if (slot && slot->routes && slot->route_ids <= other_id_) {
    // The region was made for another config: counting would overrun it.
    fprintf(stderr, "Router: %zu routes, stats slot has %zu route ids\n",
            routes.size(), slot->route_ids);
    abort();
  }
  info_.worker = worker;
  info_.slot = slot;
  info_.home = home ? home : own_home_.get();
  routes_.reserve(routes.size());
  for (size_t i = 0; i < routes.size(); ++i) {
    const RouteConfig& route = routes[i];
    std::unique_ptr<Handler> handler =
        route.module && modules
            ? modules->MakeHandler(route.path, worker, info_.generation)
            : MakeHandler(route, info_);
    if (!handler) {
      // The loader and Modules::Load checked every route: a broken invariant.
      fprintf(stderr, "Router: no handler for route %s (handler %s)\n",
              route.path.c_str(), route.handler.c_str());
      abort();
    }
    routes_.push_back(
        Route{std::move(handler), route.timeout.value_or(Duration(0)),
              static_cast<uint32_t>(i), CaptureNames(route.pattern)});
    Compile(route, static_cast<uint32_t>(i));
  }
  not_found_.id = bad_path_.id = server_options_.id = other_id_;
  not_found_.handler = Answer(info_, 404, "not found\n");
  bad_path_.handler = Answer(info_, 400, "bad request path\n");
  // "OPTIONS *" (the only request the codecs let through with target "*")
  // asks about the server, not a resource (RFC 9110 9.3.7): 200, no content.
  server_options_.handler = Answer(info_, 200, "");
}

RouteTrie& Router::TrieFor(std::string_view method) {
  auto it =
      std::find_if(by_method_.begin(), by_method_.end(),
                   [&](const MethodTrie& t) { return t.method == method; });
  if (it != by_method_.end()) return it->trie;
  // Sorted by method: the Allow header lists them in this order.
  auto at =
      std::find_if(by_method_.begin(), by_method_.end(),
                   [&](const MethodTrie& t) { return t.method > method; });
  return by_method_.insert(at, MethodTrie{std::string(method), {}})->trie;
}

// O(m), m = the methods the config names (a handful).
const RouteTrie* Router::FindTrie(std::string_view method) const {
  for (const MethodTrie& t : by_method_) {
    if (t.method == method) return &t.trie;
  }
  return nullptr;
}

void Router::Compile(const RouteConfig& route, uint32_t index) {
  if (route.methods.empty()) {
    any_method_.Add(route.pattern, index);
    return;
  }
  const bool get = std::find(route.methods.begin(), route.methods.end(),
                             "GET") != route.methods.end();
  for (const std::string& method : route.methods) {
    TrieFor(method).Add(route.pattern, index);
  }
  // GET implies HEAD (the codec sends no body for HEAD).
  if (get) TrieFor("HEAD").Add(route.pattern, index);
}

const Route& Router::Match(Request& request) const {
  request.param_count = 0;
  // Route paths start with '/' (the loader checks), so "*" is never a route.
  if (request.path == "*") return server_options_;
  // No pattern matches a path without its leading '/' (the codecs send one).
  if (request.path.empty() || request.path[0] != '/') return not_found_;
  // A route of this method is more specific than one of any method; the
  // loader refused those that would disagree.
  const RouteTrie* trie =
      by_method_.empty() ? nullptr : FindTrie(request.method);
  const RouteTrie& first = trie ? *trie : any_method_;
  // Most requests name an exact route as written: the trie consulted first
  // has it (FindExact: then the path is canonical as it is), and finding it
  // ends the search, as Find would. No canonicalising, no walk.
  const uint32_t exact = first.FindExact(request.path);
  if (exact != RouteTrie::kNone) return routes_[exact];
  const RoutePath path = CanonicalPath(request.path, request.decoded);
  if (!path.ok) return bad_path_;
  RouteTrie::Match match;
  // An unchanged path was looked up whole in `first` already.
  const bool unchanged = path.path.data() == request.path.data();
  if ((unchanged ? first.Walk(path.path, match)
                 : first.Find(path.path, match)) ||
      (trie && any_method_.Find(path.path, match))) {
    const Route& route = routes_[match.route];
    SetCaptures(route, match, request);
    return route;
  }
  return NotAllowed(path.path);
}

// The 405 (RFC 9110 15.5.6) when routes of other methods match `path`, else
// the 404. Only for requests no route serves: the scan of every method's trie
// and the string are off the served path.
const Route& Router::NotAllowed(std::string_view path) const {
  allow_.clear();
  RouteTrie::Match match;
  for (const MethodTrie& t : by_method_) {
    if (!t.trie.Find(path, match)) continue;
    if (!allow_.empty()) allow_ += ", ";
    allow_ += t.method;
  }
  if (allow_.empty()) return not_found_;
  auto it = not_allowed_.find(allow_);
  if (it == not_allowed_.end()) {
    Route route;
    route.id = other_id_;
    route.handler = std::make_unique<NotAllowedHandler>(allow_);
    it = not_allowed_.emplace(allow_, std::move(route)).first;
  }
  return it->second;
}

const Route& Router::Match(std::string_view path) const {
  Request request;
  request.method = "GET";
  request.SetTarget(path);
  return Match(request);
}

void Router::Add(std::string path, std::unique_ptr<Handler> handler,
                 Duration timeout) {
  auto parsed = ParsePattern(path);
  if (auto* why = std::get_if<std::string>(&parsed)) {
    fprintf(stderr, "Router::Add(%s): %s\n", path.c_str(), why->c_str());
    abort();
  }
  const RoutePattern& pattern = std::get<RoutePattern>(parsed);
  routes_.push_back(
      Route{std::move(handler), timeout, other_id_, CaptureNames(pattern)});
  any_method_.Add(pattern, static_cast<uint32_t>(routes_.size() - 1));
}

std::vector<std::string> RouteNames(const std::vector<RouteConfig>& routes) {
  std::vector<std::string> names(routes.size() + 1);
  // Routes that share a pattern (disjoint methods) have the same path.
  std::map<std::string_view, int> uses;
  for (const RouteConfig& route : routes) ++uses[route.path];
  for (size_t i = 0; i < routes.size(); ++i) {
    names[i] =
        uses[routes[i].path] > 1 ? RouteDisplay(routes[i]) : routes[i].path;
  }
  names[OtherRouteId(routes)] = std::string(kOtherRouteName);
  return names;
}

}  // namespace gearbox
