#pragma once

// Oracles shared by the OTLP decoder fuzzers: structural invariants every
// decoded batch must satisfy, a strict JSON syntax check for the JSON-text
// columns, and a column-by-column batch comparison for differential runs
// (protobuf vs JSON form of the same request). A violated check prints what
// broke and aborts, which libFuzzer reports as a crash.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/hex.h"
#include "model/batch.h"
#include "otlp/decoder.h"

namespace sightline::fuzz {

[[noreturn]] inline void Fail(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "fuzz check failed: %s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

inline void Check(bool ok, const char* what, std::string_view detail = {}) {
  if (!ok) Fail(what, detail);
}

//! Strict JSON syntax (RFC 8259), no depth limit beyond the stack.
class JsonSyntax {
 public:
  static bool Valid(std::string_view s) {
    JsonSyntax p(s);
    p.Ws();
    if (!p.Value()) return false;
    p.Ws();
    return p.i_ == s.size();
  }

 private:
  explicit JsonSyntax(std::string_view s) : s_(s) {}
  bool Eof() const { return i_ >= s_.size(); }
  char Peek() const { return Eof() ? '\0' : s_[i_]; }
  void Ws() {
    while (!Eof() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool Lit(const char* w) {
    size_t n = std::strlen(w);
    if (s_.substr(i_, n) != w) return false;
    i_ += n;
    return true;
  }
  bool Value() {
    switch (Peek()) {
      case '{': return Object();
      case '[': return Array();
      case '"': return String();
      case 't': return Lit("true");
      case 'f': return Lit("false");
      case 'n': return Lit("null");
      default: return Number();
    }
  }
  bool Object() {
    ++i_;
    Ws();
    if (Peek() == '}') return ++i_, true;
    for (;;) {
      Ws();
      if (Peek() != '"' || !String()) return false;
      Ws();
      if (Peek() != ':') return false;
      ++i_;
      Ws();
      if (!Value()) return false;
      Ws();
      if (Peek() == ',') {
        ++i_;
        continue;
      }
      if (Peek() == '}') return ++i_, true;
      return false;
    }
  }
  bool Array() {
    ++i_;
    Ws();
    if (Peek() == ']') return ++i_, true;
    for (;;) {
      Ws();
      if (!Value()) return false;
      Ws();
      if (Peek() == ',') {
        ++i_;
        continue;
      }
      if (Peek() == ']') return ++i_, true;
      return false;
    }
  }
  bool String() {
    ++i_;
    while (!Eof()) {
      unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c != '\\') continue;
      if (Eof()) return false;
      char e = s_[i_++];
      if (e == 'u') {
        for (int k = 0; k < 4; ++k) {
          if (Eof() || !std::isxdigit(static_cast<unsigned char>(s_[i_]))) return false;
          ++i_;
        }
      } else if (!std::strchr("\"\\/bfnrt", e) || e == '\0') {
        return false;
      }
    }
    return false;
  }
  bool Digits() {
    size_t start = i_;
    while (!Eof() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > start;
  }
  bool Number() {
    if (Peek() == '-') ++i_;
    if (Peek() == '0') {
      ++i_;
    } else if (!Digits()) {
      return false;
    }
    if (Peek() == '.') {
      ++i_;
      if (!Digits()) return false;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++i_;
      if (Peek() == '+' || Peek() == '-') ++i_;
      if (!Digits()) return false;
    }
    return true;
  }
  std::string_view s_;
  size_t i_ = 0;
};

inline void CheckJsonColumn(const StringColumn& c, const char* name, char open, bool allow_empty) {
  for (size_t i = 0; i < c.size(); ++i) {
    std::string_view v = c.Get(i);
    if (v.empty() && allow_empty) continue;
    Check(!v.empty() && (open == 0 || v.front() == open), name, v);
    Check(JsonSyntax::Valid(v), name, v);
  }
}

inline void CheckSize(size_t got, size_t want, const char* column) {
  if (got != want) Fail("column length differs from row count", column);
}

//! The memory bound of issue #10 as an invariant: decoding with a budget of
//! 16 times the body plus 64 KiB charges at most that, has charged at least
//! what its batch holds when it succeeds, and otherwise stops with 413 (or
//! 400 for a malformed body). `decode(body, batch, rejected, limits)`.
template <typename Batch, typename DecodeFn>
void CheckDecodeBudget(std::string_view body, DecodeFn decode) {
  DecodeLimits limits;
  limits.max_decode_bytes = 16 * body.size() + (64u << 10);
  size_t charged = 0;
  limits.charge = [&charged](size_t more) {
    charged += more;
    return Status::Ok();
  };
  Batch batch;
  batch.project_id = 1;
  Rejections rejected;
  Status st = decode(body, &batch, &rejected, limits);
  Check(charged <= limits.max_decode_bytes, "decoding charged more than its budget");
  if (st.ok()) {
    Check(batch.ByteSize() <= charged, "the batch holds more than decoding charged");
  } else {
    Check(st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kPayloadTooLarge,
          "decode error under a budget is neither 400 nor 413", st.ToString());
  }
}

inline void CheckRejections(const Rejections& r) {
  Check(r.count >= 0, "negative rejection count");
  // Every rejected item and every cut is under exactly one reason.
  int64_t rejected = 0, cut = 0;
  for (const Rejections::Reason& reason : r.reasons) {
    Check(reason.count > 0, "a reason with no count", r.Summary());
    (reason.detail.starts_with("rejected: ") ? rejected : cut) += reason.count;
  }
  Check(rejected == r.count, "rejection reasons add up to the rejected count", r.Summary());
  Check(cut == r.truncated, "cut reasons add up to the truncated count", r.Summary());
}

//! The resource table is aligned, its JSON valid, and every row's
//! resource_id is one of its rows.
inline void CheckResources(const ResourceTable& t, const std::vector<int64_t>& row_ids, const char* what) {
  const size_t n = t.rows();
  CheckSize(t.resource_attributes.size(), n, "resource_attributes");
  CheckSize(t.scope_name.size(), n, "scope_name");
  CheckSize(t.scope_version.size(), n, "scope_version");
  CheckSize(t.scope_attributes.size(), n, "scope_attributes");
  std::set<int64_t> ids(t.resource_id.begin(), t.resource_id.end());
  for (int64_t id : row_ids) Check(ids.count(id) == 1, what, "row names a resource the batch lacks");
  CheckJsonColumn(t.resource_attributes, what, '{', false);
  CheckJsonColumn(t.scope_attributes, what, '{', false);
}

inline void CheckInvariants(const SpanBatch& b) {
  const size_t n = b.rows();
#define SL_SIZE(col) CheckSize(b.col.size(), n, #col)
  SL_SIZE(trace_id_high);
  SL_SIZE(trace_id_low);
  SL_SIZE(span_id);
  SL_SIZE(parent_span_id);
  SL_SIZE(trace_state);
  SL_SIZE(flags);
  SL_SIZE(name);
  SL_SIZE(kind);
  SL_SIZE(end_time_ns);
  SL_SIZE(status_code);
  SL_SIZE(status_message);
  SL_SIZE(service_name);
  SL_SIZE(http_route);
  SL_SIZE(http_method);
  SL_SIZE(http_status_code);
  SL_SIZE(db_system);
  SL_SIZE(exception_type);
  SL_SIZE(exception_message);
  SL_SIZE(exception_group);
  SL_SIZE(attributes);
  SL_SIZE(events);
  SL_SIZE(links);
  SL_SIZE(dropped_attributes_count);
  SL_SIZE(dropped_events_count);
  SL_SIZE(dropped_links_count);
  SL_SIZE(resource_id);
#undef SL_SIZE
  for (size_t i = 0; i < n; ++i) {
    Check(b.trace_id_high[i] != 0 || b.trace_id_low[i] != 0, "span trace_id is all zero");
    Check(b.span_id[i] != 0, "span span_id is all zero");
    Check(b.start_time_ns[i] >= 0 && b.end_time_ns[i] >= 0, "span times are non-negative");
  }
  CheckJsonColumn(b.attributes, "span attributes", '{', false);
  CheckJsonColumn(b.events, "span events", '[', true);  // "" when none
  CheckJsonColumn(b.links, "span links", '[', true);
  CheckResources(b.resources, b.resource_id, "span");
}

inline void CheckInvariants(const LogBatch& b) {
  const size_t n = b.rows();
#define SL_SIZE(col) CheckSize(b.col.size(), n, #col)
  SL_SIZE(observed_time_ns);
  SL_SIZE(severity_number);
  SL_SIZE(severity_text);
  SL_SIZE(body);
  SL_SIZE(body_type);
  SL_SIZE(trace_id_high);
  SL_SIZE(trace_id_low);
  SL_SIZE(span_id);
  SL_SIZE(flags);
  SL_SIZE(service_name);
  SL_SIZE(attributes);
  SL_SIZE(dropped_attributes_count);
  SL_SIZE(resource_id);
  SL_SIZE(event_name);
  SL_SIZE(exception_type);
  SL_SIZE(exception_message);
  SL_SIZE(exception_group);
#undef SL_SIZE
  for (size_t i = 0; i < n; ++i) {
    auto type = static_cast<AnyValueType>(b.body_type[i]);
    Check(b.body_type[i] <= static_cast<uint8_t>(AnyValueType::kBytes), "log body_type");
    if (type == AnyValueType::kEmpty) Check(b.body.Get(i).empty(), "empty body has text", b.body.Get(i));
    if (type != AnyValueType::kString && type != AnyValueType::kEmpty) {
      Check(JsonSyntax::Valid(b.body.Get(i)), "log body JSON", b.body.Get(i));
    }
  }
  CheckJsonColumn(b.attributes, "log attributes", '{', false);
  CheckResources(b.resources, b.resource_id, "log");
}

inline void CheckInvariants(const MetricBatch& b) {
  const size_t s = b.series_rows();
#define SL_SIZE(col) CheckSize(b.col.size(), s, #col)
  SL_SIZE(metric_name);
  SL_SIZE(metric_type);
  SL_SIZE(unit);
  SL_SIZE(description);
  SL_SIZE(temporality);
  SL_SIZE(is_monotonic);
  SL_SIZE(service_name);
  SL_SIZE(series_resource);
  SL_SIZE(attributes);
#undef SL_SIZE
  for (uint32_t r : b.series_resource) Check(r < b.resources.rows(), "series names a resource row the batch lacks");
  CheckResources(b.resources, {}, "metric");
  const size_t n = b.rows();
#define SL_SIZE(col) CheckSize(b.col.size(), n, #col)
  SL_SIZE(point_series_id);
  SL_SIZE(start_time_ns);
  SL_SIZE(value);
  SL_SIZE(int_value);
  SL_SIZE(is_int);
  SL_SIZE(count);
  SL_SIZE(sum);
  SL_SIZE(min);
  SL_SIZE(max);
  SL_SIZE(bucket_counts);
  SL_SIZE(explicit_bounds);
  SL_SIZE(exp_histogram);
  SL_SIZE(quantiles);
  SL_SIZE(exemplars);
  SL_SIZE(flags);
#undef SL_SIZE
  std::unordered_set<int64_t> series(b.series_id.begin(), b.series_id.end());
  Check(series.size() == s, "series_id rows are not unique within the batch");
  for (size_t i = 0; i < s; ++i) {
    Check(!b.metric_name.Get(i).empty(), "series without a metric name");
    Check(b.metric_type[i] >= 1 && b.metric_type[i] <= 5, "metric_type out of range");
  }
  // Every point references a series row of this batch. (The converse, every
  // series has a point, does not hold today: see DecodeMetricsTest
  // DISABLED_RejectedPointLeavesNoOrphanSeries.)
  for (size_t i = 0; i < n; ++i) {
    Check(series.count(b.point_series_id[i]) == 1, "point references a series missing from the batch");
  }
  CheckJsonColumn(b.attributes, "metric attributes", '{', false);
  CheckJsonColumn(b.bucket_counts, "bucket_counts", '[', true);
  CheckJsonColumn(b.explicit_bounds, "explicit_bounds", '[', true);
  CheckJsonColumn(b.exp_histogram, "exp_histogram", '{', true);
  CheckJsonColumn(b.quantiles, "quantiles", '[', true);
  CheckJsonColumn(b.exemplars, "exemplars", '[', true);
}

// --- batch comparison (differential runs) -------------------------------------

inline bool Same(const StringColumn& a, const StringColumn& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.Get(i) != b.Get(i)) return false;
  }
  return true;
}
template <typename T>
bool Same(const std::vector<T>& a, const std::vector<T>& b) {
  return a == b;
}
//! NaN equals NaN; otherwise bit-exact (so -0 differs from 0).
inline bool Same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) return false;
  }
  return true;
}

#define SL_SAME(col) \
  if (!Same(a.col, b.col)) Fail("protobuf and JSON decodes differ in column", #col)

inline void CheckSame(const SpanBatch& a, const SpanBatch& b) {
  SL_SAME(trace_id_high);
  SL_SAME(trace_id_low);
  SL_SAME(span_id);
  SL_SAME(parent_span_id);
  SL_SAME(trace_state);
  SL_SAME(flags);
  SL_SAME(name);
  SL_SAME(kind);
  SL_SAME(start_time_ns);
  SL_SAME(end_time_ns);
  SL_SAME(status_code);
  SL_SAME(status_message);
  SL_SAME(service_name);
  SL_SAME(http_route);
  SL_SAME(http_method);
  SL_SAME(http_status_code);
  SL_SAME(db_system);
  SL_SAME(exception_type);
  SL_SAME(exception_message);
  SL_SAME(exception_group);
  SL_SAME(attributes);
  SL_SAME(events);
  SL_SAME(links);
  SL_SAME(dropped_attributes_count);
  SL_SAME(dropped_events_count);
  SL_SAME(dropped_links_count);
  SL_SAME(resource_id);
  SL_SAME(resources.resource_id);
  SL_SAME(resources.resource_attributes);
  SL_SAME(resources.scope_name);
  SL_SAME(resources.scope_version);
  SL_SAME(resources.scope_attributes);
}

inline void CheckSame(const LogBatch& a, const LogBatch& b) {
  SL_SAME(time_ns);
  SL_SAME(observed_time_ns);
  SL_SAME(severity_number);
  SL_SAME(severity_text);
  SL_SAME(body);
  SL_SAME(body_type);
  SL_SAME(trace_id_high);
  SL_SAME(trace_id_low);
  SL_SAME(span_id);
  SL_SAME(flags);
  SL_SAME(service_name);
  SL_SAME(attributes);
  SL_SAME(dropped_attributes_count);
  SL_SAME(resource_id);
  SL_SAME(event_name);
  SL_SAME(exception_type);
  SL_SAME(exception_message);
  SL_SAME(exception_group);
  SL_SAME(resources.resource_id);
  SL_SAME(resources.resource_attributes);
  SL_SAME(resources.scope_name);
  SL_SAME(resources.scope_version);
  SL_SAME(resources.scope_attributes);
}

inline void CheckSame(const MetricBatch& a, const MetricBatch& b) {
  SL_SAME(series_id);
  SL_SAME(metric_name);
  SL_SAME(metric_type);
  SL_SAME(unit);
  SL_SAME(description);
  SL_SAME(temporality);
  SL_SAME(is_monotonic);
  SL_SAME(service_name);
  SL_SAME(series_resource);
  SL_SAME(resources.resource_id);
  SL_SAME(resources.resource_attributes);
  SL_SAME(resources.scope_name);
  SL_SAME(resources.scope_version);
  SL_SAME(attributes);
  SL_SAME(point_series_id);
  SL_SAME(time_ns);
  SL_SAME(start_time_ns);
  SL_SAME(value);
  SL_SAME(int_value);
  SL_SAME(is_int);
  SL_SAME(count);
  SL_SAME(sum);
  SL_SAME(min);
  SL_SAME(max);
  SL_SAME(bucket_counts);
  SL_SAME(explicit_bounds);
  SL_SAME(exp_histogram);
  SL_SAME(quantiles);
  SL_SAME(exemplars);
  SL_SAME(flags);
}

#undef SL_SAME

inline void CheckSameRejections(const Rejections& a, const Rejections& b) {
  if (a.count != b.count) {
    Fail("protobuf and JSON decodes reject different numbers of items", a.Summary() + " | " + b.Summary());
  }
}

// --- id forms (differential runs) ----------------------------------------------
// A request in protobuf form carries raw id bytes; the decoder's JSON path
// sees the base64-decoded bytes of the hex text. These convert a parsed
// request between the two so one request can be decoded both ways.

inline bool IsIdField(const google::protobuf::FieldDescriptor* f) {
  return f->type() == google::protobuf::FieldDescriptor::TYPE_BYTES &&
         (f->name() == "trace_id" || f->name() == "span_id" || f->name() == "parent_span_id");
}

inline int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

//! Decodes unpadded base64 whose length is a multiple of 4.
inline std::string Base64Decode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i + 3 < in.size(); i += 4) {
    uint32_t n = 0;
    for (int k = 0; k < 4; ++k) n = n << 6 | static_cast<uint32_t>(Base64Value(in[i + k]));
    out.push_back(static_cast<char>(n >> 16));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n));
  }
  return out;
}

inline std::string Base64Encode(std::string_view in) {
  static const char* kTable = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t n = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
    for (int k = 3; k >= 0; --k) out.push_back(kTable[(n >> (6 * k)) & 63]);
  }
  if (i < in.size()) out += "==";  // any remainder: padded, hence never all hex
  return out;
}

//! Visits every id field of `m` (recursively); `fn(std::string*)` rewrites a
//! non-empty id and returns false to give up.
template <typename Fn>
bool RewriteIds(google::protobuf::Message* m, Fn& fn) {
  const auto* d = m->GetDescriptor();
  const auto* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* f = d->field(i);
    if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int j = 0; j < r->FieldSize(*m, f); ++j) {
          if (!RewriteIds(r->MutableRepeatedMessage(m, f, j), fn)) return false;
        }
      } else if (r->HasField(*m, f)) {
        if (!RewriteIds(r->MutableMessage(m, f), fn)) return false;
      }
    } else if (IsIdField(f) && !f->is_repeated()) {
      std::string v = r->GetString(*m, f);
      if (v.empty()) continue;
      if (!fn(&v)) return false;
      r->SetString(m, f, std::move(v));
    }
  }
  return true;
}

//! Raw ids → what the JSON path sees for their hex text. False when an id's
//! hex is not a whole number of base64 quads (odd byte count): no JSON text
//! decodes to it the same way.
inline bool RawIdsToJsonForm(google::protobuf::Message* m) {
  auto fn = [](std::string* id) {
    std::string hex;
    AppendHex(&hex, *id);
    if (hex.size() % 4 != 0) return false;
    *id = Base64Decode(hex);
    return true;
  };
  return RewriteIds(m, fn);
}

//! JSON-path ids → raw ids: the hex text decoded, or a one-byte id (invalid
//! for every id field) when the text is not hex.
inline void JsonFormIdsToRaw(google::protobuf::Message* m) {
  auto fn = [](std::string* id) {
    std::string text = Base64Encode(*id), raw;
    if (!DecodeHex(text, &raw)) raw = "\x01";
    *id = raw;
    return true;
  };
  RewriteIds(m, fn);
}

}  // namespace sightline::fuzz
