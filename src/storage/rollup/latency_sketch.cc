#include "storage/rollup/latency_sketch.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace sightline {

namespace {

constexpr double kGamma = (1 + LatencySketch::kRelativeError) / (1 - LatencySketch::kRelativeError);
const double kLogGamma = std::log(kGamma);

}  // namespace

int32_t LatencySketch::KeyOf(int64_t duration_ns) {
  if (duration_ns == 0) return 0;
  // |INT64_MIN| as a double is exact; the key of any int64 fits easily.
  const double magnitude = std::fabs(static_cast<double>(duration_ns));
  const int32_t bucket = std::max(0, static_cast<int32_t>(std::ceil(std::log(magnitude) / kLogGamma)));
  return duration_ns > 0 ? bucket + 1 : -(bucket + 1);
}

double LatencySketch::ValueOf(int32_t key) {
  if (key == 0) return 0;
  // Bucket i holds (gamma^(i-1), gamma^i]; 2 gamma^i / (gamma + 1) is within
  // (gamma - 1) / (gamma + 1) = kRelativeError of each of its values.
  const double v = 2 * std::pow(kGamma, std::abs(key) - 1) / (kGamma + 1);
  return key > 0 ? v : -v;
}

void LatencySketch::AddKey(int32_t key, int64_t n) {
  auto it = std::lower_bound(buckets_.begin(), buckets_.end(), key,
                             [](const std::pair<int32_t, int64_t>& b, int32_t k) { return b.first < k; });
  if (it != buckets_.end() && it->first == key) {
    it->second += n;
  } else {
    buckets_.insert(it, {key, n});
  }
  count_ += n;
}

void LatencySketch::Merge(const LatencySketch& other) {
  if (other.buckets_.empty()) return;
  if (buckets_.empty()) {
    buckets_ = other.buckets_;
    count_ = other.count_;
    return;
  }
  // One scratch buffer per thread: a read merges a sketch per rollup row.
  thread_local std::vector<std::pair<int32_t, int64_t>> merged;
  merged.clear();
  merged.reserve(buckets_.size() + other.buckets_.size());
  auto a = buckets_.cbegin(), b = other.buckets_.cbegin();
  while (a != buckets_.cend() || b != other.buckets_.cend()) {
    if (b == other.buckets_.cend() || (a != buckets_.cend() && a->first < b->first)) {
      merged.push_back(*a++);
    } else if (a == buckets_.cend() || b->first < a->first) {
      merged.push_back(*b++);
    } else {
      merged.emplace_back(a->first, a->second + b->second);
      ++a;
      ++b;
    }
  }
  buckets_.swap(merged);
  count_ += other.count_;
}

Status LatencySketch::MergeEncoded(std::string_view text) {
  // One scratch sketch per thread: a read parses one per rollup row.
  thread_local LatencySketch parsed;
  parsed.buckets_.clear();
  parsed.count_ = 0;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  while (p < end) {
    if (*p == ' ') {
      ++p;
      continue;
    }
    int32_t key = 0;
    int64_t n = 0;
    auto k = std::from_chars(p, end, key);
    if (k.ec != std::errc() || k.ptr == end || *k.ptr != ':') return Status::Internal("malformed latency sketch");
    auto c = std::from_chars(k.ptr + 1, end, n);
    if (c.ec != std::errc() || n < 0) return Status::Internal("malformed latency sketch");
    // Encode writes keys ascending: appending keeps the order.
    if (!parsed.buckets_.empty() && key <= parsed.buckets_.back().first) {
      return Status::Internal("malformed latency sketch: keys out of order");
    }
    if (n > 0) {
      parsed.buckets_.emplace_back(key, n);
      parsed.count_ += n;
    }
    p = c.ptr;
  }
  Merge(parsed);
  return Status::Ok();
}

std::string LatencySketch::Encode() const {
  std::string out;
  char key[16], count[24];
  for (const auto& [k, n] : buckets_) {
    if (!out.empty()) out.push_back(' ');
    out.append(key, std::to_chars(key, key + sizeof(key), k).ptr);
    out.push_back(':');
    out.append(count, std::to_chars(count, count + sizeof(count), n).ptr);
  }
  return out;
}

double LatencySketch::ValueAtRank(int64_t rank) const {
  int64_t seen = 0;
  for (const auto& [k, n] : buckets_) {
    seen += n;
    if (seen > rank) return ValueOf(k);
  }
  return ValueOf(buckets_.back().first);
}

double LatencySketch::Percentile(double q, int64_t min_ns, int64_t max_ns) const {
  if (count_ == 0) return NAN;
  // The same ranks as the exact interpolation (PercentileSorted): each end
  // is within the error of its exact value, so their mix is too.
  const double pos = q * static_cast<double>(count_ - 1);
  const int64_t lo = static_cast<int64_t>(std::floor(pos));
  const int64_t hi = std::min(lo + 1, count_ - 1);
  const double frac = pos - static_cast<double>(lo);
  const double v_lo = ValueAtRank(lo), v_hi = hi == lo ? v_lo : ValueAtRank(hi);
  const double v = v_lo + (v_hi - v_lo) * frac;
  // The exact extremes: clamping can only move an estimate toward its value.
  return std::clamp(v, static_cast<double>(min_ns), static_cast<double>(max_ns));
}

}  // namespace sightline
