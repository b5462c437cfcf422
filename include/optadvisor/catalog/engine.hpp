// SPDX-License-Identifier: MIT
// Inference engine profiles: what an engine achieves on a device, as fractions
// of the device's peak bandwidth and compute, its per-step overheads and its
// memory reservations. The schema is data/schema/engine.schema.json.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/base/error.hpp"
#include "optadvisor/catalog/hardware.hpp"

namespace optadvisor {

/// Multipliers on the backend efficiencies for one weight format.
struct QuantEfficiency {
  double decode = 1.0;
  double prefill = 1.0;
};

/// Devices on which a backend's GEMMs take another kernel path than on the devices its efficiency
/// was fitted on, matched by vendor and a part of the profile's architecture string: the matrix
/// cores left idle (their GEMMs at the fp32 vector peak: compute_dtype "fp32"), or a matrix path
/// of its own efficiency (llama.cpp Vulkan: VK_KHR_cooperative_matrix on AMD against NVIDIA's
/// VK_NV_cooperative_matrix2).
struct DevicePath {
  /// Builds older than `until_build` that ran the path at another prefill efficiency (llama.cpp
  /// Vulkan on AMD before its coopmat1 tiles were tuned).
  struct EarlierBuild {
    uint64_t until_build = 0;  ///< the first build known to run the path at the newer efficiency
    double prefill_compute_efficiency = 0;
    std::string change;  ///< what that build changed, quoted in notes
  };
  std::string vendor;
  std::string architecture_contains;
  std::string compute_dtype;                          ///< "" = the backend's
  std::optional<double> prefill_compute_efficiency;   ///< unset = the backend's (the newest builds')
  std::vector<EarlierBuild> earlier_builds;           ///< oldest first
  /// The most one compute unit of the backend's memory-bound kernels reads per second on this
  /// architecture; unset = the backend's (Little's law: the bytes an SM keeps in flight over the
  /// memory latency, which binds where a device has few units for its bandwidth, as the H20).
  std::optional<double> bytes_per_s_per_compute_unit;
  /// A weight format whose GEMMs take yet another dtype on this path.
  struct FormatPath {
    std::string compute_dtype;
    std::string why;  ///< quoted in the estimate's notes
  };
  /// By canonical quant id: llama.cpp Vulkan runs BF16 weights through its scalar bf16-to-fp32
  /// shaders where the driver exposes no bfloat16 cooperative matrix (RADV on RDNA 3), so at the
  /// fp32 vector peak.
  std::map<std::string, FormatPath> format_paths;
  /// Quantized weights' GEMMs where they take another kernel than 16-bit ones on this path: its dtype
  /// ("" = the path's) and efficiency (unset = the path's). llama.cpp CUDA on Volta dequantizes them to
  /// FP16 for cuBLAS from 64 tokens, as builds before b3216 did everywhere; on Turing its int8 MMQ
  /// kernels reach a smaller share of the peak. Both describe the newest builds: a build with quantized
  /// kernels of its own (BackendBuild::own_quantized_prefill) keeps them.
  std::string quantized_compute_dtype;
  std::optional<double> quantized_prefill_compute_efficiency;
  /// The format path of `quant_id` on this path; null where the format takes the path's own.
  const FormatPath* format_path(const std::string& quant_id) const {
    auto it = format_paths.find(quant_id);
    return it == format_paths.end() ? nullptr : &it->second;
  }
  /// The compute dtype of `quant_id`'s GEMMs on this path; "" = the path's (or the backend's).
  std::string compute_dtype_for(const std::string& quant_id) const {
    const FormatPath* f = format_path(quant_id);
    return f ? f->compute_dtype : compute_dtype;
  }
  bool matches(const std::string& device_vendor, const std::string& architecture) const {
    return device_vendor == vendor && architecture.find(architecture_contains) != std::string::npos;
  }
  /// The earlier build `build` ran this path as; null for the newest builds (or no build named).
  const EarlierBuild* earlier_build(std::optional<uint64_t> build) const {
    if (build)
      for (const auto& e : earlier_builds)
        if (*build < e.until_build) return &e;
    return nullptr;
  }
  /// The path's prefill efficiency for `build` (the newest when unset), `fallback` where it has none.
  double efficiency_for(std::optional<uint64_t> build, double fallback) const {
    if (const EarlierBuild* e = earlier_build(build)) return e->prefill_compute_efficiency;
    return prefill_compute_efficiency.value_or(fallback);
  }
};

/// Builds of a backend older than `until_build` that ran another way: prefill of quantized weights
/// (llama.cpp CUDA before b3216: dequantized to FP16 and multiplied by cuBLAS instead of the int8
/// tensor-core MMQ kernels), or decode at another per-layer cost and weight-format efficiencies
/// (llama.cpp Metal before its concurrent ops and fusion), or routed experts multiplied by the
/// mat-vec kernels at every pass size (llama.cpp Metal before its mat-mat kernel for mul_mat_id), or
/// by a grouped GEMM whose tiles filled more slowly (llama.cpp CUDA before its MoE tile sizes).
/// Only what differs is set; the rest is the backend's. The changes accumulate going back: an entry
/// takes what the newer entries set where it sets nothing itself (the catalog fills it in).
struct BackendBuild {
  uint64_t until_build = 0;                       ///< the first build that no longer runs this way
  std::string change;                             ///< what that build changed, quoted in notes
  std::string quantized_compute_dtype;            ///< "" = the backend's
  double quantized_prefill_compute_efficiency = 0;  ///< 0 = the backend's
  std::optional<double> layer_overhead_s;         ///< unset = the backend's
  std::optional<double> moe_layer_overhead_s;     ///< unset = the backend's (for every format)
  std::map<std::string, QuantEfficiency> quant_efficiency;  ///< by canonical quant id; take the place of the backend's
  std::vector<std::string> calibrated_on;         ///< measurement ids the efficiency was fitted on
  /// The routed experts take the mat-vec kernels at every pass, one (token, expert) pair at a time,
  /// where newer builds run the grouped GEMM above the backend's expert_matvec_max_tokens.
  bool expert_matvec_every_pass = false;
  /// The grouped expert GEMM's half-fill tokens per expert (BackendProfile::expert_gemm_half_tokens)
  /// in these builds; unset = the backend's.
  std::optional<double> expert_gemm_half_tokens;
  /// What these builds ran differently for a mixture-of-experts model (`moe_model`) or a dense one,
  /// for notes: "quantized prefill", "MoE prefill", "decode", or a list of them ("MoE prefill and decode").
  std::string what_differs(bool moe_model) const;
  /// Whether these builds differ only in how they multiply routed experts in prefill, so that a
  /// dense model runs on them as on the newest builds.
  bool moe_prefill_only() const;
  /// Whether these builds multiply quantized weights with kernels of their own (another dtype or
  /// efficiency than the newest builds' quantized path).
  bool own_quantized_prefill() const;
};

struct BackendProfile;
/// The per-layer cost of one pass on `backend` in `build` (the newest builds' where null or unset).
double layer_overhead_s_in(const BackendProfile& backend, const BackendBuild* build);
/// The most tokens in one pass whose routed experts `build` multiplies with the mat-vec kernels
/// (the backend's expert_matvec_max_tokens; every pass where the build has no grouped GEMM).
uint64_t expert_matvec_max_tokens_in(const BackendProfile& backend, const BackendBuild* build);
/// The grouped expert GEMM's terms for one weight format, where its experts fill tiles unlike the others'.
struct ExpertGemmTerms {
  double half_tokens = 0;   ///< tokens per expert at half the full-tile rate (BackendProfile::expert_gemm_half_tokens)
  double peak_share = 1.0;  ///< the full-tile rate's share of the dense one (BackendProfile::expert_gemm_peak_share)
};
/// The grouped expert GEMM's terms for `quant_id`'s experts on `backend` in `build`, and whether
/// they are the format's own (BackendProfile::expert_gemm_by_quant, the newest builds'); a build
/// with its own half_tokens runs every format at it and the backend's peak share.
struct ExpertGemmTermsUsed {
  ExpertGemmTerms terms;
  bool format_own = false;
};
ExpertGemmTermsUsed expert_gemm_terms_in(const BackendProfile& backend, const BackendBuild* build, const std::string& quant_id);
/// The per-MoE-layer cost of one pass for `quant_id`'s experts in `build` (likewise).
double moe_layer_overhead_s_in(const BackendProfile& backend, const BackendBuild* build, const std::string& quant_id);

/// Builds that ran a Gated DeltaNet layer's recurrence as a graph of small operators (llama.cpp
/// before its GATED_DELTA_NET op): each such layer costs `layer_overhead_s` more per decode step,
/// whatever the backend (graph splits, synchronisations and a hundred-odd small kernels).
struct UnfusedDeltaNet {
  uint64_t until_build = 0;     ///< the first build that runs the recurrence as one operator
  std::string change;           ///< what that build changed, quoted in notes
  double layer_overhead_s = 0;  ///< per delta-net layer and decode step
  std::vector<std::string> calibrated_on;
};

/// The kernel path of a prefill GEMM: the peak it refers to and the share of it reached.
struct PrefillPath {
  std::string compute_dtype;
  double efficiency = 0;
};

/// How a backend's estimates did on one published validation set of bench/data, for one device
/// class and one kind of model (recorded by `optadvisor_accuracy --record-accuracy`, checked by its
/// --check gate): the absolute relative error |predicted / measured - 1| of prefill and decode speed.
struct EstimateAccuracy {
  struct Phase {
    uint64_t runs = 0;  ///< 0 = no measurement of this phase
    double median_error = 0;
    double p90_error = 0;
  };
  std::string data;          ///< the file of bench/data
  bool moe = false;          ///< the set's mixture-of-experts models (else its dense ones)
  std::string device_class;  ///< to_string(DeviceClass)
  Phase prefill, decode;
  std::string recorded;  ///< when, and by what
};

/// Efficiency factors of one engine backend (llama.cpp's cuda, metal, ...).
struct BackendProfile {
  std::string name;                          ///< "cuda", "metal", "default", ...
  double decode_bandwidth_efficiency = 0.7;  ///< achieved / peak memory bandwidth in decode
  /// The most one compute unit (SM) of the backend's memory-bound kernels reads per second: the bytes
  /// it keeps in flight over the memory latency (Little's law). Binds on GPUs whose bandwidth per
  /// unit is high (HBM parts); 0 = no such ceiling.
  double bytes_per_s_per_compute_unit = 0;
  double prefill_compute_efficiency = 0.5;  ///< achieved / peak matrix FLOP/s in prefill
  std::string compute_dtype = "fp16";       ///< the peak prefill efficiency refers to, for 16/32-bit weights
  std::string quantized_compute_dtype;      ///< the same for quantized weights ("int8": llama.cpp's MMQ kernels); "" = compute_dtype
  /// Routed experts' grouped GEMMs in prefill (llama.cpp mul_mat_id) run at prefill_compute_efficiency
  /// x expert_gemm_peak_share x t / (t + expert_gemm_half_tokens), t = tokens per expert in one
  /// ubatch; 0 = no tile term.
  double expert_gemm_half_tokens = 0;
  /// The share of the dense prefill efficiency the grouped expert GEMM reaches with full tiles (its
  /// own costs: the routing ids, gathered rows, per-expert scheduling); 1 = the dense efficiency.
  double expert_gemm_peak_share = 1.0;
  /// By canonical quant id (grouped_expert_gemm.by_quant); a format absent runs at the terms above.
  std::map<std::string, ExpertGemmTerms> expert_gemm_by_quant;
  /// The most tokens in one pass whose routed experts the backend multiplies with its mat-vec
  /// kernels (llama.cpp MMVQ for mul_mat_id), as in decode: no tile fill. Above it the grouped GEMM runs.
  uint64_t expert_matvec_max_tokens = 1;
  /// Weight formats (canonical quant ids) whose routed experts never take the mat-vec kernels, with
  /// why (quoted in the estimate's notes): the grouped GEMM runs even for a one-token pass (llama.cpp
  /// Vulkan: BF16 experts).
  std::map<std::string, std::string> expert_matvec_excluded_quants;
  /// Whether `quant_id`'s experts take the mat-vec kernels at passes of up to expert_matvec_max_tokens.
  bool expert_matvec_runs(const std::string& quant_id) const { return !expert_matvec_excluded_quants.contains(quant_id); }
  double layer_overhead_s = 0;                              ///< per decode step and layer (launches, syncs)
  /// Per pass and MoE layer beyond layer_overhead_s: the fixed time of a step's routing and expert
  /// dispatch (top-k selection, gather kernels, the weighted sum), run uncaptured (MLX) or as
  /// latency-bound kernels at a few tokens (SGLang's fused MoE).
  double moe_layer_overhead_s = 0;
  /// The same per weight format (canonical quant id) whose experts take another MoE kernel path
  /// (vLLM: FP8, NVFP4, INT4 and MXFP4 experts each run their own kernels); unlisted formats take
  /// moe_layer_overhead_s.
  std::map<std::string, double> moe_layer_overhead_by_quant_s;
  /// The MoE layer time of `quant_id`'s experts.
  double moe_layer_overhead_for(const std::string& quant_id) const {
    const auto it = moe_layer_overhead_by_quant_s.find(quant_id);
    return it == moe_layer_overhead_by_quant_s.end() ? moe_layer_overhead_s : it->second;
  }
  /// Per pass, MoE layer and touched expert, where 16-bit experts run in a grouped pass: backends
  /// that multiply them one expert at a time (ggml-cuda's mul_mat_id fallback, taken where neither
  /// MMQ nor MMF serves the format: the routing ids copied to the host, then a GEMM per expert).
  double float_expert_call_s = 0;
  /// The share of decode_bandwidth_efficiency the backend's routed-expert kernels reach in a pass of
  /// a few tokens (ggml-cpu's mul_mat_id: a small matrix-vector product per picked expert); 1 where
  /// they read as fast as the dense weights.
  double expert_read_share = 1.0;
  double step_overhead_s = 0;                               ///< per decode step (sampling, scheduling)
  bool graphs = false;                                      ///< decode step captured as a graph
  std::vector<std::string> applies_to_classes;              ///< device classes this backend suits (empty: all)
  std::vector<std::string> calibrated_on;                   ///< measurement ids the efficiencies were fitted on (empty: set by analogy)
  std::map<std::string, QuantEfficiency> quant_efficiency;  ///< per weight format, relative to the backend's values
  /// Devices whose kernels take another path (the first match applies).
  std::vector<DevicePath> device_paths;
  /// The first of device_paths that `vendor` and `architecture` match; null when none does.
  const DevicePath* device_path_for(const std::string& vendor, const std::string& architecture) const {
    for (const auto& p : device_paths)
      if (p.matches(vendor, architecture)) return &p;
    return nullptr;
  }
  /// The per-unit read ceiling on a device of `vendor` and `architecture`: its device path's, else
  /// the backend's; 0 = none.
  double bytes_per_s_per_compute_unit_on(const std::string& vendor, const std::string& architecture) const {
    const DevicePath* path = device_path_for(vendor, architecture);
    return path && path->bytes_per_s_per_compute_unit ? *path->bytes_per_s_per_compute_unit : bytes_per_s_per_compute_unit;
  }
  /// Older builds that ran quantized prefill another way, by until_build ascending.
  std::vector<BackendBuild> earlier_builds;
  /// Its errors on the published validation sets, by set, kind of model and device class.
  std::vector<EstimateAccuracy> accuracy;
  /// The recorded errors for a `moe` or dense model on a device of `device_class`; null = none measured.
  const EstimateAccuracy* accuracy_for(bool moe, std::string_view device_class) const {
    for (const auto& a : accuracy)
      if (a.moe == moe && a.device_class == device_class) return &a;
    return nullptr;
  }

  /// The earlier-build entry covering `build` (the first whose until_build is above it), or null
  /// for builds from the last until_build on.
  const BackendBuild* build_for(uint64_t build) const;
  /// The prefill GEMM path for weights `quantized` or not, in `build` (null = the newest).
  PrefillPath prefill_path(bool quantized, const BackendBuild* build) const;
};

/// "llama.cpp:cuda@b3216" -> {"llama.cpp:cuda", "b3216"}; no '@' -> {engine, ""}. Bad input when
/// the version after '@' is empty, longer than 64 characters or has any but [0-9a-z._+-].
std::pair<std::string, std::string> split_engine_version(const std::string& engine);

/// The build number in a llama.cpp-style version: "b3216" or "3216"; nullopt when it is not one.
std::optional<uint64_t> parse_build_number(const std::string& version);

/// How an engine splits one model over several devices (multi_device).
enum class MultiDevice {
  kTensor,  ///< shards every layer's heads over tensor-parallel ranks (--tp)
  kLayers,  ///< gives each device whole layers, one pipeline stage after another (--pp only)
  kNone,    ///< runs on one device
};

/// How an engine sizes its activation memory and chunks a prompt (memory.activation_model).
enum class ActivationModel {
  kBatchedTokens,  ///< a profiling forward pass over max_batched_tokens, split over tp ranks
  kGgmlUbatch,     ///< ggml's compute buffer for one ubatch, with logits and (without flash attention) KQ scores
};

struct EngineMemory {
  double runtime_overhead_bytes = 0;           ///< CUDA/Metal context and libraries
  std::optional<double> reserve_fraction;      ///< vLLM gpu_memory_utilization: share of total memory claimed
  std::optional<double> free_fraction_for_kv;  ///< TensorRT-LLM free_gpu_memory_fraction
  double activation_bytes_per_token = 0;       ///< peak activation workspace per batched token per hidden unit
  uint64_t max_batched_tokens = 8192;          ///< tokens per forward pass in prefill (vLLM max_num_batched_tokens)
  uint64_t ubatch_tokens = 512;                ///< llama.cpp n_ubatch (compute buffer sizing)
  bool flash_attention_default = true;
  /// Without flash attention the score matrix is materialized: bytes moved per score element
  /// (element size x passes over it). 0: the engine's unfused attention is not modelled.
  double unfused_score_bytes = 0;
  uint64_t kv_block_tokens = 0;  ///< paged KV block size (0 = contiguous)
  ActivationModel activation_model = ActivationModel::kBatchedTokens;

  /// The tokens of one forward pass in prefill: n_ubatch for ggml, max_batched_tokens otherwise.
  uint64_t prefill_chunk_tokens() const { return activation_model == ActivationModel::kGgmlUbatch ? ubatch_tokens : max_batched_tokens; }
};

/// How a server forms an iteration (serving.scheduler).
enum class ServingScheduler {
  kMixed,  ///< every step decodes all running sequences and fills the rest of the token budget with prefill chunks (vLLM, TensorRT-LLM)
  kPrefillFirst,  ///< a waiting prompt runs as a prefill-only step, decode pauses meanwhile (SGLang without --enable-mixed-chunk)
};

/// When a request gets KV blocks (serving.kv_admission).
enum class KvAdmission {
  kIncremental,  ///< blocks as tokens arrive; the newest sequence is preempted and recomputed when the pool runs out (vLLM, SGLang)
  kReserveFull,  ///< prompt + max new tokens reserved at admission, never evicted (TensorRT-LLM GUARANTEED_NO_EVICT)
};

/// How an era's serving model did on measured runs (bench/serving_accuracy over
/// bench/data/serving.csv, recorded in the data and checked by the bench's gate): relative errors
/// exp(|ln(predicted / measured)|) - 1 of the mean TTFT and TPOT, their median and 90th percentile.
struct ServingAccuracy {
  std::string device;  ///< hardware id; "" = every device the era was measured on, pooled
  uint64_t runs = 0;
  double ttft_median_error = 0;
  double ttft_p90_error = 0;
  double tpot_median_error = 0;
  double tpot_p90_error = 0;
};

/// Efficiencies of one engine version range, fitted on measured serving runs
/// (bench/data/serving.csv): physical rates, never per run or per device.
struct ServingEra {
  std::string from_version;               ///< first version this era covers ("0.0" = every older one)
  double bandwidth_efficiency = 0.8;      ///< memory-bound kernels: achieved / peak memory bandwidth
  double gemm_efficiency = 0.6;           ///< weight GEMMs: achieved / peak matrix rate of the compute dtype
  double attention_efficiency = 0.4;      ///< attention kernels: achieved / peak bf16 matrix rate
  double step_overhead_s = 0.001;         ///< scheduling, sampling and detokenization per iteration
  double layer_overhead_s = 0;            ///< kernel launches per layer per iteration not hidden by graphs
  double communication_efficiency = 0.7;  ///< achieved / per-direction link bandwidth in all-reduce and all-to-all
  /// Routed experts' grouped GEMMs run at gemm_efficiency x t / (t + this), t = tokens per expert in
  /// the step (as llama.cpp's grouped_expert_gemm); 0 = at the dense GEMM efficiency.
  double expert_gemm_half_tokens = 0;
  /// Per request, outside the iterations: the API server's HTTP handling, tokenization and the
  /// first token's detokenization and streaming, in TTFT and end-to-end latency.
  double request_overhead_s = 0;
  /// The API server's serial time per request: one process takes requests one after another
  /// (parsing, tokenization, the hand-over to the engine), so a burst reaches the engine spread
  /// out by this much each; 0 = requests reach the engine the moment they are sent.
  double frontend_request_s = 0;
  /// Per sequence in an iteration: the scheduler's and sampler's work for each running request
  /// (its inputs prepared, its token sampled and handed to the API server), which grows with the
  /// batch; 0 = none.
  double sequence_overhead_s = 0;
  /// Fixed cost of one collective (a tensor-parallel all-reduce, an expert dispatch or combine):
  /// launch and synchronisation, whatever its size; 0 = the engine's allreduce_latency_s.
  double collective_latency_s = 0;
  /// Whether each iteration pays the engine backend's MoE layer time (BackendProfile::
  /// moe_layer_overhead_for the experts' format) per MoE layer, as `estimate` does; false = the
  /// era's layer_overhead_s carries it.
  bool backend_moe_layer_time = false;
  std::vector<std::string> calibrated_on;  ///< what the fit used (a summary of the rows)
  std::vector<std::string> caveats;        ///< what the fit is known to overstate or miss, shown with every run it applies to
  /// Its errors on the measured runs, pooled (device "") and by device; empty = never measured.
  std::vector<ServingAccuracy> accuracy;
  std::string accuracy_measured;  ///< when and by what the accuracy was recorded
  /// The accuracy on `device`, else nullptr (the era was not measured there).
  const ServingAccuracy* accuracy_on(const std::string& device) const;
  /// The accuracy over every device measured, else nullptr.
  const ServingAccuracy* accuracy_pooled() const { return accuracy_on(""); }
  /// What to show for `device`: its own accuracy, else the pool's (its `device` is "": the figures
  /// are extrapolated there); null when the era was never measured.
  const ServingAccuracy* accuracy_shown_on(const std::string& device) const {
    const ServingAccuracy* own = accuracy_on(device);
    return own ? own : accuracy_pooled();
  }
  /// The devices the era was measured on, as recorded.
  std::vector<std::string> accuracy_devices() const;
};

/// How a server schedules under load (data/engines serving block).
struct EngineServing {
  ServingScheduler scheduler = ServingScheduler::kMixed;
  KvAdmission admission = KvAdmission::kIncremental;
  uint64_t max_batched_tokens = 8192;  ///< tokens per iteration (vLLM max_num_batched_tokens, SGLang chunked_prefill_size)
  /// Engines that size it by the GPU's memory (SGLang): (below this many bytes, tokens), ascending;
  /// past the last tier, max_batched_tokens.
  std::vector<std::pair<double, uint64_t>> max_batched_tokens_by_memory;
  uint64_t max_sequences = 1024;       ///< running sequences per rank (max_num_seqs, max_running_requests, max_batch_size)
  /// The tokens per iteration on a GPU of `memory_bytes`.
  uint64_t batched_tokens_for(double memory_bytes) const {
    for (const auto& [below, tokens] : max_batched_tokens_by_memory)
      if (memory_bytes < below) return tokens;
    return max_batched_tokens;
  }
  std::vector<ServingEra> eras;        ///< oldest first; the newest is the default
  bool enabled() const { return !eras.empty(); }
  /// The era covering `version` ("" = the newest): the newest era whose from_version is not
  /// after it. `exact` is false when the version is past every era's start only by being
  /// unknown (the caller says so).
  const ServingEra* era_for(const std::string& version) const;
  /// The versions `era` (one of `eras`) covers, as text names them: "every version", "versions
  /// before 0.15", "0.15 to before 0.19", "0.19 and later".
  std::string era_versions(const ServingEra& era) const;
};

/// Orders dotted version strings numerically ("0.10.1" > "0.9"); a suffix such as
/// "rc2" or ".post1" sorts after the release it follows.
int compare_versions(const std::string& a, const std::string& b);

/// What a decode step costs on the host when it is not captured as a graph: every kernel of
/// every layer is launched one by one (docs/advisor.md, CUDA graphs).
struct EagerLaunches {
  double launch_s = 0;                     ///< host cost of one kernel launch in eager mode; 0 = use layer_overhead_s
  double kernels_per_layer = 0;            ///< kernels of a dense decoder layer
  double extra_kernels_per_moe_layer = 0;  ///< routing, permutation and grouped expert GEMMs beyond a dense MLP's
  double kernels_per_expert = 0;           ///< per routed expert a step runs (engines that loop over experts)
};

struct EngineProfile {
  std::string id;  ///< "llama.cpp", "vllm", ...
  std::string name;
  std::string kind;  ///< "inference" or "training"
  std::vector<std::string> aliases;
  MultiDevice multi_device = MultiDevice::kTensor;
  std::string multi_device_setting;  ///< the engine's own option for its split, quoted in messages ("-sm layer")
  bool offloads_to_host = false;     ///< keeps layers that do not fit in host memory (llama.cpp -ngl)
  bool own_flash_attention = false;  ///< ships fused attention kernels for every backend, needs no FlashAttention-2
  bool expert_parallel = false;      ///< shards routed experts over GPUs with data-parallel attention (--ep, --dp-attention)
  std::map<std::string, BackendProfile> backends;
  double graph_overhead_factor = 0.3;      ///< layer overhead kept when the step is a graph
  EagerLaunches eager;                     ///< the decode step's launches without a graph
  double allreduce_latency_s = 0;          ///< fixed cost of one tensor-parallel all-reduce
  double host_bandwidth_bytes_per_s = 0;   ///< achievable host-memory bandwidth for offloaded layers (peak x efficiency)
  double host_bandwidth_efficiency = 1.0;  ///< the share of a host's peak memory bandwidth offloaded layers reach (--host)
  double host_compute_flops_per_s = 0;     ///< assumed peak matrix rate of the host CPU that runs offloaded experts (--n-cpu-moe)
  std::string expert_offload_arg;          ///< appended to measure_command with --n-cpu-moe ({layers}: the layer count)
  /// Weights in host memory are copied to the device and multiplied there once an operator's batch
  /// reaches this many tokens (ggml's offload_op); below it the host CPU runs them. 0 = never copied.
  double host_weights_streamed_min_tokens = 0;
  double host_to_device_fraction = 1.0;          ///< share of the PCIe per-direction peak a weight copy reaches
  std::optional<UnfusedDeltaNet> unfused_delta_net;  ///< builds before the fused delta-net operator (llama.cpp)
  /// Per pass and layer of multi-head latent attention (MLA), on every backend: the time the engine's
  /// MLA path takes beyond a GQA layer's (llama.cpp's absorbed per-head products); 0 = none.
  double mla_layer_overhead_s = 0;
  /// Per pass and layer with a lightning indexer (indexer_layer_count): the fixed time of the
  /// indexer's chain of small kernels (projections, norm, rotary, FP8 quantization, cache write,
  /// paged logits, top-k) at a decode step's batch; 0 = none.
  double dsa_indexer_layer_s = 0;
  std::vector<std::string> default_for_classes;  ///< device classes where this is the default engine
  std::vector<std::string> quants;               ///< quant ids; "*gguf" stands for every GGUF file type
  std::string default_quant;
  /// Loads whatever weight format each model file holds (llama.cpp's GGUF): a benchmark
  /// result that does not record its format has none to assume (calibrate skips it).
  bool formats_per_file = false;
  std::map<std::string, QuantEfficiency> quant_efficiency;  ///< by quant id, plus "default"
  EngineMemory memory;
  bool cap_sliding_window = true;  ///< KV for sliding layers capped at the window
  std::vector<std::string> kv_dtypes;
  uint64_t max_batch = 256;
  std::string measure_command;
  EngineServing serving;  ///< continuous-batching behaviour; empty for engines that are not servers
  std::vector<std::string> notes;
  nlohmann::json sources;

  /// The multipliers for a quant id on a backend: those of the earlier `build` it ran as (if any
  /// lists it), the backend's own, then the engine's, then "default", then 1.
  QuantEfficiency efficiency_for(const BackendProfile& backend, const std::string& quant_id, const BackendBuild* build = nullptr) const;
};

std::optional<EngineProfile> engine_from_json(const nlohmann::json& j, std::vector<Problem>& problems);

/// An engine with the backend chosen for a device: "llama.cpp:metal", or
/// "llama.cpp" on an NVIDIA GPU -> cuda (the first llama.cpp backend the
/// device lists).
/// Points into the Catalog; the Catalog must outlive it.
struct EngineChoice {
  const EngineProfile* engine = nullptr;
  const BackendProfile* backend = nullptr;
  std::string id() const;  ///< "llama.cpp:cuda", "vllm"
  bool defaulted = false;  ///< picked by device class, not by the user
  std::string version;                 ///< what followed '@' in --engine ("b3216", "0.19.0"); "" = the newest
  const BackendBuild* build = nullptr;  ///< the backend's earlier build `version` names; null = the newest
};

struct ModelSpec;

/// The Gated DeltaNet layers of `model` that the build `choice` names runs unfused
/// (EngineProfile::unfused_delta_net); 0 with no build named, a newer build, or no such layers.
uint64_t unfused_delta_net_layers(const EngineChoice& choice, const ModelSpec& model);

}  // namespace optadvisor
