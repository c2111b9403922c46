#pragma once

// `sightline bench oltp`: reproduces DESIGN.md's second reference, SQLite alone
// with the production pragmas, on one application-shaped table. Phases run in
// order on one database file: bulk insert, then two passes (cached, uncached)
// of primary-key select, indexed range scan, per-row update, mixed 70/25/5 and
// concurrent readers beside one writer. Single-threaded except the last phase,
// which runs its own reader threads and a writer thread, each on its own
// connection. bench/README.md has the method and the JSON schema.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace CLI {
class App;
}

namespace sightline::bench {

struct OltpBenchOptions {
  uint64_t rows = 10'000'000;      // bulk-insert size
  uint64_t insert_batch = 10'000;  // rows per bulk-insert transaction
  double phase_seconds = 10;       // bound of each read/update phase
  uint64_t ops = 0;                // when > 0, bound of each phase instead of phase_seconds
  int readers = 2;                 // reader threads in concurrent_readers
  uint64_t cache_mb = 8;           // SQLite page cache of the uncached pass (mmap off)
  int range_limit = 50;            // rows per range scan
  uint64_t seed = 1;
  std::string data_dir;  // "" = a temp dir under work_dir
  std::string work_dir;  // "" = $TMPDIR or /tmp
  bool keep_data = false;
  std::string json_out;
};

//! Runs the phases, prints the table beside the published figures, writes the
//! JSON; returns the exit code (0 ok, 1 setup or SQLite failure).
int RunOltpBench(const OltpBenchOptions& options);

//! Registers `bench oltp` and its options on the `bench` command.
void AddOltpCommand(CLI::App* bench);

//! The published figure (ops/s) for a phase and cache mode of the reference
//! (DESIGN.md), or nullopt when it published none. Shared with `bench report`.
std::optional<double> PublishedOltpOpsPerS(std::string_view phase, std::string_view cache);

}  // namespace sightline::bench
