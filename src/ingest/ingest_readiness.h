#pragma once

// Whether ingest may take requests now, asked by IngestService::Admit before
// a body is read. The server's disk guard (maintenance/disk_guard.h) is one:
// below the free-space floor every export is refused with 503 and a
// Retry-After, while reads go on.

#include "common/status.h"

namespace sightline {

//! Thread-safe; asked once per request, so it must be cheap (it may refresh
//! what it knows, hence not const).
class IngestReadiness {
 public:
  virtual ~IngestReadiness() = default;
  //! OK while ingest may proceed; otherwise the retryable status
  //! (Unavailable) to refuse a request with, saying why.
  virtual Status Ready() = 0;
  //! How long a refused client is told to wait (Retry-After), in seconds.
  virtual int retry_after_seconds() const = 0;
};

}  // namespace sightline
