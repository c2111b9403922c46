#pragma once

// The query API (/api/v1/, docs/API.md) minus the transport: authentication
// (session cookie or read token), login/logout, and turning a request into
// a query call that the HTTP layer runs on a leased read connection under a
// deadline, or a login that it hands to the LoginService and awaits.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "auth/authenticator.h"
#include "auth/login_service.h"
#include "model/batch.h"
#include "query/query_metrics.h"
#include "query/query_service.h"
#include "server/http_server_types.h"
#include "state/state_store.h"
#include "storage/telemetry_store.h"

namespace sightline {

struct ApiRequest {
  std::string method;
  std::string path;  // starts with /api/v1/
  std::string query;
  std::string cookie;
  std::string authorization;
  std::string body;
  std::string peer;  // the client's IP address, as text (login throttling)
};

//! A well-formed login, to be checked off the network threads.
struct ApiLogin {
  std::string peer;
  std::string username;
  std::string password;
};

//! What to do with a request: answer at once, check a login, or run a query.
struct ApiCall {
  std::optional<HttpResponse> immediate;
  std::optional<ApiLogin> login;
  std::string op;
  ApiParams params;
  int64_t project_id = 0;
};

struct ApiOptions {
  int64_t query_timeout_ms = 6000;
  int64_t session_ttl_seconds = 7 * 24 * 3600;
  QueryLimits limits;
  //! The server's retention per signal (seconds, 0 = forever), shown with
  //! each project's overrides by /api/v1/projects.
  std::array<int64_t, kSignalCount> default_retention_seconds{0, 0, 0};
  //! The session cookie carries `Secure` (set when the server speaks TLS).
  bool secure_cookie = false;
};

//! Thread-safe. Does not own the authenticator, login service, state or store.
class ApiService {
 public:
  ApiService(ApiOptions options, Authenticator* auth, LoginService* login, StateStore* state, TelemetryStore* store);

  ApiCall Prepare(const ApiRequest& request);
  //! Checks a prepared login (call.login) on the LoginService; `done` gets
  //! the response exactly once, on whichever thread the check ends on.
  void Login(const ApiCall& call, std::function<void(HttpResponse)> done);
  //! Runs a prepared query call on a reader; maps errors to statuses.
  HttpResponse Execute(const ApiCall& call, TelemetryReader* reader) const;
  //! Counts a query call's answer (whoever produced it: Execute, or the
  //! transport when the call timed out queued or found no reader).
  void RecordQuery(const ApiCall& call, int http_status, double seconds) {
    query_metrics_.Record(call.op, http_status, seconds);
  }
  const QueryMetrics& query_metrics() const { return query_metrics_; }
  //! True when the request carries a credential that may read (a UI
  //! session cookie or a project's read token).
  bool MayRead(std::string_view cookie, std::string_view authorization);
  TelemetryStore* store() { return store_; }
  const ApiOptions& options() const { return options_; }

  static HttpResponse JsonError(int status, const std::string& message);

 private:
  HttpResponse Logout(const ApiRequest& request);
  //! The session cookie's attributes after its value ("; Path=/; ...").
  std::string CookieAttributes() const;
  //! The logged-in user (session cookie), or nullopt.
  std::optional<std::string> SessionUser(const ApiRequest& request);

  const ApiOptions options_;
  Authenticator* auth_;
  LoginService* login_;
  StateStore* state_;
  TelemetryStore* store_;
  QueryService queries_;
  QueryMetrics query_metrics_;
};

}  // namespace sightline
