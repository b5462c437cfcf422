// SPDX-License-Identifier: MIT
// `optadvisor hw list`, `optadvisor hw show NAME` and `optadvisor hw detect` (detect_tools.cpp).
#include <fmt/format.h>

#include "cli/common.hpp"
#include "cli/scenario_options.hpp"
#include "cli/detect_tools.hpp"
#include "optadvisor/base/error.hpp"

namespace optadvisor::cli {

void register_hw(CLI::App& app, const GlobalOptions& global) {
  auto* hw = app.add_subcommand("hw", "The hardware-profile database");
  hw->require_subcommand(1);

  struct ListOptions {
    std::string device_class;
    FormatOption format;
  };
  auto list_options = std::make_shared<ListOptions>();
  auto* list = hw->add_subcommand("list", "List devices: memory, bandwidth, dense peak TFLOP/s");
  std::vector<std::string> classes;
  for (auto c : all_device_classes()) classes.emplace_back(to_string(c));
  list->add_option("--class", list_options->device_class, "Only this device class")->check(CLI::IsMember(classes));
  list_options->format.attach(list);
  list->callback([list_options, &global] {
    const Catalog& catalog = load_catalog(global);
    std::vector<const HardwareProfile*> devices;
    for (auto c : all_device_classes()) {
      if (!list_options->device_class.empty() && to_string(c) != list_options->device_class) continue;
      std::vector<const HardwareProfile*> of_class;
      for (const auto& h : catalog.hardware())
        if (h.device_class == c) of_class.push_back(&h);
      std::sort(of_class.begin(), of_class.end(),
                [](const auto* a, const auto* b) { return a->vendor != b->vendor ? a->vendor < b->vendor : a->id < b->id; });
      devices.insert(devices.end(), of_class.begin(), of_class.end());
    }
    fmt::print("{}", render_hardware_list(devices, list_options->format.get()));
  });

  struct ShowOptions {
    std::string name;
    ScenarioRequest device;  ///< --memory and --link: the profile as a scenario would use it
    FormatOption format;
  };
  auto show_options = std::make_shared<ShowOptions>();
  auto* show = hw->add_subcommand("show", "Show one device's whole profile with sources");
  show->add_option("name", show_options->name, "Device id, alias or short name (e.g. h100, 'RTX 5090', m4max)")->required();
  add_device_options(show, show_options->device);
  show_options->format.attach(show);
  show->callback([show_options, &global] {
    const Catalog& catalog = load_catalog(global);
    std::string detected_via;
    const std::string name = resolve_hw_auto(show_options->name, catalog, &detected_via);
    Resolution how;
    const auto& device = catalog.resolve_hardware(name, &how);
    if (!detected_via.empty()) how = {"auto", device.id, detected_via};
    // --memory / --link: the variant estimates would use (a size the part is not sold in is bad input).
    std::vector<std::string> notes;
    const auto variant = device_as_requested(device, show_options->device, notes);
    fmt::print("{}", render_hardware_show(variant ? *variant : device, how, catalog.hardware_origin(device.id), show_options->format.get(),
                                          stdout_style(global)));
  });

  register_hw_detect(hw, global);  // detect_tools.cpp
}

}  // namespace optadvisor::cli
