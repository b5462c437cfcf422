// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "base/units.hpp"

using namespace optadvisor;

TEST_CASE("memory sizes parse in GB, GiB, TB and bytes", "[base][units]") {
  CHECK(parse_bytes("64GB").value_or(0) == Approx(64e9));
  CHECK(parse_bytes("64 gib").value_or(0) == Approx(68719476736.0));  // 64 x 2^30
  CHECK(parse_bytes("0.5TB").value_or(0) == Approx(5e11));
  CHECK(parse_bytes("1TiB").value_or(0) == Approx(1099511627776.0));  // 2^40
  CHECK(parse_bytes("512e9").value_or(0) == Approx(512e9));
  CHECK_FALSE(parse_bytes("64MB"));
  CHECK_FALSE(parse_bytes("-8GB"));
  CHECK_FALSE(parse_bytes("GB"));
  CHECK_FALSE(parse_bytes(""));
}

TEST_CASE("sold memory sizes are written in the unit they are whole in", "[base][units]") {
  CHECK(format_memory_size(64e9) == "64 GB");
  // 412,316,860,416 B = 384 x 2^30: a DIMM-built server size reads in GiB, not as 412.317 GB.
  CHECK(format_memory_size(412316860416.0) == "384 GiB");
  CHECK(format_memory_sizes({48e9, 64e9, 128e9}) == "48, 64 or 128 GB");
  CHECK(format_memory_sizes({412316860416.0, 824633720832.0, 1649267441664.0}) == "384, 768 or 1536 GiB");
  // Neither unit whole for every size: GB, as {:g} writes it.
  CHECK(format_memory_sizes({24e9, 412316860416.0}) == "24 or 412.317 GB");
}
