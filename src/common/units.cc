#include "common/units.h"

#include <cctype>
#include <limits>

namespace sightline {
namespace {

//! Reads the leading digits of `text` into *value; false when there are none
//! or they overflow uint64. Leaves the rest in *rest.
bool LeadingNumber(std::string_view text, uint64_t* value, std::string_view* rest) {
  size_t i = 0;
  uint64_t v = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    v = v * 10 + digit;
    ++i;
  }
  if (i == 0) return false;
  *value = v;
  *rest = text.substr(i);
  return true;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Result<int64_t> ParseDurationSeconds(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a duration: use a number and a unit, s, m, h, d or w (e.g. 7d, 12h, 30m)");
  };
  uint64_t n = 0;
  std::string_view unit;
  if (!LeadingNumber(text, &n, &unit)) return bad();
  uint64_t scale = 0;
  if (unit.empty() && n == 0) return int64_t{0};
  if (unit == "s") scale = 1;
  else if (unit == "m") scale = 60;
  else if (unit == "h") scale = 3600;
  else if (unit == "d") scale = 86400;
  else if (unit == "w") scale = 7 * 86400;
  else return bad();
  // Retention cutoffs are computed in nanoseconds.
  constexpr uint64_t kMaxSeconds = static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / 1'000'000'000);
  if (n > kMaxSeconds / scale) return Status::InvalidArgument("duration '" + std::string(text) + "' is too long");
  return static_cast<int64_t>(n * scale);
}

std::string FormatDuration(int64_t seconds) {
  struct Unit {
    int64_t seconds;
    const char* suffix;
  };
  for (Unit u : {Unit{7 * 86400, "w"}, Unit{86400, "d"}, Unit{3600, "h"}, Unit{60, "m"}}) {
    if (seconds != 0 && seconds % u.seconds == 0) return std::to_string(seconds / u.seconds) + u.suffix;
  }
  return std::to_string(seconds) + "s";
}

Result<uint64_t> ParseByteSize(std::string_view text) {
  auto bad = [&] {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a byte size: use a number and optionally a unit (B, KB, MB, GB, TB, KiB, "
                                   "MiB, GiB, TiB)");
  };
  uint64_t n = 0;
  std::string_view rest;
  if (!LeadingNumber(text, &n, &rest)) return bad();
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  const std::string unit = Lower(rest);
  uint64_t scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "kb") scale = 1000;
  else if (unit == "mb") scale = 1000 * 1000;
  else if (unit == "gb") scale = 1000 * 1000 * 1000;
  else if (unit == "tb") scale = 1000ull * 1000 * 1000 * 1000;
  else if (unit == "kib") scale = 1ull << 10;
  else if (unit == "mib") scale = 1ull << 20;
  else if (unit == "gib") scale = 1ull << 30;
  else if (unit == "tib") scale = 1ull << 40;
  else return bad();
  if (n > std::numeric_limits<uint64_t>::max() / scale) return bad();
  return n * scale;
}

}  // namespace sightline
