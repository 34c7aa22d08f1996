// Patterns and Go 1.22 ServeMux precedence (net/http docs, "Precedence").
#include "config/route_pattern.h"

#include <gtest/gtest.h>

namespace gearbox {
namespace {

using Kind = PatternSegment::Kind;
using Methods = std::vector<std::string>;

RoutePattern P(std::string_view path) {
  auto parsed = ParsePattern(path);
  if (auto* why = std::get_if<std::string>(&parsed)) {
    ADD_FAILURE() << path << ": " << *why;
    return {};
  }
  return std::get<RoutePattern>(parsed);
}

std::string Error(std::string_view path) {
  auto parsed = ParsePattern(path);
  auto* why = std::get_if<std::string>(&parsed);
  return why ? *why : "(parsed)";
}

TEST(RoutePatternTest, ParsesEveryKind) {
  EXPECT_EQ(P("/hello").segments,
            (std::vector<PatternSegment>{{Kind::kLiteral, "hello"}}));
  EXPECT_EQ(P("/").segments, (std::vector<PatternSegment>{{Kind::kMulti, ""}}));
  EXPECT_EQ(P("/static/").segments,
            (std::vector<PatternSegment>{{Kind::kLiteral, "static"},
                                         {Kind::kMulti, ""}}));
  EXPECT_EQ(P("/static/{$}").segments,
            (std::vector<PatternSegment>{{Kind::kLiteral, "static"},
                                         {Kind::kSlash, ""}}));
  EXPECT_EQ(P("/items/{id}/x").segments,
            (std::vector<PatternSegment>{{Kind::kLiteral, "items"},
                                         {Kind::kWild, "id"},
                                         {Kind::kLiteral, "x"}}));
  EXPECT_EQ(P("/files/{rest...}").segments,
            (std::vector<PatternSegment>{{Kind::kLiteral, "files"},
                                         {Kind::kMulti, "rest"}}));
}

TEST(RoutePatternTest, LiteralsAreCanonical) {
  // %20 and a space, %7E and '~' are the same; %2F stays one segment.
  EXPECT_EQ(P("/a%20b"), P("/a b"));
  EXPECT_EQ(P("/%7euser"), P("/~user"));
  EXPECT_EQ(P("/a%2fb").segments,
            (std::vector<PatternSegment>{{Kind::kLiteral, "a%2Fb"}}));
}

TEST(RoutePatternTest, RefusesMalformedPatterns) {
  EXPECT_NE(Error("/a/{").find("bad wildcard segment"), std::string::npos);
  EXPECT_NE(Error("/a/{x}{y}").find("bad wildcard name"), std::string::npos);
  EXPECT_NE(Error("/a/{x...}/b").find("must end the pattern"),
            std::string::npos);
  EXPECT_NE(Error("/a/{$}/b").find("must end the pattern"), std::string::npos);
  EXPECT_NE(Error("/a/x{y}").find("bad wildcard segment"), std::string::npos);
  EXPECT_NE(Error("/a/{}").find("bad wildcard name"), std::string::npos);
  EXPECT_NE(Error("/a/{1x}").find("bad wildcard name"), std::string::npos);
  EXPECT_NE(Error("/{x}/{x}").find("duplicate wildcard name"),
            std::string::npos);
  EXPECT_NE(Error("/a//b").find("empty segment"), std::string::npos);
  EXPECT_NE(Error("/a/../b").find("dot-segment"), std::string::npos);
  EXPECT_NE(Error("/a/%2e").find("dot-segment"), std::string::npos);
  EXPECT_NE(Error("/a%zz").find("bad percent-escape"), std::string::npos);
  EXPECT_NE(Error("/a%00").find("bad percent-escape"), std::string::npos);
  EXPECT_NE(Error("/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}").find("more than 8"),
            std::string::npos);
  EXPECT_EQ(Error("/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}"), "(parsed)");
}

Relation Paths(std::string_view a, std::string_view b) {
  return ComparePaths(P(a), P(b));
}

// The examples of Go's ServeMux documentation.
TEST(RoutePatternTest, GoDocumentedPrecedence) {
  // "/images/thumbnails/" is more specific than "/images/".
  EXPECT_EQ(Paths("/images/thumbnails/", "/images/"), Relation::kMoreSpecific);
  EXPECT_EQ(Paths("/images/", "/images/thumbnails/"), Relation::kMoreGeneral);
  // "/posts/latest" is more specific than "/posts/{id}".
  EXPECT_EQ(Paths("/posts/latest", "/posts/{id}"), Relation::kMoreSpecific);
  // "/posts/{id}" and "/{resource}/latest" conflict: both match
  // "/posts/latest".
  EXPECT_EQ(Paths("/posts/{id}", "/{resource}/latest"), Relation::kOverlaps);
  // "/" matches everything not matched by another pattern.
  EXPECT_EQ(Paths("/index.html", "/"), Relation::kMoreSpecific);
  // "{$}" matches only the trailing slash.
  EXPECT_EQ(Paths("/static/{$}", "/static/"), Relation::kMoreSpecific);
  EXPECT_EQ(Paths("/static/{$}", "/static/{x}"), Relation::kDisjoint);
  EXPECT_EQ(Paths("/static", "/static/"), Relation::kDisjoint);
  EXPECT_EQ(Paths("/a/{x}", "/a/{y}"), Relation::kEquivalent);
  EXPECT_EQ(Paths("/a/{x...}", "/a/"), Relation::kEquivalent);
  EXPECT_EQ(Paths("/a/{x}/c", "/a/b/{y}"), Relation::kOverlaps);
  EXPECT_EQ(Paths("/a/b", "/a/b/c"), Relation::kDisjoint);
  EXPECT_EQ(Paths("/a/{x}", "/a/b/"), Relation::kDisjoint);
}

TEST(RoutePatternTest, MethodSets) {
  const Methods any, get{"GET"}, head{"HEAD"}, post{"POST"},
      get_post{"GET", "POST"}, post_put{"POST", "PUT"}, get_head{"GET", "HEAD"};
  EXPECT_EQ(CompareMethods(get, any), Relation::kMoreSpecific);
  EXPECT_EQ(CompareMethods(any, get), Relation::kMoreGeneral);
  EXPECT_EQ(CompareMethods(get, post), Relation::kDisjoint);
  EXPECT_EQ(CompareMethods(get, get_head), Relation::kEquivalent);  // implied
  EXPECT_EQ(CompareMethods(head, get), Relation::kMoreSpecific);    // Go's rule
  EXPECT_EQ(CompareMethods(get, get_post), Relation::kMoreSpecific);
  EXPECT_EQ(CompareMethods(get_post, post_put), Relation::kOverlaps);
}

std::optional<std::string> Conflict(std::string_view a, const Methods& am,
                                    std::string_view b, const Methods& bm) {
  return RouteConflict(P(a), am, P(b), bm);
}

TEST(RoutePatternTest, Conflicts) {
  const Methods any, get{"GET"}, post{"POST"}, get_post{"GET", "POST"};
  EXPECT_EQ(Conflict("/posts/{id}", any, "/posts/latest", any), std::nullopt);
  auto both = Conflict("/posts/{id}", any, "/{resource}/latest", any);
  ASSERT_TRUE(both);
  EXPECT_NE(both->find("both match /posts/latest"), std::string::npos) << *both;
  EXPECT_NE(Conflict("/a", any, "/a", any)->find("duplicate route"),
            std::string::npos);
  EXPECT_NE(Conflict("/a/{x}", get, "/a/{y}", get)->find("duplicate route"),
            std::string::npos);
  // Disjoint method sets may share a pattern; overlapping ones may not.
  EXPECT_EQ(Conflict("/a", get, "/a", post), std::nullopt);
  EXPECT_NE(Conflict("/a", get, "/a", get_post)->find("overlapping methods"),
            std::string::npos);
  // A method-restricted route is more specific than an unrestricted one.
  EXPECT_EQ(Conflict("/a", get, "/a", any), std::nullopt);
  // Go's consequence: a method-restricted catch-all conflicts with an
  // unrestricted route it would otherwise yield to.
  auto catch_all = Conflict("/", get, "/index.html", any);
  ASSERT_TRUE(catch_all);
  EXPECT_NE(catch_all->find("/index.html"), std::string::npos) << *catch_all;
  // Both more specific the same way: fine.
  EXPECT_EQ(Conflict("/items/{id}", get, "/items/", any), std::nullopt);
  EXPECT_EQ(Conflict("/api/items", get, "/api/", get_post), std::nullopt);
  // Different methods, different paths, never the same request.
  EXPECT_EQ(Conflict("/a/{x}", get, "/a/b", post), std::nullopt);
}

TEST(RoutePatternTest, CanonicalSegmentDecodesAllButSlashAndPercent) {
  char out[64];
  std::string_view raw = "a%20b%2fc%25d%41";
  const int n = CanonicalSegment(raw, out);
  ASSERT_GE(n, 0);
  EXPECT_EQ(std::string_view(out, n), "a b%2Fc%25dA");
  char decoded[64];
  EXPECT_EQ(
      std::string_view(decoded, DecodeCanonical({out, size_t(n)}, decoded)),
      "a b/c%dA");
  EXPECT_EQ(CanonicalSegment("%0", out), -1);
  EXPECT_EQ(CanonicalSegment("%g0", out), -1);
  EXPECT_EQ(CanonicalSegment("%00", out), -1);
}

}  // namespace
}  // namespace gearbox
