// Metric operations: metrics, metrics/labels, metrics/series.

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "query/operations.h"

namespace sightline::api {

namespace {

// Point attributes of a series as (key, value-as-text) pairs.
std::vector<std::pair<std::string, std::string>> ParseLabels(simdjson::dom::parser& parser, const std::string& json) {
  std::vector<std::pair<std::string, std::string>> out;
  simdjson::dom::element doc;
  if (parser.parse(json.empty() ? std::string("{}") : json).get(doc) != simdjson::SUCCESS) return out;
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return out;
  for (auto field : obj) {
    std::string value;
    std::string_view sv;
    if (field.value.get_string().get(sv) == simdjson::SUCCESS) value = std::string(sv);
    else value = simdjson::minify(field.value);
    out.emplace_back(std::string(field.key), std::move(value));
  }
  return out;
}

struct Series {
  const MetricSeriesInfo* info;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string Label(const std::string& key) const {
    if (key == "service.name") return info->service;
    for (const auto& [k, v] : labels) {
      if (k == key) return v;
    }
    return "";
  }
};

Result<std::vector<Series>> WithLabels(const Call& call, const MetricSeriesList& list) {
  simdjson::dom::parser parser;
  std::vector<Series> out;
  for (const auto& s : list) {
    SL_RETURN_IF_ERROR(CheckInterrupted(call));
    out.push_back(Series{&s, ParseLabels(parser, s.attributes)});
  }
  return out;
}

//! Every series of the metric, or a 400 naming the cap when it has more.
Result<MetricSeriesList> CappedSeries(const Call& call, const std::string& name) {
  MetricSeriesLookup lookup{call.project_id, name, call.limits.max_series};
  auto list = call.reader.FindSeries(lookup);
  if (list.ok() && static_cast<int64_t>(list->size()) > lookup.max_series) {
    return Status::InvalidArgument("metric '" + name + "' has more than " + std::to_string(lookup.max_series) +
                                   " series (the cap is --max-query-series): the server reads every series of a "
                                   "metric to filter and group them; raise the cap or record fewer label values");
  }
  return list;
}

// Quantile from explicit-bucket counts, interpolating linearly inside the
// bucket (as Prometheus histogram_quantile does); the first bucket starts at 0
// and the overflow bucket answers its lower bound.
double HistogramQuantile(const std::vector<double>& bounds, const std::vector<double>& counts, double q) {
  double total = 0;
  for (double c : counts) total += c;
  if (total <= 0 || counts.size() != bounds.size() + 1) return NAN;
  double rank = q * total, cum = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (cum + counts[i] >= rank && counts[i] > 0) {
      if (i == bounds.size()) return bounds.empty() ? NAN : bounds.back();
      double lo = i == 0 ? std::min(0.0, bounds[0]) : bounds[i - 1];
      double hi = bounds[i];
      return lo + (hi - lo) * (rank - cum) / counts[i];
    }
    cum += counts[i];
  }
  return bounds.empty() ? NAN : bounds.back();
}

// An exponential histogram (OTel base-2 buckets: base = 2^(2^-scale),
// positive bucket i covers (base^i, base^(i+1)], negative bucket i covers
// [-base^(i+1), -base^i)), with counts as doubles so deltas can be taken.
struct ExpDist {
  int32_t scale = 0;
  double zero_count = 0;
  int32_t pos_offset = 0, neg_offset = 0;
  std::vector<double> pos, neg;
};

bool ParseExpBuckets(simdjson::dom::element e, int32_t* offset, std::vector<double>* counts) {
  int64_t off = 0;
  if (e["offset"].get_int64().get(off) != simdjson::SUCCESS) off = 0;
  *offset = static_cast<int32_t>(off);
  simdjson::dom::array arr;
  if (e["bucket_counts"].get_array().get(arr) != simdjson::SUCCESS) return true;
  for (auto c : arr) {
    double d;
    if (c.get_double().get(d) != simdjson::SUCCESS) {
      uint64_t u;
      if (c.get_uint64().get(u) != simdjson::SUCCESS) return false;
      d = static_cast<double>(u);
    }
    counts->push_back(d);
  }
  return true;
}

//! The `exp_histogram` JSON of a point (docs/STORAGE.md); nullopt when unreadable.
std::optional<ExpDist> ParseExp(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS || !doc.is_object()) return std::nullopt;
  ExpDist d;
  int64_t scale = 0;
  if (doc["scale"].get_int64().get(scale) != simdjson::SUCCESS || scale < -10 || scale > 20) return std::nullopt;
  d.scale = static_cast<int32_t>(scale);
  double zero = 0;
  if (doc["zero_count"].get_double().get(zero) != simdjson::SUCCESS) {
    uint64_t u = 0;
    if (doc["zero_count"].get_uint64().get(u) == simdjson::SUCCESS) zero = static_cast<double>(u);
  }
  d.zero_count = zero;
  simdjson::dom::element b;
  if (doc["positive"].get(b) == simdjson::SUCCESS && !ParseExpBuckets(b, &d.pos_offset, &d.pos)) return std::nullopt;
  if (doc["negative"].get(b) == simdjson::SUCCESS && !ParseExpBuckets(b, &d.neg_offset, &d.neg)) return std::nullopt;
  return d;
}

// Index i at scale s falls in index i >> (s - t) at a smaller scale t (each
// step down merges two neighbouring buckets; >> floors negative indices).
void Downscale(int32_t by, int32_t* offset, std::vector<double>* counts) {
  if (by <= 0 || counts->empty()) return;
  const int32_t first = *offset >> by;
  const int32_t last = (*offset + static_cast<int32_t>(counts->size()) - 1) >> by;
  std::vector<double> out(static_cast<size_t>(last - first + 1), 0);
  for (size_t i = 0; i < counts->size(); ++i) out[((*offset + static_cast<int32_t>(i)) >> by) - first] += (*counts)[i];
  *offset = first;
  *counts = std::move(out);
}

void DownscaleTo(ExpDist* d, int32_t scale) {
  if (scale >= d->scale) return;
  Downscale(d->scale - scale, &d->pos_offset, &d->pos);
  Downscale(d->scale - scale, &d->neg_offset, &d->neg);
  d->scale = scale;
}

// counts += sign * other's counts, both at one scale.
void AddBuckets(int32_t* offset, std::vector<double>* counts, int32_t other_offset, const std::vector<double>& other,
                double sign) {
  if (other.empty()) return;
  if (counts->empty()) {
    *offset = other_offset;
    counts->assign(other.size(), 0);
  }
  const int32_t first = std::min(*offset, other_offset);
  const int32_t end =
      std::max(*offset + static_cast<int32_t>(counts->size()), other_offset + static_cast<int32_t>(other.size()));
  if (first != *offset || end != *offset + static_cast<int32_t>(counts->size())) {
    std::vector<double> grown(static_cast<size_t>(end - first), 0);
    for (size_t i = 0; i < counts->size(); ++i) grown[*offset - first + i] = (*counts)[i];
    *offset = first;
    *counts = std::move(grown);
  }
  for (size_t i = 0; i < other.size(); ++i) (*counts)[other_offset - first + i] += sign * other[i];
}

//! a += sign * b, at the smaller of the two scales.
void AddExp(ExpDist* a, ExpDist b, double sign) {
  const int32_t scale = std::min(a->scale, b.scale);
  DownscaleTo(a, scale);
  DownscaleTo(&b, scale);
  a->zero_count += sign * b.zero_count;
  AddBuckets(&a->pos_offset, &a->pos, b.pos_offset, b.pos, sign);
  AddBuckets(&a->neg_offset, &a->neg, b.neg_offset, b.neg, sign);
}

bool AnyNegative(const ExpDist& d) {
  auto neg = [](double c) { return c < 0; };
  return d.zero_count < 0 || std::any_of(d.pos.begin(), d.pos.end(), neg) ||
         std::any_of(d.neg.begin(), d.neg.end(), neg);
}

// Quantile from exponential buckets, interpolating linearly inside the bucket
// (values in the zero bucket count as 0). The answer lies in the same bucket as
// the true quantile, so its relative error is below base - 1.
double ExpQuantile(const ExpDist& d, double q) {
  double total = d.zero_count;
  for (double c : d.pos) total += c;
  for (double c : d.neg) total += c;
  if (total <= 0) return NAN;
  const double base = std::exp2(std::exp2(-static_cast<double>(d.scale)));
  auto bound = [&](int64_t index) { return std::pow(base, static_cast<double>(index)); };
  const double rank = q * total;
  double cum = 0;
  // Ascending values: negative buckets from the highest index down, zero, positive.
  for (size_t k = d.neg.size(); k-- > 0;) {
    const double c = d.neg[k];
    if (c > 0 && cum + c >= rank) {
      const int64_t i = d.neg_offset + static_cast<int64_t>(k);
      const double lo = -bound(i + 1), hi = -bound(i);
      return lo + (hi - lo) * (rank - cum) / c;
    }
    cum += c;
  }
  if (d.zero_count > 0 && cum + d.zero_count >= rank) return 0;
  cum += d.zero_count;
  for (size_t k = 0; k < d.pos.size(); ++k) {
    const double c = d.pos[k];
    if (c > 0 && cum + c >= rank) {
      const int64_t i = d.pos_offset + static_cast<int64_t>(k);
      const double lo = bound(i), hi = bound(i + 1);
      return lo + (hi - lo) * (rank - cum) / c;
    }
    cum += c;
  }
  for (size_t k = d.pos.size(); k-- > 0;) {
    if (d.pos[k] > 0) return bound(d.pos_offset + static_cast<int64_t>(k) + 1);
  }
  return 0;
}

// A summary point's reported quantile q (`quantiles` JSON: [{"quantile",
// "value"}]): the reported value, linear between the two reported quantiles
// around q, NaN outside them (a summary's quantiles cannot be recomputed).
double SummaryQuantile(simdjson::dom::parser& parser, const std::string& json, double q) {
  std::vector<std::pair<double, double>> reported;
  simdjson::dom::element doc;
  simdjson::dom::array arr;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS || doc.get_array().get(arr) != simdjson::SUCCESS) return NAN;
  for (auto e : arr) {
    double quantile, value;
    if (e["quantile"].get_double().get(quantile) != simdjson::SUCCESS) continue;
    if (e["value"].get_double().get(value) != simdjson::SUCCESS) continue;
    reported.emplace_back(quantile, value);
  }
  std::sort(reported.begin(), reported.end());
  for (size_t i = 0; i < reported.size(); ++i) {
    if (std::abs(reported[i].first - q) < 1e-9) return reported[i].second;
    if (i > 0 && reported[i - 1].first < q && q < reported[i].first) {
      const auto [q0, v0] = reported[i - 1];
      const auto [q1, v1] = reported[i];
      return v0 + (v1 - v0) * (q - q0) / (q1 - q0);
    }
  }
  return NAN;
}

}  // namespace

Result<std::string> MetricList(const Call& call) {
  MetricCatalogQuery query{call.project_id, call.limits.max_metrics};
  auto catalog = call.reader.ListMetrics(query);
  if (!catalog.ok()) return catalog.status();
  // Past the cap the list holds the first metrics by name and says so.
  const bool truncated = static_cast<int64_t>(catalog->size()) > query.max_rows;
  if (truncated) catalog->resize(static_cast<size_t>(query.max_rows));
  struct Info {
    bool monotonic = false;
    int64_t temporality = 0;
    MetricType type = MetricType::kGauge;
    std::string unit, description;
    std::set<std::string> services;
  };
  std::map<std::string, Info> metrics;
  for (const MetricCatalogRow& r : *catalog) {
    Info& i = metrics[r.name];
    i.type = r.type;
    if (i.unit.empty()) i.unit = r.unit;
    if (i.description.empty()) i.description = r.description;
    i.services.insert(r.service);
    i.monotonic |= r.monotonic;
    i.temporality = std::max<int64_t>(i.temporality, r.temporality);
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("metrics");
  w.BeginArray();
  for (const auto& [name, i] : metrics) {
    w.BeginObject();
    w.Key("name");
    w.String(name);
    w.Key("type");
    w.String(MetricTypeName(i.type));
    w.Key("unit");
    w.String(i.unit);
    w.Key("description");
    w.String(i.description);
    w.Key("monotonic");
    w.Bool(i.monotonic);
    w.Key("temporality");
    w.String(i.temporality == 1 ? "delta" : i.temporality == 2 ? "cumulative" : "unspecified");
    w.Key("services");
    w.BeginArray();
    for (const auto& s : i.services) w.String(s);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("truncated");
  w.Bool(truncated);
  w.EndObject();
  return out;
}

Result<std::string> MetricLabels(const Call& call) {
  auto name = call.params.Get("name");
  if (!name) return Status::InvalidArgument("give the metric 'name'");
  auto list = CappedSeries(call, *name);
  if (!list.ok()) return list.status();
  auto series = WithLabels(call, *list);
  if (!series.ok()) return series.status();
  std::map<std::string, std::set<std::string>> labels;
  for (const auto& s : *series) {
    labels["service.name"].insert(s.info->service);
    for (const auto& [k, v] : s.labels) labels[k].insert(v);
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("labels");
  w.BeginObject();
  for (const auto& [k, values] : labels) {
    w.Key(k);
    w.BeginArray();
    for (const auto& v : values) w.String(v);
    w.EndArray();
  }
  w.EndObject();
  w.EndObject();
  return out;
}

Result<std::string> MetricSeries(const Call& call) {
  const ApiParams& p = call.params;
  auto asked = ParseRange(p);
  if (!asked.ok()) return asked.status();
  auto step = ParseStep(p, *asked);
  if (!step.ok()) return step.status();
  const MsRange range = AlignToStep(*asked, *step);
  auto name = p.Get("name");
  if (!name) return Status::InvalidArgument("give the metric 'name'");
  std::string agg = p.Get("agg").value_or("avg");
  static const std::set<std::string> kAggs = {"avg", "sum", "min", "max", "rate", "last", "p50", "p95", "p99"};
  if (!kAggs.count(agg)) {
    return Status::InvalidArgument("agg must be one of avg, sum, min, max, rate, last, p50, p95, p99");
  }
  std::vector<std::string> group_by;
  if (auto g = p.Get("group_by")) {
    size_t start = 0;
    while (start <= g->size()) {
      size_t comma = g->find(',', start);
      std::string key = g->substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!key.empty()) group_by.push_back(key);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  auto filters = AttrFilters(p, "filter");
  if (!filters.ok()) return filters.status();
  auto list = CappedSeries(call, *name);
  if (!list.ok()) return list.status();
  auto with_labels = WithLabels(call, *list);
  if (!with_labels.ok()) return with_labels.status();
  const std::vector<Series>& all = *with_labels;
  const bool quantile = agg[0] == 'p';
  const double q = agg == "p50" ? 0.5 : agg == "p95" ? 0.95 : 0.99;
  // Series that pass the filters, and their group.
  std::map<std::vector<std::string>, int> group_index;
  std::vector<std::vector<std::string>> group_keys;
  std::unordered_map<int64_t, std::pair<int, const Series*>> chosen;
  MetricSeriesQuery query;
  query.project_id = call.project_id;
  query.range = range.ns();
  query.buckets = BucketsOf(range, *step);
  for (const auto& s : all) {
    bool keep =
        std::all_of(filters->begin(), filters->end(), [&](const AttrFilter& f) { return s.Label(f.key) == f.value; });
    if (!keep) continue;
    bool histogram = s.info->type == MetricType::kHistogram || s.info->type == MetricType::kExponentialHistogram ||
                     s.info->type == MetricType::kSummary;
    if (quantile && !histogram) continue;
    if (!quantile && histogram && agg != "rate") continue;
    if (agg == "rate" && !(s.info->type == MetricType::kSum && s.info->monotonic)) continue;
    // A cumulative counter's values are running totals since its start:
    // adding or averaging them answers nothing a user asked.
    if (agg != "rate" && agg != "last" && !quantile && s.info->type == MetricType::kSum && s.info->monotonic &&
        s.info->temporality == 2) {
      return Status::InvalidArgument("agg=" + agg + " of the cumulative counter '" + *name +
                                     "' would add up running totals: use agg=rate (increase per second) or "
                                     "agg=last (the running total)");
    }
    std::vector<std::string> key;
    for (const auto& g : group_by) key.push_back(s.Label(g));
    auto [it, inserted] = group_index.emplace(key, static_cast<int>(group_keys.size()));
    if (inserted) group_keys.push_back(key);
    chosen[s.info->series_id] = {it->second, &s};
    query.series_ids.push_back(s.info->series_id);
    if (s.info->temporality == 1) query.delta_series_ids.push_back(s.info->series_id);
  }
  if (!all.empty() && chosen.empty() && (quantile || agg == "rate")) {
    return Status::InvalidArgument(quantile ? "percentiles need a histogram, exponential histogram or summary metric"
                                            : "rate needs a monotonic sum metric");
  }
  const int64_t n = query.buckets.count;
  if (static_cast<int64_t>(group_keys.size()) * n > call.limits.max_points) {
    return Status::InvalidArgument(
        "group_by gives " + std::to_string(group_keys.size()) + " series of " + std::to_string(n) +
        " buckets, more than the " + std::to_string(call.limits.max_points) +
        " points one chart may hold (--max-query-points): group by fewer labels, add a filter or use a larger step_ms");
  }
  std::vector<std::vector<double>> values(group_keys.size(), std::vector<double>(n, NAN));
  if (!chosen.empty()) {
    query.want = quantile                         ? MetricSeriesQuery::Want::kHistograms
                 : agg == "rate" || agg == "last" ? MetricSeriesQuery::Want::kLast
                                                  : MetricSeriesQuery::Want::kStats;
    auto buckets = call.reader.AggregateSeries(query);
    if (!buckets.ok()) return buckets.status();
    if (query.want == MetricSeriesQuery::Want::kStats) {
      // Per series and bucket from the engine, combined per group here.
      std::vector<std::vector<double>> sum(group_keys.size(), std::vector<double>(n, 0)),
          cnt(group_keys.size(), std::vector<double>(n, 0));
      for (const MetricBucket& m : *buckets) {
        SL_RETURN_IF_ERROR(CheckInterrupted(call));
        auto it = chosen.find(m.series_id);
        if (it == chosen.end() || m.bucket < 0 || m.bucket >= n) continue;
        int g = it->second.first;
        double& v = values[g][m.bucket];
        sum[g][m.bucket] += m.sum;
        cnt[g][m.bucket] += static_cast<double>(m.count);
        if (agg == "min") v = std::isnan(v) ? m.min : std::min(v, m.min);
        if (agg == "max") v = std::isnan(v) ? m.max : std::max(v, m.max);
      }
      if (agg == "sum" || agg == "avg") {
        for (size_t g = 0; g < group_keys.size(); ++g) {
          for (int64_t b = 0; b < n; ++b) {
            if (cnt[g][b] > 0) values[g][b] = agg == "sum" ? sum[g][b] : sum[g][b] / cnt[g][b];
          }
        }
      }
    } else if (agg == "last") {
      // The newest value of each series in the bucket, added up per group
      // (an UpDownCounter per queue gives the total queue depth).
      for (const MetricBucket& m : *buckets) {
        SL_RETURN_IF_ERROR(CheckInterrupted(call));
        auto it = chosen.find(m.series_id);
        if (it == chosen.end() || m.bucket < 0 || m.bucket >= n) continue;
        double& v = values[it->second.first][m.bucket];
        v = (std::isnan(v) ? 0 : v) + m.last;
      }
    } else if (query.want == MetricSeriesQuery::Want::kLast) {
      // Increase per second. Cumulative sums diff the last value of
      // consecutive buckets (a drop is a reset: the new value is the
      // increase); delta sums add up their values.
      // A cumulative increase across empty buckets is spread over the time
      // since the previous point's bucket, not charged to one bucket.
      const double step_s = static_cast<double>(*step) / 1000.0;
      int64_t prev_series = 0;
      int64_t prev_bucket = 0;
      double prev_last = NAN;
      for (const MetricBucket& m : *buckets) {
        SL_RETURN_IF_ERROR(CheckInterrupted(call));
        auto it = chosen.find(m.series_id);
        if (it == chosen.end() || m.bucket < 0 || m.bucket >= n) continue;
        if (m.series_id != prev_series) {
          prev_series = m.series_id;
          prev_last = NAN;
        }
        double inc;
        int64_t span = 1;
        if (it->second.second->info->temporality == 1) {
          inc = m.sum;
        } else {
          if (std::isnan(prev_last)) {
            prev_last = m.last;
            prev_bucket = m.bucket;
            continue;  // the first bucket of a cumulative series has no baseline
          }
          inc = m.last >= prev_last ? m.last - prev_last : m.last;
          span = std::max<int64_t>(1, m.bucket - prev_bucket);
          prev_last = m.last;
          prev_bucket = m.bucket;
        }
        double& v = values[it->second.first][m.bucket];
        v = (std::isnan(v) ? 0 : v) + inc / (step_s * static_cast<double>(span));
      }
    } else {
      // Histogram percentiles: per series and bucket, the bucket's
      // distribution (delta: summed by the engine; cumulative: the newest
      // point minus the previous bucket's newest), merged per group when the
      // bounds agree.
      struct Dist {
        std::vector<double> bounds, counts;
      };
      std::map<std::pair<int, int64_t>, Dist> merged;
      // Exponential histograms: merged at the smallest scale seen; a
      // cumulative point minus the previous bucket's newest point.
      std::map<std::pair<int, int64_t>, ExpDist> merged_exp;
      std::map<std::pair<int, int64_t>, double> summary_max;
      simdjson::dom::parser parser;
      int64_t prev_series = 0;
      std::vector<double> prev_counts;
      std::optional<ExpDist> prev_exp;
      for (const MetricBucket& m : *buckets) {
        SL_RETURN_IF_ERROR(CheckInterrupted(call));
        auto it = chosen.find(m.series_id);
        if (it == chosen.end() || m.bucket < 0 || m.bucket >= n) continue;
        if (m.series_id != prev_series) {
          prev_series = m.series_id;
          prev_counts.clear();
          prev_exp.reset();
        }
        if (!m.quantiles.empty()) {
          // A summary's own quantile; several series in a group answer the
          // greatest (quantiles of different series cannot be merged).
          const double v = SummaryQuantile(parser, m.quantiles, q);
          if (std::isnan(v)) continue;
          auto [cell, fresh] = summary_max.try_emplace({it->second.first, m.bucket}, v);
          if (!fresh) cell->second = std::max(cell->second, v);
          continue;
        }
        if (!m.exp_histograms.empty()) {
          std::optional<ExpDist> sum;
          for (const std::string& text : m.exp_histograms) {
            std::optional<ExpDist> point = ParseExp(parser, text);
            if (!point) continue;
            if (!sum) sum = std::move(point);
            else AddExp(&*sum, std::move(*point), 1);
          }
          if (!sum) continue;
          ExpDist dist = *sum;
          if (it->second.second->info->temporality != 1) {
            if (prev_exp) {
              ExpDist diff = dist;
              AddExp(&diff, *prev_exp, -1);
              if (!AnyNegative(diff)) dist = std::move(diff);  // else a reset: the point counts whole
            }
            prev_exp = std::move(sum);
          }
          auto [cell, fresh] = merged_exp.try_emplace({it->second.first, m.bucket}, dist);
          if (!fresh) AddExp(&cell->second, std::move(dist), 1);
          continue;
        }
        std::vector<double> dist = m.counts;
        if (it->second.second->info->temporality != 1) {
          if (prev_counts.size() == dist.size()) {
            bool reset = false;
            for (size_t i = 0; i < dist.size(); ++i) reset |= dist[i] < prev_counts[i];
            if (!reset) {
              for (size_t i = 0; i < dist.size(); ++i) dist[i] -= prev_counts[i];
            }
          }
          prev_counts = m.counts;
        }
        Dist& d = merged[{it->second.first, m.bucket}];
        if (d.counts.empty()) {
          d.bounds = m.bounds;
          d.counts = std::move(dist);
        } else if (d.bounds == m.bounds && d.counts.size() == dist.size()) {
          for (size_t i = 0; i < dist.size(); ++i) d.counts[i] += dist[i];
        }
      }
      for (const auto& [key, d] : merged) values[key.first][key.second] = HistogramQuantile(d.bounds, d.counts, q);
      for (const auto& [key, d] : merged_exp) {
        if (std::isnan(values[key.first][key.second])) values[key.first][key.second] = ExpQuantile(d, q);
      }
      for (const auto& [key, v] : summary_max) {
        if (std::isnan(values[key.first][key.second])) values[key.first][key.second] = v;
      }
    }
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("name");
  w.String(*name);
  w.Key("agg");
  w.String(agg);
  WriteBuckets(&w, range, *step, n);
  w.Key("series");
  w.BeginArray();
  for (size_t g = 0; g < group_keys.size(); ++g) {
    w.BeginObject();
    w.Key("labels");
    w.BeginObject();
    for (size_t i = 0; i < group_by.size(); ++i) {
      w.Key(group_by[i]);
      w.String(group_keys[g][i]);
    }
    w.EndObject();
    w.Key("values");
    w.BeginArray();
    for (double v : values[g]) WriteNumberOrNull(&w, v);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

}  // namespace sightline::api
