#pragma once

// Who is asking: the one object the ingest path and the query API ask. A
// bearer token resolves to its project and scope through a TokenCache (TTL
// --auth-cache-ttl-ms) in front of the state store, and is refused where its
// scope does not reach (an ingest token cannot read, a read token cannot
// send); a UI session resolves to its user from the store on every call.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "auth/token_cache.h"
#include "common/status.h"
#include "state/state_store.h"

namespace sightline {

struct AuthOptions {
  //! How long a valid token is trusted without asking the store again: the
  //! most a revoked token keeps working on a running server. 0 = always ask.
  int64_t token_cache_ttl_ms = 10000;
};

//! Thread-safe. Does not own the state store, which must outlive it.
class Authenticator {
 public:
  Authenticator(AuthOptions options, StateStore* state, TokenCache::Clock clock = nullptr);

  //! Project of an `Authorization` header value `Bearer <token>` (scheme in
  //! any case) for a token of `scope`. Unauthenticated when missing,
  //! malformed, unknown or revoked; PermissionDenied when the token is valid
  //! but of the other scope; Unavailable when the store could not be asked
  //! (the client may retry).
  Result<int64_t> ProjectForBearer(std::string_view authorization, TokenScope scope);
  //! The same for the token itself.
  Result<int64_t> ProjectForToken(std::string_view token, TokenScope scope);

  //! A new session id (plaintext, for the cookie) when the password matches;
  //! Unauthenticated when it does not or the user is unknown.
  Result<std::string> Login(const std::string& username, std::string_view password, int64_t ttl_seconds);
  //! The user of a live session, or nullopt.
  Result<std::optional<std::string>> SessionUser(std::string_view session_id);
  Status Logout(std::string_view session_id);

 private:
  StateStore* const state_;
  TokenCache cache_;
};

}  // namespace sightline
