// SPDX-License-Identifier: MIT
#include "base/table.hpp"

#include <algorithm>

namespace optadvisor {

std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

Table::Table(std::vector<std::string> header, std::vector<Align> align) : header_(std::move(header)), align_(std::move(align)) {
  align_.resize(header_.size(), Align::kLeft);
}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(header_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::to_text() const {
  std::vector<std::size_t> width(header_.size());
  for (std::size_t c = 0; c < header_.size(); ++c) {
    width[c] = display_width(header_[c]);
    for (const auto& row : rows_) width[c] = std::max(width[c], display_width(row[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::size_t pad = width[c] - display_width(cells[c]);
      const bool last = c + 1 == cells.size();
      if (align_[c] == Align::kRight)
        out += std::string(pad, ' ') + cells[c];
      else
        out += cells[c] + (last ? "" : std::string(pad, ' '));
      if (!last) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  std::vector<std::string> rule;
  for (auto w : width) rule.push_back(std::string(w, '-'));
  out += line(rule);
  for (const auto& row : rows_) out += line(row);
  return out;
}

std::string Table::to_markdown() const {
  auto escape = [](const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '|')
        out += "\\|";
      else
        out += c;
    }
    return out;
  };
  std::string out = "|";
  for (const auto& h : header_) out += " " + escape(h) + " |";
  out += "\n|";
  for (auto a : align_) out += a == Align::kRight ? "---:|" : "---|";
  out += "\n";
  for (const auto& row : rows_) {
    out += "|";
    for (const auto& cell : row) out += " " + escape(cell) + " |";
    out += "\n";
  }
  return out;
}

}  // namespace optadvisor
