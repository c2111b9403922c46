#include "auth/passwords.h"

#include "auth/crypto.h"

namespace sightline {

Result<PasswordRecord> HashPassword(std::string_view password) {
  if (password.size() < kMinPasswordLength) {
    return Status::InvalidArgument("a password must be at least " + std::to_string(kMinPasswordLength) + " characters");
  }
  auto salt = RandomHex(16);
  if (!salt.ok()) return salt.status();
  PasswordRecord record;
  record.salt = std::move(salt.value());
  record.iterations = kPbkdf2Iterations;
  record.hash = Pbkdf2Sha256Hex(password, record.salt, record.iterations);
  return record;
}

bool VerifyPassword(std::string_view password, const PasswordRecord& record) {
  std::string got = Pbkdf2Sha256Hex(password, record.salt, record.iterations);
  return !got.empty() && ConstantTimeEquals(got, record.hash);
}

Status SetUserPassword(StateStore* state, const std::string& username, std::string_view password) {
  if (username.empty()) return Status::InvalidArgument("empty username");
  auto record = HashPassword(password);
  if (!record.ok()) return record.status();
  return state->PutUser(UserRecord{username, std::move(record.value())});
}

Result<bool> EnsureUserPassword(StateStore* state, const std::string& username, std::string_view password) {
  auto same = CheckUserPassword(state, username, password);
  if (!same.ok()) return same.status();
  if (*same) return false;
  SL_RETURN_IF_ERROR(SetUserPassword(state, username, password));
  return true;
}

Result<bool> CheckUserPassword(StateStore* state, const std::string& username, std::string_view password) {
  // No password hashes to an empty string, so this record never verifies.
  static const PasswordRecord kNobody{"00000000000000000000000000000000", "", kPbkdf2Iterations};
  auto user = state->FindUser(username);
  if (!user.ok()) return user.status();
  const PasswordRecord& record = user->has_value() ? (*user)->password : kNobody;
  return VerifyPassword(password, record) && user->has_value();
}

}  // namespace sightline
