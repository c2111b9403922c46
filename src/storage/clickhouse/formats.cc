#include "storage/clickhouse/formats.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace sightline::clickhouse {

std::string Quote(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('\'');
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '\0': out += "\\0"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          out += "\\x";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 15]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('\'');
  return out;
}

std::string QuoteIdentifier(std::string_view s) {
  std::string out = "`";
  for (char c : s) {
    if (c == '`' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('`');
  return out;
}

namespace {

//! Decodes one TabSeparated cell; nullopt for \N.
std::optional<std::string> Unescape(std::string_view cell) {
  if (cell == "\\N") return std::nullopt;
  std::string out;
  out.reserve(cell.size());
  for (size_t i = 0; i < cell.size(); ++i) {
    char c = cell[i];
    if (c != '\\' || i + 1 == cell.size()) {
      out.push_back(c);
      continue;
    }
    char e = cell[++i];
    switch (e) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case '0': out.push_back('\0'); break;
      case 'a': out.push_back('\a'); break;
      case 'v': out.push_back('\v'); break;
      default: out.push_back(e); break;  // \\ \' and anything else: the character itself
    }
  }
  return out;
}

}  // namespace

Result<TsvResult> TsvResult::Parse(std::string_view body, bool with_names) {
  TsvResult r;
  size_t pos = 0;
  bool first = true;
  size_t width = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    if (end == std::string_view::npos) return Status::InvalidArgument("clickhouse: a truncated TabSeparated answer");
    std::string_view line = body.substr(pos, end - pos);
    pos = end + 1;
    std::vector<std::optional<std::string>> row;
    size_t start = 0;
    while (true) {
      size_t tab = line.find('\t', start);
      row.push_back(Unescape(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start)));
      if (tab == std::string_view::npos) break;
      start = tab + 1;
    }
    if (first && with_names) {
      for (auto& name : row) r.names_.push_back(name.value_or("NULL"));
      width = row.size();
      first = false;
      continue;
    }
    first = false;
    if (width != 0 && row.size() != width) return Status::InvalidArgument("clickhouse: a ragged TabSeparated answer");
    r.rows_.push_back(std::move(row));
  }
  return r;
}

bool TsvRowView::IsNull(int col) const {
  return col < 0 || static_cast<size_t>(col) >= row_->size() || !(*row_)[static_cast<size_t>(col)].has_value();
}

int64_t TsvRowView::GetInt(int col) const {
  if (IsNull(col)) return 0;
  const std::string& s = *(*row_)[static_cast<size_t>(col)];
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec == std::errc()) return v;
  return static_cast<int64_t>(GetUInt(col));  // a UInt64 above INT64_MAX: the same bits
}

uint64_t TsvRowView::GetUInt(int col) const {
  if (IsNull(col)) return 0;
  const std::string& s = *(*row_)[static_cast<size_t>(col)];
  uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec == std::errc()) return v;
  int64_t i = 0;
  std::from_chars(s.data(), s.data() + s.size(), i);
  return static_cast<uint64_t>(i);
}

double TsvRowView::GetDouble(int col) const {
  if (IsNull(col)) return 0;
  const std::string& s = *(*row_)[static_cast<size_t>(col)];
  if (s == "nan" || s == "-nan") return NAN;
  if (s == "inf" || s == "+inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  return std::strtod(s.c_str(), nullptr);
}

std::string TsvRowView::GetString(int col) const {
  return IsNull(col) ? std::string() : *(*row_)[static_cast<size_t>(col)];
}

}  // namespace sightline::clickhouse
