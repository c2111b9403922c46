#include "auth/sessions.h"

#include <chrono>

#include "auth/crypto.h"

namespace sightline {

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Result<std::string> CreateSession(StateStore* state, const std::string& username, int64_t ttl_seconds, int64_t now) {
  auto id = RandomHex(32);
  if (!id.ok()) return id.status();
  SL_RETURN_IF_ERROR(state->AddSession(SessionRecord{Sha256Hex(*id), username, now + ttl_seconds}));
  return std::move(id.value());
}

Result<std::optional<std::string>> SessionUser(StateStore* state, std::string_view session_id, int64_t now) {
  if (session_id.empty()) return std::optional<std::string>();
  return state->FindSession(Sha256Hex(session_id), now);
}

Status EndSession(StateStore* state, std::string_view session_id, int64_t now) {
  return state->DeleteSession(Sha256Hex(session_id), now);
}

}  // namespace sightline
