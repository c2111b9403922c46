#include "query/api_params.h"

#include <charconv>
#include <chrono>
#include <cmath>

#include "common/hex.h"

namespace sightline {

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool UrlDecode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+') {
      out->push_back(' ');
    } else if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = HexDigit(in[i + 1]), lo = HexDigit(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi << 4 | lo));
      i += 2;
    } else {
      out->push_back(c);
    }
  }
  return true;
}

Result<int64_t> ParseInt(const std::string& name, const std::string& v, int64_t min, int64_t max) {
  int64_t out = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size()) {
    return Status::InvalidArgument("parameter '" + name + "' must be an integer, got '" + v + "'");
  }
  if (out < min || out > max) {
    return Status::InvalidArgument("parameter '" + name + "' must be between " + std::to_string(min) + " and " +
                                   std::to_string(max));
  }
  return out;
}

}  // namespace

Result<ApiParams> ApiParams::Parse(std::string_view query) {
  ApiParams p;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string key, value;
    if (!UrlDecode(pair.substr(0, eq), &key) ||
        !UrlDecode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), &value)) {
      return Status::InvalidArgument("malformed percent-encoding in the query string");
    }
    p.values_.emplace(std::move(key), std::move(value));
  }
  return p;
}

std::optional<std::string> ApiParams::Get(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::vector<std::string> ApiParams::GetAll(const std::string& key) const {
  std::vector<std::string> out;
  auto [b, e] = values_.equal_range(key);
  for (auto it = b; it != e; ++it) {
    if (!it->second.empty()) out.push_back(it->second);
  }
  return out;
}

namespace api {

Result<int64_t> IntParam(const ApiParams& p, const std::string& name, int64_t def, int64_t min, int64_t max) {
  auto v = p.Get(name);
  if (!v) return def;
  return ParseInt(name, *v, min, max);
}

Result<double> ParseDouble(const std::string& name, const std::string& v) {
  double out = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size() || !std::isfinite(out) || out < 0) {
    return Status::InvalidArgument("parameter '" + name + "' must be a non-negative number, got '" + v + "'");
  }
  return out;
}

Result<MsRange> ParseRange(const ApiParams& p) {
  int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  constexpr double kMaxMs = 9223372036854.0;  // keeps ns arithmetic inside int64
  auto ms = [&](const char* name, int64_t def) -> Result<int64_t> {
    auto v = p.Get(name);
    if (!v) return def;
    auto d = ParseDouble(name, *v);
    if (!d.ok()) return d.status();
    if (*d > kMaxMs) return Status::InvalidArgument(std::string("parameter '") + name + "' is out of range");
    return static_cast<int64_t>(std::floor(*d));
  };
  auto to = ms("to", now_ms);
  if (!to.ok()) return to.status();
  auto from = ms("from", *to - 3600 * 1000);
  if (!from.ok()) return from.status();
  if (*from >= *to) return Status::InvalidArgument("'from' must be before 'to'");
  return MsRange{*from, *to};
}

Result<int64_t> ParseStep(const ApiParams& p, const MsRange& r) {
  auto v = p.Get("step_ms");
  int64_t span = r.to_ms - r.from_ms;
  if (v) {
    auto step = ParseInt("step_ms", *v, 1, span);
    if (!step.ok()) return step.status();
    if (span / *step > 2000) return Status::InvalidArgument("step_ms gives more than 2000 buckets over the range");
    return *step;
  }
  static const int64_t kNice[] = {1000,     2000,     5000,     10000,    15000,    30000,   60000,
                                  120000,   300000,   600000,   900000,   1800000,  3600000, 7200000,
                                  10800000, 21600000, 43200000, 86400000, 604800000};
  int64_t want = std::max<int64_t>(1, span / 60);
  for (int64_t n : kNice) {
    if (n >= want) return n;
  }
  return want;
}

MsRange AlignToStep(const MsRange& r, int64_t step_ms) {
  auto floor_to = [step_ms](int64_t t) {
    int64_t q = t / step_ms;
    if (t % step_ms != 0 && t < 0) --q;
    return q * step_ms;
  };
  const int64_t from = floor_to(r.from_ms);
  int64_t to = floor_to(r.to_ms);
  // Past the largest time in ns the end stays where it was asked.
  if (to < r.to_ms) to = to > INT64_MAX / kNsPerMs - step_ms ? r.to_ms : to + step_ms;
  return MsRange{from, to};
}

Buckets BucketsOf(const MsRange& r, int64_t step_ms) {
  return Buckets{r.from_ms * kNsPerMs, step_ms * kNsPerMs, (r.to_ms - r.from_ms + step_ms - 1) / step_ms};
}

Result<std::vector<AttrFilter>> AttrFilters(const ApiParams& p, const std::string& name) {
  std::vector<AttrFilter> out;
  for (const auto& v : p.GetAll(name)) {
    size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("parameter '" + name + "' must be key=value, got '" + v + "'");
    }
    out.push_back({v.substr(0, eq), v.substr(eq + 1)});
  }
  return out;
}

Result<std::vector<AttrFilter>> AttrConditions(const ApiParams& p, const std::string& name) {
  std::vector<AttrFilter> out;
  for (const auto& v : p.GetAll(name)) {
    size_t op_at = std::string::npos;
    for (size_t i = 0; i < v.size() && op_at == std::string::npos; ++i) {
      if (v[i] == '=' || v[i] == '<' || v[i] == '>' || (v[i] == '!' && i + 1 < v.size() && v[i + 1] == '=')) op_at = i;
    }
    AttrFilter f;
    if (op_at == std::string::npos) {
      f.key = v;
      f.op = AttrOp::kExists;
    } else {
      f.key = v.substr(0, op_at);
      const char c = v[op_at];
      f.op = c == '=' ? AttrOp::kEq : c == '!' ? AttrOp::kNe : c == '>' ? AttrOp::kGt : AttrOp::kLt;
      f.value = v.substr(op_at + (c == '!' ? 2 : 1));
    }
    if (f.key.empty()) {
      return Status::InvalidArgument("parameter '" + name +
                                     "' must be key=value, key!=value, key>number, key<number or key, got '" + v + "'");
    }
    if (f.op == AttrOp::kGt || f.op == AttrOp::kLt) {
      double number = 0;
      auto r = std::from_chars(f.value.data(), f.value.data() + f.value.size(), number);
      if (f.value.empty() || r.ec != std::errc() || r.ptr != f.value.data() + f.value.size() ||
          !std::isfinite(number)) {
        return Status::InvalidArgument("parameter '" + name + "': '" + f.value + "' in '" + v + "' is not a number");
      }
      f.number = number;
      f.value.clear();
    }
    out.push_back(std::move(f));
  }
  return out;
}

Result<TraceId> ParseTraceId(const std::string& name, const std::string& hex) {
  TraceId id;
  // 16 hex characters are a 64-bit id (Zipkin, Jaeger, B3), stored as OTLP
  // carries it: the low half of a 128-bit id whose high half is zero.
  if ((hex.size() != 32 && hex.size() != 16) || !IdFromHex(hex, &id.high, &id.low)) {
    return Status::InvalidArgument(name + " must be 32 hex characters (or 16 for a 64-bit id)");
  }
  return id;
}

}  // namespace api

}  // namespace sightline
