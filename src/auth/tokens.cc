#include "auth/tokens.h"

#include <algorithm>
#include <cctype>

#include "auth/crypto.h"

namespace sightline {

namespace {

bool IsLowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

TokenInfo Info(const TokenRecord& t) { return {TokenId(t.hash), t.project, t.scope, t.created_at}; }

}  // namespace

std::string HashToken(std::string_view token) { return Sha256Hex(token); }

std::string TokenId(std::string_view hash) { return std::string(hash.substr(0, kTokenIdLength)); }

Result<std::string> MintToken(StateStore* state, const std::string& project, TokenScope scope) {
  auto random = RandomHex(32);
  if (!random.ok()) return random.status();
  std::string token = "sl_" + *random;
  SL_RETURN_IF_ERROR(state->AddToken(project, HashToken(token), scope));
  return token;
}

Status AddToken(StateStore* state, const std::string& project, std::string_view token, TokenScope scope) {
  if (token.size() < kMinTokenLength) {
    return Status::InvalidArgument("a token must be at least " + std::to_string(kMinTokenLength) + " characters");
  }
  return state->AddToken(project, HashToken(token), scope);
}

Result<std::optional<TokenGrant>> FindToken(StateStore* state, std::string_view token) {
  // Nothing shorter was ever stored; no need to ask.
  if (token.size() < kMinTokenLength) return std::optional<TokenGrant>();
  auto found = state->FindToken(HashToken(token));
  if (!found.ok()) return found.status();
  if (!found->has_value()) return std::optional<TokenGrant>();
  return std::optional<TokenGrant>(TokenGrant{(*found)->project_id, (*found)->scope});
}

Result<std::vector<TokenInfo>> ListTokens(StateStore* state, const std::string& project) {
  auto tokens = state->ListTokens(project);
  if (!tokens.ok()) return tokens.status();
  std::vector<TokenInfo> out;
  out.reserve(tokens->size());
  for (const TokenRecord& t : *tokens) out.push_back(Info(t));
  return out;
}

Result<TokenInfo> RevokeToken(StateStore* state, std::string_view id) {
  std::string prefix(id);
  std::transform(prefix.begin(), prefix.end(), prefix.begin(), [](unsigned char c) { return std::tolower(c); });
  if (prefix.size() < 8 || prefix.size() > 64 || !IsLowerHex(prefix)) {
    return Status::InvalidArgument("a token id is 8 to 64 hex characters, as `sightline token list` prints it");
  }
  auto tokens = state->ListTokens(std::nullopt);
  if (!tokens.ok()) return tokens.status();
  const TokenRecord* match = nullptr;
  for (const TokenRecord& t : *tokens) {
    if (!t.hash.starts_with(prefix)) continue;
    if (match) return Status::InvalidArgument("token id " + prefix + " matches several tokens: give more of it");
    match = &t;
  }
  if (!match) return Status::NotFound("no token with id " + prefix);
  auto deleted = state->DeleteToken(match->hash);
  if (!deleted.ok()) return deleted.status();
  if (!*deleted) return Status::NotFound("no token with id " + prefix + " (revoked meanwhile)");
  return Info(*match);
}

}  // namespace sightline
