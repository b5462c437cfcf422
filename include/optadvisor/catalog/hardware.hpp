// SPDX-License-Identifier: MIT
// A hardware profile: one device's memory, dense compute per data type,
// interconnect, capabilities and software ecosystem, each number sourced.
// The schema is data/schema/hardware.schema.json.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/base/error.hpp"

namespace optadvisor {

/// What kind of device a profile describes; decides defaults (engine, model).
enum class DeviceClass { kDatacenterGpu, kWorkstationGpu, kConsumerGpu, kAppleSilicon, kMobileSoc, kAccelerator, kCpu };

/// "datacenter-gpu", "apple-silicon", ...
std::string_view to_string(DeviceClass c);
std::optional<DeviceClass> device_class_from_string(std::string_view s);
/// Every class, in display order.
const std::vector<DeviceClass>& all_device_classes();

/// The vendors a profile may name: the schema's enum (data/schema/hardware.schema.json), the one list.
const std::vector<std::string>& hardware_vendors();

/// A point-to-point link (NVLink, xGMI, ICI, PCIe).
struct Link {
  std::string kind;                  ///< "nvlink4", "xgmi", "pcie5 x16", ...
  double bandwidth_bytes_per_s = 0;  ///< as stated by `bidirectional`
  bool bidirectional = true;         ///< true: the figure sums both directions
  bool accessory = false;            ///< needs a part sold separately (GeForce NVLink bridge): not assumed
  /// Bandwidth in one direction, the figure collectives are limited by.
  double per_direction_bytes_per_s() const { return bidirectional ? bandwidth_bytes_per_s / 2 : bandwidth_bytes_per_s; }
};

/// Feature flags the rule engine keys on.
struct Capabilities {
  bool fp8 = false;
  bool nvfp4 = false;
  bool mxfp4 = false;
  bool int4 = false;
  bool int8 = false;  ///< INT8 matrix units: the profile states an int8 matrix rate
  bool flash_attention_2 = false;
  bool flash_attention_3 = false;
  bool cuda_graphs = false;
  bool unified_memory = false;
  bool npu = false;
  bool multi_gpu_link = false;

  /// The capability a data file names ("fp8", "nvfp4", "mxfp4", "int4", "int8"); false for any other name.
  bool has(const std::string& name) const;
};

/// One memory size a part is sold in (an M4 Max with 48, 64 or 128 GB).
struct MemoryOption {
  double capacity_bytes = 0;
  std::optional<double> price_usd;  ///< of the configuration with this size, where published
  std::string source;               ///< title of the `sources` entry that lists it
};

struct HardwareProfile {
  std::string id;
  std::string name;
  std::string vendor;
  DeviceClass device_class = DeviceClass::kConsumerGpu;
  std::string architecture;
  std::vector<std::string> aliases;
  std::vector<std::string> default_for;  ///< short names that resolve to this bin
  int launch_year = 0;
  bool announced = false;  ///< pre-release figures
  std::optional<double> price_usd;
  /// On-demand cloud price of one GPU-hour (a provider's public list price), for cost per token.
  std::optional<double> gpu_hour_usd;
  std::string gpu_hour_source;  ///< title of the `sources` entry that states it

  std::string memory_type;
  double memory_capacity_bytes = 0;
  double memory_bandwidth_bytes_per_s = 0;
  std::optional<double> memory_visible_bytes;    ///< what the driver reports, when measured
  std::optional<double> memory_usable_fraction;  ///< of capacity a program may allocate
  /// The capacity is sold in "GB" that are binary GiB (Apple: a "128GB" Mac has
  /// hw.memsize = 128 x 2^30 bytes), so the physical bytes are GB / 10^9 x 2^30.
  bool memory_capacity_in_gib = false;
  std::optional<double> app_limit_bytes;           ///< per-app limit (phones)
  std::optional<double> app_limit_entitled_bytes;  ///< with the increased-memory entitlement (iOS)
  bool unified_memory = false;
  std::vector<MemoryOption> memory_options;  ///< the sizes sold; empty when there is one

  /// Dense peak FLOP/s (or OP/s for integer types) by data type: "fp32", "bf16", "fp8", "fp4", ...
  /// On GeForce cards these are the FP32-accumulate rates.
  std::map<std::string, double> flops_per_s;
  /// GeForce only: the FP16-accumulate rates, recorded separately.
  std::map<std::string, double> fp16_accumulate_flops_per_s;
  std::optional<double> npu_ops_per_s;
  /// The CPU cluster's dense peak by data type (llama.cpp CPU backend, XNNPACK).
  std::map<std::string, double> cpu_flops_per_s;

  std::optional<double> cache_bytes;
  std::optional<int> compute_units;
  std::string compute_unit_kind;
  std::optional<double> power_watts;
  std::optional<double> sustained_fraction;  ///< thermal: sustained / burst throughput

  std::optional<Link> scale_up;
  std::optional<Link> scale_out;  ///< each GPU's network to other nodes (its NIC)
  uint32_t node_gpus = 0;         ///< GPUs the scale-up link joins (0 = not recorded)
  std::optional<Link> pcie;
  Capabilities capabilities;
  std::vector<std::string> engines;    ///< engine ids, "llama.cpp:cuda", "vllm", ...
  std::vector<std::string> estimated;  ///< JSON pointers of estimated values
  std::vector<std::string> notes;
  nlohmann::json sources;   ///< array of {title, url, read, covers}
  nlohmann::json document;  ///< the profile as loaded, for `hw show --json`

  /// Peak dense rate for a data type, if the hardware accelerates it.
  std::optional<double> peak_flops_per_s(const std::string& dtype) const;
  /// Bytes a program can actually use: the app limit (phones), else the
  /// driver-visible bytes (or capacity) times the usable fraction (macOS wired limit).
  double usable_memory_bytes() const;
  /// The bytes the operating system sees: the driver-visible bytes, else the
  /// capacity (in GiB when memory_capacity_in_gib).
  double physical_memory_bytes() const;
  /// True when the value at this JSON pointer is marked as an estimate.
  bool is_estimated(std::string_view pointer) const;
  /// The sold size `bytes` names, matched within 8% so that "64GB" and "64GiB" both
  /// pick the 64 GB option; nullptr when the part is not sold in that size.
  const MemoryOption* memory_option(double bytes) const;
  /// True when `bytes` names the profile's own size, by the same 8% match (so that
  /// "--memory 24GB" on a part sold in one size is accepted, not refused).
  bool is_own_memory_size(double bytes) const;
  /// The link tensor parallelism uses by default: the scale-up link unless it is an
  /// accessory (or the device has no GPU-to-GPU link), else PCIe; nullptr when neither.
  const Link* default_multi_gpu_link() const;
};

/// The same device with another of its sold memory sizes: capacity and price follow the
/// option (no price when the option has none), the measured driver-visible bytes of the
/// default size scale with the size. The usable fraction (macOS wired limit) applies unchanged.
HardwareProfile with_memory_option(const HardwareProfile& hw, const MemoryOption& option);

/// Builds a profile from a schema-valid document; semantic problems (e.g. a
/// usable fraction with no capacity) are appended with their JSON pointer.
std::optional<HardwareProfile> hardware_from_json(const nlohmann::json& j, std::vector<Problem>& problems);

}  // namespace optadvisor
