#include "otlp/decoder.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "common/exception_group.h"
#include "common/hex.h"
#include "common/json_writer.h"
#include "model/ids.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "otlp/attributes.h"

namespace sightline {

namespace pb = google::protobuf;
namespace otlp_common = opentelemetry::proto::common::v1;
namespace otlp_trace = opentelemetry::proto::trace::v1;
namespace otlp_logs = opentelemetry::proto::logs::v1;
namespace otlp_metrics = opentelemetry::proto::metrics::v1;
using opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest;
using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;

Result<PayloadFormat> ParseContentType(std::string_view header) {
  std::string_view v = header.substr(0, header.find(';'));
  while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
  std::string lower;
  for (char c : v) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower == "application/x-protobuf" || lower == "application/protobuf") return PayloadFormat::kProtobuf;
  if (lower == "application/json") return PayloadFormat::kJson;
  return Status::UnsupportedMedia("unsupported Content-Type '" + std::string(header) +
                                  "' (use application/x-protobuf or application/json)");
}

Rejections::Reason* Rejections::Find(std::string_view noun, std::string_view detail) {
  for (Reason& r : reasons) {
    if (r.noun == noun && r.detail == detail) return &r;
  }
  reasons.push_back(Reason{std::string(noun), std::string(detail), 0, {}});
  return &reasons.back();
}

void Rejections::Reject(std::string_view item, std::string_view why, std::string_view example) {
  ++count;
  Reason* r = Find(item, "rejected: " + std::string(why));
  if (r->count++ == 0) r->example = std::string(example);
}

void Rejections::RejectMany(std::string_view item, std::string_view why, int64_t n) {
  if (n <= 0) return;
  count += n;
  Find(item, "rejected: " + std::string(why))->count += n;
}

void Rejections::Cut(std::string_view noun, std::string_view how, int64_t n) {
  if (n <= 0) return;
  truncated += n;
  Find(noun, how)->count += n;
}

std::string Rejections::Summary() const {
  std::string out;
  for (const Reason& r : reasons) {
    if (!out.empty()) out += "; ";
    out += std::to_string(r.count) + " " + r.noun + (r.count == 1 ? " " : "s ") + r.detail;
    if (!r.example.empty()) out += " (first: '" + r.example + "')";
  }
  return out;
}

namespace {

// protobuf reports why a parse failed (e.g. invalid UTF-8 in a string field)
// only through its log, to stderr: one line per bad request, which lets any
// client flood the server's log, while the client learns nothing. Capture the
// message on the parsing thread instead and return it in the 400.
thread_local std::string tls_protobuf_log;

void CaptureProtobufLog(pb::LogLevel level, const char* filename, int line, const std::string& message) {
  if (level >= pb::LOGLEVEL_FATAL) {
    std::fprintf(stderr, "[libprotobuf FATAL %s:%d] %s\n", filename, line, message.c_str());
    return;
  }
  tls_protobuf_log = message;
}

// SetLogHandler is not thread-safe: install it during static initialisation,
// before any thread parses.
[[maybe_unused]] const bool kProtobufLogCaptured = [] {
  pb::SetLogHandler(&CaptureProtobufLog);
  return true;
}();

// Thrown by the arena's block allocator when a request's decode memory would
// pass its budget, and caught in ArenaParser::Parse: protobuf's parser holds
// nothing outside the arena and its own stack objects, so unwinding through
// it leaks nothing, and the arena frees its blocks when it goes.
struct OverBudget {};

// Applies DecodeLimits to one request: cuts texts and lists (counting them
// for partial_success) and keeps what decoding holds, the arena's blocks
// plus the batch, under max_decode_bytes, charging it as it grows.
class Limiter {
 public:
  Limiter(const DecodeLimits& limits, Rejections* rejected)
      : limits_(limits), rejected_(rejected), attrs_{limits.max_attribute_value_bytes, limits.max_attributes} {}
  //! Reports what was cut, by kind and limit, to the request's Rejections.
  ~Limiter() {
    auto bytes = [](size_t n, const char* flag) { return "cut to " + std::to_string(n) + " bytes (" + flag + ")"; };
    auto past = [](size_t n, const char* per, const char* flag) {
      return "dropped past " + std::to_string(n) + " per " + per + " (" + flag + ")";
    };
    const std::string value_cut = bytes(limits_.max_attribute_value_bytes, "--max-attribute-value-bytes");
    rejected_->Cut("attribute value", value_cut, cuts_.values);
    rejected_->Cut("text", "(status messages, routes, exceptions, descriptions) " + value_cut, texts_);
    rejected_->Cut("attribute", past(limits_.max_attributes, "map", "--max-attributes"), cuts_.dropped + attributes_);
    rejected_->Cut("span event", past(limits_.max_span_events, "span", "--max-span-events"), events_);
    rejected_->Cut("span link", past(limits_.max_span_links, "span", "--max-span-links"), links_);
    rejected_->Cut("name", bytes(limits_.max_name_bytes, "--max-name-bytes"), names_);
    rejected_->Cut("service name", bytes(limits_.max_service_name_bytes, "--max-service-name-bytes"), services_);
  }
  Limiter(const Limiter&) = delete;
  Limiter& operator=(const Limiter&) = delete;

  size_t max_events() const { return limits_.max_span_events; }
  size_t max_links() const { return limits_.max_span_links; }
  std::string_view Name(std::string_view s) { return Cut(s, limits_.max_name_bytes, &names_); }
  std::string_view Text(std::string_view s) { return Cut(s, limits_.max_attribute_value_bytes, &texts_); }
  std::string_view Service(std::string_view s) { return Cut(s, limits_.max_service_name_bytes, &services_); }
  //! A span's events and links dropped past their limits.
  void DroppedEventsAndLinks(int64_t events, int64_t links) {
    events_ += events;
    links_ += links;
  }
  //! An attribute map as JSON within the limits; returns how many attributes
  //! were dropped (for the item's dropped_attributes_count).
  uint32_t Attributes(JsonWriter* w, const KeyValues& kvs) {
    const uint32_t dropped = WriteAttributes(w, kvs, attrs_, &cuts_);
    attributes_ += dropped;
    return dropped;
  }
  uint32_t Attributes(std::string* out, const KeyValues& kvs) {
    JsonWriter w(out);
    return Attributes(&w, kvs);
  }

  //! The batch now holds `bytes`. Checked every 64 rows and at the end: one
  //! row is bounded by the limits above.
  Status Hold(size_t bytes) {
    batch_bytes_ = bytes;
    return Update();
  }
  //! From the arena's block allocator (any depth inside protobuf).
  void ArenaBlock(size_t bytes) {
    arena_bytes_ += bytes;
    status_ = Update();
    if (!status_.ok()) throw OverBudget{};
  }
  const Status& status() const { return status_; }

 private:
  std::string_view Cut(std::string_view s, size_t max, int64_t* counter) {
    std::string_view kept = Utf8Prefix(s, max);
    if (kept.size() < s.size()) ++*counter;
    return kept;
  }
  Status Update() {
    const size_t now = arena_bytes_ + batch_bytes_;
    if (now > limits_.max_decode_bytes) {
      return Status::PayloadTooLarge("decoding this request would hold more than " +
                                     std::to_string(limits_.max_decode_bytes) +
                                     " bytes, the server's limit for a body of its size: send it in smaller requests");
    }
    if (now > charged_) {
      if (limits_.charge) SL_RETURN_IF_ERROR(limits_.charge(now - charged_));
      charged_ = now;
    }
    return Status::Ok();
  }

  const DecodeLimits& limits_;
  Rejections* rejected_;
  const AttributeLimits attrs_;
  AttributeCuts cuts_;  // values cut and attributes dropped inside values (kvlists)
  int64_t attributes_ = 0;
  int64_t texts_ = 0;
  int64_t names_ = 0;
  int64_t services_ = 0;
  int64_t events_ = 0;
  int64_t links_ = 0;
  size_t arena_bytes_ = 0;
  size_t batch_bytes_ = 0;
  size_t charged_ = 0;
  Status status_;
};

// The request being decoded on this thread, for the arena's allocator.
thread_local Limiter* tls_limiter = nullptr;

// Sets tls_limiter for one Decode* call.
class LimiterScope {
 public:
  explicit LimiterScope(Limiter* l) { tls_limiter = l; }
  ~LimiterScope() { tls_limiter = nullptr; }
  LimiterScope(const LimiterScope&) = delete;
  LimiterScope& operator=(const LimiterScope&) = delete;
};

void* ChargedBlockAlloc(size_t bytes) {
  if (tls_limiter != nullptr) tls_limiter->ArenaBlock(bytes);
  return ::operator new(bytes);
}

void ChargedBlockDealloc(void* block, size_t) { ::operator delete(block); }

// Builds what protobuf creates lazily on a first use, the generated
// descriptor pool and the JSON parser's type resolver, once, under a guard of
// our own. libprotobuf is not built with ThreadSanitizer, so when two decode
// threads race through its own lazy initialisation TSan sees no
// synchronisation and reports the descriptor pool's mutex as a data race
// (seen under CI's load); a static here is instrumented, and everything
// protobuf builds inside it happens-before every later decode.
void BuildProtobufLazyState() {
  [[maybe_unused]] static const bool built = [] {
    ExportTraceServiceRequest spans;
    ExportLogsServiceRequest logs;
    ExportMetricsServiceRequest metrics;
    return pb::util::JsonStringToMessage("{}", &spans).ok() && pb::util::JsonStringToMessage("{}", &logs).ok() &&
           pb::util::JsonStringToMessage("{}", &metrics).ok();
  }();
}

// Parses into an arena whose first block is reused by this thread, so a
// request's messages cost no malloc calls in the common case. Blocks past it
// are charged to the thread's Limiter.
class ArenaParser {
 public:
  static constexpr size_t kInitialBlock = 4 << 20;

  template <typename Message>
  static Result<Message*> Parse(pb::Arena* arena, std::string_view body, PayloadFormat format) {
    BuildProtobufLazyState();
    try {
      Message* msg = pb::Arena::CreateMessage<Message>(arena);
      if (format == PayloadFormat::kProtobuf) {
        tls_protobuf_log.clear();
        if (body.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
            !msg->ParseFromArray(body.data(), static_cast<int>(body.size()))) {
          std::string why = "malformed protobuf: cannot parse " + std::string(Message::descriptor()->name());
          if (!tls_protobuf_log.empty()) why += " (" + tls_protobuf_log + ")";
          return Status::InvalidArgument(why);
        }
        return msg;
      }
      pb::util::JsonParseOptions options;
      options.ignore_unknown_fields = true;
      auto st = pb::util::JsonStringToMessage(pb::StringPiece(body.data(), body.size()), msg, options);
      if (!st.ok()) {
        return Status::InvalidArgument("malformed OTLP JSON: " + std::string(st.message()));
      }
      return msg;
    } catch (const OverBudget&) {
      return tls_limiter->status();
    }
  }

  static pb::ArenaOptions Options() {
    thread_local std::unique_ptr<char[]> block(new char[kInitialBlock]);
    pb::ArenaOptions o;
    o.initial_block = block.get();
    o.initial_block_size = kInitialBlock;
    o.start_block_size = 1 << 20;
    o.max_block_size = 8 << 20;
    o.block_alloc = &ChargedBlockAlloc;
    o.block_dealloc = &ChargedBlockDealloc;
    return o;
  }
};

// Ids: protobuf carries raw bytes. The OTLP JSON mapping writes ids as hex,
// which protobuf's JSON parser reads as base64 — hex digits are all base64
// characters and ids are a multiple of 4 chars long, so the decode is
// lossless: re-encoding as base64 recovers the hex text exactly.
class IdReader {
 public:
  explicit IdReader(PayloadFormat format) : json_(format == PayloadFormat::kJson) {}

  // Reads an id of `bytes` (8 or 16) raw bytes as integers (IdFromBytes);
  // an empty id is 0. False when the id is malformed.
  bool ToInts(const std::string& raw, size_t bytes, uint64_t* high, uint64_t* low) {
    *high = *low = 0;
    if (raw.empty()) return true;
    if (!json_) {
      if (raw.size() != bytes) return false;
      IdFromBytes(raw, high, low);
      return true;
    }
    scratch_.clear();
    return ToHex(raw, bytes, &scratch_) && IdFromHex(scratch_, high, low);
  }

  bool ToHex(const std::string& raw, size_t bytes, std::string* hex) {
    if (raw.empty()) return true;
    if (!json_) {
      if (raw.size() != bytes) return false;
      AppendHex(hex, raw);
      return true;
    }
    // JSON: `raw` holds base64-decoded hex text; the hex has 2*bytes chars,
    // which base64-decode to 2*bytes*3/4 bytes.
    if (raw.size() != bytes * 2 * 3 / 4) return false;
    Base64(raw, hex);
    for (char& c : *hex) {
      if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
      else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
  }

 private:
  static void Base64(std::string_view in, std::string* out) {
    static const char* kTable = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i + 2 < in.size(); i += 3) {
      uint32_t n = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
      out->push_back(kTable[n >> 18]);
      out->push_back(kTable[(n >> 12) & 63]);
      out->push_back(kTable[(n >> 6) & 63]);
      out->push_back(kTable[n & 63]);
    }
  }

  bool json_;
  std::string scratch_;
};

// Resource + scope context shared by the rows of one scope block.
struct Context {
  std::string service_name;
  std::string resource_json;
  std::string scope_name;
  std::string scope_version;
  std::string scope_json;
  int64_t resource_id = 0;    // set by ResourceIdFor()
  uint32_t resource_row = 0;  // its row in the batch's table
  bool in_table = false;      // this block's resource row is in the batch's table

  void SetResource(const KeyValues& attrs, Limiter* limiter) {
    const std::string* svc = FindStringAttribute(attrs, "service.name");
    service_name = svc ? limiter->Service(*svc) : "";
    resource_json.clear();
    limiter->Attributes(&resource_json, attrs);
  }
  void SetScope(const otlp_common::InstrumentationScope& scope, Limiter* limiter) {
    scope_name = limiter->Name(scope.name());
    scope_version = limiter->Name(scope.version());
    scope_json.clear();
    limiter->Attributes(&scope_json, scope.attributes());
    in_table = false;
  }
  //! The block's resource_id for a row (or a new metric series): at the
  //! block's first one it is hashed and the resource row added to `table`
  //! (blocks without accepted rows do neither).
  int64_t ResourceIdFor(ResourceTable* table) {
    if (!in_table) {
      resource_id = ResourceId(resource_json, scope_name, scope_version, scope_json);
      resource_row = static_cast<uint32_t>(table->rows());
      table->resource_id.push_back(resource_id);
      table->resource_attributes.Append(resource_json);
      table->scope_name.Append(scope_name);
      table->scope_version.Append(scope_version);
      table->scope_attributes.Append(scope_json);
      in_table = true;
    }
    return resource_id;
  }
};

int64_t ToSigned(uint64_t ns) {
  return ns > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                         : static_cast<int64_t>(ns);
}

const std::string& FirstString(const KeyValues& attrs, std::initializer_list<std::string_view> keys) {
  static const std::string kEmpty;
  for (auto k : keys) {
    if (const std::string* s = FindStringAttribute(attrs, k)) return *s;
  }
  return kEmpty;
}

bool AppendSpan(const otlp_trace::Span& span, Context& ctx, IdReader* ids, Limiter* limiter, SpanBatch* out,
                Rejections* rejected) {
  // Validate ids before touching any column so a rejected span leaves no partial row.
  // Per-thread scratch, so the JSON text costs no malloc per span.
  thread_local std::string events_json, links_json;
  events_json.clear();
  links_json.clear();
  uint64_t trace_high, trace_low, span_id, unused, parent_id;
  if (!ids->ToInts(span.trace_id(), 16, &trace_high, &trace_low) || (trace_high == 0 && trace_low == 0)) {
    rejected->Reject("span", "invalid trace_id (want 16 bytes, not all zero)");
    return false;
  }
  if (!ids->ToInts(span.span_id(), 8, &unused, &span_id) || span_id == 0) {
    rejected->Reject("span", "invalid span_id (want 8 bytes, not all zero)");
    return false;
  }
  if (!ids->ToInts(span.parent_span_id(), 8, &unused, &parent_id)) {
    rejected->Reject("span", "invalid parent_span_id (want 8 bytes or empty)");
    return false;
  }
  // Events and links past their limits are dropped and counted, as an SDK
  // would have.
  const size_t events = std::min<size_t>(span.events_size(), limiter->max_events());
  const size_t links = std::min<size_t>(span.links_size(), limiter->max_links());
  // No events or links: '' (stored as NULL, which DuckDB writes cheaper than "[]").
  if (events > 0) {
    JsonWriter w(&events_json);
    w.BeginArray();
    for (size_t i = 0; i < events; ++i) {
      const auto& e = span.events(static_cast<int>(i));
      w.BeginObject();
      w.Key("time_unix_nano");
      w.Int(ToSigned(e.time_unix_nano()));
      w.Key("name");
      w.String(limiter->Name(e.name()));
      w.Key("attributes");
      const uint32_t dropped = limiter->Attributes(&w, e.attributes());
      w.Key("dropped_attributes_count");
      w.Uint(e.dropped_attributes_count() + dropped);
      w.EndObject();
    }
    w.EndArray();
  }
  if (links > 0) {
    JsonWriter w(&links_json);
    w.BeginArray();
    std::string lt, ls;
    for (size_t i = 0; i < links; ++i) {
      const auto& l = span.links(static_cast<int>(i));
      lt.clear();
      ls.clear();
      if (!ids->ToHex(l.trace_id(), 16, &lt) || !ids->ToHex(l.span_id(), 8, &ls)) {
        rejected->Reject("span", "a link with an invalid trace_id or span_id");
        return false;
      }
      w.BeginObject();
      w.Key("trace_id");
      w.String(lt);
      w.Key("span_id");
      w.String(ls);
      w.Key("trace_state");
      w.String(limiter->Name(l.trace_state()));
      w.Key("attributes");
      const uint32_t dropped = limiter->Attributes(&w, l.attributes());
      w.Key("dropped_attributes_count");
      w.Uint(l.dropped_attributes_count() + dropped);
      w.Key("flags");
      w.Uint(l.flags());
      w.EndObject();
    }
    w.EndArray();
  }
  out->trace_id_high.push_back(trace_high);
  out->trace_id_low.push_back(trace_low);
  out->span_id.push_back(span_id);
  out->parent_span_id.push_back(parent_id);
  out->trace_state.Append(limiter->Name(span.trace_state()));
  out->flags.push_back(span.flags());
  out->name.Append(limiter->Name(span.name()));
  out->kind.push_back(static_cast<int32_t>(span.kind()));
  out->start_time_ns.push_back(ToSigned(span.start_time_unix_nano()));
  out->end_time_ns.push_back(ToSigned(span.end_time_unix_nano()));
  out->status_code.push_back(static_cast<int32_t>(span.status().code()));
  out->status_message.Append(limiter->Text(span.status().message()));
  out->service_name.Append(ctx.service_name);
  const auto& attrs = span.attributes();
  out->http_route.Append(limiter->Text(FirstString(attrs, {"http.route", "url.path", "http.target"})));
  out->http_method.Append(limiter->Name(FirstString(attrs, {"http.request.method", "http.method"})));
  int64_t status = 0;
  if (!FindIntAttribute(attrs, "http.response.status_code", &status))
    FindIntAttribute(attrs, "http.status_code", &status);
  out->http_status_code.push_back(static_cast<int32_t>(status));
  out->db_system.Append(limiter->Name(FirstString(attrs, {"db.system", "db.system.name"})));
  const otlp_trace::Span::Event* exception = nullptr;
  for (const auto& e : span.events()) {
    if (e.name() == "exception") {
      exception = &e;
      break;
    }
  }
  static const std::string kNone;
  const std::string_view exception_message =
      limiter->Text(exception ? FirstString(exception->attributes(), {"exception.message"}) : kNone);
  out->exception_type.Append(
      limiter->Text(exception ? FirstString(exception->attributes(), {"exception.type"}) : kNone));
  out->exception_message.Append(exception_message);
  out->exception_group.Append(NormalizeExceptionMessage(exception_message));
  const uint32_t dropped_attributes = limiter->Attributes(&out->attributes.buffer(), attrs);
  out->attributes.CommitRow();
  out->events.Append(events_json);
  out->links.Append(links_json);
  limiter->DroppedEventsAndLinks(static_cast<int64_t>(span.events_size() - events),
                                 static_cast<int64_t>(span.links_size() - links));
  out->dropped_attributes_count.push_back(span.dropped_attributes_count() + dropped_attributes);
  out->dropped_events_count.push_back(span.dropped_events_count() + static_cast<uint32_t>(span.events_size() - events));
  out->dropped_links_count.push_back(span.dropped_links_count() + static_cast<uint32_t>(span.links_size() - links));
  out->resource_id.push_back(ctx.ResourceIdFor(&out->resources));
  return true;
}

}  // namespace

Status DecodeSpans(std::string_view body, PayloadFormat format, SpanBatch* out, Rejections* rejected,
                   const DecodeLimits& limits) {
  Limiter limiter(limits, rejected);
  LimiterScope scope(&limiter);
  pb::Arena arena(ArenaParser::Options());
  SL_ASSIGN_OR_RETURN(const auto* parsed, ArenaParser::Parse<ExportTraceServiceRequest>(&arena, body, format));
  const ExportTraceServiceRequest& req = *parsed;
  size_t total = 0;
  for (const auto& rs : req.resource_spans())
    for (const auto& ss : rs.scope_spans()) total += ss.spans_size();
  out->start_time_ns.reserve(out->rows() + total);
  IdReader ids(format);
  Context ctx;
  for (const auto& rs : req.resource_spans()) {
    ctx.SetResource(rs.resource().attributes(), &limiter);
    for (const auto& ss : rs.scope_spans()) {
      ctx.SetScope(ss.scope(), &limiter);
      for (const auto& span : ss.spans()) {
        if (AppendSpan(span, ctx, &ids, &limiter, out, rejected) && out->rows() % 64 == 0) {
          SL_RETURN_IF_ERROR(limiter.Hold(out->ByteSize()));
        }
      }
    }
  }
  return limiter.Hold(out->ByteSize());
}

Status DecodeLogs(std::string_view body, PayloadFormat format, int64_t receive_time_ns, LogBatch* out,
                  Rejections* rejected, const DecodeLimits& limits) {
  Limiter limiter(limits, rejected);
  LimiterScope scope(&limiter);
  pb::Arena arena(ArenaParser::Options());
  SL_ASSIGN_OR_RETURN(const auto* parsed, ArenaParser::Parse<ExportLogsServiceRequest>(&arena, body, format));
  const ExportLogsServiceRequest& req = *parsed;
  IdReader ids(format);
  Context ctx;
  uint64_t trace_high, trace_low, span_id, unused;
  for (const auto& rl : req.resource_logs()) {
    ctx.SetResource(rl.resource().attributes(), &limiter);
    for (const auto& sl : rl.scope_logs()) {
      ctx.SetScope(sl.scope(), &limiter);
      for (const auto& rec : sl.log_records()) {
        if (!ids.ToInts(rec.trace_id(), 16, &trace_high, &trace_low) ||
            !ids.ToInts(rec.span_id(), 8, &unused, &span_id)) {
          rejected->Reject("log record", "invalid trace_id or span_id (want 16/8 bytes or empty)");
          continue;
        }
        out->time_ns.push_back(ToSigned(rec.time_unix_nano()));
        out->observed_time_ns.push_back(rec.observed_time_unix_nano() ? ToSigned(rec.observed_time_unix_nano())
                                                                      : receive_time_ns);
        out->severity_number.push_back(static_cast<int32_t>(rec.severity_number()));
        out->severity_text.Append(limiter.Name(rec.severity_text()));
        const auto& b = rec.body();
        AnyValueType type = AnyValueType::kEmpty;
        switch (b.value_case()) {
          case otlp_common::AnyValue::kStringValue: type = AnyValueType::kString; break;
          case otlp_common::AnyValue::kBoolValue: type = AnyValueType::kBool; break;
          case otlp_common::AnyValue::kIntValue: type = AnyValueType::kInt; break;
          case otlp_common::AnyValue::kDoubleValue: type = AnyValueType::kDouble; break;
          case otlp_common::AnyValue::kArrayValue: type = AnyValueType::kArray; break;
          case otlp_common::AnyValue::kKvlistValue: type = AnyValueType::kKvList; break;
          case otlp_common::AnyValue::kBytesValue: type = AnyValueType::kBytes; break;
          case otlp_common::AnyValue::VALUE_NOT_SET: type = AnyValueType::kEmpty; break;
        }
        if (type == AnyValueType::kString) {
          out->body.Append(b.string_value());
        } else if (type == AnyValueType::kEmpty) {
          out->body.Append("");
        } else {
          JsonWriter w(&out->body.buffer());
          WriteAnyValue(&w, b);
          out->body.CommitRow();
        }
        out->body_type.push_back(static_cast<uint8_t>(type));
        out->trace_id_high.push_back(trace_high);
        out->trace_id_low.push_back(trace_low);
        out->span_id.push_back(span_id);
        out->flags.push_back(rec.flags());
        out->service_name.Append(ctx.service_name);
        const uint32_t dropped = limiter.Attributes(&out->attributes.buffer(), rec.attributes());
        out->attributes.CommitRow();
        out->dropped_attributes_count.push_back(rec.dropped_attributes_count() + dropped);
        out->resource_id.push_back(ctx.ResourceIdFor(&out->resources));
        out->event_name.Append(limiter.Name(rec.event_name()));
        // A log-based exception event (semantic conventions: the exception.*
        // attributes on a log record) is grouped like a span's exception event.
        const std::string_view exception_message = limiter.Text(FirstString(rec.attributes(), {"exception.message"}));
        out->exception_type.Append(limiter.Text(FirstString(rec.attributes(), {"exception.type"})));
        out->exception_message.Append(exception_message);
        out->exception_group.Append(NormalizeExceptionMessage(exception_message));
        if (out->rows() % 64 == 0) SL_RETURN_IF_ERROR(limiter.Hold(out->ByteSize()));
      }
    }
  }
  return limiter.Hold(out->ByteSize());
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Series identity and the per-batch dedup of series rows.
class SeriesTable {
 public:
  SeriesTable(MetricBatch* out, Limiter* limiter) : out_(out), limiter_(limiter) {}

  int64_t Intern(const otlp_metrics::Metric& m, MetricType type, int32_t temporality, bool monotonic, Context& ctx,
                 const KeyValues& point_attrs) {
    attrs_.clear();
    limiter_->Attributes(&attrs_, point_attrs);
    // Everything but the point attributes is the same for all points of a
    // Metric: hash that prefix once per metric (same bytes, same ids).
    if (prefix_metric_ != &m) {
      name_ = limiter_->Name(m.name());
      unit_ = limiter_->Name(m.unit());
      prefix_.emplace(SeriesMetric{out_->project_id, name_, static_cast<int32_t>(type), unit_, temporality, monotonic,
                                   ctx.resource_json, ctx.scope_name, ctx.scope_version});
      prefix_metric_ = &m;
    }
    int64_t id = prefix_->Id(attrs_);
    if (seen_.insert(id).second) {
      out_->series_id.push_back(id);
      out_->metric_name.Append(name_);
      out_->metric_type.push_back(static_cast<int32_t>(type));
      out_->unit.Append(unit_);
      out_->description.Append(limiter_->Text(m.description()));
      out_->temporality.push_back(temporality);
      out_->is_monotonic.push_back(monotonic ? 1 : 0);
      out_->service_name.Append(ctx.service_name);
      ctx.ResourceIdFor(&out_->resources);
      out_->series_resource.push_back(ctx.resource_row);
      out_->attributes.Append(attrs_);
    }
    return id;
  }

 private:
  MetricBatch* out_;
  Limiter* limiter_;
  std::unordered_set<int64_t> seen_;
  std::string attrs_;
  std::string name_, unit_;                              // the current metric's, within the limits
  std::optional<SeriesIdHasher> prefix_;                 // state after the per-metric fields
  const otlp_metrics::Metric* prefix_metric_ = nullptr;  // whose prefix_ it is
};

class PointWriter {
 public:
  PointWriter(MetricBatch* out, IdReader* ids, Limiter* limiter, Rejections* rejected)
      : out_(out), ids_(ids), limiter_(limiter), rejected_(rejected) {}

  //! Validates a point's exemplars; call before interning its series so a
  //! rejected point leaves no series row behind.
  template <typename Point>
  bool Accept(const Point& p) {
    if constexpr (std::is_same_v<Point, otlp_metrics::SummaryDataPoint>) {
      scratch_.clear();  // summaries carry no exemplars
      return true;
    } else {
      return RenderExemplars(p.exemplars());
    }
  }

  //! Starts the row of a point that Accept()ed; every 64 points, what the
  //! batch holds is checked against the budget.
  template <typename Point>
  Status Begin(int64_t series, const Point& p) {
    if (out_->rows() % 64 == 63) SL_RETURN_IF_ERROR(limiter_->Hold(out_->ByteSize()));
    out_->exemplars.Append(scratch_);
    out_->point_series_id.push_back(series);
    out_->time_ns.push_back(ToSigned(p.time_unix_nano()));
    out_->start_time_ns.push_back(ToSigned(p.start_time_unix_nano()));
    out_->flags.push_back(p.flags());
    return Status::Ok();
  }

  void Number(const otlp_metrics::NumberDataPoint& p) {
    bool is_int = p.value_case() == otlp_metrics::NumberDataPoint::kAsInt;
    out_->value.push_back(is_int                                                       ? static_cast<double>(p.as_int())
                          : p.value_case() == otlp_metrics::NumberDataPoint::kAsDouble ? p.as_double()
                                                                                       : kNaN);
    out_->int_value.push_back(is_int ? p.as_int() : 0);
    out_->is_int.push_back(is_int ? 1 : 0);
    out_->count.push_back(0);
    out_->sum.push_back(kNaN);
    out_->min.push_back(kNaN);
    out_->max.push_back(kNaN);
    out_->bucket_counts.Append("");
    out_->explicit_bounds.Append("");
    out_->exp_histogram.Append("");
    out_->quantiles.Append("");
  }

  void Histogram(const otlp_metrics::HistogramDataPoint& p) {
    Distribution(p.count(), p.has_sum() ? p.sum() : kNaN, p.has_min() ? p.min() : kNaN, p.has_max() ? p.max() : kNaN);
    {
      JsonWriter w(&out_->bucket_counts.buffer());
      w.BeginArray();
      for (uint64_t c : p.bucket_counts()) w.Uint(c);
      w.EndArray();
      out_->bucket_counts.CommitRow();
    }
    // A series' points nearly always repeat its bounds: reuse their JSON text
    // when the doubles are bit-identical to the last point's.
    const auto& bounds = p.explicit_bounds();
    if (bounds.size() != static_cast<int>(last_bounds_.size()) ||
        (!bounds.empty() && std::memcmp(bounds.data(), last_bounds_.data(), bounds.size() * sizeof(double)) != 0)) {
      last_bounds_.assign(bounds.begin(), bounds.end());
      last_bounds_json_.clear();
      JsonWriter w(&last_bounds_json_);
      w.BeginArray();
      for (double b : bounds) w.Double(b);
      w.EndArray();
    }
    out_->explicit_bounds.Append(last_bounds_json_);
    out_->exp_histogram.Append("");
    out_->quantiles.Append("");
  }

  void Exponential(const otlp_metrics::ExponentialHistogramDataPoint& p) {
    Distribution(p.count(), p.has_sum() ? p.sum() : kNaN, p.has_min() ? p.min() : kNaN, p.has_max() ? p.max() : kNaN);
    out_->bucket_counts.Append("");
    out_->explicit_bounds.Append("");
    JsonWriter w(&out_->exp_histogram.buffer());
    w.BeginObject();
    w.Key("scale");
    w.Int(p.scale());
    w.Key("zero_count");
    w.Uint(p.zero_count());
    w.Key("zero_threshold");
    w.Double(p.zero_threshold());
    auto buckets = [&w](const char* name, const otlp_metrics::ExponentialHistogramDataPoint::Buckets& b) {
      w.Key(name);
      w.BeginObject();
      w.Key("offset");
      w.Int(b.offset());
      w.Key("bucket_counts");
      w.BeginArray();
      for (uint64_t c : b.bucket_counts()) w.Uint(c);
      w.EndArray();
      w.EndObject();
    };
    buckets("positive", p.positive());
    buckets("negative", p.negative());
    w.EndObject();
    out_->exp_histogram.CommitRow();
    out_->quantiles.Append("");
  }

  void Summary(const otlp_metrics::SummaryDataPoint& p) {
    Distribution(p.count(), p.sum(), kNaN, kNaN);
    out_->bucket_counts.Append("");
    out_->explicit_bounds.Append("");
    out_->exp_histogram.Append("");
    JsonWriter w(&out_->quantiles.buffer());
    w.BeginArray();
    for (const auto& q : p.quantile_values()) {
      w.BeginObject();
      w.Key("quantile");
      w.Double(q.quantile());
      w.Key("value");
      w.Double(q.value());
      w.EndObject();
    }
    w.EndArray();
    out_->quantiles.CommitRow();
  }

 private:
  void Distribution(uint64_t count, double sum, double min, double max) {
    out_->value.push_back(kNaN);
    out_->int_value.push_back(0);
    out_->is_int.push_back(0);
    out_->count.push_back(count);
    out_->sum.push_back(sum);
    out_->min.push_back(min);
    out_->max.push_back(max);
  }

  // Renders into scratch_ ("" when there are none).
  bool RenderExemplars(const pb::RepeatedPtrField<otlp_metrics::Exemplar>& exemplars) {
    scratch_.clear();
    if (exemplars.empty()) return true;
    JsonWriter w(&scratch_);
    w.BeginArray();
    std::string t, s;
    for (const auto& e : exemplars) {
      t.clear();
      s.clear();
      if (!ids_->ToHex(e.trace_id(), 16, &t) || !ids_->ToHex(e.span_id(), 8, &s)) {
        rejected_->Reject("data point", "an exemplar with an invalid trace_id or span_id");
        return false;
      }
      w.BeginObject();
      w.Key("time_unix_nano");
      w.Int(ToSigned(e.time_unix_nano()));
      w.Key("value");
      if (e.value_case() == otlp_metrics::Exemplar::kAsInt) w.Int(e.as_int());
      else w.Double(e.as_double());
      w.Key("trace_id");
      w.String(t);
      w.Key("span_id");
      w.String(s);
      w.Key("filtered_attributes");
      limiter_->Attributes(&w, e.filtered_attributes());
      w.EndObject();
    }
    w.EndArray();
    return true;
  }

  MetricBatch* out_;
  IdReader* ids_;
  Limiter* limiter_;
  Rejections* rejected_;
  std::string scratch_;
  std::vector<double> last_bounds_;  // the last histogram point's bounds and their JSON
  std::string last_bounds_json_ = "[]";
};

}  // namespace

Status DecodeMetrics(std::string_view body, PayloadFormat format, MetricBatch* out, Rejections* rejected,
                     const DecodeLimits& limits) {
  Limiter limiter(limits, rejected);
  LimiterScope scope(&limiter);
  pb::Arena arena(ArenaParser::Options());
  SL_ASSIGN_OR_RETURN(const auto* parsed, ArenaParser::Parse<ExportMetricsServiceRequest>(&arena, body, format));
  const ExportMetricsServiceRequest& req = *parsed;
  IdReader ids(format);
  Context ctx;
  SeriesTable series(out, &limiter);
  PointWriter points(out, &ids, &limiter, rejected);
  for (const auto& rm : req.resource_metrics()) {
    ctx.SetResource(rm.resource().attributes(), &limiter);
    for (const auto& sm : rm.scope_metrics()) {
      ctx.SetScope(sm.scope(), &limiter);
      for (const auto& m : sm.metrics()) {
        SL_RETURN_IF_ERROR(limiter.Hold(out->ByteSize()));
        if (m.name().empty()) {
          rejected->Reject("metric", "no name");
          continue;
        }
        switch (m.data_case()) {
          case otlp_metrics::Metric::kGauge:
            for (const auto& p : m.gauge().data_points()) {
              if (!points.Accept(p)) continue;
              int64_t id = series.Intern(m, MetricType::kGauge, 0, false, ctx, p.attributes());
              SL_RETURN_IF_ERROR(points.Begin(id, p));
              points.Number(p);
            }
            break;
          case otlp_metrics::Metric::kSum:
            for (const auto& p : m.sum().data_points()) {
              if (!points.Accept(p)) continue;
              int64_t id = series.Intern(m, MetricType::kSum, m.sum().aggregation_temporality(), m.sum().is_monotonic(),
                                         ctx, p.attributes());
              SL_RETURN_IF_ERROR(points.Begin(id, p));
              points.Number(p);
            }
            break;
          case otlp_metrics::Metric::kHistogram:
            for (const auto& p : m.histogram().data_points()) {
              if (p.bucket_counts_size() != 0 && p.bucket_counts_size() != p.explicit_bounds_size() + 1) {
                rejected->Reject("data point", "histogram bucket_counts not explicit_bounds + 1 long");
                continue;
              }
              if (!points.Accept(p)) continue;
              int64_t id = series.Intern(m, MetricType::kHistogram, m.histogram().aggregation_temporality(), false, ctx,
                                         p.attributes());
              SL_RETURN_IF_ERROR(points.Begin(id, p));
              points.Histogram(p);
            }
            break;
          case otlp_metrics::Metric::kExponentialHistogram:
            for (const auto& p : m.exponential_histogram().data_points()) {
              if (!points.Accept(p)) continue;
              int64_t id =
                  series.Intern(m, MetricType::kExponentialHistogram,
                                m.exponential_histogram().aggregation_temporality(), false, ctx, p.attributes());
              SL_RETURN_IF_ERROR(points.Begin(id, p));
              points.Exponential(p);
            }
            break;
          case otlp_metrics::Metric::kSummary:
            for (const auto& p : m.summary().data_points()) {
              if (!points.Accept(p)) continue;
              int64_t id = series.Intern(m, MetricType::kSummary, 0, false, ctx, p.attributes());
              SL_RETURN_IF_ERROR(points.Begin(id, p));
              points.Summary(p);
            }
            break;
          case otlp_metrics::Metric::DATA_NOT_SET:
            rejected->Reject("metric", "no data (gauge, sum, histogram, ...)", limiter.Name(m.name()));
            break;
        }
      }
    }
  }
  return limiter.Hold(out->ByteSize());
}

}  // namespace sightline
