// SPDX-License-Identifier: MIT
#include <algorithm>

#include <fmt/format.h>

#include "optadvisor/render/report_hardware.hpp"
#include "base/table.hpp"
#include "base/units.hpp"

namespace optadvisor {
namespace {

/// The 16-bit matrix rate: bf16, or fp16 where the device has no bf16 figure; a CPU's
/// vector-unit rate (cpu_flops_per_s) where it has no matrix-unit figures at all.
std::optional<double> sixteen_bit_flops(const HardwareProfile& hw) {
  if (auto bf16 = hw.peak_flops_per_s("bf16")) return bf16;
  if (auto fp16 = hw.peak_flops_per_s("fp16")) return fp16;
  if (!hw.flops_per_s.empty()) return std::nullopt;
  for (const char* key : {"bf16", "fp16"})
    if (auto it = hw.cpu_flops_per_s.find(key); it != hw.cpu_flops_per_s.end() && it->second > 0) return it->second;
  return std::nullopt;
}

std::string tflops_cell(std::optional<double> flops) { return flops ? format_sig3(*flops / 1e12) : std::string("-"); }

/// The best 4-bit float rate (fp4 covers NVFP4/MXFP4 tensor paths).
std::optional<double> fp4_flops(const HardwareProfile& hw) { return hw.peak_flops_per_s("fp4"); }

std::string link_text(const Link& link) {
  if (link.bidirectional)
    return fmt::format("{}  {} bidirectional ({} per direction)", link.kind, format_bandwidth(link.bandwidth_bytes_per_s),
                       format_bandwidth(link.per_direction_bytes_per_s()));
  return fmt::format("{}  {} per direction", link.kind, format_bandwidth(link.bandwidth_bytes_per_s));
}

/// The scale-up link, marked when its part is sold separately (not assumed by estimates).
std::string scale_up_text(const Link& link) {
  return link_text(link) + (link.accessory ? "; bridge sold separately: estimates use PCIe unless --link nvlink" : "");
}

}  // namespace

nlohmann::json hardware_list_json(const std::vector<const HardwareProfile*>& devices) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto* hw : devices) {
    nlohmann::json row = {
        {"id", hw->id},
        {"name", hw->name},
        {"vendor", hw->vendor},
        {"class", to_string(hw->device_class)},
        {"memory_capacity_bytes", hw->memory_capacity_bytes},
        {"memory_bandwidth_bytes_per_s", hw->memory_bandwidth_bytes_per_s},
        {"flops_per_s", hw->flops_per_s},
        {"announced", hw->announced},
    };
    list.push_back(std::move(row));
  }
  return {{"schema_version", kSchemaVersion}, {"hardware", list}};
}

std::string render_hardware_list(const std::vector<const HardwareProfile*>& devices, OutputFormat format) {
  if (format == OutputFormat::kJson) return hardware_list_json(devices).dump(2) + "\n";
  using A = Table::Align;
  Table table({"ID", "NAME", "CLASS", "MEMORY GB", "BANDWIDTH GB/s", "BF16 TFLOP/s", "FP8 TFLOP/s", "FP4 TFLOP/s"},
              {A::kLeft, A::kLeft, A::kLeft, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight});
  for (const auto* hw : devices) {
    table.add_row({hw->id, hw->name + (hw->announced ? " (announced)" : ""), std::string(to_string(hw->device_class)),
                   format_sig3(hw->memory_capacity_bytes / kBytesPerGB), format_sig3(hw->memory_bandwidth_bytes_per_s / 1e9),
                   tflops_cell(sixteen_bit_flops(*hw)), tflops_cell(hw->peak_flops_per_s("fp8")), tflops_cell(fp4_flops(*hw))});
  }
  std::string footer =
      "Dense peak rates (no 2:4 sparsity); BF16 falls back to FP16 where a device has no BF16 figure. GeForce rates "
      "are with FP32 accumulation. CPUs show the BF16 rate of their vector and matrix extensions (cpu_flops_per_s). GB = 10^9 bytes.\n";
  if (format == OutputFormat::kMarkdown) return table.to_markdown() + "\n" + footer;
  return table.to_text() + fmt::format("\n{} devices. ", devices.size()) + footer;
}

namespace {

/// The heading, item and estimate-marker writers every `hardware show` section uses (Markdown or text).
struct ShowFormat {
  const HardwareProfile& hw;
  bool md;
  const Style& style;

  std::string heading(const std::string& s) const { return md ? "\n## " + s + "\n\n" : "\n" + style.bold(s) + "\n"; }
  std::string item(const std::string& key, const std::string& value) const {
    return md ? fmt::format("- **{}**: {}\n", key, value) : fmt::format("  {:<14}{}\n", key, value);
  }
  const char* est(const std::string& pointer) const { return hw.is_estimated(pointer) ? " (estimate)" : ""; }
};

std::string show_title(const ShowFormat& f, const Resolution& how) {
  const auto& hw = f.hw;
  std::string out;
  out += f.md ? fmt::format("# {} (`{}`)\n\n", hw.name, hw.id) : f.style.bold(fmt::format("{} ({})", hw.name, hw.id)) + "\n";
  if (how.via != "id") out += fmt::format("'{}' resolved to {} ({})\n", how.query, hw.id, how.via);
  out += fmt::format("class {}, vendor {}{}, launched {}{}\n", to_string(hw.device_class), hw.vendor,
                     hw.architecture.empty() ? "" : ", architecture " + hw.architecture, hw.launch_year,
                     hw.announced ? " (announced figures, not shipping)" : "");
  return out;
}

std::string show_memory(const ShowFormat& f) {
  const auto& hw = f.hw;
  std::string out = f.heading("Memory");
  out += f.item("capacity", format_bytes(hw.memory_capacity_bytes) + " " + hw.memory_type + (hw.unified_memory ? ", unified" : "") +
                                f.est("/memory/capacity_bytes"));
  if (!hw.memory_options.empty()) {
    std::string sizes;
    for (const auto& o : hw.memory_options)
      sizes += (sizes.empty() ? "" : ", ") + format_memory_size(o.capacity_bytes) +
               (o.price_usd ? fmt::format(" (${:.0f})", *o.price_usd) : "");
    out += f.item("sold with", sizes + " (--memory picks one)");
  }
  if (hw.memory_visible_bytes)
    out += f.item("visible", format_bytes(*hw.memory_visible_bytes) + " as the driver reports it" + f.est("/memory/visible_bytes"));
  out += f.item("bandwidth", format_bandwidth(hw.memory_bandwidth_bytes_per_s) + f.est("/memory/bandwidth_bytes_per_s"));
  if (hw.memory_usable_fraction)
    out += f.item("usable", fmt::format("{} ({:.0f}% of capacity){}", format_bytes(hw.physical_memory_bytes() * *hw.memory_usable_fraction),
                                        *hw.memory_usable_fraction * 100, f.est("/memory/usable_fraction")));
  if (hw.app_limit_bytes) out += f.item("app limit", format_bytes(*hw.app_limit_bytes) + f.est("/memory/app_limit_bytes"));
  if (hw.app_limit_entitled_bytes)
    out += f.item("entitled", format_bytes(*hw.app_limit_entitled_bytes) + " with the increased-memory-limit entitlement" +
                                  f.est("/memory/app_limit_entitled_bytes"));
  if (hw.document.contains("memory") && hw.document["memory"].contains("usable_note"))
    out += f.item("note", hw.document["memory"]["usable_note"].get<std::string>());
  return out;
}

std::string show_compute(const ShowFormat& f) {
  const auto& hw = f.hw;
  std::string out = f.heading("Compute (dense peak)");
  static const std::vector<std::string> order = {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp6", "fp4", "int4"};
  for (const auto& dtype : order) {
    auto rate = hw.peak_flops_per_s(dtype);
    if (!rate) continue;
    std::string value = format_flops(*rate);
    if (dtype.rfind("int", 0) == 0) value.replace(value.find("FLOP"), 4, "OP");
    auto acc = hw.fp16_accumulate_flops_per_s.find(dtype);
    if (acc != hw.fp16_accumulate_flops_per_s.end())
      value += fmt::format(" with FP32 accumulate; {} with FP16 accumulate", format_flops(acc->second));
    out += f.item(dtype, value + f.est("/compute/flops_per_s/" + dtype));
  }
  for (const auto& dtype : order) {
    auto it = hw.cpu_flops_per_s.find(dtype);
    if (it == hw.cpu_flops_per_s.end()) continue;
    std::string value = format_flops(it->second);
    if (dtype.rfind("int", 0) == 0) value.replace(value.find("FLOP"), 4, "OP");
    out += f.item("cpu " + dtype, value + f.est("/compute/cpu_flops_per_s/" + dtype));
  }
  if (hw.npu_ops_per_s) out += f.item("npu", format_sig3(*hw.npu_ops_per_s / 1e12) + " TOPS" + f.est("/compute/npu_ops_per_s"));
  if (hw.cache_bytes) out += f.item("cache", format_bytes(*hw.cache_bytes) + f.est("/cache_bytes"));
  if (hw.compute_units)
    out += f.item("units", fmt::format("{} {}", *hw.compute_units, hw.compute_unit_kind.empty() ? "cores" : hw.compute_unit_kind));
  if (hw.power_watts) out += f.item("power", fmt::format("{} W{}", format_sig3(*hw.power_watts), f.est("/power_watts")));
  if (hw.sustained_fraction)
    out += f.item("sustained", fmt::format("{:.0f}% of burst throughput under thermal limits{}", *hw.sustained_fraction * 100,
                                           f.est("/thermal/sustained_fraction")));
  if (hw.price_usd) out += f.item("price", fmt::format("${:.0f}", *hw.price_usd));
  if (hw.gpu_hour_usd) out += f.item("cloud price", fmt::format("${:.2f} per GPU-hour on demand ({})", *hw.gpu_hour_usd, hw.gpu_hour_source));
  return out;
}

std::string show_interconnect(const ShowFormat& f) {
  const auto& hw = f.hw;
  std::string out;
  if (hw.scale_up || hw.pcie) {
    out += f.heading("Interconnect");
    if (hw.scale_up) out += f.item("scale-up", scale_up_text(*hw.scale_up));
    if (hw.node_gpus) out += f.item("scale-up domain", fmt::format("{} GPUs", hw.node_gpus));
    if (hw.scale_out) out += f.item("scale-out", link_text(*hw.scale_out) + " per GPU");
    if (hw.pcie) out += f.item("pcie", link_text(*hw.pcie));
  }
  return out;
}

std::string show_capabilities(const ShowFormat& f) {
  const auto& hw = f.hw;
  std::string out = f.heading("Capabilities");
  const auto& c = hw.capabilities;
  const std::vector<std::pair<std::string, bool>> caps = {{"fp8", c.fp8},
                                                          {"nvfp4", c.nvfp4},
                                                          {"mxfp4", c.mxfp4},
                                                          {"int4", c.int4},
                                                          {"flash-attention-2", c.flash_attention_2},
                                                          {"flash-attention-3", c.flash_attention_3},
                                                          {"cuda-graphs", c.cuda_graphs},
                                                          {"unified-memory", c.unified_memory},
                                                          {"npu", c.npu},
                                                          {"multi-gpu-link", c.multi_gpu_link}};
  std::string yes, no;
  for (const auto& [name, has] : caps) {
    std::string& target = has ? yes : no;
    target += (target.empty() ? "" : ", ") + name;
  }
  out += f.item("has", yes.empty() ? "-" : yes);
  out += f.item("lacks", no.empty() ? "-" : no);
  std::string engines;
  for (const auto& e : hw.engines) engines += (engines.empty() ? "" : ", ") + e;
  out += f.item("engines", engines);
  return out;
}

/// Notes, numbered sources, the estimated fields and where the profile came from.
std::string show_provenance(const ShowFormat& f, const std::string& origin) {
  const auto& hw = f.hw;
  const bool md = f.md;
  std::string out;
  if (!hw.notes.empty()) {
    out += f.heading("Notes");
    for (const auto& n : hw.notes) out += (md ? "- " : "  - ") + n + "\n";
  }
  out += f.heading("Sources");
  int i = 1;
  for (const auto& s : hw.sources) {
    std::string line = fmt::format("[{}] {}: {} (read {})", i++, s.value("title", ""), s.value("url", ""), s.value("read", ""));
    if (s.contains("covers")) line += "; " + s["covers"].get<std::string>();
    out += (md ? "- " : "  ") + line + "\n";
  }
  if (!hw.estimated.empty()) {
    std::string list;
    for (const auto& p : hw.estimated) list += (list.empty() ? "" : ", ") + p;
    out += (md ? "\n" : "") + fmt::format("{}Estimated, not read from a source: {}\n", md ? "" : "  ", list);
  }
  out += (md ? "\n" : "") + fmt::format("{}Profile: {}\n", md ? "" : "  ", origin);
  return out;
}

}  // namespace

std::string render_hardware_show(const HardwareProfile& hw, const Resolution& how, const std::string& origin, OutputFormat format,
                                 const Style& style) {
  if (format == OutputFormat::kJson) {
    nlohmann::json out = {
        {"schema_version", kSchemaVersion}, {"query", how.query}, {"resolved_via", how.via}, {"origin", origin}, {"hardware", hw.document}};
    // --memory picked another sold size: the figures estimates use, beside the profile as written.
    const nlohmann::json* written = hw.document.contains("memory") ? &hw.document.at("memory") : nullptr;
    if (written && written->value("capacity_bytes", 0.0) != hw.memory_capacity_bytes) {
      out["memory_chosen"] = {{"capacity_bytes", hw.memory_capacity_bytes}, {"usable_bytes", hw.usable_memory_bytes()}};
      if (hw.price_usd) out["memory_chosen"]["price_usd"] = *hw.price_usd;
    }
    return out.dump(2) + "\n";
  }
  const ShowFormat f{hw, format == OutputFormat::kMarkdown, style};
  return show_title(f, how) + show_memory(f) + show_compute(f) + show_interconnect(f) + show_capabilities(f) + show_provenance(f, origin);
}

}  // namespace optadvisor
