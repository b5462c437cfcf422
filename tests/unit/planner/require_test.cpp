// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "optadvisor/base/error.hpp"
#include "optadvisor/planner/require.hpp"

using namespace optadvisor;

namespace {

std::string error_of(std::string_view text) {
  try {
    parse_requirement(text);
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    return e.what();
  }
  return "";
}

const nlohmann::json kDoc = nlohmann::json::parse(R"({
  "decode": {"tokens_per_s": 206.9, "bound": "memory-bandwidth"},
  "memory": {"fits": true, "total_bytes": 5340000000},
  "scenario": {"engine": {"id": "llama.cpp:cuda"}},
  "plan": [{"gain": 1.8}, {"gain": 1.1}]
})");

bool passes(std::string_view text) { return check_requirements({parse_requirement(text)}, kDoc).front().passed; }

}  // namespace

TEST_CASE("require: parses paths, operators and values") {
  Requirement r = parse_requirement("decode.tokens_per_s>=30");
  REQUIRE(r.path.size() == 2);
  CHECK(r.path[0].key == "decode");
  CHECK(r.path[1].key == "tokens_per_s");
  CHECK(r.op == CompareOp::kGe);
  CHECK(std::get<double>(r.value) == 30.0);

  r = parse_requirement("  !memory.fits ");
  CHECK(r.op == CompareOp::kFalsy);
  CHECK(path_to_string(r.path) == "memory.fits");

  r = parse_requirement("plan[1].gain < 2");
  REQUIRE(r.path.size() == 3);
  CHECK(r.path[1].index == 1);
  CHECK(path_to_string(r.path) == "plan[1].gain");

  // 24GiB = 24 x 2^30 = 25,769,803,776 bytes; 2G = 2e9.
  CHECK(std::get<double>(parse_requirement("memory.total_bytes<=24GiB").value) == 25769803776.0);
  CHECK(std::get<double>(parse_requirement("memory.total_bytes<=2G").value) == 2e9);
  CHECK(std::get<double>(parse_requirement("x>1.5e3").value) == 1500.0);
  CHECK(std::get<std::string>(parse_requirement("scenario.engine.id==llama.cpp:cuda").value) == "llama.cpp:cuda");
  CHECK(std::get<std::string>(parse_requirement("a!='two words'").value) == "two words");
  CHECK(std::get<bool>(parse_requirement("memory.fits==false").value) == false);
}

TEST_CASE("require: evaluates against a document") {
  CHECK(passes("decode.tokens_per_s>=30"));
  CHECK_FALSE(passes("decode.tokens_per_s>=300"));
  CHECK(passes("decode.tokens_per_s<206.91"));
  CHECK_FALSE(passes("decode.tokens_per_s>206.9"));
  CHECK(passes("memory.fits"));
  CHECK_FALSE(passes("!memory.fits"));
  CHECK(passes("memory.fits==true"));
  CHECK(passes("memory.fits!=false"));
  // 5.34e9 bytes is under 5 GiB = 5,368,709,120 bytes.
  CHECK(passes("memory.total_bytes<=5GiB"));
  CHECK_FALSE(passes("memory.total_bytes<=5G"));
  CHECK(passes("scenario.engine.id==llama.cpp:cuda"));
  CHECK(passes("scenario.engine.id!=vllm"));
  CHECK(passes("decode.bound=='memory-bandwidth'"));
  CHECK(passes("plan[0].gain>=1.5"));
  CHECK_FALSE(passes("plan[1].gain>=1.5"));
}

TEST_CASE("require: failures say why") {
  auto r = check_requirements({parse_requirement("decode.tokens_pr_s>1")}, kDoc).front();
  CHECK_FALSE(r.passed);
  CHECK(r.actual == "missing");
  CHECK_THAT(r.reason, Catch::Contains("'decode.tokens_pr_s' is not in the output") && Catch::Contains("tokens_per_s"));

  r = check_requirements({parse_requirement("plan[5].gain>1")}, kDoc).front();
  CHECK_THAT(r.reason, Catch::Contains("'plan[5]'") && Catch::Contains("an array of 2"));

  r = check_requirements({parse_requirement("decode.bound>1")}, kDoc).front();
  CHECK_THAT(r.reason, Catch::Contains("not a number"));

  r = check_requirements({parse_requirement("decode.tokens_per_s")}, kDoc).front();
  CHECK_THAT(r.reason, Catch::Contains("not a boolean"));

  r = check_requirements({parse_requirement("decode.tokens_per_s>=300")}, kDoc).front();
  CHECK(r.reason == "decode.tokens_per_s is 206.9, required >= 300");
}

TEST_CASE("require: malformed expressions name the column") {
  CHECK_THAT(error_of(""), Catch::Contains("empty expression at column 1"));
  CHECK_THAT(error_of("   "), Catch::Contains("empty expression at column 4"));
  CHECK_THAT(error_of("decode.tokens_per_s=>30"), Catch::Contains("'=' is not an operator") && Catch::Contains("column 20"));
  CHECK_THAT(error_of("decode.tokens_per_s>="), Catch::Contains("expected a value") && Catch::Contains("column 22"));
  CHECK_THAT(error_of(">=30"), Catch::Contains("expected a JSON path") && Catch::Contains("column 1"));
  CHECK_THAT(error_of("decode..x>1"), Catch::Contains("column 8"));
  CHECK_THAT(error_of("plan[x].gain>1"), Catch::Contains("expected an array index at column 6"));
  CHECK_THAT(error_of("plan[1.gain>1"), Catch::Contains("expected ']' at column 7"));
  CHECK_THAT(error_of("plan[12345678901].gain>1"), Catch::Contains("too large"));
  CHECK_THAT(error_of("a>=fast"), Catch::Contains("expected a number, got 'fast' at column 4"));
  CHECK_THAT(error_of("a>='x'"), Catch::Contains("strings compare only with == and !="));
  CHECK_THAT(error_of("a>true"), Catch::Contains("booleans compare only"));
  CHECK_THAT(error_of("a=='open"), Catch::Contains("unterminated string at column 4"));
  CHECK_THAT(error_of("a>=1 2"), Catch::Contains("unexpected '2'") && Catch::Contains("column 6"));
  CHECK_THAT(error_of("!a>=1"), Catch::Contains("'!' negates a bare path"));
  CHECK_THAT(error_of("a>=1e999"), Catch::Contains("expected a number"));
  CHECK_THAT(error_of("a>=5XB"), Catch::Contains("expected a number"));
  CHECK_THAT(error_of("a b"), Catch::Contains("expected an operator"));
  CHECK_THAT(error_of("a==-x"), Catch::Contains("expected a number, true/false or a string"));
}
