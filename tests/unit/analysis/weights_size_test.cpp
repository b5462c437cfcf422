// SPDX-License-Identifier: MIT
// --weights-size: a file whose tensor mix its format's name does not say (Unsloth's UD-*_XL) read
// as that format with every tensor's bytes scaled to the size llama-bench reports.
#include <catch2/catch.hpp>

#include "optadvisor/analysis/analysis.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

using fixtures::catalog;
using fixtures::request;

std::string bad_input_message(const ScenarioRequest& r) {
  return fixtures::bad_input_message([&] { (void)prepare_scenario(catalog(), r); });
}

ScenarioRequest gemma_on_strix_halo() {
  ScenarioRequest r = request("ryzen-ai-max-395", "gemma-3-12b", "q8_0", "llama.cpp:rocm");
  r.prompt_tokens = 0;
  r.gen_tokens = 128;
  return r;
}

}  // namespace

TEST_CASE("the weights scale to --weights-size: every tensor of the format's table to the size llama-bench reports", "[analysis][weights]") {
  ScenarioRequest r = gemma_on_strix_halo();
  const PreparedScenario plain = prepare_scenario(catalog(), r);
  r.weights_size = "13.40GiB";  // gemma-3-12b-it-UD-Q8_K_XL.gguf, llama-bench's size column
  const PreparedScenario ud = prepare_scenario(catalog(), r);
  // 13.40 x 2^30 = 14,388,140,441.6 bytes; each tensor rounds to a whole byte, so the sum is within a byte per tensor.
  const double target = 13.40 * 1073741824.0;
  CHECK(static_cast<double>(ud.weights.weights_bytes) == Approx(target).margin(static_cast<double>(ud.weights.tensors.size())));
  const double ratio = target / static_cast<double>(plain.weights.weights_bytes);
  REQUIRE(ratio > 1.1);  // the UD file keeps some tensors wider than Q8_0
  REQUIRE(ud.weights.tensors.size() == plain.weights.tensors.size());
  for (std::size_t i = 0; i < ud.weights.tensors.size(); i += 97)
    CHECK(static_cast<double>(ud.weights.tensors[i].bytes) == Approx(static_cast<double>(plain.weights.tensors[i].bytes) * ratio).margin(1));
  CHECK(ud.scenario.weights.total_bytes == Approx(target).margin(static_cast<double>(ud.weights.tensors.size())));
  // Parameters do not change, only their bytes: bits per weight grow by the same ratio.
  CHECK(ud.weights.params == plain.weights.params);
  CHECK(ud.weights.bits_per_weight == Approx(plain.weights.bits_per_weight * ratio).epsilon(1e-6));
  // Decode reads the weights once a token: its weight time grows by the ratio too.
  const Analysis a = analyze(plain.scenario), b = analyze(ud.scenario);
  CHECK(b.decode.weights_time_s == Approx(a.decode.weights_time_s * ratio).epsilon(1e-6));
}

TEST_CASE("a weights size that is not a size, or not this model in this format, is bad input", "[analysis][weights]") {
  ScenarioRequest r = gemma_on_strix_halo();
  r.weights_size = "lots";
  CHECK(bad_input_message(r) == "--weights-size 'lots' is not a size");
  r.weights_size = "0";
  CHECK(bad_input_message(r) == "--weights-size '0' is not a size");
  r.weights_size = "1e15";  // bounded before it is used
  CHECK(bad_input_message(r) == "--weights-size '1e15' is not a size");
  // 3 GB against gemma-3-12b's Q8_0 table: well under half of it.
  r.weights_size = "3GB";
  const std::string message = bad_input_message(r);
  CHECK(message.starts_with("--weights-size 3GB is 0.24x the q8_0 weights of this model"));
  CHECK(message.ends_with("not a file of this model in that format"));
}

TEST_CASE("the advisor's move to another weight format drops the measured size of the user's file", "[analysis][weights][advisor]") {
  ScenarioRequest r = gemma_on_strix_halo();
  r.weights_size = "13.40GiB";
  // gguf-k-quant: Q8_0 -> Q4_K_M, another file whose size the user did not measure.
  const TransformResult t = fixtures::apply_rule("gguf-k-quant", r);
  REQUIRE(t.request);
  CHECK(t.request->quant == "q4_k_m");
  CHECK(t.request->weights_size.empty());
}
