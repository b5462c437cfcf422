// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "optadvisor/catalog/catalog.hpp"
#include "optadvisor/readers/detect.hpp"
#include "optadvisor/analysis/prepare.hpp"
#include "fixtures.hpp"

using namespace optadvisor;

namespace {

const Catalog& shipped() { return fixtures::catalog(); }

std::string fixture(const std::string& rel) {
  std::ifstream in(std::string(OPTADVISOR_SOURCE_DIR) + "/tests/data/detect/" + rel, std::ios::binary);
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A runner over recorded outputs: a probe whose fixture is missing is "not found".
struct FixtureRunner {
  std::map<std::string, std::string> files;
  std::vector<std::string> asked;
  ProbeRun operator()(const Probe& p) {
    asked.push_back(p.tool);
    ProbeRun r;
    auto it = files.find(p.fixture);
    if (it == files.end()) return r;
    r.status = ProbeRun::Status::kOk;
    r.output = it->second;
    return r;
  }
};

DetectedDevice gpu(const std::string& name, double memory_mib, int count = 1) {
  DetectedDevice d;
  d.kind = "gpu";
  d.name = name;
  d.memory_bytes = memory_mib * 1048576.0;
  d.count = count;
  d.source = "nvidia-smi";
  return d;
}

DetectedDevice apple(const std::string& name, double memory_bytes, std::optional<int> cores) {
  DetectedDevice d;
  d.kind = "apple-silicon";
  d.vendor = "apple";
  d.name = name;
  d.memory_bytes = memory_bytes;
  d.gpu_cores = cores;
  d.source = "sysctl";
  return d;
}

std::string mapped(const DetectedDevice& d) {
  auto m = match_profile(d, shipped().hardware());
  INFO(m.problem);
  return m.id.value_or("(none: " + m.problem + ")");
}

}  // namespace

TEST_CASE("nvidia-smi: one line per GPU, memory in MiB, count of the first kind", "[detect]") {
  std::vector<std::string> notes;
  auto d = parse_nvidia_smi(fixture("h100x8/nvidia-smi.txt"), notes);
  REQUIRE(d);
  CHECK(d->name == "NVIDIA H100 80GB HBM3");
  CHECK(d->vendor == "nvidia");
  CHECK(d->count == 8);
  CHECK(d->memory_bytes.value() == Approx(85520809984.0).epsilon(0));  // 81559 MiB x 1048576 B/MiB
  CHECK(d->raw_lines.size() == 8);
  CHECK(notes.empty());

  // Two kinds: the first decides, the other is reported.
  notes.clear();
  d = parse_nvidia_smi(fixture("mixed-gpus/nvidia-smi.txt"), notes);
  REQUIRE(d);
  CHECK(d->name == "NVIDIA GeForce RTX 4090");
  CHECK(d->count == 2);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("1 x NVIDIA GeForce RTX 3060"));
}

TEST_CASE("nvidia-smi: unavailable memory, error text and garbage", "[detect]") {
  std::vector<std::string> notes;
  // Unified-memory parts print [N/A] for memory.total; the name still maps.
  auto d = parse_nvidia_smi("NVIDIA GB10, [N/A], 1\n", notes);
  REQUIRE(d);
  CHECK_FALSE(d->memory_bytes);
  REQUIRE(d->missing.size() == 1);
  CHECK_THAT(d->missing[0], Catch::Contains("[N/A]"));
  CHECK(mapped(*d) == "dgx-spark");

  notes.clear();
  CHECK_FALSE(parse_nvidia_smi(fixture("garbage/nvidia-smi.txt"), notes));
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("skipped a line"));

  notes.clear();
  CHECK_FALSE(parse_nvidia_smi("", notes));
  CHECK_FALSE(parse_nvidia_smi("\n\n  \n", notes));
  CHECK(notes.empty());

  notes.clear();
  CHECK_FALSE(parse_nvidia_smi("foo, bar, baz\n, 1024, 1\n", notes));
  CHECK(notes.size() == 2);  // memory not a number; no name
}

TEST_CASE("rocm-smi: JSON cards, key spellings, warnings, missing keys", "[detect]") {
  std::vector<std::string> notes;
  auto d = parse_rocm_smi(fixture("mi300x/rocm-smi.json"), notes);
  REQUIRE(d);
  CHECK(d->name == "AMD Instinct MI300X OAM");
  CHECK(d->vendor == "amd");
  CHECK(d->count == 8);
  CHECK(d->memory_bytes.value() == 205822885888.0);
  CHECK(mapped(*d) == "mi300x");  // via the profile's detect list

  // Older rocm-smi spells "Card series"; a warning may precede the document.
  d = parse_rocm_smi(
      "WARNING: something\n{\"card0\": {\"Card series\": \"Radeon RX 7900 XTX\", \"VRAM Total Memory (B)\": \"25753026560\"}}", notes);
  REQUIRE(d);
  CHECK(d->name == "Radeon RX 7900 XTX");
  CHECK(mapped(*d) == "rx7900xtx");

  // A PCI id is not a product name: fall back to Card Model; no VRAM key is reported as missing.
  d = parse_rocm_smi(R"({"card0": {"Card Series": "0x74a1", "Card Model": "AMD Instinct MI300X"}})", notes);
  REQUIRE(d);
  CHECK(d->name == "AMD Instinct MI300X");
  CHECK_FALSE(d->memory_bytes);
  CHECK(d->missing.size() == 1);

  notes.clear();
  CHECK_FALSE(parse_rocm_smi(fixture("garbage/rocm-smi.json"), notes));
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("not valid JSON"));
  notes.clear();
  CHECK_FALSE(parse_rocm_smi(R"({"system": {"Driver version": "6.8.5"}})", notes));
  CHECK_THAT(notes.at(0), Catch::Contains("no card"));
}

TEST_CASE("Apple silicon: brand string, memory, GPU cores from ioreg or system_profiler", "[detect]") {
  std::vector<std::string> notes;
  auto d = parse_apple(fixture("m4-max/sysctl.txt"), fixture("m4-max/ioreg.txt"), "", notes);
  REQUIRE(d);
  CHECK(d->kind == "apple-silicon");
  CHECK(d->name == "Apple M4 Max");
  CHECK(d->memory_bytes.value() == 137438953472.0);  // 128 GiB
  CHECK(d->gpu_cores.value() == 40);

  d = parse_apple(fixture("m2-ultra/sysctl.txt"), "", fixture("m2-ultra/system_profiler.txt"), notes);
  REQUIRE(d);
  CHECK(d->gpu_cores.value() == 60);

  d = parse_apple("Apple M4 Max\n", "", "", notes);
  REQUIRE(d);
  CHECK_FALSE(d->gpu_cores);
  CHECK_FALSE(d->memory_bytes);
  CHECK(d->missing.size() == 2);  // memory size and GPU core count

  d = parse_apple(fixture("intel-mac/sysctl.txt"), "", "", notes);
  REQUIRE(d);
  CHECK(d->kind == "cpu");
  CHECK(d->vendor == "intel");
  CHECK(d->ram_bytes.value() == 34359738368.0);

  CHECK_FALSE(parse_apple("", "", "", notes));
}

TEST_CASE("/proc: CPU model, logical CPUs and RAM", "[detect]") {
  auto d = parse_proc(fixture("x86-cpu/cpuinfo"), fixture("x86-cpu/meminfo"));
  CHECK(d.kind == "cpu");
  CHECK(d.vendor == "amd");
  CHECK(d.cpu_model == "AMD EPYC 7763 64-Core Processor");
  CHECK(d.count == 4);
  CHECK(d.ram_bytes.value() == 16318460.0 * 1024);  // MemTotal kB is KiB: 16,710,103,040 bytes
  CHECK(d.missing.empty());

  d = parse_proc(fixture("garbage/cpuinfo"), fixture("garbage/meminfo"));
  CHECK(d.cpu_model.empty());
  CHECK_FALSE(d.ram_bytes);
  CHECK(d.missing.size() == 2);
}

TEST_CASE("detection stops at the first accelerator and always reads the host", "[detect]") {
  FixtureRunner run;
  run.files = {{"nvidia-smi.txt", fixture("h100x8/nvidia-smi.txt")},
               {"rocm-smi.json", fixture("mi300x/rocm-smi.json")},
               {"cpuinfo", fixture("h100x8/cpuinfo")},
               {"meminfo", fixture("h100x8/meminfo")}};
  auto detected = detect_hardware(std::ref(run));
  REQUIRE(detected.device);
  CHECK(detected.device->name == "NVIDIA H100 80GB HBM3");
  CHECK(detected.device->cpu_model == "Intel(R) Xeon(R) Platinum 8480+");
  CHECK(detected.device->ram_bytes.value() == 2113389544.0 * 1024);
  CHECK(run.asked == std::vector<std::string>{"nvidia-smi", "/proc/cpuinfo", "/proc/meminfo"});
  CHECK(detected.probes.front() == "nvidia-smi: ok");

  // Nothing but a CPU: the host is the device.
  FixtureRunner cpu_only;
  cpu_only.files = {{"cpuinfo", fixture("x86-cpu/cpuinfo")}, {"meminfo", fixture("x86-cpu/meminfo")}};
  detected = detect_hardware(std::ref(cpu_only));
  REQUIRE(detected.device);
  CHECK(detected.device->kind == "cpu");
  CHECK(cpu_only.asked == std::vector<std::string>{"nvidia-smi", "rocm-smi", "sysctl", "/proc/cpuinfo", "/proc/meminfo"});

  // Apple: ioreg has the core count, so system_profiler (slow) is not run.
  FixtureRunner mac;
  mac.files = {{"sysctl.txt", fixture("m4-max/sysctl.txt")}, {"ioreg.txt", fixture("m4-max/ioreg.txt")}};
  detected = detect_hardware(std::ref(mac));
  REQUIRE(detected.device);
  CHECK(detected.device->gpu_cores.value() == 40);
  CHECK(std::find(mac.asked.begin(), mac.asked.end(), "system_profiler") == mac.asked.end());

  FixtureRunner nothing;
  CHECK_FALSE(detect_hardware(std::ref(nothing)).device);
}

TEST_CASE("reported names map to profiles", "[detect]") {
  // Names as nvidia-smi and rocm-smi print them; memory as they report it (MiB).
  CHECK(mapped(gpu("NVIDIA H100 80GB HBM3", 81559)) == "h100-sxm");  // an alias
  CHECK(mapped(gpu("NVIDIA H100 PCIe", 81559)) == "h100-pcie");      // the id, vendor word dropped
  CHECK(mapped(gpu("NVIDIA H100 NVL", 95830)) == "h100-nvl");
  CHECK(mapped(gpu("NVIDIA H200", 143771)) == "h200-sxm");  // default bin over h200-nvl, same memory
  CHECK(mapped(gpu("NVIDIA H200 NVL", 143771)) == "h200-nvl");
  CHECK(mapped(gpu("NVIDIA GeForce RTX 4090", 24564)) == "rtx4090");
  CHECK(mapped(gpu("NVIDIA GeForce RTX 4080 SUPER", 16376)) == "rtx4080super");
  CHECK(mapped(gpu("NVIDIA A100-SXM4-40GB", 40960)) == "a100-sxm-40gb");
  CHECK(mapped(gpu("NVIDIA A100-SXM4-80GB", 81920)) == "a100-sxm-80gb");
  CHECK(mapped(gpu("NVIDIA A100-PCIE-40GB", 40960)) == "a100-pcie-40gb");
  CHECK(mapped(gpu("NVIDIA A100 80GB PCIe", 81920)) == "a100-pcie-80gb");
  CHECK(mapped(gpu("Tesla T4", 15360)) == "t4");  // every word is in "NVIDIA Tesla T4 16GB"
  CHECK(mapped(gpu("NVIDIA L4", 23034)) == "l4");
  CHECK(mapped(gpu("NVIDIA L40S", 46068)) == "l40s");
  CHECK(mapped(gpu("NVIDIA A10", 23028)) == "a10");
  CHECK(mapped(gpu("AMD Instinct MI300X", 196608)) == "mi300x");
  CHECK(mapped(gpu("AMD Instinct MI300X VF", 196048)) == "mi300x");
  CHECK(mapped(gpu("Radeon RX 7900 XT", 20464)) == "rx7900xt");
}

TEST_CASE("memory decides between bins the name does not", "[detect]") {
  // A made-up name without the size, to show memory alone decides: "NVIDIA A100-SXM4"
  // has every word in both SXM4 bins. 40960 MiB = 42,949,672,960 B is the 40 GB
  // bin's visible memory exactly and 50% below the 80 GB bin's 85,899,345,920 B.
  auto m = match_profile(gpu("NVIDIA A100-SXM4", 40960), shipped().hardware());
  REQUIRE(m.id);
  CHECK(*m.id == "a100-sxm-40gb");
  CHECK_THAT(m.how, Catch::Contains("40.0 GiB of memory picks it among a100-sxm-40gb and a100-sxm-80gb"));
  CHECK(mapped(gpu("NVIDIA A100-SXM4", 81920)) == "a100-sxm-80gb");
  // Without memory the exact name decides: "a100-sxm4" is a default bin of a100-sxm-80gb.
  auto no_memory = gpu("NVIDIA A100-SXM4", 0);
  no_memory.memory_bytes.reset();
  CHECK(mapped(no_memory) == "a100-sxm-80gb");
}

TEST_CASE("Apple silicon bins: GPU cores first, then memory, then the default bin", "[detect]") {
  const double gib = 1073741824.0;
  CHECK(mapped(apple("Apple M4 Max", 128 * gib, 40)) == "m4-max-40c");
  CHECK(mapped(apple("Apple M4 Max", 36 * gib, 32)) == "m4-max-32c");
  CHECK(mapped(apple("Apple M2 Ultra", 192 * gib, 60)) == "m2-ultra-60c");
  CHECK(mapped(apple("Apple M2 Ultra", 192 * gib, 76)) == "m2-ultra-76c");
  CHECK(mapped(apple("Apple M4", 16 * gib, 10)) == "m4");
  // No core count: 36 GiB is within 10% of only the 32-core bin's 36 GB (38.65e9 vs 36e9: 7.4%).
  CHECK(mapped(apple("Apple M4 Max", 36 * gib, std::nullopt)) == "m4-max-32c");
  // 64 GiB agrees with neither (36 GB, 128 GB): the exact alias apple-m4-max leads to the 40-core bin,
  // and the memory difference is reported.
  auto m = match_profile(apple("Apple M4 Max", 64 * gib, std::nullopt), shipped().hardware());
  REQUIRE(m.id);
  CHECK(*m.id == "m4-max-40c");
  REQUIRE_FALSE(m.notes.empty());
  CHECK_THAT(m.notes[0], Catch::Contains("64.0 GiB"));
  // A core count no profile has is not guessed.
  m = match_profile(apple("Apple M4 Max", 36 * gib, 36), shipped().hardware());
  CHECK_FALSE(m.id);
  CHECK_THAT(m.problem, Catch::Contains("36 GPU cores"));
}

TEST_CASE("a card named as another with one word more is told apart by its memory, then its exact name", "[detect]") {
  // Every word of "NVIDIA GeForce RTX 4090" is in the RTX 4090 D's name too; both have 24 GB, so the
  // exact name picks the RTX 4090, and the 4090 D's own name picks it.
  auto m = match_profile(gpu("NVIDIA GeForce RTX 4090", 24564), shipped().hardware());
  REQUIRE(m.id);
  CHECK(*m.id == "rtx4090");
  CHECK_THAT(m.how, Catch::Contains("the exact name picks it among rtx4090 and rtx4090d"));
  m = match_profile(gpu("NVIDIA GeForce RTX 4090 D", 24564), shipped().hardware());
  REQUIRE(m.id);
  CHECK(*m.id == "rtx4090d");
  // Memory comes first (docs/detection.md): a variant no profile describes goes to the sibling whose
  // names hold its words and whose memory agrees, and says so. An RTX 3060 with 8 GB reports "RTX 3060".
  m = match_profile(gpu("NVIDIA GeForce RTX 3060", 8192), shipped().hardware());
  REQUIRE(m.id);
  CHECK(*m.id == "rtx3060ti");
  CHECK_THAT(m.how, Catch::Contains("8.00 GiB of memory picks it among rtx3060 and rtx3060ti"));
}

TEST_CASE("a name two profiles answer to is decided by memory, never by the order of the files", "[detect]") {
  // "NVIDIA GeForce RTX 3080" is the name of the 10 GB card (rtx3080) and the detect entry of the
  // 12 GB one (rtx3080-12gb); the RTX 3080 Ti's names only hold its words.
  auto m = match_profile(gpu("NVIDIA GeForce RTX 3080", 10240), shipped().hardware());
  REQUIRE(m.id);
  CHECK(*m.id == "rtx3080");
  m = match_profile(gpu("NVIDIA GeForce RTX 3080", 12288), shipped().hardware());
  REQUIRE(m.id);
  CHECK(*m.id == "rtx3080-12gb");
  // Without memory two exact names remain: not guessed.
  DetectedDevice unknown_memory = gpu("NVIDIA GeForce RTX 3080", 0);
  unknown_memory.memory_bytes.reset();
  m = match_profile(unknown_memory, shipped().hardware());
  CHECK_FALSE(m.id);
  CHECK_THAT(m.problem, Catch::Contains("several profiles") && Catch::Contains("rtx3080-12gb") && Catch::Contains(" rtx3080"));
  // The RX 6800 and RX 6800 XT share a chip and 16 GB: the exact name decides.
  m = match_profile(gpu("AMD Radeon RX 6800", 16368), shipped().hardware());
  REQUIRE(m.id);
  CHECK(*m.id == "rx6800");
}

TEST_CASE("unknown devices are not guessed and say how to add a profile", "[detect]") {
  for (const char* name : {"NVIDIA GeForce GTX 980 Ti", "NVIDIA GeForce RTX 4060 Laptop GPU", "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                           "NVIDIA A10G", "Orin (nvgpu)"}) {
    auto m = match_profile(gpu(name, 6144), shipped().hardware());
    INFO(name);
    CHECK_FALSE(m.id);
    CHECK_THAT(m.problem, Catch::Contains(name));
    CHECK_THAT(m.hint, Catch::Contains("--data-dir"));
  }
  auto m = match_profile(gpu("NVIDIA GeForce GTX 980 Ti", 6144), shipped().hardware());
  // The profile sharing the most words (NVIDIA, GeForce, GTX, Ti; the first of the two GTX ... Ti cards) is the template.
  CHECK_THAT(m.hint, Catch::Contains("optadvisor hw show gtx1070ti --json"));

  DetectedDevice cpu = parse_proc(fixture("x86-cpu/cpuinfo"), fixture("x86-cpu/meminfo"));
  m = match_profile(cpu, shipped().hardware());
  CHECK_FALSE(m.id);
  CHECK_THAT(m.problem, Catch::Contains("only the host CPU: AMD EPYC 7763 64-Core Processor"));

  DetectedDevice unnamed = gpu("", 1024);
  CHECK_FALSE(match_profile(unnamed, shipped().hardware()).id);
}

TEST_CASE("a profile's detect list and an overlay alias make a new name match", "[detect]") {
  std::vector<HardwareProfile> profiles = shipped().hardware();
  HardwareProfile mine = shipped().resolve_hardware("rtx3090ti");
  mine.id = "gtx980ti-lab";
  mine.name = "Our lab card";
  mine.aliases = {};
  mine.default_for = {};
  mine.document = {{"detect", {"NVIDIA GeForce GTX 980 Ti"}}};
  profiles.push_back(mine);
  auto m = match_profile(gpu("NVIDIA GeForce GTX 980 Ti", 6144), profiles);
  REQUIRE(m.id);
  CHECK(*m.id == "gtx980ti-lab");
  CHECK_THAT(m.how, Catch::Contains("is a reported name of gtx980ti-lab"));
}

TEST_CASE("a detection resolves to a profile id and says how, or is bad input", "[detect]") {
  auto detected_from = [](const char* recorded) {
    FixtureRunner run;
    run.files = {{"nvidia-smi.txt", fixture(recorded)}};
    return detect_hardware(std::ref(run));
  };
  const DetectedProfile found = resolve_detected(detected_from("h100x8/nvidia-smi.txt"), shipped().hardware());
  CHECK(found.id == "h100-sxm");
  CHECK(found.via == "detected: NVIDIA H100 80GB HBM3 x8 via nvidia-smi; --gpus is not set from the count");
  try {
    resolve_detected(detected_from("unknown-gpu/nvidia-smi.txt"), shipped().hardware());
    FAIL("expected bad_input");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::kBadInput);
    CHECK_THAT(std::string(e.what()), Catch::Contains("NVIDIA GeForce GTX 980 Ti"));
  }
  // No device at all: the probes tried are named.
  CHECK_THROWS_AS(resolve_detected(DetectedHardware{}, shipped().hardware()), Error);
  // The catalog itself knows nothing of detection: "auto" is just an unknown name there.
  CHECK_THROWS_AS(shipped().resolve_hardware("auto"), Error);
}

TEST_CASE("a request's detected-hardware note is printed with the scenario", "[detect]") {
  ScenarioRequest r;
  r.hardware = "h100-sxm";
  r.model.preset = "llama-3.1-8b";
  r.hardware_detected = "detected: NVIDIA H100 80GB HBM3 via nvidia-smi";
  const PreparedScenario ps = prepare_scenario(shipped(), r);
  CHECK(std::find(ps.notes.begin(), ps.notes.end(), "hardware: detected: NVIDIA H100 80GB HBM3 via nvidia-smi") != ps.notes.end());
}

TEST_CASE("describe names the device, count and tool", "[detect]") {
  CHECK(describe(gpu("NVIDIA H100 80GB HBM3", 81559, 8)) == "NVIDIA H100 80GB HBM3 x8 via nvidia-smi");
  CHECK(describe(apple("Apple M4 Max", 1, 40)) == "Apple M4 Max, 40 GPU cores, via sysctl");
}

TEST_CASE("/proc on a CPU-only machine maps to the cpu-class profile", "[detect][cpu]") {
  DetectedDevice epyc = parse_proc(fixture("epyc-9654/cpuinfo"), fixture("epyc-9654/meminfo"));
  ProfileMatch m = match_profile(epyc, shipped().hardware());
  REQUIRE(m.id);
  CHECK(*m.id == "epyc-9654");
  CHECK(m.how == "'AMD EPYC 9654 96-Core Processor' is a reported name of epyc-9654");
  // MemTotal 791,020,108 KiB = 754.4 GiB against the profile's 12 x 64 GiB = 768 GiB: within tolerance, no note.
  CHECK(m.notes.empty());

  DetectedDevice ryzen = parse_proc(fixture("ryzen-9-9950x/cpuinfo"), fixture("ryzen-9-9950x/meminfo"));
  m = match_profile(ryzen, shipped().hardware());
  REQUIRE(m.id);
  CHECK(*m.id == "ryzen-9-9950x");
  // 97,631,428 KiB = 93.1 GiB installed (2 x 48 GB) against the profile's 64 GiB: said.
  REQUIRE(m.notes.size() == 1);
  CHECK(m.notes[0].find("93.1 GiB") != std::string::npos);

  // An EPYC 7763 has no profile: still bad input, pointing at the CPU profiles.
  DetectedDevice old = parse_proc(fixture("x86-cpu/cpuinfo"), fixture("x86-cpu/meminfo"));
  m = match_profile(old, shipped().hardware());
  CHECK_FALSE(m.id);
  CHECK(m.hint.find("hw list --class cpu") != std::string::npos);
}

TEST_CASE("the host CPU beside a GPU names the offload host", "[detect][cpu]") {
  DetectedDevice gpu;
  gpu.kind = "gpu";
  gpu.name = "NVIDIA GeForce RTX 4090";
  gpu.cpu_model = "AMD EPYC 9654 96-Core Processor";
  CHECK(match_host_cpu(gpu, shipped().hardware()).value_or("") == "epyc-9654");
  gpu.cpu_model = "AMD EPYC 7763 64-Core Processor";  // no profile
  CHECK_FALSE(match_host_cpu(gpu, shipped().hardware()));
  DetectedDevice cpu_alone = parse_proc(fixture("epyc-9654/cpuinfo"), fixture("epyc-9654/meminfo"));
  CHECK_FALSE(match_host_cpu(cpu_alone, shipped().hardware()));  // the CPU is the device, not a host
}
