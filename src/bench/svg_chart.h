#pragma once

// Hand-written SVG charts for `sightline bench report`: no dependencies, small
// files, readable on light and dark pages (text and axes use currentColor,
// plus a prefers-color-scheme rule for viewers that show the file on its own).
// Pure functions of their input; thread-compatible.

#include <optional>
#include <string>
#include <vector>

namespace sightline::bench {

//! One line: y values at the chart's categories (NaN = no point there).
struct ChartSeries {
  std::string name;
  std::vector<double> y;
  bool dashed = false;
};

//! A line chart over categorical x positions (steps, ladder levels). Each
//! series is one <polyline>; a threshold draws one dashed <line>.
struct LineChart {
  std::string title, x_label, y_label;
  std::vector<std::string> categories;
  std::vector<ChartSeries> series;
  bool log_y = false;
  std::optional<double> threshold;
  std::string threshold_label;
};

//! One bar; bars with the same group sit together. `hollow` bars are drawn as
//! outlines (used for published figures beside ours). Bars with the same
//! `color_key` (default: the label) share a colour; `text` replaces the value
//! printed above the bar (e.g. "> 10M" for a lower bound).
struct ChartBar {
  std::string group, label;
  double value = 0;
  bool hollow = false;
  std::string color_key, text;
};

//! A bar chart: one <rect> per bar, a legend of the labels.
struct BarChart {
  std::string title, y_label;
  std::vector<ChartBar> bars;
  bool log_y = false;
  //! Formats a y-axis tick or bar value; default plain numbers.
  std::string (*format)(double) = nullptr;
};

std::string RenderLineChart(const LineChart& chart);
std::string RenderBarChart(const BarChart& chart);

}  // namespace sightline::bench
