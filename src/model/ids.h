#pragma once

// The ids of the keyed rows, which spans, logs and metric points reference:
// a metric series' series_id and a (resource, scope) pair's resource_id.
// They are hashes of the row's identifying fields (common/hash.h), computed
// by the decoders when data arrives and by `sightline migrate` from the
// stored columns, so both must call these functions. Every input is a column
// of the keyed table (docs/STORAGE.md, "Ids"); the values are persisted, and
// model/ids_test.cc pins them.

#include <cstdint>
#include <string_view>

#include "common/hash.h"

namespace sightline {

//! resource_id of span_resources / log_resources / metric_resources: the
//! resource attributes JSON, the scope name and version and the scope
//! attributes JSON, as stored.
//! The project is not part of it; rows are keyed by (project_id, resource_id).
int64_t ResourceId(std::string_view resource_attributes, std::string_view scope_name, std::string_view scope_version,
                   std::string_view scope_attributes);

//! What identifies a metric series besides its point attributes: the same
//! for every point of one OTLP Metric. Views; the strings must outlive it.
struct SeriesMetric {
  int64_t project_id = 0;
  std::string_view metric_name;
  int32_t metric_type = 0;  // MetricType
  std::string_view unit;
  int32_t temporality = 0;
  bool monotonic = false;
  std::string_view resource_attributes;
  std::string_view scope_name;
  std::string_view scope_version;
};

//! series_id of metric_series: the hash of the point attributes, seeded
//! with the hash of the per-metric fields, so those (the resource JSON above
//! all) are hashed once per metric rather than once per point. The
//! description is not part of a series' identity.
class SeriesIdHasher {
 public:
  explicit SeriesIdHasher(const SeriesMetric& metric);
  //! The id of the series with these point attributes (JSON, as stored).
  int64_t Id(std::string_view attributes) const;

 private:
  uint64_t seed_;  // StableHash of the SeriesMetric fields, in declaration order
};

}  // namespace sightline
