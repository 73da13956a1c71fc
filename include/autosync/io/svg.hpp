// autosync/io/svg.hpp — an iteration timeline as an SVG picture.
//
//   forward  |██████|
//   backward |      |█████████████████████|            gradients become ready right to left
//   comm     |      |     ▒▒  ▒▒▒   ▒▒▒▒▒▒|▒▒▒▒▒|      lane 0: collectives, one box per bucket
//   server 0 |      |        ░░░      ░░░░|░░|         lanes 1..S: parameter servers
//            0                      backward end  iteration
//
// Boxes are coloured by group; the part of communication that sticks out past the end of
// backward is the exposed time. Input: a prediction made with cost::options{.timeline = true}.
#pragma once

#include <autosync/cost/estimate.hpp>
#include <autosync/model.hpp>
#include <autosync/strategy/descriptor.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

namespace autosync::io {

namespace svg_detail {  // not io::detail: that would hide autosync::detail from io's code
inline std::string svg_escape(std::string_view s) {
  std::string r;
  for (char c : s) {
    switch (c) {
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '&': r += "&amp;"; break;
      case '"': r += "&quot;"; break;
      default: r += c;
    }
  }
  return r;
}
inline std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
inline std::string group_colour(std::uint32_t g) {
  static constexpr const char* palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                            "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return palette[g % (sizeof palette / sizeof *palette)];
}
inline std::string human_time(double s) {
  if (s >= 1.0) return fmt("%.3g s", s);
  if (s >= 1e-3) return fmt("%.3g ms", s * 1e3);
  return fmt("%.3g us", s * 1e6);
}
}  // namespace svg_detail

// The timeline of one predicted iteration. `title` goes on top (model, cluster, strategy).
[[nodiscard]] inline std::string timeline_svg(const model_spec& model, const strategy_desc& strategy,
                                              const cost::prediction& p, std::string_view title) {
  using svg_detail::fmt;
  int lanes = 1;
  for (const auto& e : p.events) lanes = std::max(lanes, e.lane + 1);
  const double W = 1100, left = 120, right = 20, lane_h = 26, top = 50;
  const double total = std::max(p.iteration, 1e-12);
  const double scale = (W - left - right) / total;
  const int rows = 2 + lanes;  // forward, backward, communication lanes
  const double H = top + rows * (lane_h + 8) + 60;
  auto x = [&](double t) { return left + t * scale; };
  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", W) + "\" height=\"" + fmt("%.0f", H) +
       "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">" + svg_detail::svg_escape(title) + "</text>\n";
  s += "<text x=\"10\" y=\"38\">iteration " + svg_detail::human_time(p.iteration) + " = forward " + svg_detail::human_time(p.forward) +
       " + backward " + svg_detail::human_time(p.backward) + " + exposed communication " + svg_detail::human_time(p.exposed) +
       "</text>\n";
  auto lane_y = [&](int row) { return top + row * (lane_h + 8); };
  auto label = [&](int row, std::string_view text) {
    s += "<text x=\"10\" y=\"" + fmt("%.1f", lane_y(row) + lane_h * 0.65) + "\">" + svg_detail::svg_escape(text) + "</text>\n";
  };
  auto box = [&](int row, double t0, double t1, const std::string& colour, const std::string& tip, double opacity) {
    const double w = std::max(0.5, (t1 - t0) * scale);
    s += "<rect x=\"" + fmt("%.2f", x(t0)) + "\" y=\"" + fmt("%.1f", lane_y(row)) + "\" width=\"" + fmt("%.2f", w) +
         "\" height=\"" + fmt("%.1f", lane_h) + "\" fill=\"" + colour + "\" fill-opacity=\"" + fmt("%.2f", opacity) +
         "\" stroke=\"#333\" stroke-width=\"0.3\"><title>" + svg_detail::svg_escape(tip) + "</title></rect>\n";
  };
  label(0, "forward");
  box(0, 0, p.forward, "#888888", "forward " + svg_detail::human_time(p.forward), 0.8);
  label(1, "backward");
  // backward compute, one box per tensor in ready order
  const auto order = model.backward_order();
  const double bw_total = model.backward_flops();
  double t = p.forward;
  for (auto ti : order) {
    const double d = bw_total > 0 ? p.backward * model.tensors[ti].backward_flops / bw_total : 0.0;
    if (d > 0) box(1, t, t + d, "#bbbbbb", model.tensors[ti].name + " " + svg_detail::human_time(d), 0.9);
    t += d;
  }
  for (int l = 0; l < lanes; ++l) label(2 + l, l == 0 ? "collectives" : "server " + std::to_string(l - 1));
  for (const auto& e : p.events) {
    const char* kind = e.kind == 0 ? "collective" : e.kind == 1 ? "push/pull" : "compression";
    std::string tip = std::string(kind) + " group " + std::to_string(e.group) + " bucket " + std::to_string(e.bucket) + ", " +
                      std::to_string(e.bytes) + " bytes, " + svg_detail::human_time(e.end - e.start);
    if (e.group < strategy.groups.size())
      tip += ", " + std::string(name_of(strategy.groups[e.group].architecture));
    box(2 + e.lane, e.start, e.end, svg_detail::group_colour(e.group), tip, e.kind == 2 ? 0.4 : 0.85);
  }
  // end of backward and of the iteration
  const double y1 = lane_y(rows) + 4;
  for (double tt : {p.forward + p.backward, p.iteration}) {
    s += "<line x1=\"" + fmt("%.2f", x(tt)) + "\" y1=\"" + fmt("%.1f", top - 4) + "\" x2=\"" + fmt("%.2f", x(tt)) + "\" y2=\"" +
         fmt("%.1f", y1) + "\" stroke=\"#d62728\" stroke-dasharray=\"4 3\"/>\n";
  }
  s += "<text x=\"" + fmt("%.2f", x(p.forward + p.backward) - 3) + "\" y=\"" + fmt("%.1f", y1 + 30) +
       "\" text-anchor=\"end\" fill=\"#d62728\">backward end</text>\n";
  s += "<text x=\"" + fmt("%.2f", x(p.iteration)) + "\" y=\"" + fmt("%.1f", y1 + 44) + "\" text-anchor=\"end\" fill=\"#d62728\">iteration " +
       svg_detail::human_time(p.iteration) + "</text>\n";
  // axis
  s += "<line x1=\"" + fmt("%.1f", left) + "\" y1=\"" + fmt("%.1f", y1) + "\" x2=\"" + fmt("%.1f", W - right) + "\" y2=\"" +
       fmt("%.1f", y1) + "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    const double tt = total * i / 5;
    s += "<text x=\"" + fmt("%.1f", x(tt)) + "\" y=\"" + fmt("%.1f", y1 + 14) + "\" text-anchor=\"middle\" fill=\"#555\">" +
         svg_detail::human_time(tt) + "</text>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace autosync::io
