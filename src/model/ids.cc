#include "model/ids.h"

namespace sightline {

int64_t ResourceId(std::string_view resource_attributes, std::string_view scope_name, std::string_view scope_version,
                   std::string_view scope_attributes) {
  return static_cast<int64_t>(StableHash({resource_attributes, scope_name, scope_version, scope_attributes}));
}

SeriesIdHasher::SeriesIdHasher(const SeriesMetric& m)
    : seed_(StableHash({HashField::Int(m.project_id), m.metric_name, HashField::Int(m.metric_type), m.unit,
                        HashField::Int(m.temporality), HashField::Int(m.monotonic ? 1 : 0), m.resource_attributes,
                        m.scope_name, m.scope_version})) {}

int64_t SeriesIdHasher::Id(std::string_view attributes) const {
  return static_cast<int64_t>(StableHash({attributes}, seed_));
}

}  // namespace sightline
