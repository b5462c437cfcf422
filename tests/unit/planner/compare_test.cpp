// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/planner/compare.hpp"
#include "optadvisor/advisor/playbook.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::catalog;

using fixtures::model;

CompareRequest hardware_request(std::vector<std::string> devices) {
  CompareRequest r;
  r.base.model.preset = "llama-3.1-8b";
  r.axis = CompareAxis::kHardware;
  r.values = std::move(devices);
  return r;
}

bool has_best(const CompareRow& row, CompareColumn c) { return std::find(row.best.begin(), row.best.end(), c) != row.best.end(); }

}  // namespace

TEST_CASE("tokens per joule and per 1000 USD from a real profile", "[compare][efficiency]") {
  // data/hardware/consumer-gpu/rtx4090.json: power_watts 450, price_usd 1599.
  const HardwareProfile& hw = catalog().resolve_hardware("rtx4090");
  REQUIRE(hw.power_watts.value_or(0) == 450);
  REQUIRE(hw.price_usd.value_or(0) == 1599);
  // Two cards serving 900 tokens/s: 900 / (450 W x 2) = 1.0 token per joule;
  // 900 / (1599 USD x 2 / 1000) = 900 / 3.198 = 281.4259 tokens/s per 1000 USD.
  const Efficiency e = efficiency(hw, 2, 900.0);
  CHECK(*e.power_watts == Approx(900.0));
  CHECK(*e.tokens_per_joule == Approx(1.0));
  CHECK(*e.price_usd == Approx(3198.0));
  CHECK(*e.tokens_per_s_per_kusd == Approx(281.4259).epsilon(1e-6));

  // data/hardware/datacenter-gpu/h100-sxm.json has a board power (700 W) but no price: no per-dollar figure.
  const Efficiency h = efficiency(catalog().resolve_hardware("h100"), 1, 1400.0);
  CHECK(*h.tokens_per_joule == Approx(2.0));  // 1400 / 700
  CHECK_FALSE(h.price_usd);
  CHECK_FALSE(h.tokens_per_s_per_kusd);
}

TEST_CASE("compare devices: one row each, best values marked", "[compare]") {
  const Comparison c = compare(catalog(), model("llama-3.1-8b"), hardware_request({"rtx4090", "rtx5090", "h100"}));
  REQUIRE(c.rows.size() == 3);
  CHECK(c.rows[0].prepared->scenario.hardware->id == "rtx4090");
  CHECK(c.rows[2].prepared->scenario.hardware->id == "h100-sxm");
  for (const auto& row : c.rows) {
    CHECK(row.status == CandidateStatus::kFits);
    // Serving throughput is the throughput goal's metric; tokens/J divides it by board power x GPUs.
    CHECK(row.serving_tokens_per_s == Approx(goal_metric(Goal::kThroughput, row.analysis)));
    CHECK(*row.efficiency.tokens_per_joule == Approx(row.serving_tokens_per_s / *row.prepared->scenario.hardware->power_watts));
  }
  // Exactly one best per column here; the H100 (no list price) cannot hold the per-dollar best.
  for (CompareColumn col : all_compare_columns()) {
    int marked = 0;
    for (const auto& row : c.rows) marked += has_best(row, col) ? 1 : 0;
    CHECK(marked == 1);
  }
  CHECK_FALSE(has_best(c.rows[2], CompareColumn::kPerDollar));
  CHECK_FALSE(c.rows[2].column(CompareColumn::kPerDollar));
  // The RTX 5090 (1.79 TB/s) decodes the same q4_k_m weights faster than the RTX 4090 (1.01 TB/s).
  CHECK(*c.rows[1].column(CompareColumn::kDecodePerSequence) > *c.rows[0].column(CompareColumn::kDecodePerSequence));
}

TEST_CASE("compare sorts by a column, rows without it last", "[compare]") {
  CompareRequest r = hardware_request({"rtx3060", "h100", "rtx4090"});
  r.base.model.preset = "llama-3.1-70b";
  r.base.engine = "vllm";
  r.base.quant = "awq-int4";
  r.sort = CompareSort::kTtft;
  const Comparison c = compare(catalog(), model("llama-3.1-70b"), r);
  REQUIRE(c.rows.size() == 3);
  // 70B in AWQ is ~40 GB: only the H100 holds it; the 12 and 24 GB cards follow, in the given order.
  CHECK(c.rows[0].value == "h100");
  CHECK(c.rows[0].status == CandidateStatus::kFits);
  CHECK(c.rows[1].value == "rtx3060");
  CHECK(c.rows[1].status == CandidateStatus::kDoesNotFit);
  CHECK(c.rows[1].reason.find("does not fit") == 0);
  CHECK(c.rows[2].value == "rtx4090");
}

TEST_CASE("compare: a candidate that cannot run is a row, unknown names and all-failing lists are errors", "[compare]") {
  CompareRequest r;
  r.base.model.preset = "llama-3.1-8b";
  r.base.hardware = "rtx4090";
  r.axis = CompareAxis::kEngine;
  r.values = {"llama.cpp", "mlx"};
  const Comparison c = compare(catalog(), model("llama-3.1-8b"), r);
  REQUIRE(c.rows.size() == 2);
  CHECK(c.rows[0].status == CandidateStatus::kFits);
  CHECK(c.rows[1].status == CandidateStatus::kUnavailable);
  CHECK(c.rows[1].reason == "engine 'mlx' does not run on rtx4090");
  CHECK(c.rows[1].best.empty());

  r.values = {"mlx", "executorch"};
  CHECK_THROWS_WITH(compare(catalog(), model("llama-3.1-8b"), r), "engine 'mlx' does not run on rtx4090");

  try {
    compare(catalog(), model("llama-3.1-8b"), hardware_request({"rtx4090", "rtx4009"}));
    FAIL("an unknown device must throw");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    CHECK(std::string(e.what()) == "unknown hardware 'rtx4009'");
    CHECK(e.hint().find("rtx4090") != std::string::npos);
  }
}

TEST_CASE("engine names with backends are checked", "[compare]") {
  CHECK_NOTHROW(check_engine_name(catalog(), "vllm"));
  CHECK_NOTHROW(check_engine_name(catalog(), "llama.cpp:metal"));
  try {
    check_engine_name(catalog(), "llama.cpp:metl");
    FAIL("an unknown backend must throw");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "unknown backend 'metl' for engine 'llama.cpp'");
    CHECK(e.hint().find("did you mean 'llama.cpp:metal'?") == 0);
  }
  CHECK_THROWS_AS(check_engine_name(catalog(), "vlm-x"), Error);
}

TEST_CASE("compare: a device entry may carry its memory size (m4-max-40c:64GB)", "[compare][memory]") {
  // data/hardware/apple-silicon/m4-max-40c.json: sold with 48, 64 or 128 GB (GiB-sized parts,
  // memory_capacity_in_gib), macOS lets the GPU wire 75% of it.
  const Comparison c =
      compare(catalog(), model("llama-3.1-8b"), hardware_request({"m4-max-40c:64GB", "m4-max-40c:128GB", "rtx4090:24GB"}));
  REQUIRE(c.rows.size() == 3);
  CHECK(c.rows[0].value == "m4-max-40c:64GB");
  CHECK(c.rows[0].request.hardware == "m4-max-40c");
  CHECK(c.rows[0].request.memory == "64GB");
  // 64 x 2^30 x 0.75 = 51,539,607,552 B; 128 x 2^30 x 0.75 = 103,079,215,104 B.
  CHECK(c.rows[0].analysis.memory.limit_bytes == Approx(51539607552.0));
  CHECK(c.rows[1].analysis.memory.limit_bytes == Approx(103079215104.0));
  // A part sold in one size accepts that size: the RTX 4090 row is its own 24 GB.
  CHECK(c.rows[2].status == CandidateStatus::kFits);

  const auto message = [](std::vector<std::string> devices) {
    return fixtures::bad_input_message([&] { (void)compare(catalog(), model("llama-3.1-8b"), hardware_request(std::move(devices))); });
  };
  CHECK(message({"rtx4090", ":24GB"}) == "--hw entry ':24GB' is not a device or device:size");
  CHECK(message({"rtx4090", "m4-max-40c:"}) == "--hw entry 'm4-max-40c:' is not a device or device:size");
  CHECK(message({"rtx4090", "m4-max-40c:96GB"}) == "--memory 96GB: m4-max-40c is sold with 48, 64 or 128 GB");
  CHECK(message({"rtx4090:48GB", "m4-max-40c"}) == "--memory 48GB: rtx4090 is sold with 24 GB only");
}
