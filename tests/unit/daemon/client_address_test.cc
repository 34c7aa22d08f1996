// Request::Client() and the trusted_proxies matching it stands on: which
// address a request's client is, from which peer, through which headers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/ip_net.h"
#include "daemon/request.h"

namespace gearbox {
namespace {

IpAddress Ip(const char* text) { return ParseIp(text).value(); }

IpAddress Unix() {
  IpAddress a;
  a.family = IpAddress::Family::kUnix;
  return a;
}

IpNet Net(const char* text) {
  IpNet net;
  EXPECT_EQ(ParseIpNet(text, &net), std::nullopt) << text;
  return net;
}

// A request from `peer` with `headers`, under the default trust.
struct Case {
  std::vector<IpNet> trusted = DefaultTrustedProxies();
  RequestOrigin origin;
  Request request;
  std::string Client(IpAddress peer, std::vector<Header> headers = {},
                     const char* protocol = "http") {
    origin.peer = peer;
    origin.protocol = protocol;
    origin.trusted = trusted;
    request.headers = std::move(headers);
    request.SetOrigin(origin);
    return std::string(request.Client());
  }
};

TEST(IpNetTest, ParsesAndMatches) {
  EXPECT_TRUE(Net("10.0.0.0/8").Contains(Ip("10.255.1.2")));
  EXPECT_FALSE(Net("10.0.0.0/8").Contains(Ip("11.0.0.1")));
  EXPECT_TRUE(Net("192.168.1.7/30").Contains(Ip("192.168.1.4")));
  EXPECT_FALSE(Net("192.168.1.7/30").Contains(Ip("192.168.1.8")));
  EXPECT_TRUE(Net("fd00::/8").Contains(Ip("fd12::1")));
  EXPECT_FALSE(Net("fd00::/8").Contains(Ip("fe80::1")));
  EXPECT_TRUE(Net("::1").Contains(Ip("::1")));
  EXPECT_TRUE(Net("0.0.0.0/0").Contains(Ip("203.0.113.1")));
  EXPECT_FALSE(Net("0.0.0.0/0").Contains(Ip("::1")));  // families differ
  EXPECT_TRUE(Net("unix").Contains(Unix()));
  EXPECT_FALSE(Net("unix").Contains(Ip("127.0.0.1")));
  // An IPv4-mapped IPv6 address is its IPv4 address.
  EXPECT_TRUE(Net("127.0.0.0/8").Contains(Ip("::ffff:127.0.0.1")));
}

TEST(IpNetTest, RefusesWhatIsNotANetwork) {
  IpNet net;
  EXPECT_EQ(ParseIpNet("10.0.0.0/33", &net),
            "\"10.0.0.0/33\": bad prefix /33 (0..32)");
  EXPECT_EQ(ParseIpNet("fd00::/129", &net),
            "\"fd00::/129\": bad prefix /129 (0..128)");
  EXPECT_EQ(ParseIpNet("10.0.0.0/", &net),
            "\"10.0.0.0/\": bad prefix / (0..32)");
  EXPECT_EQ(ParseIpNet("localhost", &net),
            "\"localhost\" is not \"unix\", an IP address or a CIDR network "
            "(\"10.0.0.0/8\", \"fd00::/8\")");
}

TEST(ClientAddressTest, AnUntrustedPeerIsTheClient) {
  Case c;
  EXPECT_EQ(c.Client(Ip("198.51.100.7"), {{"X-Forwarded-For", "203.0.113.9"},
                                          {"X-Real-IP", "192.0.2.5"}}),
            "198.51.100.7");
  EXPECT_EQ(c.Client(Ip("2001:db8::7")), "2001:db8::7");
}

TEST(ClientAddressTest, ATrustedPeerNamesTheClient) {
  Case c;
  // The rightmost entry that is not a trusted proxy, across header lines.
  EXPECT_EQ(c.Client(Unix(), {{"X-Forwarded-For", "198.51.100.1, 203.0.113.9"},
                              {"x-forwarded-for", " 127.0.0.1 , ::1"}}),
            "203.0.113.9");
  // Every entry trusted: the leftmost.
  EXPECT_EQ(c.Client(Ip("127.0.0.1"), {{"X-Forwarded-For", "127.0.0.2, ::1"}}),
            "127.0.0.2");
  // A malformed entry ends the walk at the last good one.
  EXPECT_EQ(c.Client(Unix(), {{"X-Forwarded-For", "1.2.3.4, junk, 127.0.0.3"}}),
            "127.0.0.3");
  // No X-Forwarded-For: X-Real-IP, if it is an address.
  EXPECT_EQ(c.Client(Unix(), {{"X-Real-IP", " 192.0.2.5 "}}), "192.0.2.5");
  EXPECT_EQ(c.Client(Ip("::1"), {{"X-Real-IP", "not-an-ip"}}), "::1");
  // A unix peer that names nobody: unknown.
  EXPECT_EQ(c.Client(Unix()), "");
}

TEST(ClientAddressTest, FastCgiUsesRemoteAddrFromATrustedPeer) {
  Case c;
  c.request.remote_addr = "203.0.113.20";
  EXPECT_EQ(c.Client(Unix(), {{"X-Forwarded-For", "6.6.6.6"}}, "fastcgi"),
            "203.0.113.20");
  // From an untrusted peer, REMOTE_ADDR is only a claim.
  EXPECT_EQ(c.Client(Ip("198.51.100.7"), {}, "fastcgi"), "198.51.100.7");
}

TEST(ClientAddressTest, TheTrustListDecides) {
  Case c;
  c.trusted = {Net("10.0.0.0/8")};
  EXPECT_EQ(
      c.Client(Ip("10.1.2.3"), {{"X-Forwarded-For", "203.0.113.9, 10.9.9.9"}}),
      "203.0.113.9");
  EXPECT_EQ(c.Client(Ip("127.0.0.1"), {{"X-Forwarded-For", "203.0.113.9"}}),
            "127.0.0.1");
  c.trusted = {};
  EXPECT_EQ(c.Client(Unix(), {{"X-Real-IP", "192.0.2.5"}}), "");
}

// Computed once per request: the next origin forgets the last answer.
TEST(ClientAddressTest, ForgottenBetweenRequests) {
  Case c;
  EXPECT_EQ(c.Client(Ip("198.51.100.7")), "198.51.100.7");
  EXPECT_EQ(c.Client(Ip("198.51.100.8")), "198.51.100.8");
  Request bare;
  EXPECT_EQ(bare.Client(), "");  // no connection: unknown
}

}  // namespace
}  // namespace gearbox
