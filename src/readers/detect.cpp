// SPDX-License-Identifier: MIT
#include "optadvisor/readers/detect.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "optadvisor/catalog/catalog.hpp"
#include "base/input_file.hpp"
#include "base/strings.hpp"
#include "base/names.hpp"
#include "base/units.hpp"

namespace optadvisor {
namespace {

constexpr double kBytesPerMiB = 1048576.0;
/// How far a reported memory size may be from a profile's and still count as
/// the same bin: vendors quote GB where tools report GiB (7.4% apart), and
/// drivers reserve a little; the bins that memory tells apart (A100 40/80 GB,
/// H100 80/94 GB) are 17% or more apart.
constexpr double kMemoryTolerance = 0.10;

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    auto line = trim(text.substr(start, end - start));
    if (!line.empty()) out.push_back(line);
    start = end + 1;
  }
  return out;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    auto pos = s.find(sep, start);
    out.emplace_back(trim(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start)));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::optional<double> parse_number(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  double value = 0;
  const auto* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value) || value < 0) return std::nullopt;
  return value;
}

std::optional<int> parse_count(std::string_view s) {
  auto v = parse_number(s);
  if (!v || *v < 1 || *v > 1e6 || std::floor(*v) != *v) return std::nullopt;
  return static_cast<int>(*v);
}

/// nvidia-smi prints "[N/A]" or "[Not Supported]" for fields a device lacks
/// (e.g. memory.total on unified-memory parts).
bool is_not_available(std::string_view s) { return !s.empty() && s.front() == '['; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool starts_with_word(std::string_view text, std::string_view word) {
  return lower(text.substr(0, word.size())) == word &&
         (text.size() == word.size() || !std::isalnum(static_cast<unsigned char>(text[word.size()])));
}

/// Lowercase runs of ASCII letters and digits: "A100-SXM4-80GB" -> a100, sxm4, 80gb.
std::vector<std::string> words_of(std::string_view s) {
  std::vector<std::string> out;
  std::string word;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 128 && std::isalnum(u)) {
      word += static_cast<char>(std::tolower(u));
    } else if (!word.empty()) {
      out.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) out.push_back(std::move(word));
  return out;
}

/// Several devices of which the first decides: the count is how many share
/// its name; the rest are reported.
std::optional<DetectedDevice> first_kind(std::vector<DetectedDevice> devices, const std::string& tool, std::vector<std::string>& notes) {
  if (devices.empty()) return std::nullopt;
  DetectedDevice first = devices.front();
  first.count = 0;
  first.raw_lines.clear();
  std::vector<std::pair<std::string, int>> others;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const auto& d = devices[i];
    first.raw_lines.insert(first.raw_lines.end(), d.raw_lines.begin(), d.raw_lines.end());
    if (d.name == first.name) {
      ++first.count;
      continue;
    }
    auto it = std::find_if(others.begin(), others.end(), [&](const auto& o) { return o.first == d.name; });
    if (it == others.end())
      others.emplace_back(d.name, 1);
    else
      ++it->second;
  }
  for (const auto& [name, n] : others)
    notes.push_back(fmt::format("{} also reports {} x {}; --hw auto describes the first GPU's kind ({})", tool, n,
                                name.empty() ? "an unnamed GPU" : name, first.name));
  return first;
}

const nlohmann::json* find_key_ci(const nlohmann::json& object, std::string_view key) {
  for (auto it = object.begin(); it != object.end(); ++it)
    if (lower(it.key()) == key) return &it.value();
  return nullptr;
}

std::string json_text(const nlohmann::json* value) {
  if (value == nullptr) return {};
  if (value->is_string()) return std::string(trim(value->get<std::string>()));
  if (value->is_number()) return value->dump();
  return {};
}

/// rocm-smi shows a PCI id ("0x740f") or "N/A" where it has no product name.
bool is_product_name(std::string_view s) {
  const std::string l = lower(s);
  return !l.empty() && l.rfind("0x", 0) != 0 && l != "n/a" && l != "unknown";
}

int card_number(const std::string& key) {
  int n = 0;
  for (char c : key.substr(4)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return 1 << 20;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::string probe_line(const Probe& probe, const ProbeRun& run) {
  std::string line = fmt::format("{}: {}", probe.tool, to_string(run.status));
  if (!run.detail.empty()) line += " (" + run.detail + ")";
  return line;
}

}  // namespace

std::string_view to_string(ProbeRun::Status status) {
  switch (status) {
    case ProbeRun::Status::kOk: return "ok";
    case ProbeRun::Status::kNotFound: return "not found";
    case ProbeRun::Status::kFailed: return "failed";
    case ProbeRun::Status::kTimedOut: return "timed out";
  }
  return "?";
}

const std::vector<Probe>& detection_probes() {
  static const std::vector<Probe> probes = {
      {"nvidia-smi", {"nvidia-smi", "--query-gpu=name,memory.total,count", "--format=csv,noheader,nounits"}, "", "nvidia-smi.txt"},
      {"rocm-smi", {"rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"}, "", "rocm-smi.json"},
      {"sysctl", {"sysctl", "-n", "machdep.cpu.brand_string", "hw.memsize"}, "", "sysctl.txt"},
      {"ioreg", {"ioreg", "-rc", "AGXAccelerator"}, "", "ioreg.txt"},
      {"system_profiler", {"system_profiler", "SPDisplaysDataType"}, "", "system_profiler.txt"},
      {"/proc/cpuinfo", {}, "/proc/cpuinfo", "cpuinfo"},
      {"/proc/meminfo", {}, "/proc/meminfo", "meminfo"},
  };
  return probes;
}

std::optional<DetectedDevice> parse_nvidia_smi(std::string_view text, std::vector<std::string>& notes) {
  std::vector<DetectedDevice> gpus;
  for (auto line : lines_of(text)) {
    auto fields = split(line, ',');
    if (fields.size() < 2) {
      notes.push_back(fmt::format("nvidia-smi: skipped a line that is not name, memory, count: '{}'", line));
      continue;
    }
    // name, memory.total [MiB], count; the name is everything before the last two fields.
    const bool has_count = fields.size() >= 3;
    const std::size_t memory_at = has_count ? fields.size() - 2 : 1;
    std::string name = fields[0];
    for (std::size_t i = 1; i < memory_at; ++i) name += "," + fields[i];
    name = std::string(trim(name));
    const std::string& memory = fields[memory_at];
    DetectedDevice gpu;
    gpu.kind = "gpu";
    gpu.vendor = "nvidia";
    gpu.name = name;
    gpu.source = "nvidia-smi";
    gpu.raw_lines.emplace_back(line);
    if (auto mib = parse_number(memory)) {
      gpu.memory_bytes = *mib * kBytesPerMiB;
    } else if (is_not_available(memory)) {
      gpu.missing.push_back(fmt::format("memory size (nvidia-smi reports {})", memory));
    } else {
      notes.push_back(fmt::format("nvidia-smi: skipped a line whose memory is not a number of MiB: '{}'", line));
      continue;
    }
    if (name.empty()) {
      notes.push_back(fmt::format("nvidia-smi: skipped a line with no GPU name: '{}'", line));
      continue;
    }
    gpus.push_back(std::move(gpu));
  }
  return first_kind(std::move(gpus), "nvidia-smi", notes);
}

std::optional<DetectedDevice> parse_rocm_smi(std::string_view text, std::vector<std::string>& notes) {
  // rocm-smi may print warnings before the document.
  const auto brace = text.find('{');
  if (brace == std::string_view::npos) {
    if (!trim(text).empty()) notes.push_back("rocm-smi: no JSON document in its output");
    return std::nullopt;
  }
  std::string why;
  std::optional<nlohmann::json> parsed = parse_json_input(text.substr(brace), why);
  if (!parsed) {
    notes.push_back("rocm-smi: its output is not valid JSON");
    return std::nullopt;
  }
  const nlohmann::json doc = std::move(*parsed);
  if (!doc.is_object()) {
    notes.push_back("rocm-smi: its output is not a JSON object");
    return std::nullopt;
  }
  std::vector<std::pair<std::string, const nlohmann::json*>> cards;
  auto collect = [&](const nlohmann::json& object) {
    for (auto it = object.begin(); it != object.end(); ++it)
      if (lower(it.key()).rfind("card", 0) == 0 && it.value().is_object()) cards.emplace_back(it.key(), &it.value());
  };
  collect(doc);
  if (auto* system = find_key_ci(doc, "system"); cards.empty() && system != nullptr && system->is_object()) collect(*system);
  std::stable_sort(cards.begin(), cards.end(), [](const auto& a, const auto& b) { return card_number(a.first) < card_number(b.first); });
  if (cards.empty()) {
    notes.push_back("rocm-smi: no card in its output");
    return std::nullopt;
  }
  std::vector<DetectedDevice> gpus;
  for (const auto& [key, card] : cards) {
    DetectedDevice gpu;
    gpu.kind = "gpu";
    gpu.vendor = "amd";
    gpu.source = "rocm-smi";
    for (const char* field : {"card series", "card model", "device name"}) {
      const std::string value = json_text(find_key_ci(*card, field));
      if (is_product_name(value)) {
        gpu.name = value;
        break;
      }
    }
    if (gpu.name.empty()) gpu.missing.push_back("product name (rocm-smi shows no Card Series or Card Model)");
    const std::string vram = json_text(find_key_ci(*card, "vram total memory (b)"));
    if (auto bytes = parse_number(vram))
      gpu.memory_bytes = *bytes;
    else
      gpu.missing.push_back("memory size (no \"VRAM Total Memory (B)\")");
    gpu.raw_lines.push_back(fmt::format("Card Series: {}; VRAM Total Memory (B): {}", json_text(find_key_ci(*card, "card series")), vram));
    gpus.push_back(std::move(gpu));
  }
  return first_kind(std::move(gpus), "rocm-smi", notes);
}

std::optional<DetectedDevice> parse_apple(std::string_view sysctl, std::string_view ioreg, std::string_view system_profiler,
                                          std::vector<std::string>& /*notes*/) {
  const auto lines = lines_of(sysctl);
  if (lines.empty()) return std::nullopt;
  DetectedDevice d;
  d.name = std::string(lines[0]);
  d.cpu_model = d.name;
  d.source = "sysctl";
  d.raw_lines.emplace_back(lines[0]);
  if (lines.size() >= 2) {
    d.raw_lines.emplace_back(lines[1]);
    if (auto bytes = parse_number(lines[1])) d.ram_bytes = *bytes;
  }
  if (!d.ram_bytes) d.missing.push_back("memory size (sysctl hw.memsize)");
  if (!starts_with_word(d.name, "apple")) {
    // An Intel Mac: the brand string is the host CPU.
    d.kind = "cpu";
    d.vendor = starts_with_word(d.name, "intel") ? "intel" : "";
    return d;
  }
  d.kind = "apple-silicon";
  d.vendor = "apple";
  d.memory_bytes = d.ram_bytes;
  auto find_cores = [&](std::string_view text, std::string_view key, char sep) -> std::optional<int> {
    for (auto line : lines_of(text)) {
      auto at = line.find(key);
      if (at == std::string_view::npos) continue;
      auto rest = line.substr(at + key.size());
      auto colon = rest.find(sep);
      if (colon == std::string_view::npos) continue;
      if (auto n = parse_count(rest.substr(colon + 1))) {
        d.raw_lines.emplace_back(line);
        return n;
      }
    }
    return std::nullopt;
  };
  d.gpu_cores = find_cores(ioreg, "\"gpu-core-count\"", '=');
  if (!d.gpu_cores) d.gpu_cores = find_cores(system_profiler, "Total Number of Cores", ':');
  if (!d.gpu_cores) d.missing.push_back("GPU core count (neither ioreg nor system_profiler reported it)");
  return d;
}

DetectedDevice parse_proc(std::string_view cpuinfo, std::string_view meminfo) {
  DetectedDevice d;
  d.kind = "cpu";
  d.source = "/proc/cpuinfo";
  int processors = 0;
  for (auto line : lines_of(cpuinfo)) {
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const auto key = trim(line.substr(0, colon));
    const auto value = trim(line.substr(colon + 1));
    if (key == "processor") ++processors;
    if (key == "model name" && d.cpu_model.empty()) {
      d.cpu_model = std::string(value);
      d.raw_lines.emplace_back(line);
    }
    if (key == "vendor_id" && d.vendor.empty()) {
      if (value == "GenuineIntel")
        d.vendor = "intel";
      else if (value == "AuthenticAMD")
        d.vendor = "amd";
    }
  }
  d.name = d.cpu_model;
  if (processors > 0) d.count = processors;
  if (d.cpu_model.empty()) d.missing.push_back("CPU model (no 'model name' in /proc/cpuinfo)");
  for (auto line : lines_of(meminfo)) {
    if (line.rfind("MemTotal:", 0) != 0) continue;
    auto value = trim(line.substr(9));
    auto space = value.find(' ');
    if (auto kib = parse_number(value.substr(0, space))) {
      d.ram_bytes = *kib * 1024.0;  // /proc/meminfo's "kB" is KiB
      d.raw_lines.emplace_back(line);
    }
    break;
  }
  if (!d.ram_bytes) d.missing.push_back("RAM size (no MemTotal in /proc/meminfo)");
  return d;
}

DetectedHardware detect_hardware(const ProbeRunner& run) {
  DetectedHardware out;
  const auto& probes = detection_probes();
  auto attempt = [&](std::size_t index) -> std::optional<std::string> {
    const Probe& probe = probes[index];
    ProbeRun result = run(probe);
    out.probes.push_back(probe_line(probe, result));
    if (result.status != ProbeRun::Status::kOk) return std::nullopt;
    return std::move(result.output);
  };
  auto note_empty = [&] { out.probes.back() += ", but no device in its output"; };

  std::optional<DetectedDevice> device;
  if (auto text = attempt(0)) {
    device = parse_nvidia_smi(*text, out.notes);
    if (!device) note_empty();
  }
  if (!device) {
    if (auto text = attempt(1)) {
      device = parse_rocm_smi(*text, out.notes);
      if (!device) note_empty();
    }
  }
  std::optional<DetectedDevice> mac_host;
  if (!device) {
    if (auto text = attempt(2)) {
      std::string ioreg, profiler;
      if (starts_with_word(trim(*text), "apple")) {
        ioreg = attempt(3).value_or("");
        if (ioreg.find("\"gpu-core-count\"") == std::string::npos) profiler = attempt(4).value_or("");
      }
      auto found = parse_apple(*text, ioreg, profiler, out.notes);
      if (found && found->kind == "apple-silicon")
        device = std::move(found);
      else if (found)
        mac_host = std::move(found);
    }
  }
  // The host: always read (cheap), for the CPU and RAM beside an accelerator.
  const std::string cpuinfo = attempt(5).value_or("");
  const std::string meminfo = attempt(6).value_or("");
  std::optional<DetectedDevice> host;
  if (!cpuinfo.empty() || !meminfo.empty())
    host = parse_proc(cpuinfo, meminfo);
  else if (mac_host)
    host = std::move(mac_host);

  if (device) {
    if (host && device->cpu_model.empty()) device->cpu_model = host->cpu_model;
    if (host && !device->ram_bytes) device->ram_bytes = host->ram_bytes;
    out.device = std::move(device);
  } else if (host && (!host->cpu_model.empty() || host->ram_bytes)) {
    out.device = std::move(host);
  }
  return out;
}

std::string describe(const DetectedDevice& device) {
  std::string out = device.name.empty() ? fmt::format("an unnamed {} device", device.vendor) : device.name;
  if (device.kind == "cpu") {
    if (device.count > 1) out += fmt::format(" ({} logical CPUs)", device.count);
  } else if (device.count > 1) {
    out += fmt::format(" x{}", device.count);
  }
  if (device.gpu_cores) out += fmt::format(", {} GPU cores,", *device.gpu_cores);
  return out + " via " + device.source;
}

namespace {

/// Every name a profile answers to: id, display name, aliases, default bins and
/// the names its `detect` list says vendor tools report.
std::vector<std::pair<std::string, std::string>> profile_names(const HardwareProfile& hw) {
  std::vector<std::pair<std::string, std::string>> names = {{hw.id, "the id"}, {hw.name, "the name"}};
  for (const auto& a : hw.aliases) names.emplace_back(a, "an alias");
  for (const auto& d : hw.default_for) names.emplace_back(d, "the default bin");
  if (hw.document.is_object() && hw.document.contains("detect") && hw.document["detect"].is_array())
    for (const auto& d : hw.document["detect"])
      if (d.is_string()) names.emplace_back(d.get<std::string>(), "a reported name");
  return names;
}

double profile_memory_bytes(const HardwareProfile& hw) { return hw.memory_visible_bytes.value_or(hw.memory_capacity_bytes); }

bool memory_agrees(double detected_bytes, const HardwareProfile& hw) {
  const double profile = profile_memory_bytes(hw);
  return profile > 0 && std::fabs(detected_bytes - profile) <= kMemoryTolerance * profile;
}

std::string join_ids(const std::vector<const HardwareProfile*>& profiles) {
  std::vector<std::string> ids;
  for (const HardwareProfile* p : profiles) ids.push_back(p->id);
  return join_with_and(ids);
}

std::string gib(double bytes) { return fmt::format("{} GiB", format_sig3(bytes / kBytesPerGiB)); }

/// The profile closest in name, as a template for a new one: most shared words.
const HardwareProfile* template_profile(const DetectedDevice& device, const std::vector<HardwareProfile>& profiles) {
  const auto reported = words_of(device.name);
  const HardwareProfile* best = nullptr;
  std::size_t best_shared = 0;
  for (const auto& hw : profiles) {
    std::set<std::string> words;
    for (const auto& [name, via] : profile_names(hw))
      for (auto& w : words_of(name)) words.insert(std::move(w));
    std::size_t shared = 0;
    for (const auto& w : reported) shared += words.count(w);
    // A vendor word alone ("nvidia") says little; ask for a model word too.
    if (shared > best_shared && shared >= 2) {
      best = &hw;
      best_shared = shared;
    }
  }
  return best;
}

std::string add_profile_hint(const DetectedDevice& device, const std::vector<HardwareProfile>& profiles) {
  if (device.kind == "cpu")
    return "pass --hw NAME for the device to model (optadvisor hw list; CPUs: optadvisor hw list --class cpu), or add a "
           "cpu-class profile with this model name among its \"detect\" names (docs/detection.md)";
  const HardwareProfile* like = template_profile(device, profiles);
  const std::string start = like != nullptr ? fmt::format("'optadvisor hw show {} --json' is a template", like->id)
                                            : "'optadvisor hw show ID --json' of a similar device is a template";
  return fmt::format(
      "pass --hw NAME (optadvisor hw list), or add a profile: {}; put its \"hardware\" object in DIR/hardware/, "
      "give it a new id, this device's numbers and sources, and \"{}\" among its aliases, then use --data-dir DIR "
      "(examples/data/hardware/ has one; docs/detection.md)",
      start, device.name.empty() ? "NAME" : device.name);
}

/// A profile the reported name may be.
struct Candidate {
  const HardwareProfile* hw;
  std::string exact_via;  ///< "" when only the words matched
};

std::vector<const HardwareProfile*> profiles_of(const std::vector<Candidate>& candidates) {
  std::vector<const HardwareProfile*> v;
  for (const auto& c : candidates) v.push_back(c.hw);
  return v;
}

/// Exact: the reported name, with or without its leading vendor word, is one of a profile's
/// names; or else every word of the reported name is in the profile's names.
std::vector<Candidate> candidates_by_name(const DetectedDevice& device, const std::vector<HardwareProfile>& profiles) {
  std::set<std::string> vendors;
  for (const auto& hw : profiles) vendors.insert(hw.vendor);
  std::set<std::string> keys = {normalize_name(device.name)};
  for (const auto& v : vendors)
    if (starts_with_word(device.name, v)) keys.insert(normalize_name(device.name.substr(v.size())));
  keys.erase("");

  const auto reported_words = words_of(device.name);
  std::vector<Candidate> candidates;
  for (const auto& hw : profiles) {
    std::string exact_via;
    std::set<std::string> words;
    for (const auto& [name, via] : profile_names(hw)) {
      if (exact_via.empty() && keys.count(normalize_name(name))) exact_via = via;
      for (auto& w : words_of(name)) words.insert(std::move(w));
    }
    const bool all_words =
        std::all_of(reported_words.begin(), reported_words.end(), [&](const std::string& w) { return words.count(w) > 0; });
    if (!exact_via.empty() || all_words) candidates.push_back({&hw, exact_via});
  }
  return candidates;
}

/// Among several candidates: the reported memory, then the exact name where one profile alone has it,
/// then the one default bin decides; each decision is recorded in `decided`. Never the order of the
/// files: "NVIDIA GeForce RTX 3080" is the 10 GB card's name and the 12 GB card's detect name, and
/// only memory tells them apart.
void narrow_candidates(std::vector<Candidate>& candidates, std::optional<double> memory_bytes, std::vector<std::string>& decided) {
  if (memory_bytes && candidates.size() > 1) {
    const auto all = profiles_of(candidates);
    std::vector<Candidate> same;
    for (const auto& c : candidates)
      if (memory_agrees(*memory_bytes, *c.hw)) same.push_back(c);
    if (!same.empty() && same.size() < candidates.size()) {
      decided.push_back(fmt::format("{} of memory picks it among {}", gib(*memory_bytes), join_ids(all)));
      candidates = std::move(same);
    }
  }
  if (candidates.size() > 1) {
    std::vector<Candidate> exact;
    for (const auto& c : candidates)
      if (!c.exact_via.empty()) exact.push_back(c);
    if (exact.size() == 1) {
      decided.push_back(fmt::format("the exact name picks it among {}", join_ids(profiles_of(candidates))));
      candidates = std::move(exact);
    }
  }
  if (candidates.size() > 1) {
    std::vector<Candidate> bins;
    for (const auto& c : candidates)
      if (!c.hw->default_for.empty()) bins.push_back(c);
    if (bins.size() == 1) {
      decided.push_back(fmt::format("as the default bin among {}", join_ids(profiles_of(candidates))));
      candidates = std::move(bins);
    }
  }
}

/// The notes on a match: memory the profile disagrees with, devices beyond the one described,
/// fields the device did not report.
void add_match_notes(ProfileMatch& m, const DetectedDevice& device, const HardwareProfile& hw, std::optional<double> memory_bytes) {
  if (memory_bytes && !memory_agrees(*memory_bytes, hw))
    m.notes.push_back(
        fmt::format("this {} reports {} of memory where the profile {} has {}; the profile's figure is used "
                    "({}an overlay profile with the same id replaces it: docs/detection.md)",
                    device.kind == "cpu" ? "machine" : "device", gib(*memory_bytes), hw.id, gib(profile_memory_bytes(hw)),
                    hw.memory_options.empty() ? "" : "--memory picks another size it is sold with; "));
  if (device.kind != "cpu" && device.count > 1)
    m.notes.push_back(
        fmt::format("{} devices found; --hw auto describes one and leaves --gpus alone (pass --gpus {} --tp {} "
                    "to model all of them)",
                    device.count, device.count, device.count));
  for (const auto& missing : device.missing) m.notes.push_back("not reported: " + missing);
}

}  // namespace

ProfileMatch match_profile(const DetectedDevice& device, const std::vector<HardwareProfile>& profiles) {
  ProfileMatch m;
  const std::string found = describe(device);
  if (device.name.empty()) {
    m.problem = fmt::format("--hw auto found {}, but not its product name", found);
    m.hint = add_profile_hint(device, profiles);
    return m;
  }

  std::vector<Candidate> candidates = candidates_by_name(device, profiles);
  if (candidates.empty()) {
    m.problem = device.kind == "cpu"
                    ? fmt::format("--hw auto found no GPU or Apple silicon, only the host CPU: {}; no hardware profile describes it", found)
                    : fmt::format("--hw auto found {}, which no hardware profile describes", found);
    m.hint = add_profile_hint(device, profiles);
    return m;
  }

  std::vector<std::string> decided;
  if (device.gpu_cores) {
    const auto all = profiles_of(candidates);
    std::vector<Candidate> same;
    for (const auto& c : candidates)
      if (c.hw->compute_units && *c.hw->compute_units == *device.gpu_cores) same.push_back(c);
    if (same.empty()) {
      m.problem = fmt::format("--hw auto found {} but no profile of that name has {} GPU cores ({} {})", found, *device.gpu_cores,
                              all.size() == 1 ? "only" : "candidates:", join_ids(all));
      m.hint = add_profile_hint(device, profiles);
      return m;
    }
    if (same.size() < candidates.size()) decided.push_back(fmt::format("{} GPU cores pick it among {}", *device.gpu_cores, join_ids(all)));
    candidates = std::move(same);
  }
  // A CPU's memory is the installed RAM (/proc/meminfo).
  std::optional<double> memory_bytes = device.memory_bytes;
  if (!memory_bytes && device.kind == "cpu") memory_bytes = device.ram_bytes;
  narrow_candidates(candidates, memory_bytes, decided);
  if (candidates.size() > 1) {
    m.problem = fmt::format("--hw auto found {}, which matches several profiles: {}", found, join_ids(profiles_of(candidates)));
    m.hint = "pass --hw with the one that is this device (optadvisor hw show ID compares them)";
    return m;
  }

  const HardwareProfile& hw = *candidates.front().hw;
  m.id = hw.id;
  m.how = candidates.front().exact_via.empty() ? fmt::format("every word of '{}' is in the names of {}", device.name, hw.id)
                                               : fmt::format("'{}' is {} of {}", device.name, candidates.front().exact_via, hw.id);
  for (const auto& d : decided) m.how += "; " + d;
  add_match_notes(m, device, hw, memory_bytes);
  return m;
}

ProfileMatch match_detected(const DetectedHardware& detected, const std::vector<HardwareProfile>& profiles) {
  if (!detected.device) {
    ProfileMatch m;
    std::string tried;
    for (const auto& p : detected.probes) tried += (tried.empty() ? "" : "; ") + p;
    for (const auto& n : detected.notes) tried += "; " + n;
    m.problem = fmt::format("--hw auto found no device ({})", tried.empty() ? "nothing to run" : tried);
    m.hint = "pass --hw NAME (optadvisor hw list)";
    return m;
  }
  ProfileMatch m = match_profile(*detected.device, profiles);
  if (!m.id && detected.device->kind == "cpu") {
    // Say why no accelerator was seen: a missing or hung tool is the usual cause.
    std::string tried;
    for (const auto& p : detected.probes)
      if (p.rfind("/proc/", 0) != 0) tried += (tried.empty() ? "" : "; ") + p;
    if (!tried.empty()) m.problem += " (" + tried + ")";
  }
  return m;
}

std::optional<std::string> match_host_cpu(const DetectedDevice& device, const std::vector<HardwareProfile>& profiles) {
  if (device.kind == "cpu" || device.cpu_model.empty()) return std::nullopt;
  DetectedDevice cpu;
  cpu.kind = "cpu";
  cpu.name = device.cpu_model;
  cpu.source = "/proc/cpuinfo";
  std::vector<HardwareProfile> cpus;
  for (const auto& hw : profiles)
    if (hw.device_class == DeviceClass::kCpu) cpus.push_back(hw);
  return match_profile(cpu, cpus).id;
}

DetectedProfile resolve_detected(const DetectedHardware& detected, const std::vector<HardwareProfile>& profiles) {
  const ProfileMatch match = match_detected(detected, profiles);
  if (!match.id) throw bad_input(match.problem, match.hint);
  DetectedProfile out;
  out.id = *match.id;
  out.via = "detected: " + describe(*detected.device);
  if (detected.device->count > 1 && detected.device->kind != "cpu") out.via += "; --gpus is not set from the count";
  return out;
}

}  // namespace optadvisor
