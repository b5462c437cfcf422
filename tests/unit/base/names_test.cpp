// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "base/names.hpp"

using namespace optadvisor;

TEST_CASE("names normalize to lowercase letters and digits", "[names]") {
  CHECK(normalize_name("RTX 5090") == "rtx5090");
  CHECK(normalize_name("rtx-5090") == "rtx5090");
  CHECK(normalize_name("M4 Max (40-core)") == "m4max40core");
  CHECK(normalize_name("llama-3.1-8b") == "llama318b");
  CHECK(normalize_name("") == "");
  CHECK(normalize_name("\xc3\xa9-x") == "x");  // non-ASCII bytes are dropped, not lowercased into garbage
}

TEST_CASE("edit distance counts insertions, deletions and substitutions", "[names]") {
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("h100sxm", "h100sxm") == 0);
  CHECK(edit_distance("rtx4900", "rtx4090") == 1);  // one adjacent transposition
}

TEST_CASE("closest names rank near misses first and ignore unrelated ones", "[names]") {
  const std::vector<std::string> ids = {"rtx4090", "rtx4080", "rtx5090", "h100-sxm", "m4-max-40c"};
  auto close = closest_names("rtx4900", ids);
  REQUIRE_FALSE(close.empty());
  CHECK(close.front() == "rtx4090");  // one transposition, vs two substitutions for rtx4080
  CHECK(closest_names("completely-unrelated-name", ids).empty());
  // A prefix ranks by how much is missing: "h100" is in "h100-sxm".
  CHECK(closest_names("h100", ids).front() == "h100-sxm");
}
