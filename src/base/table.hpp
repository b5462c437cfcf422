// SPDX-License-Identifier: MIT
// A plain table rendered as aligned text or as a GitHub Markdown table.
#pragma once

#include <string>
#include <vector>

namespace optadvisor {

class Table {
 public:
  enum class Align { kLeft, kRight };
  explicit Table(std::vector<std::string> header, std::vector<Align> align = {});
  void add_row(std::vector<std::string> cells);
  /// Columns separated by two spaces, header underlined with dashes.
  std::string to_text() const;
  /// A GitHub-flavoured Markdown table.
  std::string to_markdown() const;
  std::size_t rows() const { return rows_.size(); }

 private:
  std::vector<std::string> header_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
};

/// Display width of a UTF-8 string (code points; the tables use no wide glyphs).
std::size_t display_width(const std::string& s);

}  // namespace optadvisor
