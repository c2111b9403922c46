#pragma once

// The bench's own OTLP encoder: one request's generated rows as an OTLP
// export request body, protobuf wire format or OTLP/JSON. Written from the
// OTLP .proto field numbers and the OTLP/JSON mapping by hand (otlp_emitter.h),
// sharing no code with the server's decoders, so a mistake on either side
// shows up as a difference (load_generator_test.cc decodes every shape with
// the server's decoder and compares it with the rows).
//
// Consecutive rows of one resource become one ResourceSpans / ResourceLogs /
// ResourceMetrics block with the request's scope; consecutive metric points
// of one metric become one Metric message. Thread-safe (no shared state).

#include <string>

#include "bench/generated_rows.h"

namespace sightline::bench {

enum class WireFormat { kProtobuf, kJson };

std::string EncodeOtlp(const SpanRequest& request, WireFormat format);
std::string EncodeOtlp(const LogRequest& request, WireFormat format);
std::string EncodeOtlp(const MetricRequest& request, WireFormat format);

}  // namespace sightline::bench
