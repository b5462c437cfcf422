// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "optadvisor/catalog/catalog.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

const Catalog& shipped() { return fixtures::catalog(); }

double rate(const std::string& id, const std::string& dtype) { return shipped().resolve_hardware(id).peak_flops_per_s(dtype).value_or(-1); }

std::string test_data(const std::string& rel) { return std::string(OPTADVISOR_SOURCE_DIR) + "/tests/data/" + rel; }

}  // namespace

TEST_CASE("every shipped data file validates", "[hardware][data]") {
  const auto problems = Catalog::validate({});
  for (const auto& p : problems) UNSCOPED_INFO(to_string(p));
  CHECK(problems.empty());
}

TEST_CASE("every required device id is present", "[hardware]") {
  const std::vector<std::string> required = {"a100-sxm-40gb",
                                             "a100-sxm-80gb",
                                             "a100-pcie-40gb",
                                             "a100-pcie-80gb",
                                             "h100-sxm",
                                             "h100-pcie",
                                             "h100-nvl",
                                             "h200-sxm",
                                             "h200-nvl",
                                             "b200",
                                             "b300",
                                             "gb200",
                                             "gb300",
                                             "rubin",
                                             "l40s",
                                             "l40",
                                             "l4",
                                             "a40",
                                             "a30",
                                             "a10",
                                             "t4",
                                             "v100",
                                             "rtx-a6000",
                                             "rtx-6000-ada",
                                             "rtx-5000-ada",
                                             "rtx-4000-ada",
                                             "rtx-pro-6000-blackwell",
                                             "dgx-spark",
                                             "jetson-agx-orin",
                                             "rtx3060",
                                             "rtx3070",
                                             "rtx3080",
                                             "rtx3090",
                                             "rtx3090ti",
                                             "rtx4060ti",
                                             "rtx4070",
                                             "rtx4070ti",
                                             "rtx4080",
                                             "rtx4080super",
                                             "rtx4090",
                                             "rtx5060ti",
                                             "rtx5070",
                                             "rtx5070ti",
                                             "rtx5080",
                                             "rtx5090",
                                             "mi300x",
                                             "mi325x",
                                             "mi355x",
                                             "rx7900xtx",
                                             "rx7900xt",
                                             "gaudi3",
                                             "arc-b580",
                                             "arc-a770",
                                             "tpu-v5e",
                                             "tpu-v6e",
                                             "m1",
                                             "m1-pro-14c",
                                             "m1-pro-16c",
                                             "m1-max-24c",
                                             "m1-max-32c",
                                             "m1-ultra-48c",
                                             "m1-ultra-64c",
                                             "m2",
                                             "m2-pro-16c",
                                             "m2-pro-19c",
                                             "m2-max-30c",
                                             "m2-max-38c",
                                             "m2-ultra-60c",
                                             "m2-ultra-76c",
                                             "m3",
                                             "m3-pro-14c",
                                             "m3-pro-18c",
                                             "m3-max-30c",
                                             "m3-max-40c",
                                             "m3-ultra-60c",
                                             "m3-ultra-80c",
                                             "m4",
                                             "m4-pro-16c",
                                             "m4-pro-20c",
                                             "m4-max-32c",
                                             "m4-max-40c",
                                             "m5",
                                             "snapdragon-8-gen3",
                                             "snapdragon-8-elite",
                                             "snapdragon-8-elite-gen5",
                                             "snapdragon-x-elite",
                                             "a17-pro",
                                             "a18-pro",
                                             "a19-pro"};
  for (const auto& id : required) {
    INFO(id);
    auto found = shipped().find_hardware(id);
    REQUIRE(found.has_value());
    CHECK(found->id == id);
    CHECK(found->via == "id");
  }
  // Every class is represented.
  for (auto c : all_device_classes()) {
    INFO(to_string(c));
    bool any = false;
    for (const auto& hw : shipped().hardware()) any = any || hw.device_class == c;
    CHECK(any);
  }
}

TEST_CASE("names resolve after normalization, short names to a default bin", "[hardware]") {
  CHECK(shipped().resolve_hardware("RTX 5090").id == "rtx5090");
  CHECK(shipped().resolve_hardware("rtx-5090").id == "rtx5090");
  CHECK(shipped().resolve_hardware("Rtx5090").id == "rtx5090");
  Resolution how;
  CHECK(shipped().resolve_hardware("m4max", &how).id == "m4-max-40c");
  CHECK(how.via == "default bin");
  CHECK(shipped().resolve_hardware("M4 Max").id == "m4-max-40c");
  CHECK(shipped().resolve_hardware("h100").id == "h100-sxm");
  CHECK(shipped().resolve_hardware("A100").id == "a100-sxm-80gb");
}

TEST_CASE("an unknown device is bad input with suggestions", "[hardware]") {
  try {
    (void)shipped().resolve_hardware("rtx4900");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    CHECK(std::string(e.what()) == "unknown hardware 'rtx4900'");
    CHECK(e.hint().find("'rtx4090'") != std::string::npos);
  }
}

// Spot checks against the reference tables: a sparse figure or a unit slip fails here.
TEST_CASE("shipped figures match the datasheets (dense, base units)", "[hardware][data]") {
  // H100 SXM: 989 TFLOP/s dense BF16 (1,979 is the sparse figure); 3.35 TB/s HBM3.
  CHECK(rate("h100-sxm", "bf16") == Approx(989e12).epsilon(0.01));
  CHECK(shipped().resolve_hardware("h100-sxm").memory_bandwidth_bytes_per_s == Approx(3.35e12).epsilon(0.01));
  CHECK(rate("h100-sxm", "fp8") == Approx(1979e12).epsilon(0.01));
  // RTX 4090: BF16 with FP32 accumulate 165.2 TFLOP/s; the FP16-accumulate 330.3 is recorded separately.
  CHECK(rate("rtx4090", "bf16") == Approx(165.2e12).epsilon(0.01));
  CHECK(shipped().resolve_hardware("rtx4090").fp16_accumulate_flops_per_s.at("fp16") == Approx(330.3e12).epsilon(0.01));
  // RTX 5090: FP4 1,676 dense with FP32 accumulate (3,352 "AI TOPS" is sparse; 838 in one table is wrong).
  CHECK(rate("rtx5090", "fp4") == Approx(1676e12).epsilon(0.01));
  CHECK(shipped().resolve_hardware("rtx5090").memory_bandwidth_bytes_per_s == Approx(1.792e12).epsilon(0.01));
  // B300 cut INT8 to ~150 TOP/s (not 4,500).
  CHECK(rate("b300", "int8") == Approx(150e12).epsilon(0.1));
  CHECK(rate("b200", "bf16") == Approx(2250e12).epsilon(0.01));
  // Apple M4 Max 40-core: 546 GB/s.
  CHECK(shipped().resolve_hardware("m4-max-40c").memory_bandwidth_bytes_per_s == Approx(546e9).epsilon(0.01));
  CHECK(rate("mi300x", "bf16") == Approx(1307e12).epsilon(0.01));
  CHECK(shipped().resolve_hardware("mi300x").memory_bandwidth_bytes_per_s == Approx(5.3e12).epsilon(0.01));
  CHECK(rate("gaudi3", "bf16") == Approx(1677e12).epsilon(0.01));  // as shipping, not the 1,835 spec
  CHECK(rate("a100-sxm-80gb", "bf16") == Approx(312e12).epsilon(0.01));
  CHECK(shipped().resolve_hardware("a100-pcie-80gb").memory_bandwidth_bytes_per_s == Approx(1.935e12).epsilon(0.01));
}

TEST_CASE("shipped profiles are physically plausible", "[hardware][data]") {
  for (const auto& hw : shipped().hardware()) {
    INFO(hw.id);
    CHECK(hw.memory_capacity_bytes >= 4e9);
    // A CPU socket takes terabytes of DIMMs (12 channels x 2 DIMMs x 256 GiB); accelerators stop near 600 GB.
    CHECK(hw.memory_capacity_bytes <= (hw.device_class == DeviceClass::kCpu ? 6.5e12 : 600e9));
    CHECK(hw.memory_bandwidth_bytes_per_s >= 30e9);
    CHECK(hw.memory_bandwidth_bytes_per_s <= 25e12);
    CHECK_FALSE(hw.sources.empty());
    // Lower precision is never slower than bf16 on the same matrix units (B300's INT8 is the known exception).
    auto bf16 = hw.peak_flops_per_s("bf16");
    auto fp8 = hw.peak_flops_per_s("fp8");
    if (bf16 && fp8) CHECK(*fp8 >= *bf16 * 0.99);
    if (hw.capabilities.fp8) CHECK(fp8.has_value());
    if (hw.capabilities.nvfp4) CHECK(hw.peak_flops_per_s("fp4").has_value());
    // FlashAttention-3 is Hopper-only.
    if (hw.capabilities.flash_attention_3) CHECK(hw.architecture.find("opper") != std::string::npos);
    // GeForce-style FP16-accumulate rates are never below the FP32-accumulate ones.
    for (const auto& [dtype, fast] : hw.fp16_accumulate_flops_per_s) CHECK(fast >= hw.peak_flops_per_s(dtype).value_or(0));
  }
  CHECK_FALSE(shipped().resolve_hardware("a100-sxm-80gb").capabilities.fp8);
  CHECK_FALSE(shipped().resolve_hardware("rtx3090").capabilities.fp8);
  CHECK(shipped().resolve_hardware("rtx4090").capabilities.fp8);
  CHECK_FALSE(shipped().resolve_hardware("h100-sxm").capabilities.nvfp4);
  CHECK(shipped().resolve_hardware("b200").capabilities.nvfp4);
  CHECK_FALSE(shipped().resolve_hardware("rtx4090").capabilities.multi_gpu_link);
  CHECK(shipped().resolve_hardware("m4-max-40c").capabilities.unified_memory);
  CHECK_FALSE(shipped().resolve_hardware("m4-max-40c").capabilities.cuda_graphs);
  // Phones carry the per-app limit and a thermal derating.
  const auto& a18 = shipped().resolve_hardware("a18-pro");
  REQUIRE(a18.app_limit_bytes.has_value());
  CHECK(*a18.app_limit_bytes < a18.memory_capacity_bytes);
  CHECK(a18.sustained_fraction.value_or(1.0) < 1.0);
}

TEST_CASE("an overlay directory adds and overrides devices", "[hardware][overlay]") {
  LoadOptions options;
  options.overlay_dirs = {test_data("overlay-good")};
  const Catalog catalog = Catalog::load(options);
  CHECK(catalog.resolve_hardware("labgpu").id == "lab-gpu-48g");
  CHECK(catalog.resolve_hardware("h100-sxm").memory_bandwidth_bytes_per_s == Approx(3.0e12));
  CHECK(catalog.hardware_origin("h100-sxm").find("overlay-good") != std::string::npos);
  // The override dropped the shipped aliases of h100-sxm but the default bin
  // came from the shipped file too, so "h100" no longer resolves to it.
  CHECK(catalog.hardware().size() == shipped().hardware().size() + 1);
}

TEST_CASE("an overlay directory replaces a shipped engine", "[hardware][overlay]") {
  // Engines are parsed at load, with no text kept beside them: replacing one wrote past the end of
  // an empty vector (a crash with --data-dir on a copy of data/).
  LoadOptions options;
  options.overlay_dirs = {test_data("overlay-engine")};
  const Catalog catalog = Catalog::load(options);
  CHECK(catalog.resolve_engine("mlc-llm").name == "MLC LLM (lab build)");
  CHECK(catalog.engines().size() == shipped().engines().size());
}

TEST_CASE("a malformed overlay reports file, pointer and exit 2", "[hardware][overlay]") {
  LoadOptions options;
  options.overlay_dirs = {test_data("overlay-bad")};
  const auto problems = Catalog::validate(options);
  REQUIRE(problems.size() == 4);
  CHECK(to_string(problems[0]).find("broken.json: /compute/flops_per_s/bf16: expected a positive number") != std::string::npos);
  CHECK(to_string(problems[1]).find("broken.json: /memory/bandwidth_bytes_per_s: expected a positive number") != std::string::npos);
  CHECK(to_string(problems[2]).find("missing required field 'engines'") != std::string::npos);
  CHECK(to_string(problems[3]).find("truncated.json: invalid JSON") != std::string::npos);
  try {
    (void)Catalog::load(options);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    CHECK(e.hint().find("3 more problem(s)") != std::string::npos);
  }
}

TEST_CASE("duplicate ids across overlays, unknown kinds and missing folders are reported", "[hardware][overlay]") {
  LoadOptions options;
  options.overlay_dirs = {test_data("overlay-dup-a"), test_data("overlay-dup-b"), test_data("overlay-unknown-kind"),
                          test_data("does-not-exist")};
  const auto problems = Catalog::validate(options);
  REQUIRE(problems.size() == 3);
  std::string all;
  for (const auto& p : problems) all += to_string(p) + "\n";
  CHECK(all.find("duplicate id 'twin-gpu'") != std::string::npos);
  CHECK(all.find("unknown data kind") != std::string::npos);
  CHECK(all.find("data directory does not exist") != std::string::npos);
}

TEST_CASE("overlay directories come from the environment, then the command line", "[hardware][overlay]") {
  auto dirs = overlay_dirs_from({"c"}, "a::b");
  REQUIRE(dirs.size() == 3);
  CHECK(dirs[0] == "a");
  CHECK(dirs[1] == "b");
  CHECK(dirs[2] == "c");
  CHECK(overlay_dirs_from({}, nullptr).empty());
}

TEST_CASE("an overlay that extends a shipped profile patches its document", "[hardware][overlay][extends]") {
  LoadOptions options;
  options.overlay_dirs = {test_data("overlay-extends")};
  const Catalog catalog = Catalog::load(options);
  const HardwareProfile& base = catalog.resolve_hardware("rtx4090");
  const HardwareProfile& custom = catalog.resolve_hardware("custom-4090");
  CHECK(custom.id == "custom-4090-48g");
  CHECK(custom.memory_capacity_bytes == Approx(48e9));
  CHECK_FALSE(custom.memory_visible_bytes);  // null in the patch deletes the base's measured 24 GB
  CHECK(custom.memory_bandwidth_bytes_per_s == Approx(base.memory_bandwidth_bytes_per_s));
  CHECK(custom.peak_flops_per_s("fp16") == base.peak_flops_per_s("fp16"));
  CHECK(custom.sources.size() == base.sources.size());
  // Aliases are not inherited: "4090" still names the shipped card, and only the overlay's own alias is there.
  CHECK(custom.aliases == std::vector<std::string>{"custom-4090"});
  CHECK(catalog.resolve_hardware("4090").id == "rtx4090");
  // A chain: the capped card extends the overlay, which extends the shipped profile.
  const HardwareProfile& capped = catalog.resolve_hardware("custom-4090-48g-capped");
  CHECK(capped.memory_capacity_bytes == Approx(48e9));
  CHECK(capped.power_watts.value_or(0) == Approx(300));
  CHECK(capped.aliases.empty());
  CHECK(capped.document.at("extends") == "custom-4090-48g");
  CHECK(catalog.hardware().size() == shipped().hardware().size() + 2);
}

TEST_CASE("extends an unknown profile, or in a cycle, is bad input naming it", "[hardware][overlay][extends]") {
  auto first_problem = [](const std::string& dir) {
    LoadOptions options;
    options.overlay_dirs = {test_data(dir)};
    try {
      (void)Catalog::load(options);
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::kBadInput);
      return std::string(e.what());
    }
    FAIL("expected an error");
    return std::string();
  };
  CHECK(first_problem("overlay-extends-unknown").find("typo.json: /extends: extends unknown hardware 'rtx4909'") != std::string::npos);
  CHECK(first_problem("overlay-extends-cycle").find("in a cycle") != std::string::npos);
}

TEST_CASE("the vendor list is the schema's, including the 2026 vendors", "[hardware]") {
  const auto& vendors = hardware_vendors();
  for (const char* v : {"nvidia", "amd", "intel", "google", "apple", "qualcomm", "mediatek", "samsung", "amazon", "ampere"})
    CHECK(std::find(vendors.begin(), vendors.end(), v) != vendors.end());
  CHECK(vendors.size() == 10);
  for (const auto& hw : shipped().hardware()) CHECK(std::find(vendors.begin(), vendors.end(), hw.vendor) != vendors.end());
}

TEST_CASE("the 2026 phone and accelerator profiles", "[hardware][data]") {
  // Dimensity 9400: 12 GPU cores x 1.612 GHz x 64 FLOP = 1.238 TFLOP/s; LPDDR5X-10667 x 8 bytes = 85.3 GB/s.
  const HardwareProfile& d9400 = shipped().resolve_hardware("dimensity-9400");
  CHECK(d9400.vendor == "mediatek");
  CHECK(rate("dimensity-9400", "fp32") == Approx(1.238016e12));
  CHECK(d9400.memory_bandwidth_bytes_per_s == Approx(10.667e9 * 8));
  CHECK(d9400.usable_memory_bytes() == Approx(8e9));  // 16 GB x 0.5
  CHECK(d9400.sustained_fraction.value_or(1) == Approx(0.5));
  CHECK(shipped().resolve_hardware("mt6993").id == "dimensity-9500");
  // Exynos 2500: 16 CUs x 1.3 GHz x 256 = 5.32 TFLOP/s FP32; NPU 59 TOPS.
  CHECK(rate("exynos-2500", "fp32") == Approx(5.3248e12));
  CHECK(shipped().resolve_hardware("galaxy-z-flip-7").npu_ops_per_s.value_or(0) == Approx(59e12));
  // Trainium2: 96 GiB at 2.9 TB/s, dense FP8 1,299 TFLOP/s, BF16 667.
  const HardwareProfile& trn2 = shipped().resolve_hardware("trn2");
  CHECK(trn2.vendor == "amazon");
  CHECK(trn2.memory_capacity_bytes == Approx(96.0 * 1073741824));
  CHECK(rate("trainium2", "fp8") == Approx(1299e12));
  CHECK(rate("trainium2", "bf16") == Approx(667e12));
  CHECK(trn2.default_multi_gpu_link()->per_direction_bytes_per_s() == Approx(640e9));  // 1.28 TB/s taken as bidirectional
}

TEST_CASE("a part sold in several memory sizes lists them, --memory matches GB or GiB", "[hardware][memory]") {
  const HardwareProfile& m4max = shipped().resolve_hardware("m4-max-40c");
  REQUIRE(m4max.memory_options.size() == 3);
  CHECK(m4max.memory_option(64e9)->capacity_bytes == Approx(64e9));
  CHECK(m4max.memory_option(64.0 * 1073741824)->capacity_bytes == Approx(64e9));  // 68.7e9 is 7.4% above 64e9
  CHECK(m4max.memory_option(100e9) == nullptr);
  CHECK(m4max.memory_option(36e9) == nullptr);  // 36 GB is the 32-core bin's
  const HardwareProfile m64 = with_memory_option(m4max, *m4max.memory_option(64e9));
  CHECK(m64.memory_capacity_bytes == Approx(64e9));
  CHECK(m64.usable_memory_bytes() == Approx(48.0 * 1073741824));  // 64 GiB x the 0.75 wired limit, as for 128 GB
  CHECK(m64.memory_bandwidth_bytes_per_s == Approx(m4max.memory_bandwidth_bytes_per_s));
  // M3 Ultra 60-core: the 96 GB Mac Studio is $3,999; the 256 GB option has no price on record.
  const HardwareProfile& m3u = shipped().resolve_hardware("m3-ultra-60c");
  CHECK(with_memory_option(m3u, *m3u.memory_option(96e9)).price_usd.value_or(0) == Approx(3999));
  // Ryzen AI Max+ 395: the profile has no price; its 128 GB option (Framework Desktop) is $1,999, the 64 GB one unpriced.
  const HardwareProfile& strix = shipped().resolve_hardware("ryzen-ai-max-395");
  CHECK(with_memory_option(strix, *strix.memory_option(128e9)).price_usd.value_or(0) == Approx(1999));
  const HardwareProfile s64 = with_memory_option(strix, *strix.memory_option(64e9));
  CHECK_FALSE(s64.price_usd.has_value());
  CHECK(s64.usable_memory_bytes() == Approx(48e9));  // 64 GB x 0.75
}

TEST_CASE("the sizes each two-size card and Apple bin is sold in and their launch prices", "[hardware][memory]") {
  const auto sizes_gb = [](const HardwareProfile& hw) {
    std::vector<double> out;
    for (const auto& o : hw.memory_options) out.push_back(o.capacity_bytes / 1e9);
    return out;
  };
  const auto price = [](const HardwareProfile& hw, double bytes) {
    return with_memory_option(hw, *hw.memory_option(bytes)).price_usd.value_or(0);
  };
  // RTX 4060 Ti: NVIDIA's launch, 8 GB $399 and 16 GB $499, both 288 GB/s (progressiverobot copy of the specs).
  const HardwareProfile& ti40 = shipped().resolve_hardware("rtx4060ti");
  CHECK(sizes_gb(ti40) == std::vector<double>{8, 16});
  CHECK(price(ti40, 8e9) == Approx(399));
  CHECK(price(ti40, 16e9) == Approx(499));
  const HardwareProfile ti40_8 = with_memory_option(ti40, *ti40.memory_option(8e9));
  // The 16 GB card's measured 16 GiB visible scales to the 8 GB card: 17,179,869,184 x 8/16 = 8 GiB.
  CHECK(*ti40_8.memory_visible_bytes == Approx(8589934592.0));
  CHECK(ti40_8.physical_memory_bytes() == Approx(8589934592.0));
  CHECK(ti40_8.name == "NVIDIA GeForce RTX 4060 Ti 8GB");  // the name states the size chosen
  CHECK(ti40_8.memory_bandwidth_bytes_per_s == Approx(288e9));
  // RTX 5060 Ti: 8 GB $379, 16 GB $429, both 448 GB/s (Biggo launch report).
  const HardwareProfile& ti50 = shipped().resolve_hardware("rtx5060ti");
  CHECK(sizes_gb(ti50) == std::vector<double>{8, 16});
  CHECK(price(ti50, 8e9) == Approx(379));
  CHECK(price(ti50, 16e9) == Approx(429));
  // RX 9060 XT: 8 GB $299, 16 GB $349 (GadgetBond, AMD's Computex 2025 prices).
  const HardwareProfile& xt = shipped().resolve_hardware("rx9060xt");
  CHECK(sizes_gb(xt) == std::vector<double>{8, 16});
  CHECK(price(xt, 8e9) == Approx(299));
  CHECK(price(xt, 16e9) == Approx(349));
  // Apple bins differ within a chip: the 30-core M3 Max came with 36 or 96 GB, the 40-core with
  // 48, 64 or 128 GB (huggingface.js hardware.ts lists the chip's 36/48/64/96/128); the 30-core
  // M2 Max with 32 or 64 GB, the 38-core also with 96 GB (The Apple Wiki: Mac Studio (2023)).
  CHECK(sizes_gb(shipped().resolve_hardware("m3-max-30c")) == std::vector<double>{36, 96});
  CHECK(sizes_gb(shipped().resolve_hardware("m3-max-40c")) == std::vector<double>{48, 64, 128});
  CHECK(sizes_gb(shipped().resolve_hardware("m2-max-30c")) == std::vector<double>{32, 64});
  CHECK(sizes_gb(shipped().resolve_hardware("m2-max-38c")) == std::vector<double>{32, 64, 96});
  // M2 Ultra, both bins: 64, 128 or 192 GB (huggingface.js PR #1937, after Apple's Mac Studio 2023 specs).
  CHECK(sizes_gb(shipped().resolve_hardware("m2-ultra-76c")) == std::vector<double>{64, 128, 192});
  // The 32-core M4 Max is sold with 36 GB only, so it lists no options.
  CHECK(shipped().resolve_hardware("m4-max-32c").memory_options.empty());
  // Apple sizes are GiB: 36 GB on the 30-core M3 Max is 36 x 2^30 bytes, 3/4 of it GPU-visible as written.
  const HardwareProfile& m3 = shipped().resolve_hardware("m3-max-30c");
  CHECK(with_memory_option(m3, *m3.memory_option(36e9)).physical_memory_bytes() == Approx(36.0 * 1073741824));
}

TEST_CASE("consumer cards with an NVLink connector default to PCIe", "[hardware][link]") {
  for (const char* id : {"rtx3090", "rtx3090ti", "rtx2080", "rtx2080ti"}) {
    const HardwareProfile& hw = shipped().resolve_hardware(id);
    REQUIRE(hw.scale_up);
    CHECK(hw.scale_up->accessory);
    CHECK(hw.default_multi_gpu_link() == &*hw.pcie);
  }
  CHECK(shipped().resolve_hardware("rtx3090").default_multi_gpu_link()->per_direction_bytes_per_s() == Approx(32e9));
  const HardwareProfile& h100 = shipped().resolve_hardware("h100-sxm");
  CHECK(h100.default_multi_gpu_link() == &*h100.scale_up);
}

TEST_CASE("Apple usable memory is a fraction of GiB, as macOS computes it", "[hardware][apple]") {
  // macOS's recommendedMaxWorkingSetSize is a share of hw.memsize, and a "128GB" Mac has
  // 128 x 2^30 bytes. Published readings: 96 GiB (103.08 GB) on a 128 GB Mac; 73728 MB
  // (72 GiB, 3/4 of 96 GiB) on a 96 GB M2 Max.
  const HardwareProfile& m4 = shipped().resolve_hardware("m4-max-40c");
  CHECK(m4.memory_capacity_bytes == 128e9);
  CHECK(m4.usable_memory_bytes() == Approx(96.0 * 1073741824.0).epsilon(1e-9));  // 103,079,215,104 bytes
  CHECK(m4.usable_memory_bytes() / 1e9 == Approx(103.08).epsilon(1e-4));
  const HardwareProfile& m2 = shipped().resolve_hardware("m2-max-38c");
  CHECK(m2.memory_capacity_bytes == 96e9);
  CHECK(m2.usable_memory_bytes() / 1048576.0 == Approx(73728.0).epsilon(1e-9));  // MiB
  // The same formula for every Apple profile; other vendors' GB stay decimal.
  for (const auto& hw : shipped().hardware()) {
    INFO(hw.id);
    if (hw.device_class != DeviceClass::kAppleSilicon) continue;
    CHECK(hw.memory_capacity_in_gib);
    CHECK(hw.physical_memory_bytes() == Approx(hw.memory_capacity_bytes / 1e9 * 1073741824.0));
  }
  CHECK_FALSE(shipped().resolve_hardware("h100").memory_capacity_in_gib);
}
