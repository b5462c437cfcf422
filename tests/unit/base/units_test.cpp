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
