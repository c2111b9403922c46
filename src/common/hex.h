#pragma once

#include <string>
#include <string_view>

namespace sightline {

//! Appends the lowercase hex form of bytes.
void AppendHex(std::string* out, std::string_view bytes);
//! Decodes hex (either case); false on odd length or a non-hex character.
bool DecodeHex(std::string_view hex, std::string* out);

}  // namespace sightline
