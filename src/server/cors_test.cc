#include "server/cors.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace sightline {
namespace {

std::optional<std::string> Header(const HttpResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return std::nullopt;
}

CorsPolicy Policy(std::string_view list) {
  auto p = CorsPolicy::Parse(list);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : CorsPolicy();
}

TEST(CorsPolicyTest, OffByDefaultAndForAnEmptyList) {
  EXPECT_FALSE(CorsPolicy().enabled());
  EXPECT_FALSE(Policy("").enabled());
  EXPECT_FALSE(Policy(" , ").enabled());
  CorsRequest preflight{"OPTIONS", "https://app.example.com", "POST"};
  EXPECT_FALSE(CorsPolicy().IsPreflight(preflight));
  HttpResponse r;
  CorsPolicy().AddResponseHeaders("https://app.example.com", &r);
  EXPECT_TRUE(r.headers.empty());
}

TEST(CorsPolicyTest, NormalisesOriginsAsBrowsersSendThem) {
  CorsPolicy p = Policy(
      " HTTPS://App.Example.com/ ,http://127.0.0.1:8080,https://other.example:443,http://x.example:80,"
      "http://[::1]:9000,https://app.example.com");
  EXPECT_EQ(p.origins(), (std::vector<std::string>{"https://app.example.com", "http://127.0.0.1:8080",
                                                   "https://other.example", "http://x.example", "http://[::1]:9000"}));
  EXPECT_TRUE(p.Allows("https://app.example.com"));
  EXPECT_TRUE(p.Allows("http://127.0.0.1:8080"));
  EXPECT_TRUE(p.Allows("http://[::1]:9000"));
  // Exact: another scheme, port, subdomain or a suffix trick is another origin.
  EXPECT_FALSE(p.Allows("http://app.example.com"));
  EXPECT_FALSE(p.Allows("http://127.0.0.1:8081"));
  EXPECT_FALSE(p.Allows("https://evil.app.example.com"));
  EXPECT_FALSE(p.Allows("https://app.example.com.evil.example"));
  EXPECT_FALSE(p.Allows(""));
  EXPECT_FALSE(p.Allows("null"));
}

TEST(CorsPolicyTest, RefusesWildcardsNullAndWhatIsNotAnOrigin) {
  for (const char* bad :
       {"*", "https://a.example,*", "null", "NULL", "app.example.com", "ftp://a.example", "https://a.example/path",
        "https://a.example?x=1", "https://user@a.example", "https://*.example.com", "https://a.example:0",
        "https://a.example:70000", "https://a.example:", "https://a.example:8x", "https://", "http://[::1",
        "https://bücher.example"}) {
    auto p = CorsPolicy::Parse(bad);
    EXPECT_FALSE(p.ok()) << bad;
    if (!p.ok()) {
      EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << bad;
      EXPECT_NE(p.status().message().find("--cors-allowed-origins"), std::string::npos) << p.status().message();
    }
  }
  EXPECT_NE(CorsPolicy::Parse("*").status().message().find("name each origin"), std::string::npos);
}

TEST(CorsPolicyTest, PreflightFromAnAllowedOriginEchoesItWithTheExportersHeaders) {
  CorsPolicy p = Policy("http://127.0.0.1:8080");
  CorsRequest req{"OPTIONS", "http://127.0.0.1:8080", "POST"};
  ASSERT_TRUE(p.IsPreflight(req));
  HttpResponse r = p.Preflight(req);
  EXPECT_EQ(r.status, 204);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(Header(r, "Access-Control-Allow-Origin"), "http://127.0.0.1:8080");
  EXPECT_EQ(Header(r, "Vary"), "Origin");
  EXPECT_EQ(Header(r, "Access-Control-Allow-Methods"), "POST");
  const std::string headers = Header(r, "Access-Control-Allow-Headers").value_or("");
  for (const char* h : {"Authorization", "Content-Type", "Content-Encoding"}) {
    EXPECT_NE(headers.find(h), std::string::npos) << h;
  }
  EXPECT_EQ(Header(r, "Access-Control-Max-Age"), std::to_string(kCorsMaxAgeSeconds));
  EXPECT_FALSE(Header(r, "Access-Control-Allow-Credentials"));
}

TEST(CorsPolicyTest, PreflightFromAnotherOriginIsForbiddenWithoutCorsHeaders) {
  CorsPolicy p = Policy("http://127.0.0.1:8080");
  CorsRequest req{"OPTIONS", "http://127.0.0.1:9090", "POST"};
  ASSERT_TRUE(p.IsPreflight(req));
  HttpResponse r = p.Preflight(req);
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(Header(r, "Vary"), "Origin");
  for (const auto& [k, v] : r.headers) EXPECT_FALSE(k.starts_with("Access-Control-")) << k;
}

TEST(CorsPolicyTest, OnlyAnOptionsWithOriginAndRequestMethodIsAPreflight) {
  CorsPolicy p = Policy("http://127.0.0.1:8080");
  EXPECT_FALSE(p.IsPreflight({"OPTIONS", "", "POST"}));
  EXPECT_FALSE(p.IsPreflight({"OPTIONS", "http://127.0.0.1:8080", ""}));
  EXPECT_FALSE(p.IsPreflight({"POST", "http://127.0.0.1:8080", "POST"}));
}

TEST(CorsPolicyTest, ActualResponsesCarryTheOriginOnlyWhenAllowed) {
  CorsPolicy p = Policy("http://127.0.0.1:8080");
  HttpResponse throttled;
  throttled.status = 503;
  throttled.headers.emplace_back("Retry-After", "3");
  p.AddResponseHeaders("http://127.0.0.1:8080", &throttled);
  EXPECT_EQ(Header(throttled, "Access-Control-Allow-Origin"), "http://127.0.0.1:8080");
  EXPECT_EQ(Header(throttled, "Access-Control-Expose-Headers"), "Retry-After");
  EXPECT_EQ(Header(throttled, "Vary"), "Origin");
  EXPECT_EQ(Header(throttled, "Retry-After"), "3");

  HttpResponse other;
  p.AddResponseHeaders("http://127.0.0.1:9090", &other);
  EXPECT_EQ(Header(other, "Vary"), "Origin");
  EXPECT_FALSE(Header(other, "Access-Control-Allow-Origin"));
  EXPECT_FALSE(Header(other, "Access-Control-Expose-Headers"));

  HttpResponse no_origin;  // curl, an SDK on a server
  p.AddResponseHeaders("", &no_origin);
  EXPECT_FALSE(Header(no_origin, "Access-Control-Allow-Origin"));
}

}  // namespace
}  // namespace sightline
