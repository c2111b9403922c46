#pragma once

// CORS for the OTLP ingest paths, so a browser app using the OpenTelemetry
// web exporters can send from its own origin (docs/API.md "CORS",
// docs/SECURITY.md "Browser exporters").
//
// Off unless an allow-list of origins is configured (--cors-allowed-origins).
// Only the ingest paths ask this policy: the read API (/api/v1/*) and the UI
// never carry a CORS header, so a page elsewhere can never read dashboards
// data, whatever token it holds. The policy decides headers from what the
// request says; it never authenticates (the token check stays in ingest).
//
// A preflight (OPTIONS with Origin and Access-Control-Request-Method) from an
// allowed origin gets 204 with the allowed origin echoed (never `*`), POST,
// the request headers the web exporters send and a max age; the browser
// itself then checks the method and headers it wanted against those lists.
// From any other origin it gets 403 without CORS headers, which the browser
// reports as a CORS failure and the server log as a refusal with a reason.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "server/http_server_types.h"

namespace sightline {

//! What the policy reads of a request (valid during the call).
struct CorsRequest {
  std::string_view method;          // "OPTIONS", "POST", ...
  std::string_view origin;          // the Origin header; "" when absent
  std::string_view request_method;  // Access-Control-Request-Method; "" when absent
};

//! The request headers a preflight allows: what the OpenTelemetry web
//! exporters send (Content-Type, the user's Authorization) and
//! Content-Encoding for a page that compresses its own body.
inline constexpr const char* kCorsAllowedHeaders = "Authorization, Content-Type, Content-Encoding";
//! How long a browser may reuse a preflight answer; Chromium caps it here.
inline constexpr int kCorsMaxAgeSeconds = 7200;

//! An immutable allow-list of origins. Thread-safe (const after Parse).
class CorsPolicy {
 public:
  //! CORS off: no request is a preflight, no response gets a header.
  CorsPolicy() = default;

  //! A comma-separated list of origins ("https://app.example.com,
  //! http://127.0.0.1:8080"), each scheme://host[:port] with http or https.
  //! Normalised as browsers serialise an Origin: scheme and host lower-case,
  //! a default port (:80, :443) and a trailing "/" dropped. "" = off.
  //! InvalidArgument for `*`, `null`, a path, a query, credentials or any
  //! other scheme: an origin is named, never matched by pattern.
  static Result<CorsPolicy> Parse(std::string_view comma_separated);

  bool enabled() const { return !origins_.empty(); }
  //! The normalised origins, in the order given.
  const std::vector<std::string>& origins() const { return origins_; }
  //! Whether `origin` (an Origin header, compared exactly) is on the list.
  bool Allows(std::string_view origin) const;

  //! A CORS preflight: CORS is on and the request is an OPTIONS with an
  //! Origin and an Access-Control-Request-Method. Anything else is an
  //! ordinary request (an OPTIONS that is not a preflight stays 405).
  bool IsPreflight(const CorsRequest& request) const;
  //! The answer to a preflight (IsPreflight): 204 with the CORS headers for
  //! an allowed origin, 403 with none otherwise. Both carry Vary: Origin.
  HttpResponse Preflight(const CorsRequest& request) const;
  //! Adds to any answer of an ingest path (success or error, closing or not)
  //! Access-Control-Allow-Origin: <origin> and Access-Control-Expose-Headers:
  //! Retry-After when `origin` is allowed, so the page can read the status
  //! and when to retry; Vary: Origin whenever CORS is on.
  void AddResponseHeaders(std::string_view origin, HttpResponse* response) const;

 private:
  std::vector<std::string> origins_;
};

}  // namespace sightline
