// SPDX-License-Identifier: MIT
#include "optadvisor/names.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace optadvisor {

std::string normalize_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 && u < 128) out.push_back(static_cast<char>(std::tolower(u)));
  }
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      std::size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> closest_names(std::string_view query, const std::vector<std::string>& candidates,
                                       std::size_t limit) {
  const std::string q = normalize_name(query);
  struct Scored {
    std::size_t score;
    std::string name;
  };
  std::vector<Scored> scored;
  const std::size_t max_distance = std::max<std::size_t>(2, q.size() / 3);
  for (const auto& candidate : candidates) {
    const std::string c = normalize_name(candidate);
    std::size_t d = edit_distance(q, c);
    bool related = d <= max_distance;
    if (!q.empty() && q.size() >= 2 && c.find(q) != std::string::npos) {
      related = true;
      d = std::min(d, c.size() - q.size());  // a prefix or substring hit ranks by what is missing
    }
    if (related) scored.push_back({d, candidate});
  }
  std::stable_sort(scored.begin(), scored.end(), [](const Scored& x, const Scored& y) {
    return x.score != y.score ? x.score < y.score : x.name < y.name;
  });
  std::vector<std::string> out;
  for (const auto& s : scored) {
    if (out.size() == limit) break;
    if (std::find(out.begin(), out.end(), s.name) == out.end()) out.push_back(s.name);
  }
  return out;
}

}  // namespace optadvisor
