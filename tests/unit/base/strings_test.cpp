// SPDX-License-Identifier: MIT
// Text helpers shared by every area.
#include <catch2/catch.hpp>

#include "base/strings.hpp"

using namespace optadvisor;

TEST_CASE("a list joined as a sentence names it: commas, then 'and' before the last", "[base][strings]") {
  CHECK(join_with_and({}).empty());
  CHECK(join_with_and({"decode"}) == "decode");
  CHECK(join_with_and({"MoE prefill", "decode"}) == "MoE prefill and decode");
  CHECK(join_with_and({"quantized prefill", "MoE prefill", "decode"}) == "quantized prefill, MoE prefill and decode");
  CHECK(join_with_and({"a", "b", "c", "d"}) == "a, b, c and d");
}
