// SPDX-License-Identifier: MIT
// Capacity planning's price: --gpu-hour-usd, else the device profile's on-demand list price with
// its source, else no cost; and a profile's price must name one of its sources.
#include <catch2/catch.hpp>

#include <fstream>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/catalog/hardware.hpp"
#include "optadvisor/planner/capacity.hpp"
#include "fixtures.hpp"

using namespace optadvisor;
using fixtures::catalog;

namespace {

CapacityRequest plan_request(const std::string& hw) {
  CapacityRequest q;
  q.scenario.hardware = hw;
  q.scenario.model.preset = "llama-3.1-8b";
  q.scenario.engine = "vllm";
  q.scenario.quant = "fp8";
  q.rate_per_s = 2;
  q.slo_ttft_s = 2;
  q.slo_tpot_s = 0.1;
  q.max_gpus = 2;
  return q;
}

}  // namespace

TEST_CASE("plan costs tokens at the device's list price unless --gpu-hour-usd is given", "[planner][capacity][price]") {
  // CoreWeave's 8 x H100 instance at $49.24 an hour: $6.155 per GPU-hour.
  const CapacityPlan listed = plan_capacity(catalog(), plan_request("h100"));
  CHECK(listed.gpu_hour_usd == Approx(6.155));
  CHECK(listed.gpu_hour_from.rfind("Kael Research, GPU Economics", 0) == 0);
  REQUIRE_FALSE(listed.candidates.empty());
  const CapacityCandidate& best = listed.candidates.front();
  CHECK(best.cost_per_hour_usd == Approx(6.155 * best.gpus));
  // 2 requests/s x 256 generated tokens x 3600 s = 1.8432e6 tokens an hour.
  CHECK(best.cost_per_million_output_tokens_usd == Approx(6.155 * best.gpus / 1.8432));
  CHECK(listed.notes.front().rfind("costs at $6.16 per GPU-hour, an on-demand list price", 0) == 0);

  CapacityRequest own = plan_request("h100");
  own.gpu_hour_usd = 2;
  const CapacityPlan mine = plan_capacity(catalog(), own);
  CHECK(mine.gpu_hour_usd == 2);
  CHECK(mine.gpu_hour_from == "--gpu-hour-usd");
  REQUIRE_FALSE(mine.candidates.empty());
  CHECK(mine.candidates.front().cost_per_hour_usd == Approx(2.0 * mine.candidates.front().gpus));

  // An L4 profile states no price: no cost unless the user gives one.
  const CapacityPlan unpriced = plan_capacity(catalog(), plan_request("l4"));
  CHECK(unpriced.gpu_hour_usd == 0);
  for (const auto& c : unpriced.candidates) CHECK(c.cost_per_hour_usd == 0);
}

TEST_CASE("the list prices per GPU: a whole instance's hourly price over its GPUs", "[hardware][price]") {
  // CoreWeave, February 2026: a GB200 NVL72 4-GPU slice at $42.00 an hour = $10.50 per GPU-hour;
  // 8 x B200 at $68.80 = $8.60.
  const HardwareProfile& gb200 = catalog().resolve_hardware("gb200");
  REQUIRE(gb200.gpu_hour_usd);
  CHECK(*gb200.gpu_hour_usd == Approx(42.00 / 4));
  CHECK(gb200.gpu_hour_source.rfind("Kael Research, GPU Economics", 0) == 0);
  const HardwareProfile& b200 = catalog().resolve_hardware("b200");
  REQUIRE(b200.gpu_hour_usd);
  CHECK(*b200.gpu_hour_usd == Approx(68.80 / 8));
}

TEST_CASE("a profile's GPU-hour price names one of its sources", "[hardware][price]") {
  std::ifstream file(std::string(OPTADVISOR_SOURCE_DIR) + "/data/hardware/datacenter-gpu/h100-sxm.json");
  nlohmann::json doc = nlohmann::json::parse(file);
  REQUIRE(doc.contains("gpu_hour_usd"));
  std::vector<Problem> problems;
  CHECK(hardware_from_json(doc, problems));
  CHECK(problems.empty());
  doc["gpu_hour_usd"]["source"] = "a blog post not in sources";
  (void)hardware_from_json(doc, problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems.front().pointer == "/gpu_hour_usd/source");
  CHECK(problems.front().message == "names no entry of sources (give the title of the source that states the price)");
}
