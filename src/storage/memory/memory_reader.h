#pragma once

// The memory engine's TelemetryReader. Internal to storage/memory/: callers
// get one from MemoryStore::OpenReader().

#include <memory>

#include "storage/memory/memory_store.h"
#include "storage/telemetry_reader.h"

namespace sightline::memory {

//! A reader over `store`'s committed rows. Each operation reads under the
//! store lock, so it sees whole writes only. Not thread-safe, except
//! Interrupt(). The store must outlive it.
std::unique_ptr<TelemetryReader> NewMemoryReader(const MemoryStore* store, MemoryReaderOptions options);

}  // namespace sightline::memory
