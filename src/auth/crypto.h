#pragma once

// The primitives auth/ builds on (OpenSSL underneath). Nothing else in the
// tree calls OpenSSL for secrets, so the choice of algorithm is made here.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sightline {

//! SHA-256 of the bytes, as 64 lowercase hex characters.
std::string Sha256Hex(std::string_view bytes);

//! `bytes` bytes from the system CSPRNG, as lowercase hex. Internal when the
//! system has no randomness to give.
Result<std::string> RandomHex(size_t bytes);

//! PBKDF2-HMAC-SHA256 with a 32-byte output, as 64 lowercase hex characters.
//! The salt is used as the bytes given (auth stores it as hex text and feeds
//! that text, which is what every stored hash was computed with). "" when
//! `iterations` is outside 1..2^30 (a corrupt record must not verify).
std::string Pbkdf2Sha256Hex(std::string_view password, std::string_view salt, int64_t iterations);

//! Equality whose time depends only on the lengths, not on where the strings
//! differ: for comparing a computed secret with a stored one.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace sightline
