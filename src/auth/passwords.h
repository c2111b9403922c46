#pragma once

// UI user passwords: PBKDF2-HMAC-SHA256, a fresh 16-byte salt per password,
// kPbkdf2Iterations rounds. Each record keeps its own iteration count, so the
// cost can be raised for new passwords without invalidating stored ones.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "state/state_store.h"

namespace sightline {

inline constexpr int64_t kPbkdf2Iterations = 100000;
inline constexpr size_t kMinPasswordLength = 8;

//! A new salted record for the password. InvalidArgument when shorter than
//! kMinPasswordLength; Internal without randomness.
Result<PasswordRecord> HashPassword(std::string_view password);
//! True when the password matches the record (constant-time comparison).
bool VerifyPassword(std::string_view password, const PasswordRecord& record);

//! Creates the user, or resets the password of an existing one, which ends
//! every session of that user.
Status SetUserPassword(StateStore* state, const std::string& username, std::string_view password);
//! SetUserPassword unless the user exists and already has this password: a
//! restart with the same --admin-password keeps everyone logged in, a new one
//! logs them out. Returns whether the password was set.
Result<bool> EnsureUserPassword(StateStore* state, const std::string& username, std::string_view password);
//! True when the user exists and the password matches. An unknown user is
//! hashed against a dummy record of the same cost, so the answer takes as long
//! as for a wrong password and does not tell which names exist.
Result<bool> CheckUserPassword(StateStore* state, const std::string& username, std::string_view password);

}  // namespace sightline
