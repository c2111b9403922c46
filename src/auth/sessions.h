#pragma once

// UI sessions: a random 256-bit id goes to the browser (the sl_session
// cookie) once; the store keeps only its SHA-256 and an expiry. Sessions are
// looked up on every API call (no cache), so logging out ends one at once.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "state/state_store.h"

namespace sightline {

//! Unix seconds from the system clock.
int64_t UnixSeconds();

//! A new session for the user, live until now + ttl_seconds; returns its id.
//! REQUIRES: the user exists.
Result<std::string> CreateSession(StateStore* state, const std::string& username, int64_t ttl_seconds, int64_t now);
//! The user of a session live at `now`, or nullopt (unknown, expired, ended).
Result<std::optional<std::string>> SessionUser(StateStore* state, std::string_view session_id, int64_t now);
//! Ends the session (and drops every session expired at `now`).
Status EndSession(StateStore* state, std::string_view session_id, int64_t now);

}  // namespace sightline
