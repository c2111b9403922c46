#include "auth/authenticator.h"

#include <algorithm>
#include <cctype>

#include "auth/passwords.h"
#include "auth/sessions.h"
#include "auth/tokens.h"

namespace sightline {

Authenticator::Authenticator(AuthOptions options, StateStore* state, TokenCache::Clock clock)
    : state_(state), cache_(std::chrono::milliseconds(options.token_cache_ttl_ms), std::move(clock)) {}

Result<int64_t> Authenticator::ProjectForBearer(std::string_view authorization) {
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
  return ProjectForToken(token);
}

Result<int64_t> Authenticator::ProjectForToken(std::string_view token) {
  if (token.size() < kMinTokenLength) return Status::Unauthenticated("unknown or revoked token");
  const std::string hash = HashToken(token);
  if (auto cached = cache_.Get(hash)) return *cached;
  // Tokens minted by `sightline token create` while we run are found here.
  auto project = state_->FindToken(hash);
  if (!project.ok()) return Status::Unavailable("token lookup failed: " + project.status().message());
  if (!project->has_value()) return Status::Unauthenticated("unknown or revoked token");
  cache_.Put(hash, **project);
  return **project;
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
