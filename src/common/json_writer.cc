#include "common/json_writer.h"

#include <charconv>
#include <cmath>

namespace sightline {

void AppendJsonString(std::string* out, std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  out->push_back('"');
  size_t run = 0;  // start of the pending unescaped run
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default:
        out->append("\\u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 15]);
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

void JsonWriter::Key(std::string_view key) {
  Sep();
  AppendJsonString(out_, key);
  out_->push_back(':');
  after_key_ = true;
}

void JsonWriter::String(std::string_view s) {
  Sep();
  AppendJsonString(out_, s);
}

void JsonWriter::Int(int64_t v) {
  Sep();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out_->append(buf, r.ptr);
}

void JsonWriter::Uint(uint64_t v) {
  Sep();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out_->append(buf, r.ptr);
}

void JsonWriter::Double(double v) {
  Sep();
  if (std::isnan(v)) {
    out_->append("\"NaN\"");
    return;
  }
  if (std::isinf(v)) {
    out_->append(v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    return;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round-trip form
  out_->append(buf, r.ptr);
}

void JsonWriter::Bool(bool v) {
  Sep();
  out_->append(v ? "true" : "false");
}

void JsonWriter::Null() {
  Sep();
  out_->append("null");
}

void JsonWriter::Raw(std::string_view json) {
  Sep();
  out_->append(json);
}

}  // namespace sightline
