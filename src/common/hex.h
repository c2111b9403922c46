#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sightline {

//! Appends the lowercase hex form of bytes.
void AppendHex(std::string* out, std::string_view bytes);
//! Decodes hex (either case); false on odd length or a non-hex character.
bool DecodeHex(std::string_view hex, std::string* out);

//! Trace and span ids are stored as big-endian 64-bit halves (a 16-byte trace
//! id is high and low; an 8-byte span id is one). Bytes: `bytes` is 8 or 16
//! raw bytes; for 8, *high is 0.
void IdFromBytes(std::string_view bytes, uint64_t* high, uint64_t* low);
//! The same from 16 or 32 hex characters (either case); false otherwise.
bool IdFromHex(std::string_view hex, uint64_t* high, uint64_t* low);
//! 16 lowercase hex characters of v.
std::string HexU64(uint64_t v);
//! A trace id's 32 lowercase hex characters; "" when both halves are 0 (absent).
std::string TraceIdHex(uint64_t high, uint64_t low);

}  // namespace sightline
