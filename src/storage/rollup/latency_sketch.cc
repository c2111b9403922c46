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
  if (counts_.empty()) {
    offset_ = key;
    counts_.assign(1, 0);
  } else if (key < offset_) {
    counts_.insert(counts_.begin(), static_cast<size_t>(offset_ - key), 0);
    offset_ = key;
  } else if (key - offset_ >= static_cast<int32_t>(counts_.size())) {
    counts_.resize(static_cast<size_t>(key - offset_) + 1, 0);
  }
  counts_[static_cast<size_t>(key - offset_)] += n;
  count_ += n;
}

void LatencySketch::Merge(const LatencySketch& other) {
  for (size_t i = 0; i < other.counts_.size(); ++i) {
    if (other.counts_[i] != 0) AddKey(other.offset_ + static_cast<int32_t>(i), other.counts_[i]);
  }
}

Status LatencySketch::MergeEncoded(std::string_view text) {
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
    if (n > 0) AddKey(key, n);
    p = c.ptr;
  }
  return Status::Ok();
}

std::string LatencySketch::Encode() const {
  std::string out;
  char key[16], count[24];
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] == 0) continue;
    if (!out.empty()) out.push_back(' ');
    out.append(key, std::to_chars(key, key + sizeof(key), offset_ + static_cast<int32_t>(i)).ptr);
    out.push_back(':');
    out.append(count, std::to_chars(count, count + sizeof(count), counts_[i]).ptr);
  }
  return out;
}

double LatencySketch::ValueAtRank(int64_t rank) const {
  int64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen > rank) return ValueOf(offset_ + static_cast<int32_t>(i));
  }
  return ValueOf(offset_ + static_cast<int32_t>(counts_.size()) - 1);
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
