#pragma once

// The log search index of the DuckDB engine (docs/STORAGE.md, "DuckDB's own
// indexes"): which minutes of a project hold a body word, so a body-contains
// search ("q=") reads only the minutes that can hold a match.
//
// The search is substring-contains of lower(text) in lower(body), with
// DuckDB's lower() (Unicode simple case mapping), so the index only ever
// proves absence:
// - Tokens are the maximal runs of ASCII letters and digits of lower(body)
//   that hold a letter. Every other character separates; lower() maps ASCII
//   to ASCII and only U+0130 (to 'i') and U+212A KELVIN SIGN (to 'k') from
//   outside ASCII into it, and the tokenizer maps those two the same way.
//   Runs of digits alone (counts, ports, ids: most of a log's distinct
//   words, and most of what this index would cost) are not stored.
// - The needle is the longest run of ASCII letters and digits of the query
//   (non-ASCII characters separate) that holds a letter, lower-cased, cut to
//   kMaxNeedleBytes. It is a substring of lower(query), hence of lower(body)
//   in a match, hence of one run of that body, which holds a letter as the
//   needle does, so is a stored token: the minutes of the tokens that
//   contain the needle hold every match.
// - A token longer than kMaxTokenBytes is stored as windows of that length
//   every kMaxNeedleBytes (a needle lies inside one). A record with more
//   than kMaxTokensPerRecord tokens stores the overflow token '' instead of
//   the rest, and every search reads the minutes holding ''.
// - A query without an ASCII letter, or whose needle is in more than
//   kMaxCandidateTokens tokens, is not helped: the caller scans.
//
// Tables (sorted_runs.h for the tail and runs):
//   log_tokens_tail / log_tokens (project_id, token, minute[, run]): one row
//     per distinct token per minute of time_ns per written batch; runs are
//     sorted on token and hold each (project, token, minute) once.
//   log_token_dict (project_id, token): every token in log_tokens, once; a
//     search finds its tokens here (and in the tail) with contains().
//     Compaction adds the tail's new tokens before it moves the tail, so a
//     token is always in one of the two. Retention leaves it: a token whose
//     minutes expired only costs a lookup that finds none.
// Minutes are floor(time_ns / 60 s). Retention deletes a minute's rows once
// the minute has expired, except minute 0, which holds the records without
// a timestamp (those age by their observed time).

#include <duckdb.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/batch.h"
#include "storage/duckdb/sorted_runs.h"
#include "storage/sql/sql_builder.h"
#include "storage/telemetry_reader.h"
#include "storage/telemetry_store.h"

namespace sightline::duckdb_index {

//! Longer tokens are stored as windows of this many bytes.
inline constexpr size_t kMaxTokenBytes = 32;
//! The needle's length cap, and the step between a long token's windows.
inline constexpr size_t kMaxNeedleBytes = 16;
//! Tokens stored per record; past it the record stores the overflow token.
//! Ordinary log lines have far fewer; a stack trace may not, and its minute
//! is then read by every search.
inline constexpr size_t kMaxTokensPerRecord = 64;
//! A needle found in more tokens than this is too common to narrow a search
//! (a digit, a syllable): the search scans.
inline constexpr int64_t kMaxCandidateTokens = 512;
inline constexpr int64_t kMinuteNs = 60LL * 1000 * 1000 * 1000;

extern const RunTableDef kLogTokens;

//! Calls emit(token) for each token of body in order (lower-cased; windows
//! for long ones; the overflow token "" last when the record has too many).
//! `scratch` holds tokens that differ from the body's bytes.
template <typename Emit>
void Tokenize(std::string_view body, std::string* scratch, Emit&& emit);

//! The needle of a query; "" when the index cannot narrow it.
std::string NeedleOf(std::string_view text);

//! floor(time_ns / kMinuteNs).
inline int64_t MinuteOf(int64_t time_ns) { return time_ns >= 0 ? time_ns / kMinuteNs : (time_ns + 1) / kMinuteNs - 1; }

//! Creates the tables when missing; when log_tokens is new and logs hold
//! rows, fills it (and the dictionary) from them in the same transaction
//! (docs/STORAGE.md says its cost).
Status CreateLogTokenIndex(duckdb_connection conn);
//! Adds the tail's new tokens to log_token_dict (before the tail moves).
Status AddTailTokensToDictionary(duckdb_connection conn);
//! Deletes the minutes that have expired (retention).
Status ExpireLogTokens(duckdb_connection conn, const ProjectSet& projects, int64_t before_ns);

//! The tokens of the project that contain `needle` (at most
//! kMaxCandidateTokens + 1 come back).
sql::Sql CandidateTokensSql(int64_t project_id, const std::string& needle);
//! The minutes, newest first, within [from_minute, to_minute], holding one
//! of `tokens` or the overflow token.
sql::Sql MinutesSql(int64_t project_id, const std::vector<std::string>& tokens, int64_t from_minute, int64_t to_minute);

//! The token index rows of a batch: its distinct (token, minute) pairs, in
//! the order first seen. Owns the tokens' bytes, packed. Made on a decoder
//! thread by the sink's Prepare (it is the batch's PreparedForEngine), or by
//! the writer for a batch that comes unprepared (TokensOf).
class LogTokenSet final : public PreparedForEngine {
 public:
  explicit LogTokenSet(const LogBatch& b);

  size_t size() const { return entries_.size(); }
  std::string_view token(size_t i) const {
    return std::string_view(bytes_).substr(entries_[i].offset, entries_[i].size);
  }
  int64_t minute(size_t i) const { return entries_[i].minute; }
  //! At most the batch's body bytes twice (windows overlap) plus 16 bytes a
  //! pair: a pair is a token of a body, at most 64 a record.
  size_t ByteSize() const override { return bytes_.capacity() + entries_.capacity() * sizeof(Entry); }

 private:
  struct Entry {
    uint32_t offset;  // into bytes_
    uint32_t size;
    int64_t minute;
  };
  std::string bytes_;  // every distinct token's bytes, one after another
  std::vector<Entry> entries_;
};

//! The set the batch was prepared with, else one made now.
std::shared_ptr<const LogTokenSet> TokensOf(const LogBatch& b);
//! Appends the set's rows to log_tokens_tail; returns how many.
Result<uint64_t> AppendLogTokens(duckdb_appender appender, int64_t project_id, const LogTokenSet& set);

// ---------------------------------------------------------------- inline

namespace internal {

inline bool IsAsciiWord(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

inline bool AllDigits(std::string_view s) {
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace internal

namespace internal {

//! Calls run(r) for each run of body that holds a letter, lower-cased (a
//! view of body when it needed no change, else of *scratch), one byte at a
//! time, until run returns false.
template <typename Run>
void ForEachRunBytewise(std::string_view body, std::string* scratch, Run&& run) {
  const size_t n = body.size();
  size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(body[i]);
    const bool dotted_i = c == 0xC4 && i + 1 < n && static_cast<unsigned char>(body[i + 1]) == 0xB0;
    const bool kelvin = c == 0xE2 && i + 2 < n && static_cast<unsigned char>(body[i + 1]) == 0x84 &&
                        static_cast<unsigned char>(body[i + 2]) == 0xAA;
    if (!IsAsciiWord(c) && !dotted_i && !kelvin) {
      ++i;
      continue;
    }
    // A run: its bytes as they are while they are lower-case ASCII.
    size_t start = i;
    bool copied = false;
    for (;;) {
      if (i >= n) break;
      const auto d = static_cast<unsigned char>(body[i]);
      char out = 0;
      size_t len = 1;
      if ((d >= '0' && d <= '9') || (d >= 'a' && d <= 'z')) {
        out = static_cast<char>(d);
      } else if (d >= 'A' && d <= 'Z') {
        out = static_cast<char>(d + 0x20);
      } else if (d == 0xC4 && i + 1 < n && static_cast<unsigned char>(body[i + 1]) == 0xB0) {
        out = 'i';
        len = 2;
      } else if (d == 0xE2 && i + 2 < n && static_cast<unsigned char>(body[i + 1]) == 0x84 &&
                 static_cast<unsigned char>(body[i + 2]) == 0xAA) {
        out = 'k';
        len = 3;
      } else {
        break;
      }
      if (!copied && (len != 1 || out != static_cast<char>(d))) {
        scratch->assign(body.data() + start, i - start);
        copied = true;
      }
      if (copied) scratch->push_back(out);
      i += len;
    }
    const std::string_view r = copied ? std::string_view(*scratch) : body.substr(start, i - start);
    if (!AllDigits(r) && !run(r)) return;
  }
}

#if defined(__SSE2__)
//! ForEachRunBytewise 16 bytes at a time, for as long as no byte 0xC4 or
//! 0xE2 comes (the lead bytes of the two characters lower() maps into
//! ASCII; other bytes past ASCII only separate). Returns where the bytewise
//! tokenizer must go on from: the start of the run, or of the 16 bytes, that
//! holds such a byte; body.size() when none does or run returned false.
template <typename Run>
size_t ForEachAsciiRun(std::string_view body, std::string* scratch, Run&& run) {
  constexpr size_t kNone = static_cast<size_t>(-1);
  const size_t n = body.size();
  size_t start = kNone;  // of the run not yet ended
  bool letter = false;
  bool upper = false;
  // Ends the run at `end`; false when run() says stop.
  const auto finish = [&](size_t end) {
    const size_t s = start;
    start = kNone;
    if (!letter) return true;  // digits alone are not stored
    if (!upper) return static_cast<bool>(run(body.substr(s, end - s)));
    scratch->assign(body.data() + s, end - s);
    for (char& c : *scratch) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 0x20);
    }
    return static_cast<bool>(run(std::string_view(*scratch)));
  };
  // Signed compares: bytes past ASCII are negative, in no range.
  const auto in = [](__m128i x, char lo, char hi) {
    return _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8(static_cast<char>(lo - 1))),
                         _mm_cmplt_epi8(x, _mm_set1_epi8(static_cast<char>(hi + 1))));
  };
  alignas(16) char last[16];
  for (size_t base = 0; base < n; base += 16) {
    const char* p = body.data() + base;
    if (n - base < 16) {  // the rest, then zero bytes (separators)
      std::memset(last, 0, sizeof(last));
      std::memcpy(last, p, n - base);
      p = last;
    }
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if (_mm_movemask_epi8(v) != 0 &&
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(static_cast<char>(0xC4))),
                                       _mm_cmpeq_epi8(v, _mm_set1_epi8(static_cast<char>(0xE2))))) != 0) {
      return start != kNone ? start : base;
    }
    const auto letters = static_cast<uint32_t>(_mm_movemask_epi8(in(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 'z')));
    const auto uppers = static_cast<uint32_t>(_mm_movemask_epi8(in(v, 'A', 'Z')));
    const uint32_t words = letters | static_cast<uint32_t>(_mm_movemask_epi8(in(v, '0', '9')));
    uint32_t pos = 0;
    while (pos < 16) {
      const uint32_t from = ~0u << pos;
      if (start == kNone) {
        const uint32_t begins = words & from;
        if (begins == 0) break;
        pos = static_cast<uint32_t>(__builtin_ctz(begins));
        start = base + pos;
        letter = upper = false;
        continue;
      }
      const uint32_t ends = ~words & 0xFFFFu & from;
      const uint32_t end = ends == 0 ? 16 : static_cast<uint32_t>(__builtin_ctz(ends));
      const uint32_t span = from & ((1u << end) - 1);
      letter = letter || (letters & span) != 0;
      upper = upper || (uppers & span) != 0;
      if (ends == 0) break;  // the run goes on in the next 16 bytes
      if (!finish(base + end)) return n;
      pos = end;
    }
  }
  if (start != kNone) finish(n);
  return n;
}
#endif

//! The runs of body that hold a letter, lower-cased, as ForEachRunBytewise
//! finds them (16 bytes at a time where the CPU can).
template <typename Run>
void ForEachRun(std::string_view body, std::string* scratch, Run&& run) {
#if defined(__SSE2__)
  const size_t at = ForEachAsciiRun(body, scratch, run);
  if (at < body.size()) ForEachRunBytewise(body.substr(at), scratch, run);
#else
  ForEachRunBytewise(body, scratch, run);
#endif
}

}  // namespace internal

template <typename Emit>
void Tokenize(std::string_view body, std::string* scratch, Emit&& emit) {
  size_t emitted = 0;
  bool overflow = false;
  // Emits the run as itself or as windows; false once past the cap.
  internal::ForEachRun(body, scratch, [&](std::string_view t) {
    size_t pieces =
        t.size() <= kMaxTokenBytes ? 1 : (t.size() - kMaxTokenBytes + kMaxNeedleBytes - 1) / kMaxNeedleBytes + 1;
    if (emitted + pieces > kMaxTokensPerRecord) {
      overflow = true;
      return false;
    }
    emitted += pieces;
    if (pieces == 1) {
      emit(t);
      return true;
    }
    for (size_t at = 0;; at += kMaxNeedleBytes) {
      if (at + kMaxTokenBytes >= t.size()) {
        emit(t.substr(t.size() - kMaxTokenBytes));
        break;
      }
      emit(t.substr(at, kMaxTokenBytes));
    }
    return true;
  });
  if (overflow) emit(std::string_view("", 0));
}

}  // namespace sightline::duckdb_index
