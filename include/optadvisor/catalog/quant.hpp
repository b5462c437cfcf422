// SPDX-License-Identifier: MIT
// Quantization formats and what each tensor costs in them. ggml block types and
// llama-quantize's per-tensor type choice (as ordered rules in data/quant/), and
// the storage layouts of AWQ, GPTQ, FP8, NVFP4, MXFP4, MLX, bitsandbytes, QNN and
// ExecuTorch checkpoints. Every size is an exact integer number of bytes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "optadvisor/base/error.hpp"
#include "optadvisor/catalog/hardware.hpp"
#include "optadvisor/catalog/model.hpp"

namespace optadvisor {

/// One ggml tensor type, as laid out by the block structs of ggml-common.h.
struct GgmlType {
  std::string id;                ///< GGML_TYPE_ suffix: "Q4_K", "F16", "IQ2_XXS"
  uint32_t type_id = 0;          ///< enum ggml_type value, as stored in GGUF tensor infos
  uint32_t block_elements = 1;   ///< weights per block (QK): 1, 32 or 256
  uint32_t bytes_per_block = 0;  ///< sizeof(block_*)
  bool quantized = false;
  bool removed = false;  ///< retired id, still found in old files
  std::string fallback;  ///< tensor_type_fallback target, "" when llama.cpp has none
  std::string layout;    ///< what one block holds, in words

  /// bytes_per_block x 8 / block_elements, e.g. 4.5 for Q4_K.
  double bits_per_weight() const { return 8.0 * bytes_per_block / block_elements; }
  /// Bytes of `elements` weights; precondition: elements is a multiple of block_elements.
  uint64_t bytes_for(uint64_t elements) const { return elements / block_elements * bytes_per_block; }
};

/// How a non-GGUF checkpoint stores one quantized tensor: the codes plus
/// per-group, per-channel and per-tensor metadata. All counts are bits.
/// Rows run along ne[0] (the input features of a Linear weight).
struct StorageLayout {
  std::string id;  ///< "awq-g128", "nvfp4", "bf16", ...
  std::string description;
  uint32_t weight_bits = 16;             ///< bits per weight code
  uint32_t group_elements = 0;           ///< weights sharing a scale along a row; 0: no groups
  uint32_t block_rows = 0;               ///< rows one group spans (2-D tiles, edge tiles counted); 0: one row
  bool groups_over_tensor = false;       ///< groups run over the flattened tensor (bitsandbytes)
  uint32_t group_bits = 0;               ///< scale + zero point bits per group
  uint32_t nested_groups = 0;            ///< groups per second-level scale (double quantization); 0: none
  uint32_t nested_bits = 0;              ///< bits per second-level scale
  uint32_t bits_per_input_channel = 0;   ///< per position along a row (GPTQ g_idx)
  uint32_t bits_per_output_channel = 0;  ///< per row (per-channel scales)
  uint64_t bits_per_tensor = 0;          ///< once per tensor (per-tensor scales, code books)
  uint32_t stored_tensors = 1;           ///< checkpoint tensors per weight (qweight, scales, ...)

  /// Exact bytes of `t` in this layout (bits rounded up to whole bytes).
  uint64_t bytes_for(const Tensor& t) const;
  /// True when the groups tile the rows of `t` (a row is a multiple of group_elements).
  bool fits(const Tensor& t) const;
};

/// File container of a format; decides how file_bytes is estimated.
enum class Container { kGguf, kSafetensors, kPte, kQnn };
std::string_view to_string(Container c);

/// One step of a format's ordered rule list. A rule applies when every
/// condition it sets holds; it then replaces the storage chosen so far, so
/// later rules win. Conditions mirror llama_tensor_get_type_impl.
struct QuantRule {
  std::vector<std::string> tensors;               ///< categories ("attn_v", "ffn_down", ...); empty: any
  std::vector<std::string> arch;                  ///< model arch is one of these
  std::vector<std::string> not_arch;              ///< model arch is none of these
  std::optional<uint32_t> n_gqa_min;              ///< n_head / n_head_kv >= this
  std::optional<uint32_t> n_expert;               ///< exactly this many experts
  std::optional<uint32_t> n_expert_min;           ///< at least this many experts
  std::string size_class;                         ///< llama.cpp model type, e.g. "70B"; "" any
  std::optional<bool> imatrix;                    ///< made with an importance matrix
  std::optional<bool> expert_stack;               ///< 3-D tensor of stacked experts
  std::optional<bool> row_fits_default_block;     ///< ne[0] is a multiple of the default type's block
  std::optional<uint32_t> layer_below;            ///< position < k
  std::optional<uint32_t> layer_below_fraction;   ///< position < n / d
  std::optional<uint32_t> layer_middle_fraction;  ///< n / d <= position < (d - 1) * n / d
  std::optional<bool> use_more_bits;              ///< llama.cpp use_more_bits(position, n)
  bool position_from_counter = false;             ///< "layer_from": "counter"
  std::vector<std::string> if_storage;            ///< storage chosen so far is one of these
  std::string storage;                            ///< ggml type id (GGUF), layout id, or "keep"
  std::string pointer;                            ///< JSON pointer of the rule, for messages
};

/// A quantization format: a GGUF file type or a checkpoint format.
/// The low-precision matrix path a format is made for (formats.json native_compute).
struct NativeCompute {
  std::string dtype;                  ///< "fp8", "fp4": the peak in the hardware's flops_per_s
  std::string capability;             ///< the Capabilities flag that provides it: "fp8", "nvfp4", "mxfp4"
  bool weight_only_fallback = false;  ///< engines run it weight-only where the capability is missing
};

struct QuantFormat {
  std::string id;    ///< lowercase id: "q4_k_m", "awq-int4", "mlx-4bit"
  std::string name;  ///< display name
  std::string description;
  Container container = Container::kGguf;
  std::string llama_ftype;      ///< "LLAMA_FTYPE_MOSTLY_Q4_K_M" for GGUF types
  std::string default_storage;  ///< storage of every quantizable tensor before the rules
  std::string keep_storage;     ///< storage of tensors that are not quantized
  bool imatrix = false;         ///< assumed importance-matrix use (QuantOptions overrides)
  std::vector<QuantRule> rules;
  std::string pointer;                          ///< JSON pointer of the format in its document
  std::optional<NativeCompute> native_compute;  ///< FP8/FP4 checkpoints; none for weight-only formats
  std::vector<std::string> equivalents;         ///< the same weights in another container, in preference order
};

/// Whether a device runs a format on its native path: always for formats
/// without one, else where the device has the capability. The search and the
/// advisor offer FP8/FP4 checkpoints only there.
bool runs_natively(const QuantFormat& format, const Capabilities& capabilities);

/// runs_natively, or the format is the model's own checkpoint format and engines
/// run it weight-only without the capability (native_compute weight_only_fallback:
/// gpt-oss's MXFP4 checkpoint on an H100).
bool runs_checkpoint(const QuantFormat& format, const Capabilities& capabilities, const ModelSpec& model);

/// Model facts the rules read. The caller fills it from a ModelSpec.
struct QuantModelFacts {
  std::string arch;       ///< llama.cpp arch or HF model_type: "llama", "qwen2", "falcon" are what rules test
  uint32_t n_layers = 0;  ///< transformer blocks
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t n_expert = 0;  ///< routed experts; 0 or 1 for dense models
  bool tied_embeddings = false;
};

/// Per-call choices that change a file's mix.
struct QuantOptions {
  std::optional<bool> imatrix;  ///< importance matrix used; default: the format's `imatrix`
};

/// What one tensor became.
struct TensorAssignment {
  std::string name;  ///< GGUF name
  std::string kind;
  std::string category;    ///< rule category ("output" also for a tied token_embd)
  std::string group;       ///< summary group: embeddings, attention, ffn, experts, norms, output, other
  std::string storage;     ///< ggml type id or layout id actually used
  bool quantized = false;  ///< stored in a quantized ggml type or a layout other than keep_storage
  uint64_t elements = 0;
  uint64_t bytes = 0;
  std::string note;  ///< e.g. why a fallback type was used
};

/// Totals over one summary group.
struct GroupSummary {
  std::string group;
  uint64_t tensors = 0;
  uint64_t elements = 0;
  uint64_t bytes = 0;
};

/// The weights of a model in one format.
struct WeightsBreakdown {
  std::string format_id;
  std::optional<NativeCompute> native_compute;  ///< the format's (none for a GGUF file's own table)
  Container container = Container::kGguf;
  std::vector<TensorAssignment> tensors;  ///< in input order
  std::vector<GroupSummary> groups;       ///< fixed order, empty groups left out
  uint64_t weights_bytes = 0;             ///< sum of tensor bytes
  uint64_t params = 0;                    ///< sum of elements
  double bits_per_weight = 0;             ///< 8 x weights_bytes / params
  uint64_t header_bytes = 0;              ///< file_bytes - weights_bytes: headers, metadata, padding
  uint64_t file_bytes = 0;                ///< estimated size on disk (= weights_bytes for pte/qnn)
  bool file_overhead_modeled = false;     ///< false for pte/qnn containers
  std::vector<std::string> notes;         ///< fallbacks, assumptions
};
void to_json(nlohmann::json& j, const WeightsBreakdown& b);

/// Summary group of a tensor for --verbose output: embeddings, attention,
/// ffn, experts, norms, output or other. `category` is QuantDb::category_of.
std::string tensor_group(const Tensor& t, const std::string& category);

/// Totals per summary group, in display order, empty groups left out.
std::vector<GroupSummary> group_totals(const std::vector<TensorAssignment>& tensors);

/// The quantization database: ggml types, layouts, formats, KV-cache dtypes
/// and the GGUF file model, built from data/quant/*.json.
class QuantDb {
 public:
  /// Builds the database from the two embedded documents (data/quant/ggml_types.json
  /// and data/quant/formats.json) and runs the cross-document checks. Problems
  /// are appended as Problem{"", pointer, message}.
  static QuantDb from_json(const nlohmann::json& types, const nlohmann::json& formats, std::vector<Problem>& problems);

  /// Adds whatever sections a schema-valid document holds. An id already
  /// loaded from an earlier document is replaced (overlays); a repeat inside
  /// one document is a problem.
  void add_document(const nlohmann::json& doc, std::vector<Problem>& problems);
  /// Cross-document checks: every storage, fallback, category and size class
  /// a format names exists. Call after the last add_document.
  void check(std::vector<Problem>& problems) const;

  /// Looks a format up by id, case and punctuation ignored ("Q4_K_M", "q4km").
  const QuantFormat* find(std::string_view id) const;
  /// As find, but an unknown id throws bad_input naming the closest ids.
  const QuantFormat& resolve(std::string_view id) const;
  const std::vector<QuantFormat>& formats() const { return formats_; }

  const GgmlType* ggml_type(std::string_view id) const;
  const GgmlType* ggml_type_by_id(uint32_t type_id) const;
  const std::vector<GgmlType>& ggml_types() const { return types_; }
  const StorageLayout* layout(std::string_view id) const;

  /// Bytes per cached element for a KV-cache dtype (f16 2, fp8 1, q8_0 34/32,
  /// q4_0 18/32). Throws bad_input listing the valid dtypes for an unknown one.
  double kv_bytes_per_element(std::string_view kv_dtype) const;
  std::vector<std::string> kv_dtype_ids() const;

  /// GGUF key/value metadata bytes (tokenizer included) for a vocabulary size:
  /// the calibrated family constant, or the linear fallback.
  uint64_t gguf_metadata_bytes(uint64_t vocab_size) const;

  // Internal tables, read by quantize().
  struct CategoryMatch {
    std::string category;
    std::vector<std::string> name_equals;
    std::vector<std::string> name_contains;
  };
  struct SizeClass {
    std::string size_class;
    std::vector<std::string> arch;
    uint32_t n_layers = 0;
    uint32_t n_gqa_min = 0;
  };
  struct GgufFile {
    uint64_t header_bytes = 24;
    uint64_t alignment_bytes = 32;
    uint64_t tensor_info_fixed_bytes = 24;
    uint64_t tensor_info_bytes_per_dim = 8;
    std::map<uint64_t, uint64_t> metadata_bytes_by_vocab;
    uint64_t fallback_fixed_bytes = 0;
    uint64_t fallback_bytes_per_vocab_entry = 0;
  };
  struct SafetensorsFile {
    uint64_t header_length_bytes = 8;
    uint64_t header_bytes_per_tensor = 0;
  };
  struct KvDtype {
    std::string id;
    uint32_t bits_per_element = 0;  ///< when set
    std::string ggml_type;          ///< when set
  };

  const std::vector<CategoryMatch>& categories() const { return categories_; }
  const std::vector<std::string>& attn_v_categories() const { return attn_v_categories_; }
  const std::vector<SizeClass>& size_classes() const { return size_classes_; }
  const GgufFile& gguf_file() const { return gguf_file_; }
  const SafetensorsFile& safetensors_file() const { return safetensors_file_; }
  const std::string& last_resort_type() const { return last_resort_type_; }
  /// llama.cpp tensor_allows_quantization, by name (the caller checks 1-D).
  bool name_allows_quantization(const std::string& name) const;
  /// llama.cpp tensor_get_category: the first category whose pattern matches, else "other".
  std::string category_of(const std::string& name) const;

 private:
  std::vector<GgmlType> types_;
  std::vector<StorageLayout> layouts_;
  std::vector<QuantFormat> formats_;
  std::vector<KvDtype> kv_dtypes_;
  std::vector<CategoryMatch> categories_;
  std::vector<std::string> attn_v_categories_;
  std::vector<std::string> not_quantized_contains_;
  std::vector<std::string> not_quantized_equals_;
  std::string not_quantized_suffix_;
  std::vector<SizeClass> size_classes_;
  GgufFile gguf_file_;
  SafetensorsFile safetensors_file_;
  std::string last_resort_type_;
};

/// Assigns every tensor its storage in `format` and totals the bytes.
/// GGUF formats follow llama-quantize (llama_tensor_get_type and
/// tensor_type_fallback in src/llama-quant.cpp); other formats put
/// quantizable tensors in the default layout unless a rule says otherwise.
/// file_bytes adds the GGUF header (tensor infos, tokenizer metadata,
/// 32-byte alignment) or the safetensors JSON header. Precondition: `format`
/// comes from `db`.
WeightsBreakdown quantize(const std::vector<Tensor>& tensors, const QuantModelFacts& facts, const QuantFormat& format, const QuantDb& db,
                          const QuantOptions& options = {});

}  // namespace optadvisor
