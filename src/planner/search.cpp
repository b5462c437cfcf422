// SPDX-License-Identifier: MIT
#include "optadvisor/planner/search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "optadvisor/analysis/goals.hpp"

namespace optadvisor {

const std::vector<std::string>& default_search_quants() {
  // GGUF: the 4- to 8-bit K-quants and f16; checkpoints: bf16, FP8, AWQ and
  // the FP4 formats; MLX, QNN and ExecuTorch take their own 4/8-bit formats.
  static const std::vector<std::string> quants = {"q4_k_m",   "q5_k_m", "q6_k",  "q8_0",     "f16",      "hf-bf16", "fp8",
                                                  "awq-int4", "nvfp4",  "mxfp4", "mlx-4bit", "mlx-8bit", "w4a16",   "8da4w"};
  return quants;
}

// --- ScenarioCache -------------------------------------------------------------

ScenarioCache::ScenarioCache(const Catalog& catalog, const ResolvedModel& model, ScenarioRequest base)
    : catalog_(catalog), model_(model), base_(std::move(base)) {}

ScenarioRequest ScenarioCache::request(const HardwareProfile& hardware, const std::string& engine, const std::string& quant, uint32_t gpus,
                                       uint32_t tp, uint32_t pp) const {
  ScenarioRequest r = base_;
  r.hardware = hardware.id;
  r.engine = engine;
  r.quant = quant;
  r.gpus = gpus;
  r.tp = tp;
  r.pp = pp;
  return r;
}

const EngineChoice& ScenarioCache::engine_on(const HardwareProfile& hardware, const std::string& engine) {
  auto [it, inserted] = engines_.try_emplace({hardware.id, engine});
  if (inserted) {
    try {
      it->second.value = choose_engine(catalog_, hardware, engine);
    } catch (const Error& e) {
      it->second.error = e;
    }
  }
  return it->second.get();
}

const PreparedScenario& ScenarioCache::template_for(const HardwareProfile& hardware, const std::string& engine, const std::string& quant) {
  auto [it, inserted] = templates_.try_emplace({engine, quant});
  if (inserted) {
    // Prepared on the first device the engine runs on, on one GPU: what it
    // checks and computes past the device (workload, format, weights, KV
    // dtype) holds for every device and GPU count.
    try {
      PreparedScenario t = prepare_scenario(catalog_, request(hardware, engine, quant, 1, 1, 1), model_);
      t.weights = WeightsBreakdown{};
      t.model.gguf_weights.reset();
      t.model.computed_weights.reset();
      it->second.value = std::move(t);
    } catch (const Error& e) {
      it->second.error = e;
    }
  }
  return it->second.get();
}

PreparedScenario ScenarioCache::prepare(const HardwareProfile& hw, const std::string& engine, const std::string& quant, uint32_t gpus,
                                        uint32_t tp, uint32_t pp) {
  if (engine.empty() || quant.empty()) {
    // Defaults add notes and depend on the device: nothing to share.
    PreparedScenario out = prepare_scenario(catalog_, request(hw, engine, quant, gpus, tp, pp), model_);
    out.weights = WeightsBreakdown{};
    out.model.gguf_weights.reset();
    out.model.computed_weights.reset();
    return out;
  }
  const EngineChoice& choice = engine_on(hw, engine);
  const EngineProfile& profile = *choice.engine;
  Workload layout;
  layout.tp = tp;
  layout.pp = pp;
  layout.gpus = gpus == 0 ? tp * pp : gpus;
  check_layout(model_.spec, hw, profile, layout);
  const PreparedScenario& t = template_for(hw, engine, quant);

  PreparedScenario out = t;
  Scenario& s = out.scenario;
  const HardwareProfile* catalog_hw = &catalog_.resolve_hardware(hw.id, &out.hardware_how);
  if (!s.hardware_variant) s.hardware = catalog_hw;  // --memory / --link: the template's variant of the device
  s.engine = choice;
  Workload& w = s.workload;
  w.gpus = layout.gpus;
  w.tp = tp;
  w.pp = pp;
  // What prepare_scenario decides from the device, by the same functions.
  out.notes.clear();
  set_host(catalog_, hw, profile, base_, w, out.notes);
  if (!profile.offloads_to_host || hw.unified_memory || tp * pp > 1) w.cpu_moe_layers = 0;  // expert offload is llama.cpp's, on one discrete GPU
  (void)device_as_requested(*catalog_hw, request(hw, engine, quant, gpus, tp, pp), out.notes);  // its notes; the variant is the template's
  for (auto& note : weight_only_notes(hw, *out.quant)) out.notes.push_back(std::move(note));
  if (auto note = official_checkpoint_note(catalog_, model_, profile, *out.quant)) out.notes.push_back(std::move(*note));
  for (auto& note : kv_dtype_notes(hw, w.kv_dtype)) out.notes.push_back(std::move(note));
  return out;
}

// --- Pareto fronts -------------------------------------------------------------

std::vector<uint32_t> pareto_fronts(const std::vector<std::pair<double, double>>& points) {
  const std::size_t n = points.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return points[a] < points[b]; });
  // Sweep by x (then y). An earlier point q dominates p when q.y <= p.y, unless
  // q equals p. Each front keeps the smallest y seen so far; those minima rise
  // with the front number, so p joins the first front whose minimum exceeds
  // p.y (nothing there dominates it) — a binary search, as in patience sorting.
  std::vector<uint32_t> front(n, 0);
  std::vector<double> min_y;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = order[k];
    if (k > 0 && points[order[k - 1]] == points[i]) {
      front[i] = front[order[k - 1]];  // equal points share a front
      continue;
    }
    const double y = points[i].second;
    const auto it = std::upper_bound(min_y.begin(), min_y.end(), y);
    const std::size_t f = static_cast<std::size_t>(it - min_y.begin());
    if (it == min_y.end())
      min_y.push_back(y);
    else
      *it = y;
    front[i] = static_cast<uint32_t>(f + 1);
  }
  return front;
}

// --- Command lines -------------------------------------------------------------

namespace {

std::string shell_quote(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_./:=,+-@%").find(c) != std::string_view::npos;
  });
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string estimate_command(const ScenarioRequest& r) {
  const ScenarioRequest defaults;
  std::string out = "optadvisor estimate --hw " + shell_quote(r.hardware);
  auto arg = [&](const char* option, const std::string& value) { out += fmt::format(" {} {}", option, shell_quote(value)); };
  if (!r.model.preset.empty()) arg("--model", r.model.preset);
  if (!r.model.config_path.empty()) arg("--model-config", r.model.config_path);
  if (!r.model.gguf_path.empty()) arg("--gguf", r.model.gguf_path);
  if (!r.model.params.empty()) arg("--params", r.model.params);
  if (!r.memory.empty()) arg("--memory", r.memory);
  if (!r.quant.empty()) arg("--quant", r.quant);
  if (!r.engine.empty()) arg("--engine", r.engine);
  if (!r.link.empty()) arg("--link", r.link);
  if (r.gpus != 0 && r.gpus != r.tp * r.pp) arg("--gpus", std::to_string(r.gpus));
  if (r.tp != defaults.tp) arg("--tp", std::to_string(r.tp));
  if (r.pp != defaults.pp) arg("--pp", std::to_string(r.pp));
  if (r.replicas != defaults.replicas) arg("--replicas", std::to_string(r.replicas));
  if (r.batch_or_default() != defaults.batch_or_default()) arg("--batch", r.batch_or_default());
  if (r.prompt_or_default() != defaults.prompt_or_default()) arg("--prompt", std::to_string(r.prompt_or_default()));
  if (r.gen_or_default() != defaults.gen_or_default()) arg("--gen", std::to_string(r.gen_or_default()));
  if (r.context_or_default() != defaults.context_or_default()) arg("--context", std::to_string(r.context_or_default()));
  if (r.ubatch_tokens != defaults.ubatch_tokens) arg("--ubatch", std::to_string(r.ubatch_tokens));
  if (!r.kv_dtype.empty()) arg("--kv-dtype", r.kv_dtype);
  if (r.flash_attention) arg("--flash-attention", *r.flash_attention ? "on" : "off");
  if (r.host_bandwidth_bytes_per_s) arg("--host-bandwidth", fmt::format("{}", *r.host_bandwidth_bytes_per_s));
  if (!r.host.empty()) arg("--host", r.host);
  if (r.cpu_moe) out += " --cpu-moe";
  if (r.n_cpu_moe) arg("--n-cpu-moe", std::to_string(*r.n_cpu_moe));
  return out;
}

ScenarioRequest candidate_request(const SearchRequest& request, const SearchCandidate& c) {
  ScenarioRequest r = request.workload;
  r.hardware = c.hardware->id;
  r.quant = c.quant;
  r.engine = c.engine;
  r.gpus = c.gpus;
  r.tp = c.tp;
  r.pp = c.pp;
  r.replicas = c.replicas;
  r.batch = c.batch_text;
  // Expert offload as the candidate ran it: an engine or layout without it ran none.
  r.cpu_moe = false;
  r.n_cpu_moe.reset();
  if (c.expert_offload_layers > 0) r.n_cpu_moe = static_cast<int64_t>(c.expert_offload_layers);
  return r;
}

// --- The search ----------------------------------------------------------------

namespace {

/// One device x engine x format x GPU count, before batches.
struct Configuration {
  const HardwareProfile* hardware = nullptr;
  std::string engine;  ///< as passed to prepare: "vllm", "llama.cpp:vulkan"
  std::string quant;   ///< resolved format id
  uint32_t gpus = 1;
  uint32_t tp = 1;
  uint32_t pp = 1;
};

bool engine_takes(const EngineProfile& engine, const QuantFormat& format) {
  if (format.container == Container::kGguf) return std::find(engine.quants.begin(), engine.quants.end(), "*gguf") != engine.quants.end();
  return std::find(engine.quants.begin(), engine.quants.end(), format.id) != engine.quants.end();
}

/// The format an engine loads for a requested one, or nullptr. A format the
/// user named may be read as its checkpoint twin ("bf16" as "hf-bf16" by a
/// checkpoint engine, as prepare_scenario does); listed formats are taken as they are.
const QuantFormat* format_for(const Catalog& catalog, const EngineProfile& engine, const QuantFormat& format, bool named) {
  if (engine_takes(engine, format)) return &format;
  if (!named) return nullptr;
  if (const QuantFormat* hf = catalog.quant().find("hf-" + format.id); hf && engine_takes(engine, *hf)) return hf;
  return nullptr;
}

std::vector<const HardwareProfile*> devices_of(const Catalog& catalog, const SearchSpace& space) {
  std::vector<const HardwareProfile*> out;
  if (!space.hardware.empty()) {
    for (const auto& name : space.hardware) {
      if (name.empty()) throw bad_input("an empty device name in the list", "separate values with single commas");
      const HardwareProfile* hw = &catalog.resolve_hardware(name);
      if (std::find(out.begin(), out.end(), hw) == out.end()) out.push_back(hw);
    }
  } else {
    for (const auto& hw : catalog.hardware()) out.push_back(&hw);
  }
  if (space.device_class) {
    std::erase_if(out, [&](const HardwareProfile* hw) { return hw->device_class != *space.device_class; });
    if (out.empty())
      throw bad_input(fmt::format("no device of class {} to search", to_string(*space.device_class)),
                      "optadvisor hw list --class " + std::string(to_string(*space.device_class)));
  }
  return out;
}

std::vector<const QuantFormat*> formats_of(const Catalog& catalog, const SearchSpace& space) {
  std::vector<const QuantFormat*> out;
  if (space.all_quants) {
    for (const auto& f : catalog.quant().formats()) out.push_back(&f);
    return out;
  }
  if (!space.quants.empty()) {
    for (const auto& name : space.quants) {
      if (name.empty()) throw bad_input("an empty format name in the list", "separate values with single commas");
      const QuantFormat* f = &catalog.quant().resolve(name);
      if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
    }
    return out;
  }
  for (const auto& id : default_search_quants())
    if (const QuantFormat* f = catalog.quant().find(id)) out.push_back(f);
  return out;
}

/// Engine names as prepare takes them: "vllm", or "llama.cpp:vulkan" when a backend was asked for.
std::vector<std::string> engines_of(const Catalog& catalog, const SearchSpace& space) {
  std::vector<std::string> out;
  for (const auto& name : space.engines) {
    if (name.empty()) throw bad_input("an empty engine name in the list", "separate values with single commas");
    check_engine_name(catalog, name);
    const EngineProfile& e = catalog.resolve_engine(name);
    if (e.kind != "inference") throw bad_input(fmt::format("engine '{}' is a training framework", name), "optadvisor engines");
    const auto colon = name.find(':');
    std::string canonical = colon == std::string::npos ? e.id : e.id + name.substr(colon);
    if (std::find(out.begin(), out.end(), canonical) == out.end()) out.push_back(canonical);
  }
  return out;
}

/// The inference engines a device lists, each once (its first backend is the default).
std::vector<std::string> engines_on(const Catalog& catalog, const HardwareProfile& hw, const std::vector<std::string>& wanted) {
  std::vector<std::string> out;
  if (!wanted.empty()) {
    for (const auto& w : wanted) {
      const bool has_backend = w.find(':') != std::string::npos;
      for (const auto& e : hw.engines) {
        const bool runs = has_backend ? e == w : (e == w || e.rfind(w + ":", 0) == 0);
        if (runs) {
          out.push_back(w);
          break;
        }
      }
    }
    return out;
  }
  for (const auto& e : hw.engines) {
    const std::string id = e.substr(0, e.find(':'));
    const auto profile =
        std::find_if(catalog.engines().begin(), catalog.engines().end(), [&](const EngineProfile& p) { return p.id == id; });
    if (profile == catalog.engines().end() || profile->kind != "inference") continue;
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  }
  return out;
}

bool multi_gpu_device(const HardwareProfile& hw) {
  const bool single_chip = hw.unified_memory && hw.device_class != DeviceClass::kWorkstationGpu;
  return !single_chip && (hw.scale_up || hw.pcie);
}

std::vector<Configuration> enumerate(const Catalog& catalog, const ModelSpec& model, const SearchRequest& request,
                                     const std::vector<const HardwareProfile*>& devices, const std::vector<const QuantFormat*>& formats,
                                     const std::vector<std::string>& engines, SearchStats& stats, std::set<std::string>& formats_used) {
  std::vector<Configuration> out;
  const bool named = !request.space.all_quants && !request.space.quants.empty();
  for (const HardwareProfile* hw : devices) {
    for (const auto& engine_name : engines_on(catalog, *hw, engines)) {
      const EngineProfile& engine = catalog.resolve_engine(engine_name);
      std::vector<std::string> quants;
      for (const QuantFormat* f : formats) {
        const QuantFormat* runs = format_for(catalog, engine, *f, named);
        // FP8 and FP4 checkpoints exist for their native path: only where the device has it.
        if (runs == nullptr || !runs_checkpoint(*runs, hw->capabilities, model)) continue;
        formats_used.insert(f->id);
        if (std::find(quants.begin(), quants.end(), runs->id) == quants.end()) quants.push_back(runs->id);
      }
      for (const auto& quant : quants) {
        for (uint32_t gpus = 1; gpus <= request.space.max_gpus; gpus *= 2) {
          if (gpus > 1 && !multi_gpu_device(*hw)) break;
          Configuration c{hw, engine_name, quant, gpus, gpus, 1};
          // llama.cpp splits layers (pipeline); the server engines split
          // heads (tensor parallel), which must divide the KV heads.
          if (engine.multi_device == MultiDevice::kLayers) {
            c.tp = 1;
            c.pp = gpus;
            if (gpus > model.num_hidden_layers) break;
          } else if (gpus > 1 && (model.num_key_value_heads % gpus != 0 || model.num_attention_heads % gpus != 0)) {
            break;
          }
          if (request.budget_usd && hw->price_usd && *hw->price_usd * gpus > *request.budget_usd) {
            ++stats.over_budget;
            continue;
          }
          out.push_back(std::move(c));
        }
      }
    }
  }
  return out;
}

/// The batches to run a configuration at; `first` is the analysis at batch 1.
std::vector<uint64_t> batches_for(const SearchRequest& request, const EngineProfile& engine, const Analysis& first) {
  if (request.workload.batch || request.goal != Goal::kThroughput) return {first.batch};
  const uint64_t largest = std::min<uint64_t>(first.memory.max_batch, engine.max_batch);
  std::vector<uint64_t> out = {1};
  for (uint64_t b = 2; b < largest; b *= 2) out.push_back(b);
  if (largest > 1) out.push_back(largest);
  return out;
}

SearchCandidate candidate_of(const SearchRequest& request, const Configuration& c, const PreparedScenario& ps, const Analysis& a) {
  SearchCandidate out;
  out.hardware = c.hardware;
  out.quant = ps.quant->id;
  out.engine = c.engine;
  out.gpus = c.gpus;
  out.tp = c.tp;
  out.pp = c.pp;
  out.replicas = ps.scenario.workload.replicas;
  out.batch = a.batch;
  out.batch_text = ps.scenario.workload.batch_max ? std::string("max") : std::to_string(a.batch);
  out.expert_offload_layers = ps.scenario.workload.cpu_moe_layers;
  out.metric = goal_metric(request.goal, a);
  out.ttft_s = a.prefill.time_s;
  out.decode_tokens_per_s_per_sequence = a.decode.tokens_per_s_per_sequence;
  out.decode_tokens_per_s = a.decode.tokens_per_s;
  out.serving_tokens_per_s = goal_metric(Goal::kThroughput, a);
  out.memory_bytes = a.memory.total_bytes;
  out.memory_limit_bytes = a.memory.limit_bytes;
  out.prefill_bound = a.prefill.bound;
  out.decode_bound = a.decode.bound;
  out.efficiency = efficiency(*c.hardware, c.gpus * out.replicas, out.serving_tokens_per_s);
  return out;
}

/// What of `estimate --json` the requirements read, as estimate_sections_json
/// takes it ("decode.tokens_per_s", or "scenario" whole); empty when one reads
/// a section it does not build.
std::set<std::string> sections_read(const std::vector<Requirement>& requirements) {
  std::set<std::string> out;
  for (const auto& r : requirements) {
    if (r.path.empty() || r.path.front().key.empty() || !estimate_sections_modeled().count(r.path.front().key)) return {};
    const std::string& section = r.path.front().key;
    const bool one_key = r.path.size() >= 2 && !r.path[1].key.empty() && section != "scenario" && section != "throughput";
    out.insert(one_key ? section + "." + r.path[1].key : section);
  }
  return out;
}

bool meets(const std::vector<Requirement>& requirements, const std::set<std::string>& sections, const PreparedScenario& ps,
           const Analysis& a) {
  if (requirements.empty()) return true;
  // The document `estimate --json` prints (or the sections of it the
  // requirements read), so that a path means the same thing here.
  const nlohmann::json document = sections.empty() ? estimate_json(ps, a) : estimate_sections_json(ps, a, sections);
  for (const auto& r : check_requirements(requirements, document)) {
    // A path the output does not have is a mistake in the expression, as for estimate.
    if (r.missing) throw bad_input(fmt::format("--require '{}': {}", r.text, r.reason));
    if (!r.passed) return false;
  }
  return true;
}

void rank(std::vector<SearchCandidate>& candidates, Goal goal) {
  const bool lower = metric_for(goal).lower_is_better;
  auto metric = [&](const SearchCandidate& c) { return lower ? c.metric : -c.metric; };
  std::vector<std::size_t> priced, powered;
  std::vector<std::pair<double, double>> cost_points, energy_points;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Efficiency& e = candidates[i].efficiency;
    if (e.price_usd) {
      priced.push_back(i);
      cost_points.emplace_back(metric(candidates[i]), *e.price_usd);
    }
    if (e.tokens_per_joule) {
      powered.push_back(i);
      energy_points.emplace_back(metric(candidates[i]), -*e.tokens_per_joule);
    }
  }
  const auto cost_fronts = pareto_fronts(cost_points);
  for (std::size_t k = 0; k < priced.size(); ++k) candidates[priced[k]].cost_front = cost_fronts[k];
  const auto energy_fronts = pareto_fronts(energy_points);
  for (std::size_t k = 0; k < powered.size(); ++k) candidates[powered[k]].energy_front = energy_fronts[k];
  for (auto& c : candidates) {
    c.rank = 0;
    if (c.cost_front) c.rank = *c.cost_front;
    if (c.energy_front && (c.rank == 0 || *c.energy_front < c.rank)) c.rank = *c.energy_front;
  }
  std::stable_sort(candidates.begin(), candidates.end(), [&](const SearchCandidate& a, const SearchCandidate& b) {
    const bool ap = a.efficiency.price_usd.has_value(), bp = b.efficiency.price_usd.has_value();
    if (ap != bp) return ap;  // priced first
    const uint32_t ar = a.rank ? a.rank : std::numeric_limits<uint32_t>::max();
    const uint32_t br = b.rank ? b.rank : std::numeric_limits<uint32_t>::max();
    if (ar != br) return ar < br;
    if (metric(a) != metric(b)) return metric(a) < metric(b);
    const double ac = a.efficiency.price_usd.value_or(0), bc = b.efficiency.price_usd.value_or(0);
    return ac < bc;
  });
}

void check_search_request(const SearchRequest& request) {
  if (request.goal == Goal::kTraining)
    throw bad_input("search plans inference: --goal latency, throughput or memory", "for training, optadvisor estimate --goal training");
  if (request.space.max_gpus < 1 || request.space.max_gpus > 1024) throw bad_input("--max-gpus must be between 1 and 1024");
  if (request.budget_usd && !(std::isfinite(*request.budget_usd) && *request.budget_usd > 0))
    throw bad_input("--budget-usd must be a positive number of US dollars");
}

/// A row for each batch of the prepared configuration that fits and meets the requirements;
/// returns the batch that serves fastest, for the replicated layout.
std::optional<uint64_t> add_batch_rows(const SearchRequest& request, const std::set<std::string>& sections, const Configuration& c,
                                       PreparedScenario& ps, Detail detail, SearchResult& out) {
  const Analysis first = analyze(ps.scenario, detail);
  const EngineProfile& engine = *ps.scenario.engine.engine;
  std::optional<uint64_t> best_batch;
  double best_serving = 0;
  for (uint64_t batch : batches_for(request, engine, first)) {
    Analysis analysis;
    if (batch == first.batch) {
      analysis = first;
    } else {
      // What prepare_scenario gives for --batch N: only the batch differs.
      ps.scenario.workload.batch = batch;
      ps.scenario.workload.batch_max = false;
      analysis = analyze(ps.scenario, detail);
    }
    ++out.stats.searched;
    if (!analysis.memory.fits) continue;
    ++out.stats.fit;
    if (!meets(request.requirements, sections, ps, analysis)) continue;
    ++out.stats.meet_requirements;
    out.candidates.push_back(candidate_of(request, c, ps, analysis));
    if (!best_batch || out.candidates.back().serving_tokens_per_s > best_serving)
      best_batch = analysis.batch, best_serving = out.candidates.back().serving_tokens_per_s;
  }
  return best_batch;
}

/// The rows of one configuration the cache prepared.
void add_configuration(const SearchRequest& request, const std::set<std::string>& sections, const Configuration& c, PreparedScenario& ps,
                       SearchResult& out) {
  ++out.stats.combinations;
  // Rows need numbers only; requirements may read the explanation texts.
  const Detail detail = request.requirements.empty() ? Detail::kNumbers : Detail::kFull;
  const std::optional<uint64_t> best_batch = add_batch_rows(request, sections, c, ps, detail, out);
  if (request.goal == Goal::kThroughput && best_batch && c.gpus < request.space.max_gpus) {
    // The whole GPU budget as copies of this layout at its best batch, so that tensor parallelism
    // competes with replicas on the same GPUs: their rates add, and so do their prices.
    ps.scenario.workload.batch = *best_batch;
    ps.scenario.workload.batch_max = false;
    ps.scenario.workload.replicas = request.space.max_gpus / c.gpus;
    const Analysis copies = analyze(ps.scenario, detail);
    if (meets(request.requirements, sections, ps, copies)) out.candidates.push_back(candidate_of(request, c, ps, copies));
  }
}

}  // namespace

SearchResult search(const Catalog& catalog, const ResolvedModel& model, const SearchRequest& request, const SearchProgress& progress) {
  check_search_request(request);
  // Every name first: a typo fails before any work.
  const auto devices = devices_of(catalog, request.space);
  const auto formats = formats_of(catalog, request.space);
  const auto engines = engines_of(catalog, request.space);

  SearchResult out;
  out.goal = request.goal;
  out.request = request;
  out.model = model;
  out.model.gguf_weights.reset();
  out.model.computed_weights.reset();
  ScenarioCache cache(catalog, model, request.workload);

  std::set<std::string> formats_used;
  const auto configs = enumerate(catalog, model.spec, request, devices, formats, engines, out.stats, formats_used);
  if (!request.space.quants.empty())
    for (const QuantFormat* f : formats)
      if (!formats_used.count(f->id)) out.skipped.push_back(fmt::format("{}: no engine runs it on the devices searched", f->id));

  const std::set<std::string> sections = sections_read(request.requirements);
  std::optional<Error> first_error;
  std::set<std::string> reasons;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const Configuration& c = configs[i];
    std::optional<PreparedScenario> prepared;
    try {
      prepared = cache.prepare(*c.hardware, c.engine, c.quant, c.gpus, c.tp, c.pp);
    } catch (const Error& e) {
      if (e.code() != ExitCode::kBadInput) throw;
      if (!first_error) first_error = e;
      // One GPU is where the workload, format and engine meet; a parallel
      // layout an engine cannot run is simply not a configuration.
      if (c.gpus == 1 && reasons.insert(fmt::format("{} with {}: {}", c.engine, c.quant, e.what())).second)
        out.skipped.push_back(fmt::format("{} with {}: {}", c.engine, c.quant, e.what()));
    }
    if (prepared) add_configuration(request, sections, c, *prepared, out);
    if (progress) progress(i + 1, configs.size());
  }
  if (out.stats.combinations == 0) {
    if (first_error) throw *first_error;  // no configuration accepts the workload: the request is wrong
    throw bad_input("nothing to search: no engine in the search runs on these devices with these formats",
                    "widen --hw, --class, --engine or --quant");
  }
  std::sort(out.skipped.begin(), out.skipped.end());
  rank(out.candidates, request.goal);
  return out;
}

}  // namespace optadvisor
