#pragma once

// `sightline bench report RUN.json... [--out DIR]`: turns the JSON of `bench
// ingest`, `bench ramp`, `bench probe` and `bench oltp` into DIR/REPORT.md and
// SVG charts beside it, with the published baseline of DESIGN.md next to every
// figure it has a counterpart for. Sections whose inputs are missing are left
// out. bench/README.md documents the inputs it reads.

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace CLI {
class App;
}

namespace sightline::bench {

//! One input: the path as given (printed in the report) and its text.
struct ReportInput {
  std::string path;
  std::string json;
};

struct ReportFiles {
  std::string markdown;
  //! (file name, SVG text), written beside REPORT.md and linked from it.
  std::vector<std::pair<std::string, std::string>> charts;
};

//! Parses every input and renders the report. Fails, naming the file, on JSON
//! that does not parse, lacks "benchmark", or has a kind or version it does
//! not know.
Result<ReportFiles> BuildReport(const std::vector<ReportInput>& inputs);

struct ReportOptions {
  std::vector<std::string> inputs;
  std::string out_dir = "bench/results/report";
};

//! Reads the inputs, writes the report; returns 0, or 1 with the reason on stderr.
int RunReport(const ReportOptions& options);

//! Registers `bench report` on the `bench` command.
void AddReportCommand(CLI::App* bench);

}  // namespace sightline::bench
