#include "bench/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace sightline::bench {

namespace {

constexpr double kWidth = 760, kHeight = 380;
constexpr double kLeft = 80, kRight = 560, kTop = 44, kBottom = 300;
// Mid-tone colours that keep their contrast on white and on near-black.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string DefaultFormat(double v) {
  char buf[32];
  double a = std::fabs(v);
  if (a >= 1e9) std::snprintf(buf, sizeof(buf), "%.3gB", v / 1e9);
  else if (a >= 1e6) std::snprintf(buf, sizeof(buf), "%.3gM", v / 1e6);
  else if (a >= 1e3) std::snprintf(buf, sizeof(buf), "%.3gk", v / 1e3);
  else std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

//! Maps values onto the plot's vertical extent, linear from 0 or by decades.
class YScale {
 public:
  YScale(double lo, double hi, bool log) : log_(log) {
    if (!(hi > 0)) hi = 1;
    if (log) {
      if (!(lo > 0) || lo > hi) lo = hi;
      lo_ = std::pow(10, std::floor(std::log10(lo)));
      // A value on the bottom decade line would draw as nothing; start one lower.
      if (lo_ >= lo * 0.999) lo_ /= 10;
      hi_ = std::pow(10, std::ceil(std::log10(hi)));
      if (hi_ <= lo_) hi_ = lo_ * 10;
    } else {
      double step = NiceStep(hi / 5);
      lo_ = 0;
      hi_ = std::ceil(hi / step) * step;
    }
  }
  double operator()(double v) const {
    double f = log_ ? (std::log10(std::max(v, lo_)) - std::log10(lo_)) / (std::log10(hi_) - std::log10(lo_))
                    : (v - lo_) / (hi_ - lo_);
    return kBottom - f * (kBottom - kTop);
  }
  std::vector<double> Ticks() const {
    std::vector<double> t;
    if (log_) {
      for (double v = lo_; v <= hi_ * 1.0001 && t.size() < 16; v *= 10) t.push_back(v);
    } else {
      double step = NiceStep(hi_ / 5);
      for (double v = 0; v <= hi_ * 1.0001 && t.size() < 16; v += step) t.push_back(v);
    }
    return t;
  }
  bool Plottable(double v) const { return std::isfinite(v) && (!log_ || v > 0); }

 private:
  static double NiceStep(double raw) {
    if (!(raw > 0)) return 1;
    double mag = std::pow(10, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
      if (raw <= m * mag) return m * mag;
    }
    return 10 * mag;
  }
  bool log_;
  double lo_ = 0, hi_ = 1;
};

std::string Header(const std::string& title) {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + Num(kWidth) + " " + Num(kHeight) +
                  "\" width=\"" + Num(kWidth) + "\" height=\"" + Num(kHeight) +
                  "\" font-family=\"sans-serif\" font-size=\"11\" fill=\"currentColor\">\n";
  s += "<title>" + Escape(title) + "</title>\n";
  s += "<style>text{fill:currentColor}.axis{stroke:currentColor;stroke-opacity:.5}.grid{stroke:currentColor;"
       "stroke-opacity:.12}@media (prefers-color-scheme:dark){svg{color:#ddd}}</style>\n";
  s += "<text x=\"" + Num(kWidth / 2) + "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">" + Escape(title) +
       "</text>\n";
  return s;
}

std::string YAxis(const YScale& y, const std::string& label, std::string (*format)(double)) {
  std::string s;
  for (double t : y.Ticks()) {
    std::string py = Num(y(t));
    s += "<line class=\"grid\" x1=\"" + Num(kLeft) + "\" x2=\"" + Num(kRight) + "\" y1=\"" + py + "\" y2=\"" + py +
         "\"/>\n";
    s += "<text x=\"" + Num(kLeft - 6) + "\" y=\"" + py + "\" text-anchor=\"end\" dominant-baseline=\"middle\">" +
         Escape(format(t)) + "</text>\n";
  }
  s += "<line class=\"axis\" x1=\"" + Num(kLeft) + "\" x2=\"" + Num(kLeft) + "\" y1=\"" + Num(kTop) + "\" y2=\"" +
       Num(kBottom) + "\"/>\n";
  s += "<line class=\"axis\" x1=\"" + Num(kLeft) + "\" x2=\"" + Num(kRight) + "\" y1=\"" + Num(kBottom) + "\" y2=\"" +
       Num(kBottom) + "\"/>\n";
  s += "<text transform=\"translate(16 " + Num((kTop + kBottom) / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
       Escape(label) + "</text>\n";
  return s;
}

std::string LegendEntry(size_t i, const std::string& color, const std::string& label, bool dashed, bool hollow) {
  std::string y = Num(kTop + 8 + 18 * static_cast<double>(i));
  std::string s = "<circle cx=\"" + Num(kRight + 24) + "\" cy=\"" + y + "\" r=\"5\" " +
                  (hollow ? "fill=\"none\" stroke=\"" + color + "\"" : "fill=\"" + color + "\"") +
                  (dashed ? " stroke-dasharray=\"2 2\" stroke=\"" + color + "\"" : "") + "/>\n";
  s += "<text x=\"" + Num(kRight + 36) + "\" y=\"" + y + "\" dominant-baseline=\"middle\">" + Escape(label) +
       "</text>\n";
  return s;
}

}  // namespace

std::string RenderLineChart(const LineChart& c) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const ChartSeries& s : c.series) {
    for (double v : s.y) {
      if (std::isfinite(v) && (!c.log_y || v > 0)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
  }
  if (c.threshold) lo = std::min(lo, *c.threshold), hi = std::max(hi, *c.threshold);
  YScale y(lo, hi, c.log_y);
  std::string s = Header(c.title) + YAxis(y, c.y_label, DefaultFormat);
  double n = static_cast<double>(std::max<size_t>(c.categories.size(), 1));
  auto px = [&](size_t i) { return kLeft + (static_cast<double>(i) + 0.5) * (kRight - kLeft) / n; };
  for (size_t i = 0; i < c.categories.size(); ++i) {
    s += "<text x=\"" + Num(px(i)) + "\" y=\"" + Num(kBottom + 16) + "\" text-anchor=\"middle\">" +
         Escape(c.categories[i]) + "</text>\n";
  }
  s += "<text x=\"" + Num((kLeft + kRight) / 2) + "\" y=\"" + Num(kBottom + 40) + "\" text-anchor=\"middle\">" +
       Escape(c.x_label) + "</text>\n";
  if (c.threshold) {
    std::string ty = Num(y(*c.threshold));
    s += "<line x1=\"" + Num(kLeft) + "\" x2=\"" + Num(kRight) + "\" y1=\"" + ty + "\" y2=\"" + ty +
         "\" stroke=\"#e15759\" stroke-dasharray=\"6 4\"/>\n";
    s += "<text x=\"" + Num(kRight - 4) + "\" y=\"" + Num(y(*c.threshold) - 4) + "\" text-anchor=\"end\">" +
         Escape(c.threshold_label) + "</text>\n";
  }
  for (size_t k = 0; k < c.series.size(); ++k) {
    const ChartSeries& series = c.series[k];
    std::string color = kPalette[k % std::size(kPalette)], points, dots;
    for (size_t i = 0; i < series.y.size() && i < c.categories.size(); ++i) {
      if (!y.Plottable(series.y[i])) continue;
      std::string p = Num(px(i)) + "," + Num(y(series.y[i]));
      points += (points.empty() ? "" : " ") + p;
      dots += "<circle cx=\"" + Num(px(i)) + "\" cy=\"" + Num(y(series.y[i])) + "\" r=\"2.5\" fill=\"" + color + "\"/>";
    }
    s += "<polyline fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\"" +
         (series.dashed ? " stroke-dasharray=\"5 3\"" : "") + " points=\"" + points + "\"/>\n";
    s += dots + "\n" + LegendEntry(k, color, series.name, series.dashed, false);
  }
  return s + "</svg>\n";
}

std::string RenderBarChart(const BarChart& c) {
  auto format = c.format != nullptr ? c.format : DefaultFormat;
  std::vector<std::string> groups, labels, colors;
  auto color_of = [&](const ChartBar& b) {
    const std::string& key = b.color_key.empty() ? b.label : b.color_key;
    auto at = std::find(colors.begin(), colors.end(), key);
    if (at == colors.end()) at = colors.insert(colors.end(), key);
    return std::string(kPalette[static_cast<size_t>(at - colors.begin()) % std::size(kPalette)]);
  };
  std::map<std::string, std::vector<const ChartBar*>> by_group;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const ChartBar& b : c.bars) {
    if (!by_group.count(b.group)) groups.push_back(b.group);
    by_group[b.group].push_back(&b);
    if (std::find(labels.begin(), labels.end(), b.label) == labels.end()) labels.push_back(b.label);
    if (std::isfinite(b.value) && b.value > 0) lo = std::min(lo, b.value), hi = std::max(hi, b.value);
  }
  YScale y(lo, hi, c.log_y);
  std::string s = Header(c.title) + YAxis(y, c.y_label, format);
  double group_w = (kRight - kLeft) / static_cast<double>(std::max<size_t>(groups.size(), 1));
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& bars = by_group[groups[g]];
    double bar_w = group_w * 0.8 / static_cast<double>(bars.size());
    double gx = kLeft + group_w * static_cast<double>(g) + group_w * 0.1;
    for (size_t i = 0; i < bars.size(); ++i) {
      const ChartBar& b = *bars[i];
      std::string color = color_of(b);
      double top = y.Plottable(b.value) ? y(b.value) : kBottom;
      double x = gx + bar_w * static_cast<double>(i);
      s += "<rect x=\"" + Num(x + 1) + "\" y=\"" + Num(top) + "\" width=\"" + Num(bar_w - 2) + "\" height=\"" +
           Num(kBottom - top) + "\" " +
           (b.hollow ? "fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\"" : "fill=\"" + color + "\"") +
           "><title>" + Escape(b.group + " " + b.label + ": " + format(b.value)) + "</title></rect>\n";
      s += "<text x=\"" + Num(x + bar_w / 2) + "\" y=\"" + Num(top - 4) + "\" text-anchor=\"middle\" font-size=\"9\">" +
           Escape(b.text.empty() ? format(b.value) : b.text) + "</text>\n";
    }
    s += "<text x=\"" + Num(kLeft + group_w * (static_cast<double>(g) + 0.5)) + "\" y=\"" + Num(kBottom + 16) +
         "\" text-anchor=\"middle\">" + Escape(groups[g]) + "</text>\n";
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    const ChartBar* first = nullptr;
    for (const ChartBar& b : c.bars) {
      if (first == nullptr && b.label == labels[i]) first = &b;
    }
    s += LegendEntry(i, color_of(*first), labels[i], false, first->hollow);
  }
  return s + "</svg>\n";
}

}  // namespace sightline::bench
