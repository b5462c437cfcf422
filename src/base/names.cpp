// SPDX-License-Identifier: MIT
#include "base/names.hpp"

#include <algorithm>
#include <cctype>

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
  // Optimal string alignment: Levenshtein plus adjacent transpositions, so
  // the common typo "rtx4900" is one step from "rtx4090".
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::size_t> d((n + 1) * (m + 1));
  auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * (m + 1) + j]; };
  for (std::size_t i = 0; i <= n; ++i) at(i, 0) = i;
  for (std::size_t j = 0; j <= m; ++j) at(0, j) = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
    }
  }
  return at(n, m);
}

std::vector<std::string> closest_names(std::string_view query, const std::vector<std::string>& candidates, std::size_t limit) {
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
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Scored& x, const Scored& y) { return x.score != y.score ? x.score < y.score : x.name < y.name; });
  std::vector<std::string> out;
  for (const auto& s : scored) {
    if (out.size() == limit) break;
    if (std::find(out.begin(), out.end(), s.name) == out.end()) out.push_back(s.name);
  }
  return out;
}

}  // namespace optadvisor
