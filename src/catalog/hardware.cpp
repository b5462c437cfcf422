// SPDX-License-Identifier: MIT
#include "optadvisor/catalog/hardware.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "base/json_fields.hpp"
#include "base/units.hpp"
#include "catalog/embedded.hpp"

namespace optadvisor {

bool Capabilities::has(const std::string& name) const {
  if (name == "fp8") return fp8;
  if (name == "nvfp4") return nvfp4;
  if (name == "mxfp4") return mxfp4;
  if (name == "int4") return int4;
  if (name == "int8") return int8;
  return false;
}
namespace {

constexpr std::array<std::pair<DeviceClass, std::string_view>, 7> kClassNames = {{
    {DeviceClass::kDatacenterGpu, "datacenter-gpu"},
    {DeviceClass::kWorkstationGpu, "workstation-gpu"},
    {DeviceClass::kConsumerGpu, "consumer-gpu"},
    {DeviceClass::kAppleSilicon, "apple-silicon"},
    {DeviceClass::kMobileSoc, "mobile-soc"},
    {DeviceClass::kAccelerator, "accelerator"},
    {DeviceClass::kCpu, "cpu"},
}};

template <typename T>
std::optional<T> optional_at(const nlohmann::json& j, const char* key) {
  const nlohmann::json* v = json_field::find(j, key);
  if (v == nullptr) return std::nullopt;
  return v->get<T>();
}

std::optional<Link> link_from_json(const nlohmann::json& j) {
  Link link;
  link.kind = j.value("kind", std::string{});
  link.bandwidth_bytes_per_s = j.at("bandwidth_bytes_per_s").get<double>();
  link.bidirectional = j.value("direction", std::string{"bidirectional"}) == "bidirectional";
  link.accessory = j.value("accessory", false);
  return link;
}

std::map<std::string, double> rates_from_json(const nlohmann::json& j) {
  std::map<std::string, double> out;
  for (const auto& [dtype, value] : j.items()) out[dtype] = value.get<double>();
  return out;
}

}  // namespace

const std::vector<std::string>& hardware_vendors() {
  static const std::vector<std::string> vendors = [] {
    std::vector<std::string> out;
    for (const auto& file : embedded_files()) {
      if (file.path != "schema/hardware.schema.json") continue;
      const auto schema = nlohmann::json::parse(file.content);
      for (const auto& v : schema.at("properties").at("vendor").at("enum")) out.push_back(v.get<std::string>());
    }
    return out;
  }();
  return vendors;
}

std::string_view to_string(DeviceClass c) {
  for (const auto& [cls, name] : kClassNames)
    if (cls == c) return name;
  return "unknown";
}

std::optional<DeviceClass> device_class_from_string(std::string_view s) {
  for (const auto& [cls, name] : kClassNames)
    if (name == s) return cls;
  return std::nullopt;
}

const std::vector<DeviceClass>& all_device_classes() {
  static const std::vector<DeviceClass> classes = [] {
    std::vector<DeviceClass> v;
    for (const auto& entry : kClassNames) v.push_back(entry.first);
    return v;
  }();
  return classes;
}

std::optional<double> HardwareProfile::peak_flops_per_s(const std::string& dtype) const {
  auto it = flops_per_s.find(dtype);
  if (it == flops_per_s.end()) return std::nullopt;
  return it->second;
}

double HardwareProfile::physical_memory_bytes() const {
  if (memory_visible_bytes) return *memory_visible_bytes;
  return memory_capacity_in_gib ? memory_capacity_bytes / 1e9 * kBytesPerGiB : memory_capacity_bytes;
}

double HardwareProfile::usable_memory_bytes() const {
  if (app_limit_bytes) return *app_limit_bytes;
  // macOS: recommendedMaxWorkingSetSize is the usable fraction of hw.memsize (bytes, so GiB-based).
  return physical_memory_bytes() * memory_usable_fraction.value_or(1.0);
}

bool HardwareProfile::is_estimated(std::string_view pointer) const {
  return std::find(estimated.begin(), estimated.end(), pointer) != estimated.end();
}

namespace {

/// How far a size given by a user is from a sold one, relative to the sold one. 8% covers
/// GB against GiB (7.4%), so "64GB" and "64GiB" name the same option.
double size_offset(double bytes, double sold_bytes) { return std::fabs(bytes - sold_bytes) / sold_bytes; }
constexpr double kSameSizeOffset = 0.08;

}  // namespace

const MemoryOption* HardwareProfile::memory_option(double bytes) const {
  const MemoryOption* best = nullptr;
  for (const auto& o : memory_options) {
    const double off = size_offset(bytes, o.capacity_bytes);
    if (off <= kSameSizeOffset && (!best || off < size_offset(bytes, best->capacity_bytes))) best = &o;
  }
  return best;
}

bool HardwareProfile::is_own_memory_size(double bytes) const {
  return size_offset(bytes, memory_capacity_bytes) <= kSameSizeOffset;
}

const Link* HardwareProfile::default_multi_gpu_link() const {
  if (capabilities.multi_gpu_link && scale_up && !scale_up->accessory) return &*scale_up;
  if (pcie) return &*pcie;
  return nullptr;
}

HardwareProfile with_memory_option(const HardwareProfile& hw, const MemoryOption& option) {
  HardwareProfile out = hw;
  if (option.capacity_bytes == hw.memory_capacity_bytes) {
    if (option.price_usd) out.price_usd = option.price_usd;
    return out;
  }
  out.memory_capacity_bytes = option.capacity_bytes;
  // The driver-visible bytes measured on the default size scale with the size: a GDDR card's
  // "16 GB" shows 16 GiB, its "8 GB" part 8 GiB (same chips, half as many or half as dense).
  if (out.memory_visible_bytes) *out.memory_visible_bytes *= option.capacity_bytes / hw.memory_capacity_bytes;
  // A name that states the size ("RTX 4060 Ti 16GB") states the one chosen.
  const std::string stated = fmt::format("{:g}GB", hw.memory_capacity_bytes / kBytesPerGB);
  if (const auto at = out.name.find(stated); at != std::string::npos)
    out.name.replace(at, stated.size(), fmt::format("{:g}GB", option.capacity_bytes / kBytesPerGB));
  out.price_usd = option.price_usd;  // the default size's price says nothing about this one
  return out;
}

namespace {

/// The memory block: type, capacity, bandwidth, the usable share and app limits, the sizes sold.
void read_memory(const nlohmann::json& j, HardwareProfile& hw) {
  const auto& mem = j.at("memory");
  hw.memory_type = mem.at("type").get<std::string>();
  hw.memory_capacity_bytes = mem.at("capacity_bytes").get<double>();
  hw.memory_bandwidth_bytes_per_s = mem.at("bandwidth_bytes_per_s").get<double>();
  hw.memory_usable_fraction = optional_at<double>(mem, "usable_fraction");
  hw.memory_visible_bytes = optional_at<double>(mem, "visible_bytes");
  hw.memory_capacity_in_gib = mem.value("capacity_in_gib", false);
  hw.app_limit_bytes = optional_at<double>(mem, "app_limit_bytes");
  hw.app_limit_entitled_bytes = optional_at<double>(mem, "app_limit_entitled_bytes");
  hw.unified_memory = mem.value("unified", false);
  for (const auto& o : j.value("memory_options", nlohmann::json::array()))
    hw.memory_options.push_back(
        {o.at("capacity_bytes").get<double>(), optional_at<double>(o, "price_usd"), o.at("source").get<std::string>()});
}

/// The peak rates per data type, the cache and compute units, power, thermals and the links.
void read_compute(const nlohmann::json& j, HardwareProfile& hw) {
  const auto& compute = j.at("compute");
  hw.flops_per_s = rates_from_json(compute.at("flops_per_s"));
  if (compute.contains("fp16_accumulate_flops_per_s"))
    hw.fp16_accumulate_flops_per_s = rates_from_json(compute.at("fp16_accumulate_flops_per_s"));
  hw.npu_ops_per_s = optional_at<double>(compute, "npu_ops_per_s");
  if (compute.contains("cpu_flops_per_s")) hw.cpu_flops_per_s = rates_from_json(compute.at("cpu_flops_per_s"));

  hw.cache_bytes = optional_at<double>(j, "cache_bytes");
  hw.compute_units = optional_at<int>(j, "compute_units");
  hw.compute_unit_kind = j.value("compute_unit_kind", std::string{});
  hw.power_watts = optional_at<double>(j, "power_watts");
  if (j.contains("thermal")) hw.sustained_fraction = j.at("thermal").at("sustained_fraction").get<double>();

  if (j.contains("interconnect")) {
    const auto& ic = j.at("interconnect");
    if (ic.contains("scale_up")) hw.scale_up = link_from_json(ic.at("scale_up"));
    if (ic.contains("scale_out")) hw.scale_out = link_from_json(ic.at("scale_out"));
    hw.node_gpus = ic.value("node_gpus", 0u);
    if (ic.contains("pcie")) {
      const auto& p = ic.at("pcie");
      Link link;
      link.kind = "pcie" + std::to_string(p.at("generation").get<int>()) + " x" + std::to_string(p.at("lanes").get<int>());
      link.bandwidth_bytes_per_s = p.at("bandwidth_bytes_per_s").get<double>();
      link.bidirectional = false;
      hw.pcie = link;
    }
  }
}

/// The capability flags (int8 from the int8 rate, read before).
void read_capabilities(const nlohmann::json& caps, HardwareProfile& hw) {
  hw.capabilities.fp8 = caps.at("fp8").get<bool>();
  hw.capabilities.nvfp4 = caps.at("nvfp4").get<bool>();
  hw.capabilities.mxfp4 = caps.at("mxfp4").get<bool>();
  hw.capabilities.int4 = caps.at("int4").get<bool>();
  hw.capabilities.int8 = hw.peak_flops_per_s("int8").value_or(0) > 0;
  hw.capabilities.flash_attention_2 = caps.at("flash_attention_2").get<bool>();
  hw.capabilities.flash_attention_3 = caps.at("flash_attention_3").get<bool>();
  hw.capabilities.cuda_graphs = caps.at("cuda_graphs").get<bool>();
  hw.capabilities.unified_memory = caps.at("unified_memory").get<bool>();
  hw.capabilities.npu = caps.at("npu").get<bool>();
  hw.capabilities.multi_gpu_link = caps.at("multi_gpu_link").get<bool>();
}

/// Checks the schema cannot express: limits against capacity, rates that contradict the
/// capabilities, memory options that are not sold or not told apart, and unit slips.
void check_profile(const HardwareProfile& hw, std::vector<Problem>& problems) {
  if (hw.app_limit_entitled_bytes && hw.app_limit_bytes && *hw.app_limit_entitled_bytes < *hw.app_limit_bytes)
    problems.push_back({"", "/memory/app_limit_entitled_bytes", "must not be below app_limit_bytes"});
  if (hw.app_limit_bytes && *hw.app_limit_bytes > hw.memory_capacity_bytes)
    problems.push_back({"", "/memory/app_limit_bytes", "exceeds capacity_bytes"});
  if (hw.flops_per_s.empty() && hw.cpu_flops_per_s.empty() && !hw.npu_ops_per_s)
    problems.push_back({"", "/compute/flops_per_s", "needs at least one data type"});
  if (hw.capabilities.fp8 && !hw.flops_per_s.count("fp8"))
    problems.push_back({"", "/compute/flops_per_s/fp8", "capabilities.fp8 is true but no fp8 rate is given"});
  for (const auto& [dtype, rate] : hw.fp16_accumulate_flops_per_s) {
    auto it = hw.flops_per_s.find(dtype);
    if (it != hw.flops_per_s.end() && rate < it->second)
      problems.push_back({"", "/compute/fp16_accumulate_flops_per_s/" + dtype,
                          "FP16-accumulate rate is below the FP32-accumulate rate; the two look swapped"});
  }
  auto names_a_source = [&](const std::string& title) {
    return hw.sources.is_array() &&
           std::any_of(hw.sources.begin(), hw.sources.end(), [&](const nlohmann::json& src) { return src.value("title", "") == title; });
  };
  if (!hw.memory_options.empty()) {
    if (std::none_of(hw.memory_options.begin(), hw.memory_options.end(),
                     [&](const MemoryOption& o) { return o.capacity_bytes == hw.memory_capacity_bytes; }))
      problems.push_back({"", "/memory/capacity_bytes", "is not one of memory_options (the default must be a size that is sold)"});
    for (std::size_t i = 0; i < hw.memory_options.size(); ++i) {
      const auto& o = hw.memory_options[i];
      const std::string at = "/memory_options/" + std::to_string(i);
      if (!names_a_source(o.source))
        problems.push_back({"", at + "/source", "names no entry of sources (give the title of the source that lists this size)"});
      for (std::size_t k = 0; k < i; ++k)
        if (std::fabs(hw.memory_options[k].capacity_bytes - o.capacity_bytes) / o.capacity_bytes <= 0.16)
          problems.push_back({"", at + "/capacity_bytes", "is within 16% of another option; --memory could not tell them apart"});
      if (hw.app_limit_bytes && *hw.app_limit_bytes > o.capacity_bytes)
        problems.push_back({"", at + "/capacity_bytes", "is below app_limit_bytes"});
    }
  }
  if (hw.gpu_hour_usd && !names_a_source(hw.gpu_hour_source))
    problems.push_back({"", "/gpu_hour_usd/source", "names no entry of sources (give the title of the source that states the price)"});
  // A wildly large figure is almost always a unit slip (TFLOPS written as FLOP/s x1e3).
  for (const auto& [dtype, rate] : hw.flops_per_s)
    if (rate > 1e17)
      problems.push_back({"", "/compute/flops_per_s/" + dtype, "above 100 PFLOP/s for one device; check the units (FLOP/s)"});
  if (hw.memory_bandwidth_bytes_per_s > 1e14)
    problems.push_back({"", "/memory/bandwidth_bytes_per_s", "above 100 TB/s; check the units (bytes/s)"});
  if (hw.memory_bandwidth_bytes_per_s < 1e9)
    problems.push_back({"", "/memory/bandwidth_bytes_per_s", "below 1 GB/s; check the units (bytes/s, not GB/s)"});
  if (hw.memory_capacity_bytes < 1e8) problems.push_back({"", "/memory/capacity_bytes", "below 100 MB; check the units (bytes, not GB)"});
}

}  // namespace

std::optional<HardwareProfile> hardware_from_json(const nlohmann::json& j, std::vector<Problem>& problems) {
  const std::size_t problems_before = problems.size();
  HardwareProfile hw;
  try {
    hw.id = j.at("id").get<std::string>();
    hw.name = j.at("name").get<std::string>();
    hw.vendor = j.at("vendor").get<std::string>();
    hw.device_class = device_class_from_string(j.at("class").get<std::string>()).value_or(DeviceClass::kConsumerGpu);
    hw.architecture = j.value("architecture", std::string{});
    hw.aliases = j.value("aliases", std::vector<std::string>{});
    hw.default_for = j.value("default_for", std::vector<std::string>{});
    hw.launch_year = j.at("launch_year").get<int>();
    hw.announced = j.value("status", std::string{"shipping"}) == "announced";
    hw.price_usd = optional_at<double>(j, "price_usd");
    if (j.contains("gpu_hour_usd")) {
      hw.gpu_hour_usd = j.at("gpu_hour_usd").at("usd").get<double>();
      hw.gpu_hour_source = j.at("gpu_hour_usd").at("source").get<std::string>();
    }

    read_memory(j, hw);

    read_compute(j, hw);

    read_capabilities(j.at("capabilities"), hw);

    hw.engines = j.at("engines").get<std::vector<std::string>>();
    hw.estimated = j.value("estimated", std::vector<std::string>{});
    hw.notes = j.value("notes", std::vector<std::string>{});
    hw.sources = j.at("sources");
  } catch (const nlohmann::json::exception& e) {
    // The schema check runs first, so this only fires on documents that skipped it.
    problems.push_back({"", "", std::string("malformed hardware profile: ") + e.what()});
    return std::nullopt;
  }

  check_profile(hw, problems);

  if (problems.size() != problems_before) return std::nullopt;
  return hw;
}

}  // namespace optadvisor
