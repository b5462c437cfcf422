// SPDX-License-Identifier: MIT
// Quantization database (data/quant/*.json) and the per-tensor storage model.
#include "optadvisor/catalog/quant.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "base/names.hpp"
#include "base/json_fields.hpp"

namespace optadvisor {
namespace {

using nlohmann::json;

constexpr std::string_view kKeep = "keep";

/// Reads typed fields of one JSON object, appending a Problem for each field
/// that is present with the wrong type or range. Absent optional fields are fine.
class FieldReader {
 public:
  FieldReader(const json& j, std::string pointer, std::vector<Problem>& problems)
      : j_(j), pointer_(std::move(pointer)), problems_(problems) {}

  bool has(const char* key) const { return json_field::find(j_, key) != nullptr; }
  std::string at(const char* key) const { return pointer_ + "/" + key; }

  std::string str(const char* key, bool required = false) {
    if (!has(key)) {
      if (required) missing(key);
      return {};
    }
    auto v = json_field::as_string(j_.at(key));
    if (!v) {
      wrong(key, "expected a string");
      return {};
    }
    return std::move(*v);
  }

  std::optional<uint64_t> uint(const char* key, bool required = false, uint64_t min = 0, uint64_t max = UINT32_MAX) {
    if (!has(key)) {
      if (required) missing(key);
      return std::nullopt;
    }
    const std::optional<uint64_t> v = json_field::as_uint(j_.at(key));
    if (!v || *v < min || *v > max) {
      wrong(key, fmt::format("expected an integer in [{}, {}]", min, max));
      return std::nullopt;
    }
    return v;
  }

  std::optional<uint32_t> u32(const char* key, bool required = false, uint32_t min = 0) {
    auto v = uint(key, required, min, UINT32_MAX);
    if (!v) return std::nullopt;
    return static_cast<uint32_t>(*v);
  }

  std::optional<bool> boolean(const char* key) {
    if (!has(key)) return std::nullopt;
    const std::optional<bool> v = json_field::as_bool(j_.at(key));
    if (!v) wrong(key, "expected true or false");
    return v;
  }

  std::vector<std::string> strings(const char* key) {
    std::vector<std::string> out;
    if (!has(key)) return out;
    const json& v = j_.at(key);
    if (!v.is_array()) {
      wrong(key, "expected an array of strings");
      return out;
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) {
        problems_.push_back({"", at(key) + "/" + std::to_string(i), "expected a string"});
        continue;
      }
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }

  void missing(const char* key) { problems_.push_back({"", pointer_, fmt::format("missing required field '{}'", key)}); }
  void wrong(const char* key, const std::string& message) { problems_.push_back({"", at(key), message}); }

 private:
  const json& j_;
  std::string pointer_;
  std::vector<Problem>& problems_;
};

bool contains(const std::vector<std::string>& v, std::string_view s) { return std::find(v.begin(), v.end(), s) != v.end(); }

uint64_t ceil_div(uint64_t a, uint64_t b) { return b == 0 ? 0 : (a + b - 1) / b; }
uint64_t align_up(uint64_t a, uint64_t alignment) { return alignment == 0 ? a : ceil_div(a, alignment) * alignment; }

std::optional<Container> container_from_string(std::string_view s) {
  if (s == "gguf") return Container::kGguf;
  if (s == "safetensors") return Container::kSafetensors;
  if (s == "pte") return Container::kPte;
  if (s == "qnn") return Container::kQnn;
  return std::nullopt;
}

/// Replaces the entry with the same id (an overlay) or appends a new one.
/// A second entry with one id inside the same document is a problem.
template <typename T>
void upsert(std::vector<T>& entries, T entry, std::set<std::string>& seen_in_doc, const std::string& pointer, const char* what,
            std::vector<Problem>& problems) {
  if (!seen_in_doc.insert(entry.id).second) {
    problems.push_back({"", pointer, fmt::format("duplicate {} id '{}'", what, entry.id)});
    return;
  }
  for (auto& existing : entries) {
    if (existing.id == entry.id) {
      existing = std::move(entry);
      return;
    }
  }
  entries.push_back(std::move(entry));
}

QuantRule rule_from_json(const json& j, const std::string& pointer, std::vector<Problem>& problems) {
  FieldReader r(j, pointer, problems);
  QuantRule rule;
  rule.pointer = pointer;
  rule.tensors = r.strings("tensors");
  rule.arch = r.strings("arch");
  rule.not_arch = r.strings("not_arch");
  rule.n_gqa_min = r.u32("n_gqa_min", false, 1);
  rule.n_expert = r.u32("n_expert");
  rule.n_expert_min = r.u32("n_expert_min", false, 1);
  rule.size_class = r.str("size_class");
  rule.imatrix = r.boolean("imatrix");
  rule.expert_stack = r.boolean("expert_stack");
  rule.row_fits_default_block = r.boolean("row_fits_default_block");
  rule.layer_below = r.u32("layer_below", false, 1);
  rule.layer_below_fraction = r.u32("layer_below_fraction", false, 1);
  rule.layer_middle_fraction = r.u32("layer_middle_fraction", false, 2);
  rule.use_more_bits = r.boolean("use_more_bits");
  const std::string from = r.str("layer_from");
  if (!from.empty() && from != "counter") r.wrong("layer_from", "expected \"counter\"");
  rule.position_from_counter = from == "counter";
  rule.if_storage = r.strings("if_storage");
  rule.storage = r.str("storage", true);
  return rule;
}

// --- the per-tensor model ---------------------------------------------------

/// llama.cpp use_more_bits (llama_tensor_get_type_impl): the first and last
/// eighth of the layers and every third layer in between.
bool use_more_bits(int64_t i_layer, int64_t n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

/// Where a tensor sits for the positional rules, as llama.cpp counts it.
struct Position {
  int64_t index = -1;    ///< i_layer
  int64_t counter = -1;  ///< occurrence of the category so far (i_ffn_down, ...)
  int64_t n = 0;         ///< n_layer or n_attention_wv
};

struct RuleContext {
  const QuantModelFacts& facts;
  const QuantFormat& format;
  uint32_t n_gqa = 0;
  std::string size_class;
  bool imatrix = false;
  uint32_t default_block = 1;
};

bool rule_applies(const QuantRule& rule, const RuleContext& ctx, const Tensor& t, const std::string& category, const Position& pos,
                  const std::string& current) {
  if (!rule.tensors.empty() && !contains(rule.tensors, category)) return false;
  if (!rule.arch.empty() && !contains(rule.arch, ctx.facts.arch)) return false;
  if (!rule.not_arch.empty() && contains(rule.not_arch, ctx.facts.arch)) return false;
  if (rule.n_gqa_min && ctx.n_gqa < *rule.n_gqa_min) return false;
  if (rule.n_expert && ctx.facts.n_expert != *rule.n_expert) return false;
  if (rule.n_expert_min && ctx.facts.n_expert < *rule.n_expert_min) return false;
  if (!rule.size_class.empty() && rule.size_class != ctx.size_class) return false;
  if (rule.imatrix && *rule.imatrix != ctx.imatrix) return false;
  if (rule.expert_stack && *rule.expert_stack != (t.slices > 1)) return false;
  if (rule.row_fits_default_block && *rule.row_fits_default_block != (t.row_elements % ctx.default_block == 0)) return false;
  if (!rule.if_storage.empty() && !contains(rule.if_storage, current)) return false;
  const bool positional = rule.layer_below || rule.layer_below_fraction || rule.layer_middle_fraction || rule.use_more_bits;
  if (positional) {
    const int64_t i = rule.position_from_counter ? pos.counter : pos.index;
    const int64_t n = pos.n;
    if (i < 0) return false;
    if (rule.layer_below && !(i < static_cast<int64_t>(*rule.layer_below))) return false;
    if (rule.layer_below_fraction && !(i < n / *rule.layer_below_fraction)) return false;
    if (rule.layer_middle_fraction) {
      const int64_t d = *rule.layer_middle_fraction;
      if (!(i >= n / d && i < (d - 1) * n / d)) return false;
    }
    if (rule.use_more_bits && *rule.use_more_bits != use_more_bits(i, n)) return false;
  }
  return true;
}

/// Dimensions a GGUF tensor-info entry records (ggml_n_dims: trailing 1s dropped).
uint64_t gguf_dims(const Tensor& t) {
  if (t.slices > 1) return 3;
  if (t.rows > 1) return 2;
  return 1;
}

std::string tensor_name(const Tensor& t) {
  if (!t.name.empty()) return t.name;
  if (t.layer >= 0) return fmt::format("blk.{}.{}.weight", t.layer, t.kind);
  return t.kind + ".weight";
}


// --- QuantDb: one entry of each section -------------------------------------------

GgmlType ggml_type_from_json(const json& j, const std::string& p, std::vector<Problem>& problems) {
  FieldReader r(j, p, problems);
  GgmlType t;
  t.id = r.str("id", true);
  t.type_id = r.u32("type_id", true).value_or(0);
  t.block_elements = r.u32("block_elements", true, 1).value_or(1);
  t.bytes_per_block = r.u32("bytes_per_block", true, 1).value_or(0);
  t.quantized = r.boolean("quantized").value_or(false);
  t.removed = r.boolean("removed").value_or(false);
  t.fallback = r.str("fallback");
  t.layout = r.str("layout");
  if (!t.id.empty() && !t.quantized && t.block_elements != 1)
    problems.push_back({"", r.at("block_elements"), "an unquantized type has blocks of 1 element"});
  return t;
}

/// gguf_file/metadata: the calibrated metadata bytes per vocabulary size.
void gguf_metadata_from_json(const json& arr, QuantDb::GgufFile& file, std::vector<Problem>& problems) {
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string p = "/gguf_file/metadata/" + std::to_string(i);
    FieldReader m(arr[i], p, problems);
    const auto bytes = m.uint("bytes", true, 1, UINT64_MAX);
    if (!bytes || !arr[i].contains("vocab_sizes") || !arr[i].at("vocab_sizes").is_array()) {
      if (!arr[i].contains("vocab_sizes")) m.missing("vocab_sizes");
      continue;
    }
    const json& sizes = arr[i].at("vocab_sizes");
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      const std::optional<uint64_t> vocab = json_field::as_uint(sizes[k]);
      if (!vocab) {
        problems.push_back({"", p + "/vocab_sizes/" + std::to_string(k), "expected a positive integer"});
        continue;
      }
      if (!file.metadata_bytes_by_vocab.emplace(*vocab, *bytes).second)
        problems.push_back({"", p + "/vocab_sizes/" + std::to_string(k), fmt::format("vocabulary size {} is listed twice", *vocab)});
    }
  }
}

/// gguf_file: the container's fixed sizes, the metadata table and its linear fallback.
QuantDb::GgufFile gguf_file_from_json(const json& g, std::vector<Problem>& problems) {
  FieldReader r(g, "/gguf_file", problems);
  QuantDb::GgufFile file;
  file.header_bytes = r.uint("header_bytes", true).value_or(24);
  file.alignment_bytes = r.uint("alignment_bytes", true, 1).value_or(32);
  file.tensor_info_fixed_bytes = r.uint("tensor_info_fixed_bytes", true).value_or(24);
  file.tensor_info_bytes_per_dim = r.uint("tensor_info_bytes_per_dim", true).value_or(8);
  if (g.contains("metadata") && g.at("metadata").is_array()) gguf_metadata_from_json(g.at("metadata"), file, problems);
  if (g.contains("metadata_fallback")) {
    FieldReader f(g.at("metadata_fallback"), "/gguf_file/metadata_fallback", problems);
    file.fallback_fixed_bytes = f.uint("fixed_bytes", true, 0, UINT64_MAX).value_or(0);
    file.fallback_bytes_per_vocab_entry = f.uint("bytes_per_vocab_entry", true).value_or(0);
  } else {
    r.missing("metadata_fallback");
  }
  return file;
}

std::vector<QuantDb::CategoryMatch> categories_from_json(const json& arr, std::vector<Problem>& problems) {
  std::vector<QuantDb::CategoryMatch> out;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    FieldReader c(arr[i], "/tensor_rules/categories/" + std::to_string(i), problems);
    QuantDb::CategoryMatch m;
    m.category = c.str("category", true);
    m.name_equals = c.strings("name_equals");
    m.name_contains = c.strings("name_contains");
    if (m.name_equals.empty() && m.name_contains.empty())
      problems.push_back({"", "/tensor_rules/categories/" + std::to_string(i), "a category needs name_equals or name_contains"});
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<QuantDb::SizeClass> size_classes_from_json(const json& arr, std::vector<Problem>& problems) {
  std::vector<QuantDb::SizeClass> out;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    FieldReader s(arr[i], "/tensor_rules/size_classes/" + std::to_string(i), problems);
    QuantDb::SizeClass sc;
    sc.size_class = s.str("class", true);
    sc.arch = s.strings("arch");
    sc.n_layers = s.u32("n_layers", true, 1).value_or(0);
    sc.n_gqa_min = s.u32("n_gqa_min", false, 1).value_or(0);
    out.push_back(std::move(sc));
  }
  return out;
}

StorageLayout layout_from_json(const json& j, const std::string& p, std::vector<Problem>& problems) {
  FieldReader r(j, p, problems);
  StorageLayout l;
  l.id = r.str("id", true);
  l.description = r.str("description");
  l.weight_bits = r.u32("weight_bits", true, 1).value_or(16);
  l.group_elements = r.u32("group_elements", false, 1).value_or(0);
  l.groups_over_tensor = r.boolean("groups_over_tensor").value_or(false);
  l.block_rows = r.u32("block_rows", false, 1).value_or(0);
  l.group_bits = r.u32("group_bits").value_or(0);
  l.nested_groups = r.u32("nested_groups", false, 1).value_or(0);
  l.nested_bits = r.u32("nested_bits").value_or(0);
  l.bits_per_input_channel = r.u32("bits_per_input_channel").value_or(0);
  l.bits_per_output_channel = r.u32("bits_per_output_channel").value_or(0);
  l.bits_per_tensor = r.uint("bits_per_tensor", false, 0, UINT64_MAX).value_or(0);
  l.stored_tensors = r.u32("stored_tensors", false, 1).value_or(1);
  if (l.group_elements == 0 && (l.group_bits > 0 || l.groups_over_tensor || l.nested_groups > 0 || l.block_rows > 0))
    problems.push_back({"", p, "group_bits, groups_over_tensor, nested_groups and block_rows need group_elements"});
  if (l.nested_groups > 0 && l.nested_bits == 0) problems.push_back({"", r.at("nested_bits"), "nested_groups needs nested_bits"});
  return l;
}

QuantFormat format_from_json(const json& j, const std::string& p, std::vector<Problem>& problems) {
  FieldReader r(j, p, problems);
  QuantFormat f;
  f.pointer = p;
  f.id = r.str("id", true);
  f.name = r.str("name", true);
  f.description = r.str("description");
  const std::string container = r.str("container", true);
  if (auto c = container_from_string(container))
    f.container = *c;
  else if (!container.empty())
    r.wrong("container", "expected gguf, safetensors, pte or qnn");
  f.llama_ftype = r.str("llama_ftype");
  f.default_storage = r.str("default_storage", true);
  f.keep_storage = r.str("keep_storage", true);
  f.imatrix = r.boolean("imatrix").value_or(false);
  f.equivalents = r.strings("equivalents");
  if (j.contains("native_compute")) {
    FieldReader n(j.at("native_compute"), p + "/native_compute", problems);
    NativeCompute nc{n.str("dtype", true), n.str("capability", true), n.boolean("weight_only_fallback").value_or(false)};
    if (!nc.capability.empty() && nc.capability != "fp8" && nc.capability != "nvfp4" && nc.capability != "mxfp4" &&
        nc.capability != "int4" && nc.capability != "int8")
      n.wrong("capability", "expected fp8, nvfp4, mxfp4, int4 or int8");
    f.native_compute = nc;
  }
  if (j.contains("rules") && j.at("rules").is_array()) {
    const json& rules = j.at("rules");
    for (std::size_t k = 0; k < rules.size(); ++k) f.rules.push_back(rule_from_json(rules[k], p + "/rules/" + std::to_string(k), problems));
  } else {
    r.missing("rules");
  }
  if (f.container != Container::kGguf && !f.llama_ftype.empty())
    problems.push_back({"", r.at("llama_ftype"), "llama_ftype only applies to gguf formats"});
  return f;
}

QuantDb::KvDtype kv_dtype_from_json(const json& j, const std::string& p, std::vector<Problem>& problems) {
  FieldReader r(j, p, problems);
  QuantDb::KvDtype kv;
  kv.id = r.str("id", true);
  kv.bits_per_element = r.u32("bits_per_element", false, 1).value_or(0);
  kv.ggml_type = r.str("ggml_type");
  if ((kv.bits_per_element > 0) == !kv.ggml_type.empty()) problems.push_back({"", p, "give exactly one of bits_per_element and ggml_type"});
  return kv;
}

/// Each entry of the array `key` (when doc holds one) read by `parse` and upserted by id; an
/// entry without an id is skipped (its problem is already recorded).
template <typename T, typename Parse>
void add_entries(const json& doc, const std::string& key, std::vector<T>& entries, const char* what, std::vector<Problem>& problems,
                 Parse parse) {
  if (!doc.contains(key) || !doc.at(key).is_array()) return;
  std::set<std::string> seen;
  const json& arr = doc.at(key);
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string p = "/" + key + "/" + std::to_string(i);
    T entry = parse(arr[i], p, problems);
    if (entry.id.empty()) continue;
    upsert(entries, std::move(entry), seen, p + "/id", what, problems);
  }
}

}  // namespace

std::string_view to_string(Container c) {
  switch (c) {
    case Container::kGguf: return "gguf";
    case Container::kSafetensors: return "safetensors";
    case Container::kPte: return "pte";
    case Container::kQnn: return "qnn";
  }
  return "unknown";
}

// --- StorageLayout ------------------------------------------------------------

bool StorageLayout::fits(const Tensor& t) const {
  if (group_elements == 0 || groups_over_tensor || block_rows > 0) return true;
  return t.row_elements % group_elements == 0;
}

uint64_t StorageLayout::bytes_for(const Tensor& t) const {
  const uint64_t elements = t.elements();
  const uint64_t row_count = t.rows * t.slices;
  uint64_t bits = elements * weight_bits;
  if (group_elements > 0) {
    const uint64_t groups = groups_over_tensor ? ceil_div(elements, group_elements)
                            : block_rows > 0   ? t.slices * ceil_div(t.rows, block_rows) * ceil_div(t.row_elements, group_elements)
                                               : row_count * ceil_div(t.row_elements, group_elements);
    bits += groups * group_bits;
    if (nested_groups > 0) bits += ceil_div(groups, nested_groups) * nested_bits;
  }
  bits += t.slices * t.row_elements * bits_per_input_channel;
  bits += row_count * bits_per_output_channel;
  bits += bits_per_tensor;
  return ceil_div(bits, 8);
}

// --- QuantDb: loading -----------------------------------------------------------

QuantDb QuantDb::from_json(const json& types, const json& formats, std::vector<Problem>& problems) {
  QuantDb db;
  db.add_document(types, problems);
  db.add_document(formats, problems);
  db.check(problems);
  return db;
}

void QuantDb::add_document(const json& doc, std::vector<Problem>& problems) {
  if (!doc.is_object()) {
    problems.push_back({"", "", "expected a JSON object"});
    return;
  }
  add_entries(doc, "ggml_types", types_, "ggml type", problems, ggml_type_from_json);
  if (doc.contains("last_resort_type")) {
    FieldReader r(doc, "", problems);
    last_resort_type_ = r.str("last_resort_type");
  }
  if (doc.contains("gguf_file") && doc.at("gguf_file").is_object()) gguf_file_ = gguf_file_from_json(doc.at("gguf_file"), problems);
  if (doc.contains("tensor_rules") && doc.at("tensor_rules").is_object()) {
    const json& tr = doc.at("tensor_rules");
    FieldReader r(tr, "/tensor_rules", problems);
    categories_.clear();
    if (tr.contains("categories") && tr.at("categories").is_array()) categories_ = categories_from_json(tr.at("categories"), problems);
    attn_v_categories_ = r.strings("attn_v_categories");
    if (tr.contains("not_quantized")) {
      FieldReader n(tr.at("not_quantized"), "/tensor_rules/not_quantized", problems);
      not_quantized_contains_ = n.strings("name_contains");
      not_quantized_equals_ = n.strings("name_equals");
      not_quantized_suffix_ = n.str("name_must_end_with");
    }
    size_classes_.clear();
    if (tr.contains("size_classes") && tr.at("size_classes").is_array())
      size_classes_ = size_classes_from_json(tr.at("size_classes"), problems);
  }
  add_entries(doc, "layouts", layouts_, "layout", problems, layout_from_json);
  add_entries(doc, "formats", formats_, "format", problems, format_from_json);
  add_entries(doc, "kv_cache_dtypes", kv_dtypes_, "KV-cache dtype", problems, kv_dtype_from_json);
  if (doc.contains("safetensors_file") && doc.at("safetensors_file").is_object()) {
    FieldReader r(doc.at("safetensors_file"), "/safetensors_file", problems);
    safetensors_file_.header_length_bytes = r.uint("header_length_bytes", true).value_or(8);
    safetensors_file_.header_bytes_per_tensor = r.uint("header_bytes_per_tensor", true).value_or(0);
  }
}

void QuantDb::check(std::vector<Problem>& problems) const {
  // ggml types: fallbacks and the last resort must exist and be smaller-blocked.
  for (std::size_t i = 0; i < types_.size(); ++i) {
    const GgmlType& t = types_[i];
    if (t.fallback.empty()) continue;
    const GgmlType* fb = ggml_type(t.fallback);
    if (!fb) {
      problems.push_back({"", "/ggml_types/" + std::to_string(i) + "/fallback",
                          fmt::format("ggml type '{}' falls back to unknown type '{}'", t.id, t.fallback)});
    } else if (fb->block_elements >= t.block_elements) {
      problems.push_back({"", "/ggml_types/" + std::to_string(i) + "/fallback",
                          fmt::format("fallback '{}' of '{}' must have a smaller block", t.fallback, t.id)});
    }
  }
  std::set<uint32_t> type_ids;
  for (std::size_t i = 0; i < types_.size(); ++i)
    if (!type_ids.insert(types_[i].type_id).second)
      problems.push_back({"", "/ggml_types/" + std::to_string(i) + "/type_id", fmt::format("type_id {} is used twice", types_[i].type_id)});
  if (!types_.empty() || !formats_.empty()) {
    const GgmlType* last = ggml_type(last_resort_type_);
    if (!last || last->block_elements != 1)
      problems.push_back({"", "/last_resort_type", "last_resort_type must name a ggml type with blocks of 1"});
  }
  for (std::size_t i = 0; i < kv_dtypes_.size(); ++i)
    if (!kv_dtypes_[i].ggml_type.empty() && !ggml_type(kv_dtypes_[i].ggml_type))
      problems.push_back(
          {"", "/kv_cache_dtypes/" + std::to_string(i) + "/ggml_type", fmt::format("unknown ggml type '{}'", kv_dtypes_[i].ggml_type)});

  std::set<std::string> category_names = {"other"};
  for (const auto& c : categories_) category_names.insert(c.category);
  std::set<std::string> size_class_names;
  for (const auto& s : size_classes_) size_class_names.insert(s.size_class);
  for (std::size_t i = 0; i < attn_v_categories_.size(); ++i)
    if (!category_names.count(attn_v_categories_[i]))
      problems.push_back(
          {"", "/tensor_rules/attn_v_categories/" + std::to_string(i), fmt::format("unknown category '{}'", attn_v_categories_[i])});

  std::map<std::string, std::string> normalized_ids;
  for (const QuantFormat& f : formats_) {
    auto [it, inserted] = normalized_ids.emplace(normalize_name(f.id), f.id);
    if (!inserted)
      problems.push_back(
          {"", f.pointer + "/id", fmt::format("format id '{}' is indistinguishable from '{}' when typed", f.id, it->second)});
    const bool gguf = f.container == Container::kGguf;
    auto check_storage = [&](const std::string& storage, const std::string& pointer, bool allow_keep) {
      if (allow_keep && storage == kKeep) return;
      if (gguf ? ggml_type(storage) != nullptr : layout(storage) != nullptr) return;
      problems.push_back(
          {"", pointer,
           fmt::format("format '{}': '{}' is not a {}{}", f.id, storage, gguf ? "ggml type" : "layout", allow_keep ? " (or keep)" : "")});
    };
    check_storage(f.default_storage, f.pointer + "/default_storage", false);
    check_storage(f.keep_storage, f.pointer + "/keep_storage", false);
    for (std::size_t k = 0; k < f.equivalents.size(); ++k)
      if (!find(f.equivalents[k]) || f.equivalents[k] == f.id)
        problems.push_back({"", f.pointer + "/equivalents/" + std::to_string(k),
                            fmt::format("format '{}': equivalent '{}' is not another known format", f.id, f.equivalents[k])});
    if (gguf) {
      const GgmlType* keep = ggml_type(f.keep_storage);
      if (keep && keep->quantized) problems.push_back({"", f.pointer + "/keep_storage", "keep_storage must be an unquantized type"});
    }
    for (const QuantRule& r : f.rules) {
      check_storage(r.storage, r.pointer + "/storage", true);
      for (std::size_t k = 0; k < r.tensors.size(); ++k)
        if (!category_names.count(r.tensors[k]))
          problems.push_back({"", r.pointer + "/tensors/" + std::to_string(k), fmt::format("unknown tensor category '{}'", r.tensors[k])});
      if (!r.size_class.empty() && !size_class_names.count(r.size_class))
        problems.push_back({"", r.pointer + "/size_class", fmt::format("unknown size class '{}'", r.size_class)});
      for (std::size_t k = 0; k < r.if_storage.size(); ++k)
        check_storage(r.if_storage[k], r.pointer + "/if_storage/" + std::to_string(k), false);
    }
  }
}

// --- QuantDb: lookups -----------------------------------------------------------

const QuantFormat* QuantDb::find(std::string_view id) const {
  for (const auto& f : formats_)
    if (f.id == id) return &f;
  const std::string wanted = normalize_name(id);
  if (wanted.empty()) return nullptr;
  for (const auto& f : formats_)
    if (normalize_name(f.id) == wanted) return &f;
  return nullptr;
}

const QuantFormat& QuantDb::resolve(std::string_view id) const {
  if (const QuantFormat* f = find(id)) return *f;
  std::vector<std::string> ids;
  for (const auto& f : formats_) ids.push_back(f.id);
  const auto close = closest_names(id, ids);
  std::string hint;
  if (!close.empty()) {
    hint = "did you mean ";
    for (std::size_t i = 0; i < close.size(); ++i) hint += (i ? ", '" : "'") + close[i] + "'";
    hint += "?";
  } else {
    hint = "valid formats: " + fmt::format("{}", fmt::join(ids, ", "));
  }
  throw bad_input(fmt::format("unknown quantization format '{}'", id), hint);
}

const GgmlType* QuantDb::ggml_type(std::string_view id) const {
  for (const auto& t : types_)
    if (t.id == id) return &t;
  return nullptr;
}

const GgmlType* QuantDb::ggml_type_by_id(uint32_t type_id) const {
  for (const auto& t : types_)
    if (t.type_id == type_id) return &t;
  return nullptr;
}

const StorageLayout* QuantDb::layout(std::string_view id) const {
  for (const auto& l : layouts_)
    if (l.id == id) return &l;
  return nullptr;
}

std::vector<std::string> QuantDb::kv_dtype_ids() const {
  std::vector<std::string> ids;
  for (const auto& kv : kv_dtypes_) ids.push_back(kv.id);
  return ids;
}

double QuantDb::kv_bytes_per_element(std::string_view kv_dtype) const {
  for (const auto& kv : kv_dtypes_) {
    if (kv.id != kv_dtype) continue;
    if (kv.bits_per_element > 0) return kv.bits_per_element / 8.0;
    if (const GgmlType* t = ggml_type(kv.ggml_type)) return static_cast<double>(t->bytes_per_block) / t->block_elements;
  }
  throw bad_input(fmt::format("unknown KV-cache dtype '{}'", kv_dtype),
                  fmt::format("valid KV-cache dtypes: {}", fmt::join(kv_dtype_ids(), ", ")));
}

uint64_t QuantDb::gguf_metadata_bytes(uint64_t vocab_size) const {
  auto it = gguf_file_.metadata_bytes_by_vocab.find(vocab_size);
  if (it != gguf_file_.metadata_bytes_by_vocab.end()) return it->second;
  return gguf_file_.fallback_fixed_bytes + vocab_size * gguf_file_.fallback_bytes_per_vocab_entry;
}

bool QuantDb::name_allows_quantization(const std::string& name) const {
  const std::string& suffix = not_quantized_suffix_;
  if (!suffix.empty() && (name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0))
    return false;
  if (contains(not_quantized_equals_, name)) return false;
  for (const auto& pattern : not_quantized_contains_)
    if (name.find(pattern) != std::string::npos) return false;
  return true;
}

std::string QuantDb::category_of(const std::string& name) const {
  for (const auto& c : categories_) {
    if (contains(c.name_equals, name)) return c.category;
    for (const auto& pattern : c.name_contains)
      if (name.find(pattern) != std::string::npos) return c.category;
  }
  return "other";
}

bool runs_natively(const QuantFormat& format, const Capabilities& capabilities) {
  return !format.native_compute || capabilities.has(format.native_compute->capability);
}

bool runs_checkpoint(const QuantFormat& format, const Capabilities& capabilities, const ModelSpec& model) {
  return runs_natively(format, capabilities) ||
         (format.native_compute && format.native_compute->weight_only_fallback && model.native_format == format.id);
}

// --- quantize -------------------------------------------------------------------

namespace {

/// What the mix rules look at beyond the tensor: the GQA ratio, the size class,
/// whether an importance matrix is used and the default type's block.
RuleContext rule_context(const QuantModelFacts& facts, const QuantFormat& format, const QuantDb& db, const QuantOptions& options,
                         const GgmlType* default_type) {
  RuleContext ctx{facts, format, 0, {}, false, 1};
  ctx.imatrix = options.imatrix.value_or(format.imatrix);
  ctx.n_gqa = facts.n_head_kv > 0 ? facts.n_head / facts.n_head_kv : 0;
  for (const auto& sc : db.size_classes()) {
    if (contains(sc.arch, facts.arch) && sc.n_layers == facts.n_layers && ctx.n_gqa >= sc.n_gqa_min) {
      ctx.size_class = sc.size_class;
      break;
    }
  }
  ctx.default_block = default_type ? default_type->block_elements : 1;
  return ctx;
}

/// Each tensor's name and rule category, and whether the file has its own output matrix.
struct Categorized {
  std::vector<std::string> names;
  std::vector<std::string> categories;
  bool has_output = false;
};

Categorized categorize(const std::vector<Tensor>& tensors, const QuantDb& db) {
  Categorized c;
  c.names.resize(tensors.size());
  c.categories.resize(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    c.names[i] = tensor_name(tensors[i]);
    c.categories[i] = db.category_of(c.names[i]);
    if (c.categories[i] == "output") c.has_output = true;
  }
  return c;
}

/// What tensor `idx` is, before its storage: name, kind, rule category, group and size.
void name_tensor(TensorAssignment& a, const Tensor& t, const Categorized& cat, std::size_t idx, bool tied) {
  a.name = cat.names[idx];
  a.kind = t.kind;
  a.category = cat.categories[idx];
  if (tied && a.category == "token_embd") {
    a.category = "output";
    a.note = "tied embeddings: follows the output rules";
  }
  a.group = tensor_group(t, cat.categories[idx]);
  a.elements = t.elements();
}

/// The tensor indices in the order llama.cpp quantizes them.
std::vector<std::size_t> walk_order(const std::vector<Tensor>& tensors, const std::vector<std::string>& names) {
  std::vector<std::size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (tensors[a].layer != tensors[b].layer) return tensors[a].layer < tensors[b].layer;
    return names[a] < names[b];
  });
  return order;
}

/// Where a tensor of `category` sits for the positional rules, counting the
/// attn_v-like and ffn_* tensors as llama.cpp does (quantize_state_impl).
Position position_of(const Tensor& t, const std::string& category, const QuantModelFacts& facts, const QuantDb& db,
                     int64_t n_attention_wv, std::map<std::string, int64_t>& counters) {
  Position pos;
  const bool attn_v_like = contains(db.attn_v_categories(), category);
  const bool ffn = category == "ffn_down" || category == "ffn_gate" || category == "ffn_up";
  if (attn_v_like || ffn) pos.counter = counters[attn_v_like ? "attn_v" : category]++;
  if (attn_v_like) {
    pos.index = pos.counter;
    pos.n = n_attention_wv;
  } else if (ffn) {
    // layer_info: MoE models take the block index from the name, dense ones the counter.
    pos.index = (facts.n_expert > 1 && t.layer >= 0) ? t.layer : pos.counter;
    pos.n = facts.n_layers;
  } else {
    pos.index = t.layer;
    pos.n = facts.n_layers;
  }
  return pos;
}

/// Stores a tensor as GGUF type `storage`, or its fallback where a row does not hold whole blocks.
void place_gguf(TensorAssignment& a, const Tensor& t, const std::string& storage, bool quantizable, const QuantDb& db) {
  const GgmlType* type = db.ggml_type(storage);
  if (quantizable && type && t.row_elements % type->block_elements != 0) {
    // tensor_type_fallback: the row does not hold whole blocks.
    const GgmlType* fb = type->fallback.empty() ? nullptr : db.ggml_type(type->fallback);
    std::string why = fmt::format("row of {} is not a multiple of {}'s {}", t.row_elements, type->id, type->block_elements);
    if (!fb || t.row_elements % fb->block_elements != 0) fb = db.ggml_type(db.last_resort_type());
    if (fb) {
      a.note = fmt::format("{}: {} instead", why, fb->id);
      type = fb;
    }
  }
  if (type) {
    a.storage = type->id;
    a.bytes = type->bytes_for(a.elements);
    a.quantized = type->quantized;
  }
}

/// Stores a tensor in layout `storage`, or kept as `keep` where a row does not hold whole groups.
void place_layout(TensorAssignment& a, const Tensor& t, const std::string& storage, const std::string& keep, bool quantizable,
                  const QuantDb& db) {
  const StorageLayout* layout = db.layout(storage);
  if (quantizable && layout && !layout->fits(t)) {
    a.note = fmt::format("row of {} is not a multiple of the group of {}: kept {}", t.row_elements, layout->group_elements, keep);
    layout = db.layout(keep);
  }
  if (layout) {
    a.storage = layout->id;
    a.bytes = layout->bytes_for(t);
    a.quantized = a.storage != keep;
  }
}

/// Totals, groups, notes.
void add_totals(WeightsBreakdown& out) {
  std::map<std::string, uint64_t> fallback_counts;
  for (const auto& a : out.tensors) {
    out.weights_bytes += a.bytes;
    out.params += a.elements;
    if (a.note.find("not a multiple") != std::string::npos) ++fallback_counts[a.note];
  }
  out.groups = group_totals(out.tensors);
  for (const auto& [note, count] : fallback_counts) out.notes.push_back(count == 1 ? note : fmt::format("{} tensors: {}", count, note));
  out.bits_per_weight = out.params > 0 ? 8.0 * static_cast<double>(out.weights_bytes) / static_cast<double>(out.params) : 0;
}

/// A GGUF file: the header, the metadata, one tensor-info entry per tensor, each part aligned.
void add_gguf_file_bytes(WeightsBreakdown& out, const std::vector<Tensor>& tensors, const Categorized& cat, const QuantDb& db) {
  const auto& g = db.gguf_file();
  // The vocabulary is ne[1] of token_embd (per_layer_token_embd only if nothing else).
  uint64_t vocab = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (cat.categories[i] == "token_embd" && (vocab == 0 || tensors[i].kind == "token_embd")) vocab = tensors[i].rows;
  uint64_t header = g.header_bytes + db.gguf_metadata_bytes(vocab);
  uint64_t data = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    header += g.tensor_info_fixed_bytes + cat.names[i].size() + g.tensor_info_bytes_per_dim * gguf_dims(tensors[i]);
    data += align_up(out.tensors[i].bytes, g.alignment_bytes);
  }
  out.file_bytes = align_up(header, g.alignment_bytes) + data;
  out.file_overhead_modeled = true;
  if (!db.gguf_file().metadata_bytes_by_vocab.count(vocab))
    out.notes.push_back(fmt::format("GGUF metadata for a vocabulary of {} is not calibrated; estimated at {} bytes", vocab,
                                    db.gguf_metadata_bytes(vocab)));
}

/// File size, by container; the header is what it holds beyond the weights.
void add_file_bytes(WeightsBreakdown& out, const std::vector<Tensor>& tensors, const Categorized& cat, const QuantFormat& format,
                    const QuantDb& db) {
  switch (format.container) {
    case Container::kGguf:
      add_gguf_file_bytes(out, tensors, cat, db);
      break;
    case Container::kSafetensors: {
      const auto& s = db.safetensors_file();
      uint64_t stored = 0;
      for (const auto& a : out.tensors) {
        const StorageLayout* layout = db.layout(a.storage);
        stored += layout ? layout->stored_tensors : 1;
      }
      out.file_bytes = out.weights_bytes + s.header_length_bytes + stored * s.header_bytes_per_tensor;
      out.file_overhead_modeled = true;
      break;
    }
    case Container::kPte:
    case Container::kQnn:
      out.file_bytes = out.weights_bytes;
      out.notes.push_back(
          fmt::format("{} container overhead is not modeled: file_bytes is the weights alone", to_string(format.container)));
      break;
  }
  out.header_bytes = out.file_bytes - out.weights_bytes;
}

}  // namespace

WeightsBreakdown quantize(const std::vector<Tensor>& tensors, const QuantModelFacts& facts, const QuantFormat& format, const QuantDb& db,
                          const QuantOptions& options) {
  WeightsBreakdown out;
  out.format_id = format.id;
  out.native_compute = format.native_compute;
  out.container = format.container;
  const bool gguf = format.container == Container::kGguf;

  const std::string keep = format.keep_storage;
  const GgmlType* default_type = gguf ? db.ggml_type(format.default_storage) : nullptr;
  const RuleContext ctx = rule_context(facts, format, db, options, default_type);
  const bool default_quantized = gguf ? (default_type && default_type->quantized) : true;

  // Categories, and whether the file has its own output matrix: llama.cpp
  // treats the embeddings as tied when no output.weight exists, and then
  // token_embd takes the output rules (llama_tensor_get_type_impl).
  const Categorized cat = categorize(tensors, db);
  const bool tied = !cat.has_output;
  if (facts.tied_embeddings == cat.has_output && !tensors.empty())
    out.notes.push_back(cat.has_output ? "the model is marked tied but has an output tensor; treated as untied, as llama.cpp does"
                                       : "no output tensor: token_embd is treated as tied and follows the output rules");

  // llama.cpp walks tensors ordered by block index, then name (weight_name_comparer)
  // and counts attn_v-like and ffn_* tensors as it goes (quantize_state_impl).
  const std::vector<std::size_t> order = walk_order(tensors, cat.names);
  int64_t n_attention_wv = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (contains(db.attn_v_categories(), cat.categories[i])) ++n_attention_wv;
  std::map<std::string, int64_t> counters;

  out.tensors.resize(tensors.size());
  for (std::size_t idx : order) {
    const Tensor& t = tensors[idx];
    TensorAssignment& a = out.tensors[idx];
    name_tensor(a, t, cat, idx, tied);

    // tensor_allows_quantization: 2-D and 3-D weights outside the exclusion list.
    const bool eligible = !t.is_vector() && db.name_allows_quantization(a.name);
    // The mix rules and the shape fallback only run when the default type is quantized.
    const bool quantizable = eligible && default_quantized;
    std::string storage = eligible ? format.default_storage : keep;
    if (quantizable) {
      const Position pos = position_of(t, a.category, facts, db, n_attention_wv, counters);
      for (const QuantRule& rule : format.rules)
        if (rule_applies(rule, ctx, t, a.category, pos, storage)) storage = rule.storage;
      if (storage == kKeep) storage = keep;
    }

    if (gguf)
      place_gguf(a, t, storage, quantizable, db);
    else
      place_layout(a, t, storage, keep, quantizable, db);
  }

  add_totals(out);
  add_file_bytes(out, tensors, cat, format, db);
  return out;
}

void to_json(json& j, const WeightsBreakdown& b) {
  j = json{{"format", b.format_id},
           {"container", std::string(to_string(b.container))},
           {"weights_bytes", b.weights_bytes},
           {"params", b.params},
           {"bits_per_weight", b.bits_per_weight},
           {"header_bytes", b.header_bytes},
           {"file_bytes", b.file_bytes},
           {"file_overhead_modeled", b.file_overhead_modeled},
           {"groups", json::array()},
           {"tensors", json::array()},
           {"notes", b.notes}};
  for (const auto& g : b.groups)
    j["groups"].push_back({{"group", g.group}, {"tensors", g.tensors}, {"elements", g.elements}, {"bytes", g.bytes}});
  for (const auto& a : b.tensors) {
    json t = {{"name", a.name},       {"kind", a.kind},           {"category", a.category}, {"group", a.group},
              {"storage", a.storage}, {"quantized", a.quantized}, {"elements", a.elements}, {"bytes", a.bytes}};
    if (!a.note.empty()) t["note"] = a.note;
    j["tensors"].push_back(std::move(t));
  }
}

std::string tensor_group(const Tensor& t, const std::string& category) {
  if (t.is_vector()) return "norms";
  if (t.kind == "output") return "output";
  if (category == "token_embd" || t.kind == "token_embd" || t.kind == "per_layer_token_embd" || t.kind == "pos_embd" ||
      t.kind == "token_types")
    return "embeddings";
  if (t.kind.find("_exps") != std::string::npos || t.kind.find("_shexp") != std::string::npos ||
      t.kind.find("ffn_gate_inp") != std::string::npos)
    return "experts";
  if (t.kind.rfind("attn_", 0) == 0) return "attention";
  if (t.kind.rfind("ffn_", 0) == 0) return "ffn";
  return "other";
}

std::vector<GroupSummary> group_totals(const std::vector<TensorAssignment>& tensors) {
  static constexpr std::array<std::string_view, 7> kGroupOrder = {"embeddings", "attention", "ffn", "experts", "norms", "output", "other"};
  std::map<std::string, GroupSummary> groups;
  for (const auto& a : tensors) {
    GroupSummary& g = groups[a.group];
    g.group = a.group;
    ++g.tensors;
    g.elements += a.elements;
    g.bytes += a.bytes;
  }
  std::vector<GroupSummary> out;
  for (auto name : kGroupOrder) {
    auto it = groups.find(std::string(name));
    if (it != groups.end()) out.push_back(it->second);
  }
  return out;
}

}  // namespace optadvisor
