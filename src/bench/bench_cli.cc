#include "bench/bench_cli.h"

namespace sightline {

void AddBenchCommands(CLI::App*) {}

}  // namespace sightline
