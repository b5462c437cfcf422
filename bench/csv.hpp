// SPDX-License-Identifier: MIT
// A small RFC 4180 CSV reader and sample statistics for the benchmarks.
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace optadvisor::bench {

using CsvRow = std::map<std::string, std::string>;

inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(field), field.clear();
    } else if (c == '\n') {
      row.push_back(field), field.clear();
      rows.push_back(row), row.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (!field.empty() || !row.empty()) row.push_back(field), rows.push_back(row);
  return rows;
}

/// Rows keyed by the header line's names.
inline std::vector<CsvRow> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  auto rows = parse_csv(text.str());
  std::vector<CsvRow> out;
  if (rows.empty()) return out;
  const auto header = rows.front();
  for (std::size_t r = 1; r < rows.size(); ++r) {
    CsvRow row;
    for (std::size_t c = 0; c < header.size() && c < rows[r].size(); ++c) row[header[c]] = rows[r][c];
    out.push_back(std::move(row));
  }
  return out;
}

/// Linear-interpolated quantile (0..1) of a sample; NaN when empty.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace optadvisor::bench
