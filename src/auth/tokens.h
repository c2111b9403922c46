#pragma once

// API tokens. Each has one scope (state/state_store.h TokenScope): an ingest
// token sends telemetry to its project, a read token reads it through
// /api/v1; neither does the other. A minted token is "sl_" and 64 hex characters (256
// random bits), so a plain SHA-256 is enough to store it (no KDF: there is
// nothing to brute-force); its plaintext exists only in the output of the
// command that minted it. A token is named by its id, the first
// kTokenIdLength hex characters of its hash: enough to tell tokens apart,
// safe to print and to pass to `sightline token revoke`.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "state/state_store.h"

namespace sightline {

inline constexpr size_t kMinTokenLength = 8;
inline constexpr size_t kTokenIdLength = 12;

//! What a stored token is keyed by: SHA-256, lowercase hex.
std::string HashToken(std::string_view token);
//! The printable id of a stored hash.
std::string TokenId(std::string_view hash);

//! What `token list` shows of a token: never the token, nor its whole hash.
struct TokenInfo {
  std::string id;
  std::string project;
  TokenScope scope = TokenScope::kIngest;
  int64_t created_at = 0;  // unix seconds
};

//! What a valid token grants: its project, for its scope only.
struct TokenGrant {
  int64_t project_id = 0;
  TokenScope scope = TokenScope::kIngest;
  bool operator==(const TokenGrant&) const = default;
};

//! Mints a new random token of that scope for the project (created when
//! missing) and returns its plaintext.
Result<std::string> MintToken(StateStore* state, const std::string& project, TokenScope scope = TokenScope::kIngest);
//! Stores a caller-chosen token (SIGHTLINE_INGEST_TOKEN); InvalidArgument when
//! shorter than kMinTokenLength. Adding a stored token again changes nothing
//! (neither its project nor its scope).
Status AddToken(StateStore* state, const std::string& project, std::string_view token,
                TokenScope scope = TokenScope::kIngest);
//! What a token grants, or nullopt when it is unknown (or revoked).
Result<std::optional<TokenGrant>> FindToken(StateStore* state, std::string_view token);
//! The project's tokens, oldest first.
Result<std::vector<TokenInfo>> ListTokens(StateStore* state, const std::string& project);
//! Deletes the one token whose hash starts with `id` (at least 8 hex
//! characters, as `ListTokens` prints them or longer). InvalidArgument for a
//! malformed id or one that matches several tokens; NotFound when none.
//! A running server's token cache forgets the token within its TTL.
Result<TokenInfo> RevokeToken(StateStore* state, std::string_view id);

}  // namespace sightline
