#include "auth/authenticator.h"

#include <algorithm>
#include <cctype>

#include "auth/passwords.h"
#include "auth/sessions.h"
#include "auth/tokens.h"

namespace sightline {

Authenticator::Authenticator(AuthOptions options, StateStore* state, TokenCache::Clock clock)
    : state_(state), cache_(std::chrono::milliseconds(options.token_cache_ttl_ms), std::move(clock)) {}

namespace {

Status WrongScope(TokenScope wanted) {
  if (wanted == TokenScope::kRead) {
    return Status::PermissionDenied(
        "this is an ingest token: it can only send telemetry. Reading needs a read token (sightline token create "
        "--scope read) or a session (POST /api/v1/login)");
  }
  return Status::PermissionDenied(
      "this is a read token: it can only read through /api/v1. Sending telemetry needs an ingest token "
      "(sightline token create --scope ingest)");
}

}  // namespace

Result<int64_t> Authenticator::ProjectForBearer(std::string_view authorization, TokenScope scope) {
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.empty()) {
    return Status::Unauthenticated("missing Authorization header (want 'Authorization: Bearer <token>')");
  }
  if (authorization.size() <= kBearer.size() ||
      !std::equal(kBearer.begin(), kBearer.end(), authorization.begin(),
                  [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
    return Status::Unauthenticated("Authorization header is not 'Bearer <token>'");
  }
  std::string_view token = authorization.substr(kBearer.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  return ProjectForToken(token, scope);
}

Result<int64_t> Authenticator::ProjectForToken(std::string_view token, TokenScope scope) {
  if (token.size() < kMinTokenLength) return Status::Unauthenticated("unknown or revoked token");
  const std::string hash = HashToken(token);
  std::optional<TokenGrant> grant = cache_.Get(hash);
  if (!grant) {
    // Tokens minted by `sightline token create` while we run are found here.
    auto found = state_->FindToken(hash);
    if (!found.ok()) return Status::Unavailable("token lookup failed: " + found.status().message());
    if (!found->has_value()) return Status::Unauthenticated("unknown or revoked token");
    grant = TokenGrant{(*found)->project_id, (*found)->scope};
    cache_.Put(hash, *grant);
  }
  if (grant->scope != scope) return WrongScope(scope);
  return grant->project_id;
}

Result<std::string> Authenticator::Login(const std::string& username, std::string_view password, int64_t ttl_seconds) {
  auto ok = CheckUserPassword(state_, username, password);
  if (!ok.ok()) return ok.status();
  if (!*ok) return Status::Unauthenticated("wrong username or password");
  return CreateSession(state_, username, ttl_seconds, UnixSeconds());
}

Result<std::optional<std::string>> Authenticator::SessionUser(std::string_view session_id) {
  return sightline::SessionUser(state_, session_id, UnixSeconds());
}

Status Authenticator::Logout(std::string_view session_id) { return EndSession(state_, session_id, UnixSeconds()); }

}  // namespace sightline
