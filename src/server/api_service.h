#pragma once

// The query API (/api/v1/, docs/API.md) minus the transport: authentication
// (session cookie or bearer token), login/logout, and turning a request into
// a query call that the HTTP layer runs on a leased read connection under a
// deadline.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "auth/authenticator.h"
#include "model/batch.h"
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
};

//! What to do with a request: answer at once, or run a query.
struct ApiCall {
  std::optional<HttpResponse> immediate;
  std::string op;
  ApiParams params;
  int64_t project_id = 0;
};

struct ApiOptions {
  int64_t query_timeout_ms = 6000;
  int64_t session_ttl_seconds = 7 * 24 * 3600;
  //! The server's retention per signal (seconds, 0 = forever), shown with
  //! each project's overrides by /api/v1/projects.
  std::array<int64_t, kSignalCount> default_retention_seconds{0, 0, 0};
};

//! Thread-safe. Does not own the authenticator, state or store.
class ApiService {
 public:
  ApiService(ApiOptions options, Authenticator* auth, StateStore* state, TelemetryStore* store);

  ApiCall Prepare(const ApiRequest& request);
  //! Runs a prepared query call on a reader; maps errors to statuses.
  HttpResponse Execute(const ApiCall& call, TelemetryReader* reader) const;
  TelemetryStore* store() { return store_; }
  const ApiOptions& options() const { return options_; }

  static HttpResponse JsonError(int status, const std::string& message);

 private:
  HttpResponse Login(const ApiRequest& request);
  HttpResponse Logout(const ApiRequest& request);
  //! The logged-in user (session cookie), or nullopt.
  std::optional<std::string> SessionUser(const ApiRequest& request);

  const ApiOptions options_;
  Authenticator* auth_;
  StateStore* state_;
  TelemetryStore* store_;
  QueryService queries_;
};

}  // namespace sightline
