// SPDX-License-Identifier: MIT
#include "fixtures.hpp"

namespace optadvisor::fixtures {

const Catalog& catalog() {
  static const Catalog c = Catalog::load({});
  return c;
}

ResolvedModel model(const std::string& id) {
  ModelRequest m;
  m.preset = id;
  return resolve_model(catalog(), m);
}

HardwareProfile round_device(double bandwidth_bytes_per_s, double flops_per_s, double capacity_bytes) {
  HardwareProfile hw;
  hw.id = "round";
  hw.name = "Round-number test device";
  hw.device_class = DeviceClass::kDatacenterGpu;
  hw.memory_capacity_bytes = capacity_bytes;
  hw.memory_bandwidth_bytes_per_s = bandwidth_bytes_per_s;
  hw.flops_per_s = {{"fp16", flops_per_s}, {"bf16", flops_per_s}};
  return hw;
}

const RuleBook& rule_book() {
  static const RuleBook b = RuleBook::load(catalog());
  return b;
}

}  // namespace optadvisor::fixtures
