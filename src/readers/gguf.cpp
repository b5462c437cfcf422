// SPDX-License-Identifier: MIT
// GGUF header reader. A bounded little-endian reader walks the header, the
// key/value metadata and the tensor table (ggml-org/ggml docs/gguf.md) and
// stops there; llama.cpp's hyperparameter keys (src/llama-arch.cpp) become a
// ModelSpec and the tensor table the exact weight bytes.
#include "optadvisor/readers/gguf.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace optadvisor {
namespace {

namespace fs = std::filesystem;

// Limits that keep a hostile or damaged file from costing time or memory.
constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kMaxStringBytes = 1 * kMiB;     ///< one key, string value, array element or tensor name
constexpr uint64_t kMaxMetadataBytes = 64 * kMiB;  ///< fixed header plus the key/value section
constexpr uint64_t kMaxHeaderBytes = 128 * kMiB;   ///< ... plus the tensor table
constexpr uint64_t kMaxTensors = 65536;            ///< bounds the tensor table in memory
constexpr uint64_t kMaxTensorNameBytes = 1024;     ///< ggml itself allows 63 (GGML_MAX_NAME)
constexpr uint64_t kMaxMetadataPairs = 1000000;
constexpr uint64_t kFirstChunkBytes = 1 * kMiB;          ///< first read of a file; later reads double it
constexpr uint64_t kKeptArrayElements = 65536;           ///< integer arrays up to this long are kept (per-layer values)
constexpr uint64_t kKeptStringBytes = 64 * 1024;         ///< longer string values (chat templates) are skipped
constexpr uint64_t kMinPairBytes = 8 + 4 + 1;            ///< key length, value type, smallest value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  ///< name length, n_dims, type, offset
constexpr uint32_t kMaxDims = 4;                         ///< GGML_MAX_DIMS
constexpr uint64_t kDefaultAlignment = 32;               ///< GGUF_DEFAULT_ALIGNMENT
constexpr uint64_t kMaxElements = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// Ranges for the hyperparameters; anything beyond is a damaged or hostile file
// (and would make per-layer loops or products run away).
// The model-wide ranges (catalog/model.hpp), shared with every other model source.
constexpr uint64_t kMaxLayers = kMaxModelLayers;
constexpr uint64_t kMaxWidth = kMaxModelWidth;  ///< widths, ranks, vocabulary (heads: checked again by model_from_json)
constexpr uint64_t kMaxExperts = kMaxModelExperts;
constexpr uint64_t kMaxContext = kMaxModelContext;

constexpr const char* kNotGgufHint = "pass a llama.cpp model file (.gguf)";
constexpr const char* kTruncatedHint = "the file is incomplete or damaged; download or convert it again";
constexpr const char* kDamagedHint = "the file is damaged or not a model written by llama.cpp's GGUF writer";

/// GGUF metadata value types (enum gguf_type).
enum ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
  kTypeCount = 13,
};

std::string type_name(uint32_t type) {
  static constexpr std::array<const char*, kTypeCount> kNames = {"UINT8", "INT8",   "UINT16", "INT16",  "UINT32", "INT32",  "FLOAT32",
                                                                 "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64",  "FLOAT64"};
  return type < kTypeCount ? kNames[type] : fmt::format("type {}", type);
}

/// Bytes of one scalar; 0 for STRING, ARRAY and unknown types.
uint64_t scalar_bytes(uint32_t type) {
  switch (type) {
    case kU8:
    case kI8:
    case kBool: return 1;
    case kU16:
    case kI16: return 2;
    case kU32:
    case kI32:
    case kF32: return 4;
    case kU64:
    case kI64:
    case kF64: return 8;
    default: return 0;
  }
}

bool is_integer(uint32_t type) {
  return type == kU8 || type == kI8 || type == kU16 || type == kI16 || type == kU32 || type == kI32 || type == kU64 || type == kI64 ||
         type == kBool;
}

/// An integer scalar's value; UINT64 values past INT64_MAX saturate (and fail the range checks).
int64_t to_int(uint32_t type, uint64_t bits) {
  switch (type) {
    case kI8: return static_cast<int8_t>(static_cast<uint8_t>(bits));
    case kI16: return static_cast<int16_t>(static_cast<uint16_t>(bits));
    case kI32: return static_cast<int32_t>(static_cast<uint32_t>(bits));
    case kI64: return static_cast<int64_t>(bits);
    case kBool: return bits != 0 ? 1 : 0;
    default: return bits > kMaxElements ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(bits);
  }
}

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a > std::numeric_limits<uint64_t>::max() - b ? std::numeric_limits<uint64_t>::max() : a + b;
}

/// The whole file in memory, or a file read in growing chunks up to kMaxHeaderBytes.
class ByteSource {
 public:
  explicit ByteSource(std::string_view bytes) : view_(bytes), total_(bytes.size()) {}
  ByteSource(std::ifstream& in, uint64_t total) : in_(&in), total_(total) {}

  uint64_t total() const { return total_; }

  /// Start of a buffer holding bytes [0, end); precondition end <= min(total, kMaxHeaderBytes).
  /// nullptr when the file cannot be read.
  const char* data_until(uint64_t end) {
    if (in_ == nullptr) return view_.data();
    if (end > buffer_.size()) {
      const uint64_t old = buffer_.size();
      uint64_t want = std::max({end, 2 * old, kFirstChunkBytes});
      want = std::min({want, total_, kMaxHeaderBytes});
      buffer_.resize(want);
      in_->read(buffer_.data() + old, static_cast<std::streamsize>(want - old));
      if (static_cast<uint64_t>(in_->gcount()) != want - old) return nullptr;
    }
    return buffer_.data();
  }

 private:
  std::string_view view_;
  std::ifstream* in_ = nullptr;
  std::string buffer_;
  uint64_t total_ = 0;
};

/// Sequential little-endian reads with bounds, limits and messages naming the file.
class Reader {
 public:
  Reader(ByteSource& source, const std::string& name) : source_(source), name_(name) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return source_.total() - pos_; }
  void set_limit(uint64_t limit_bytes, std::string what) {
    limit_bytes_ = limit_bytes;
    limit_what_ = std::move(what);
  }

  [[noreturn]] void fail(const std::string& what, const std::string& hint = kDamagedHint) const {
    throw bad_input(fmt::format("{}: {}", name_, what), hint);
  }

  const unsigned char* take(uint64_t n, std::string_view what) {
    check_room(n, what);
    const char* base = source_.data_until(pos_ + n);
    if (base == nullptr) fail("cannot read the file", "check that the file is readable and not being written");
    const auto* p = reinterpret_cast<const unsigned char*>(base) + pos_;
    pos_ += n;
    return p;
  }

  void skip(uint64_t n, std::string_view what) {
    check_room(n, what);
    pos_ += n;
  }

  uint64_t little_endian(uint64_t n, std::string_view what) {
    const unsigned char* p = take(n, what);
    uint64_t v = 0;
    for (uint64_t i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
  }
  uint32_t u32(std::string_view what) { return static_cast<uint32_t>(little_endian(4, what)); }
  uint64_t u64(std::string_view what) { return little_endian(8, what); }

  /// The uint64 length of a gguf_string, checked against kMaxStringBytes.
  uint64_t string_length(std::string_view what) {
    const uint64_t at = pos_;
    const uint64_t n = u64(what);
    if (n > kMaxStringBytes)
      fail(fmt::format("string length {} at offset {} ({}) exceeds the {} MiB limit", n, at, what, kMaxStringBytes / kMiB));
    return n;
  }
  std::string string_bytes(uint64_t n, std::string_view what) {
    const unsigned char* p = take(n, what);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  std::string string(std::string_view what) { return string_bytes(string_length(what), what); }

 private:
  void check_room(uint64_t n, std::string_view what) const {
    if (n > left())
      fail(fmt::format("truncated: {} needs {} bytes at offset {} but the file ends at {}", what, n, pos_, source_.total()),
           kTruncatedHint);
    if (pos_ + n > limit_bytes_)
      fail(fmt::format("{} at offset {} runs past the {} MiB limit on the {}", what, pos_, limit_bytes_ / kMiB, limit_what_));
  }

  ByteSource& source_;
  const std::string& name_;
  uint64_t pos_ = 0;
  uint64_t limit_bytes_ = kMaxMetadataBytes;
  std::string limit_what_ = "metadata";
};

/// One metadata value. Large arrays (the tokenizer) keep only their length.
struct Value {
  uint32_t type = 0;
  uint64_t bits = 0;          ///< scalar, little-endian raw bits
  std::string text;           ///< STRING, when at most kKeptStringBytes
  uint32_t element_type = 0;  ///< ARRAY
  uint64_t count = 0;         ///< ARRAY
  std::vector<int64_t> ints;  ///< ARRAY of integers or bools, when at most kKeptArrayElements
  bool ints_kept = false;
};

Value read_value(Reader& r, const std::string& key, uint32_t type) {
  Value v;
  v.type = type;
  const std::string what = "the value of '" + key + "'";
  if (type == kString) {
    const uint64_t n = r.string_length(what);
    if (n <= kKeptStringBytes) {
      v.text = r.string_bytes(n, what);
    } else {
      r.skip(n, what);
    }
  } else if (type == kArray) {
    v.element_type = r.u32("the element type of '" + key + "'");
    v.count = r.u64("the length of '" + key + "'");
    if (v.element_type == kArray) r.fail(fmt::format("metadata '{}' is an array of arrays, which GGUF readers do not accept", key));
    if (v.element_type >= kTypeCount) r.fail(fmt::format("metadata '{}' is an array of unknown element type {}", key, v.element_type));
    const uint64_t element_bytes = v.element_type == kString ? 8 : scalar_bytes(v.element_type);
    if (v.count > r.left() / element_bytes)
      r.fail(fmt::format("array '{}' claims {} elements of {} but only {} bytes are left in the file", key, v.count,
                         type_name(v.element_type), r.left()));
    const std::string element = "an element of '" + key + "'";
    if (v.element_type == kString) {
      for (uint64_t i = 0; i < v.count; ++i) r.skip(r.string_length(element), element);
    } else if (is_integer(v.element_type) && v.count <= kKeptArrayElements) {
      v.ints.reserve(v.count);
      for (uint64_t i = 0; i < v.count; ++i) v.ints.push_back(to_int(v.element_type, r.little_endian(element_bytes, element)));
      v.ints_kept = true;
    } else {
      r.skip(v.count * element_bytes, what);
    }
  } else if (scalar_bytes(type) > 0) {
    v.bits = r.little_endian(scalar_bytes(type), what);
  } else {
    r.fail(fmt::format("metadata '{}' has unknown value type {}", key, type));
  }
  return v;
}

/// One tensor-info entry with its ggml type resolved.
struct TensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  std::array<uint64_t, kMaxDims> ne = {1, 1, 1, 1};
  uint32_t type_id = 0;
  uint64_t offset = 0;  ///< from the start of the data section
  const GgmlType* type = nullptr;
  uint64_t elements = 0;
  uint64_t bytes = 0;
  int layer = -1;    ///< N of "blk.N.", -1 outside the blocks
  std::string kind;  ///< name without "blk.N." and ".weight"
};

/// Splits "blk.3.attn_v.weight" into layer 3 and kind "attn_v" (biases keep ".bias").
void split_name(TensorInfo& t) {
  std::string_view rest = t.name;
  if (rest.substr(0, 4) == "blk.") {
    std::size_t i = 4;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') ++i;
    if (i > 4 && i - 4 <= 9 && i < rest.size() && rest[i] == '.') {
      t.layer = std::stoi(std::string(rest.substr(4, i - 4)));
      rest.remove_prefix(i + 1);
    }
  }
  constexpr std::string_view kWeight = ".weight";
  if (rest.size() > kWeight.size() && rest.substr(rest.size() - kWeight.size()) == kWeight) rest.remove_suffix(kWeight.size());
  t.kind = std::string(rest);
}

TensorInfo read_tensor_info(Reader& r, uint64_t index, const QuantDb& db) {
  TensorInfo t;
  const std::string what = fmt::format("the name of tensor {}", index);
  const uint64_t name_bytes = r.string_length(what);
  if (name_bytes > kMaxTensorNameBytes)
    r.fail(fmt::format("{} is {} bytes long; the limit is {}", what, name_bytes, kMaxTensorNameBytes), kDamagedHint);
  t.name = r.string_bytes(name_bytes, what);
  const std::string label = "tensor '" + t.name + "'";
  t.n_dims = r.u32("the dimension count of " + label);
  if (t.n_dims > kMaxDims) r.fail(fmt::format("{} has {} dimensions; GGUF allows at most {}", label, t.n_dims, kMaxDims));
  t.elements = 1;
  for (uint32_t d = 0; d < t.n_dims; ++d) {
    t.ne[d] = r.u64("a dimension of " + label);
    if (t.ne[d] > kMaxElements) r.fail(fmt::format("{} has a negative or absurd dimension {}", label, t.ne[d]));
    if (t.ne[d] != 0 && t.elements > kMaxElements / t.ne[d])
      r.fail(fmt::format("{}: the product of its dimensions overflows a 64-bit element count", label));
    t.elements *= t.ne[d];
  }
  t.type_id = r.u32("the type of " + label);
  t.offset = r.u64("the data offset of " + label);
  t.type = db.ggml_type_by_id(t.type_id);
  if (t.type == nullptr)
    r.fail(fmt::format("{} has unknown ggml type {}", label, t.type_id),
           "the file may use a type newer than this optadvisor knows, or be damaged");
  if (t.type->block_elements == 0 || t.type->bytes_per_block == 0)
    r.fail(fmt::format("{} has ggml type {} ({}), which has no block layout", label, t.type->id, t.type_id));
  if (t.ne[0] % t.type->block_elements != 0)
    r.fail(fmt::format("{} has rows of {} elements, not a multiple of {}'s {}-element blocks", label, t.ne[0], t.type->id,
                       t.type->block_elements));
  const uint64_t blocks = t.elements / t.type->block_elements;
  if (blocks > std::numeric_limits<uint64_t>::max() / t.type->bytes_per_block)
    r.fail(fmt::format("{} is too large: its byte size overflows 64 bits", label));
  t.bytes = blocks * t.type->bytes_per_block;
  split_name(t);
  return t;
}

/// llama_ftype values (llama.cpp include/llama.h) by their enum suffix.
std::optional<std::string_view> llama_ftype_name(uint64_t ftype) {
  static const std::map<uint64_t, std::string_view> kNames = {
      {0, "ALL_F32"},        {1, "MOSTLY_F16"},        {2, "MOSTLY_Q4_0"},      {3, "MOSTLY_Q4_1"},      {4, "MOSTLY_Q4_1_SOME_F16"},
      {7, "MOSTLY_Q8_0"},    {8, "MOSTLY_Q5_0"},       {9, "MOSTLY_Q5_1"},      {10, "MOSTLY_Q2_K"},     {11, "MOSTLY_Q3_K_S"},
      {12, "MOSTLY_Q3_K_M"}, {13, "MOSTLY_Q3_K_L"},    {14, "MOSTLY_Q4_K_S"},   {15, "MOSTLY_Q4_K_M"},   {16, "MOSTLY_Q5_K_S"},
      {17, "MOSTLY_Q5_K_M"}, {18, "MOSTLY_Q6_K"},      {19, "MOSTLY_IQ2_XXS"},  {20, "MOSTLY_IQ2_XS"},   {21, "MOSTLY_Q2_K_S"},
      {22, "MOSTLY_IQ3_XS"}, {23, "MOSTLY_IQ3_XXS"},   {24, "MOSTLY_IQ1_S"},    {25, "MOSTLY_IQ4_NL"},   {26, "MOSTLY_IQ3_S"},
      {27, "MOSTLY_IQ3_M"},  {28, "MOSTLY_IQ2_S"},     {29, "MOSTLY_IQ2_M"},    {30, "MOSTLY_IQ4_XS"},   {31, "MOSTLY_IQ1_M"},
      {32, "MOSTLY_BF16"},   {33, "MOSTLY_Q4_0_4_4"},  {34, "MOSTLY_Q4_0_4_8"}, {35, "MOSTLY_Q4_0_8_8"}, {36, "MOSTLY_TQ1_0"},
      {37, "MOSTLY_TQ2_0"},  {38, "MOSTLY_MXFP4_MOE"}, {39, "MOSTLY_NVFP4"}};
  auto it = kNames.find(ftype);
  if (it == kNames.end()) return std::nullopt;
  return it->second;
}

Tensor to_tensor(const TensorInfo& info) {
  Tensor t;
  t.name = info.name;
  t.kind = info.kind;
  t.layer = info.layer;
  t.row_elements = info.ne[0];
  t.rows = info.ne[1];
  t.slices = info.ne[2] * info.ne[3];  // cannot overflow: the product of all four fits in int64
  return t;
}

WeightsBreakdown weights_from_table(const std::vector<TensorInfo>& infos, const QuantDb& db, const std::string& format_id,
                                    uint64_t header_bytes, uint64_t file_bytes) {
  WeightsBreakdown out;
  out.format_id = format_id;
  out.container = Container::kGguf;
  const bool tied = std::none_of(infos.begin(), infos.end(), [](const TensorInfo& t) { return t.name == "output.weight"; });
  std::map<std::string, uint64_t> removed;
  out.tensors.reserve(infos.size());
  for (const TensorInfo& info : infos) {
    const Tensor t = to_tensor(info);
    TensorAssignment a;
    a.name = info.name;
    a.kind = info.kind;
    const std::string category = db.category_of(info.name);
    a.category = category;
    if (tied && category == "token_embd") {
      a.category = "output";
      a.note = "tied embeddings: also the output head";
    }
    a.group = tensor_group(t, category);
    a.storage = info.type->id;
    a.quantized = info.type->quantized;
    a.elements = info.elements;
    a.bytes = info.bytes;
    if (info.type->removed) {
      a.note = fmt::format("{} was removed from llama.cpp; current builds cannot load this tensor", info.type->id);
      ++removed[info.type->id];
    }
    out.weights_bytes += a.bytes;
    out.params += a.elements;
    out.tensors.push_back(std::move(a));
  }
  out.groups = group_totals(out.tensors);
  for (const auto& [type, count] : removed)
    out.notes.push_back(fmt::format("{} tensors use {}, which current llama.cpp builds no longer load", count, type));
  out.bits_per_weight = out.params > 0 ? 8.0 * static_cast<double>(out.weights_bytes) / static_cast<double>(out.params) : 0.0;
  out.header_bytes = header_bytes;
  out.file_bytes = file_bytes;
  out.file_overhead_modeled = true;
  return out;
}

/// Turns the metadata and tensor table into a ModelSpec, collecting notes.
class SpecBuilder {
 public:
  SpecBuilder(const std::map<std::string, Value>& meta, const std::vector<TensorInfo>& tensors, const std::string& name,
              std::vector<std::string>& notes)
      : meta_(meta), tensors_(tensors), name_(name), notes_(notes) {
    for (const TensorInfo& t : tensors_) {
      by_name_.emplace(t.name, &t);
      kinds_.insert(t.kind);
      if (t.layer >= 0 && t.kind == "ffn_gate_inp") router_layers_.insert(static_cast<uint64_t>(t.layer));
    }
  }

  ModelSpec build();

 private:
  [[noreturn]] void fail(const std::string& what, const std::string& hint = kDamagedHint) const {
    throw bad_input(fmt::format("{}: {}", name_, what), hint);
  }
  const Value* find(const std::string& key) const {
    auto it = meta_.find(key);
    return it == meta_.end() ? nullptr : &it->second;
  }
  std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }

  std::optional<std::string> string(const std::string& k) const {
    const Value* v = find(k);
    if (v == nullptr) return std::nullopt;
    if (v->type != kString) fail(fmt::format("metadata '{}' is {}, expected a string", k, type_name(v->type)));
    return v->text;
  }

  std::optional<double> number(const std::string& k) const {
    const Value* v = find(k);
    if (v == nullptr) return std::nullopt;
    if (v->type == kF32) {
      float f = 0;
      const auto raw = static_cast<uint32_t>(v->bits);
      std::memcpy(&f, &raw, sizeof f);
      return f;
    }
    if (v->type == kF64) {
      double d = 0;
      std::memcpy(&d, &v->bits, sizeof d);
      return d;
    }
    if (is_integer(v->type)) return static_cast<double>(to_int(v->type, v->bits));
    fail(fmt::format("metadata '{}' is {}, expected a number", k, type_name(v->type)));
  }

  /// A non-negative integer at most `max`. A per-layer integer array gives its
  /// largest value (noted when the layers differ).
  std::optional<uint64_t> uint(const std::string& k, uint64_t max) const {
    const Value* v = find(k);
    if (v == nullptr) return std::nullopt;
    int64_t value = 0;
    if (is_integer(v->type)) {
      value = to_int(v->type, v->bits);
    } else if (v->type == kArray && v->ints_kept && !v->ints.empty()) {
      const auto [lo, hi] = std::minmax_element(v->ints.begin(), v->ints.end());
      if (*lo < 0) fail(fmt::format("metadata '{}' holds a negative value {}", k, *lo));
      if (*lo != *hi) notes_.push_back(fmt::format("{} varies by layer ({} to {}); the largest is used", k, *lo, *hi));
      value = *hi;
    } else {
      fail(fmt::format("metadata '{}' is {}, expected an integer", k,
                       v->type == kArray ? "an array of " + type_name(v->element_type) : type_name(v->type)));
    }
    if (value < 0) fail(fmt::format("metadata '{}' is {}, expected a non-negative integer", k, value));
    if (static_cast<uint64_t>(value) > max) fail(fmt::format("metadata '{}' is {}, beyond any real model (at most {})", k, value, max));
    return static_cast<uint64_t>(value);
  }

  const TensorInfo* tensor(const std::string& n) const {
    auto it = by_name_.find(n);
    return it == by_name_.end() ? nullptr : it->second;
  }
  /// The first tensor of kind `kind` in any block.
  const TensorInfo* first_of_kind(std::string_view kind) const {
    for (const TensorInfo& t : tensors_)
      if (t.layer >= 0 && t.kind == kind) return &t;
    return nullptr;
  }
  bool has_kind(std::string_view kind) const { return kinds_.count(std::string(kind)) > 0; }

  void read_model_type(ModelSpec& s);
  void read_depth(ModelSpec& s) const;
  void read_width(ModelSpec& s) const;
  void read_vocabulary(ModelSpec& s) const;
  void read_attention(ModelSpec& s);
  void read_experts(ModelSpec& s);
  void read_sliding_window(ModelSpec& s);
  void read_traits(ModelSpec& s) const;
  void read_linear_attention(ModelSpec& s);
  void read_mamba(ModelSpec& s);
  void read_short_conv(ModelSpec& s);
  void read_gemma3n(ModelSpec& s);

  const std::map<std::string, Value>& meta_;
  const std::vector<TensorInfo>& tensors_;
  const std::string& name_;
  std::vector<std::string>& notes_;
  std::map<std::string, const TensorInfo*> by_name_;
  std::set<std::string> kinds_;
  std::set<uint64_t> router_layers_;
  std::string arch_;
  bool known_arch_ = false;
};

void SpecBuilder::read_attention(ModelSpec& s) {
  const uint64_t heads = uint(key("attention.head_count"), kMaxWidth).value_or(0);
  if (heads == 0) fail(fmt::format("metadata lacks {} (or it is 0)", key("attention.head_count")));
  s.num_attention_heads = heads;
  s.num_key_value_heads = uint(key("attention.head_count_kv"), kMaxWidth).value_or(heads);

  const uint64_t kv_lora = uint(key("attention.kv_lora_rank"), kMaxWidth).value_or(0);
  if (kv_lora > 0) {
    // MLA (DeepSeek-V2/V3). Current converters write key/value_length for the
    // absorbed MQA form (kv_lora_rank + rope, kv_lora_rank) and the per-head
    // widths as key/value_length_mla; older files only key/value_length.
    s.kv_lora_rank = kv_lora;
    s.q_lora_rank = uint(key("attention.q_lora_rank"), kMaxWidth).value_or(0);
    const auto rope = uint(key("rope.dimension_count"), kMaxWidth);
    if (!rope || *rope == 0) fail(fmt::format("MLA model without {}", key("rope.dimension_count")));
    s.qk_rope_head_dim = *rope;
    auto k_len = uint(key("attention.key_length_mla"), kMaxWidth);
    auto v_len = uint(key("attention.value_length_mla"), kMaxWidth);
    if (!k_len) k_len = uint(key("attention.key_length"), kMaxWidth);
    if (!v_len) v_len = uint(key("attention.value_length"), kMaxWidth);
    if (!k_len || !v_len) fail(fmt::format("MLA model without {} and {}", key("attention.key_length"), key("attention.value_length")));
    if (*k_len <= *rope) fail(fmt::format("MLA key length {} is not larger than the rotary part {}", *k_len, *rope));
    s.qk_nope_head_dim = *k_len - *rope;
    s.v_head_dim = *v_len;
    s.head_dim = s.qk_nope_head_dim + s.qk_rope_head_dim;
    // The cache holds one latent per token; heads only matter for compute.
    s.num_key_value_heads = heads;
    return;
  }

  if (auto k_len = uint(key("attention.key_length"), kMaxWidth)) {
    s.head_dim = *k_len;
  } else if (const TensorInfo* k = first_of_kind("attn_k");
             k != nullptr && s.num_key_value_heads > 0 && k->ne[1] % s.num_key_value_heads == 0) {
    s.head_dim = k->ne[1] / s.num_key_value_heads;
  } else {
    s.head_dim = s.hidden_size / heads;
  }
  const auto v_len = uint(key("attention.value_length"), kMaxWidth);
  if (v_len && *v_len != s.head_dim)
    notes_.push_back(
        fmt::format("value heads are {} wide and key heads {}; the KV cache is sized with {} for both", *v_len, s.head_dim, s.head_dim));
}

void SpecBuilder::read_experts(ModelSpec& s) {
  const uint64_t experts = uint(key("expert_count"), kMaxExperts).value_or(0);
  const uint64_t dense_ffn = uint(key("feed_forward_length"), kMaxWidth).value_or(0);
  s.intermediate_size = dense_ffn;
  if (experts > 0) {
    s.num_experts = experts;
    s.num_experts_per_tok = uint(key("expert_used_count"), kMaxExperts).value_or(0);
    uint64_t width = uint(key("expert_feed_forward_length"), kMaxWidth).value_or(0);
    if (width == 0) {
      if (const TensorInfo* down = first_of_kind("ffn_down_exps")) {
        width = down->ne[0];
      } else {
        width = dense_ffn;  // Mixtral in the llama architecture: feed_forward_length is the expert width
      }
    }
    s.moe_intermediate_size = width;
    if (s.model_type == "mixtral" || s.model_type == "gpt_oss") {
      if (s.intermediate_size == 0) s.intermediate_size = width;  // HF's convention for these families
    }
    if (const TensorInfo* up = first_of_kind("ffn_up_shexp")) {
      s.shared_expert_intermediate_size = up->ne[1];
    } else if (auto shared = uint(key("expert_shared_feed_forward_length"), kMaxWidth)) {
      s.shared_expert_intermediate_size = *shared * std::max<uint64_t>(1, uint(key("expert_shared_count"), kMaxExperts).value_or(1));
    } else if (auto count = uint(key("expert_shared_count"), kMaxExperts)) {
      s.shared_expert_intermediate_size = *count * width;
    }
    // Which layers route: the ones with a router tensor; the rest are dense.
    if (!router_layers_.empty()) {
      uint64_t i = 0;
      while (i < s.num_hidden_layers && router_layers_.count(i) == 0) ++i;
      s.first_k_dense_replace = i;
      for (; i < s.num_hidden_layers; ++i)
        if (router_layers_.count(i) == 0) s.mlp_only_layers.push_back(i);
    } else if (auto lead = uint(key("leading_dense_block_count"), kMaxLayers)) {
      s.first_k_dense_replace = std::min(*lead, s.num_hidden_layers);
    }
  }
  // A dense FFN layer needs a width; take it from the tensors when the key is absent.
  const bool needs_dense = s.num_experts == 0 || s.first_k_dense_replace > 0 || !s.mlp_only_layers.empty();
  if (needs_dense && s.intermediate_size == 0) {
    if (const TensorInfo* down = first_of_kind("ffn_down")) {
      s.intermediate_size = down->ne[0];
      notes_.push_back(
          fmt::format("{} absent: the FFN width {} is read from the tensor shapes", key("feed_forward_length"), s.intermediate_size));
    }
  }
}

void SpecBuilder::read_sliding_window(ModelSpec& s) {
  const uint64_t window = uint(key("attention.sliding_window"), kMaxContext).value_or(0);
  const Value* pattern = find(key("attention.sliding_window_pattern"));
  const std::string& mt = s.model_type;
  const bool swa_arch = known_arch_ && (mt == "gemma2" || mt == "gemma3_text" || mt == "gemma3n_text" || mt == "gpt_oss");
  if (window == 0) {
    if (swa_arch && mt != "gemma3_text" && mt != "gemma3n_text") {
      // llama.cpp requires the key for these; fall back to the HF default.
      s.sliding_window = mt == "gemma2" ? 4096 : 128;
      s.sliding_window_pattern = 2;
      notes_.push_back(fmt::format("{} absent: assumed {} tokens", key("attention.sliding_window"), s.sliding_window));
    }
    return;
  }
  if (pattern != nullptr) {
    // An explicit pattern: a period N, or one flag per layer (true = sliding).
    if (pattern->type == kArray && pattern->ints_kept && pattern->ints.size() == s.num_hidden_layers) {
      bool any = false;
      for (int64_t flag : pattern->ints) {
        s.layer_types.push_back(flag != 0 ? "sliding_attention" : "full_attention");
        any = any || flag != 0;
      }
      if (!any)
        s.layer_types.clear();
      else
        s.sliding_window = window;
      return;
    }
    if (is_integer(pattern->type)) {
      s.sliding_window = window;
      s.sliding_window_pattern = uint(key("attention.sliding_window_pattern"), kMaxLayers).value_or(0);
      return;
    }
    notes_.push_back(fmt::format("{} has an unexpected form and is ignored", key("attention.sliding_window_pattern")));
  }
  if (swa_arch) {
    // llama.cpp hard-codes the layer pattern: Gemma-2 and gpt-oss alternate
    // (set_swa_pattern(2)), Gemma-3 has five sliding layers per full one (6), Gemma 3n four (5).
    s.sliding_window = window;
    s.sliding_window_pattern = mt == "gemma3_text" ? 6 : mt == "gemma3n_text" ? 5 : 2;
    return;
  }
  if (mt == "phi3" && known_arch_) {
    notes_.push_back(fmt::format("sliding window of {} tokens ignored: llama.cpp disables Phi-3's sliding-window attention", window));
    return;
  }
  if (known_arch_) {
    notes_.push_back(fmt::format("sliding window of {} tokens ignored: llama.cpp runs architecture '{}' without sliding-window attention",
                                 window, arch_));
    return;
  }
  notes_.push_back(
      fmt::format("sliding window of {} tokens ignored: llama.cpp's layer pattern for architecture '{}' is not modelled, so every "
                  "layer is assumed to cache the whole context",
                  window, arch_));
}

void SpecBuilder::read_traits(ModelSpec& s) const {
  // The tensor table says exactly which biases and norms the file carries.
  s.attention_bias = has_kind("attn_output.bias");
  s.qkv_bias = !s.attention_bias && (has_kind("attn_q.bias") || has_kind("attn_qkv.bias"));
  s.mlp_bias = has_kind("ffn_up.bias") || has_kind("ffn_down.bias") || has_kind("ffn_gate.bias") || has_kind("ffn_up_exps.bias") ||
               has_kind("ffn_down_exps.bias") || has_kind("ffn_gate_exps.bias");
  s.router_bias = has_kind("ffn_gate_inp.bias");
  s.router_score_correction_bias = has_kind("exp_probs_b.bias") || has_kind("exp_probs_b");
  s.qk_norm = has_kind("attn_q_norm");
  s.sandwich_norm = has_kind("post_ffw_norm");
  s.attention_sinks = has_kind("attn_sinks");
  s.tie_word_embeddings = tensor("output.weight") == nullptr;
  // MiniMax-M2's q/k norms span every head (qk_norm_type per_layer); Qwen3-Next's q projection also
  // emits the output gate; Qwen's shared expert has a one-wide gate.
  const uint64_t q_width = s.num_attention_heads * s.head_dim;
  if (const TensorInfo* qn = first_of_kind("attn_q_norm"); qn != nullptr && s.num_attention_heads > 1 && qn->ne[0] == q_width)
    s.qk_norm_type = "per_layer";
  if (const TensorInfo* q = first_of_kind("attn_q"); q != nullptr && q_width > 0 && q->ne[1] == 2 * q_width) s.attn_output_gate = true;
  s.shared_expert_gate = has_kind("ffn_gate_inp_shexp");
}

/// Gated DeltaNet layers (llama.cpp qwen3next, qwen35, qwen35moe): the blocks with an ssm_conv1d
/// tensor and no ssm_d (which marks Mamba-2). Widths from the
/// tensors (value heads from ssm_a, value head width from ssm_norm, kernel and q/k/v channels from
/// ssm_conv1d) and the key heads and key width from ssm.group_count and ssm.state_size.
void SpecBuilder::read_linear_attention(ModelSpec& s) {
  if (has_kind("ssm_d")) return;  // Mamba-2: read_mamba
  std::set<uint64_t> linear;
  for (const TensorInfo& t : tensors_)
    if (t.layer >= 0 && t.kind == "ssm_conv1d") linear.insert(static_cast<uint64_t>(t.layer));
  if (linear.empty()) return;
  const TensorInfo* a = first_of_kind("ssm_a");
  const TensorInfo* norm = first_of_kind("ssm_norm");
  const TensorInfo* conv = first_of_kind("ssm_conv1d");
  if (a == nullptr || norm == nullptr || conv == nullptr)
    fail("linear-attention blocks (ssm_in) without ssm_a, ssm_norm and ssm_conv1d tensors");
  s.linear_num_value_heads = a->ne[0];
  s.linear_value_head_dim = norm->ne[0];
  s.linear_conv_kernel_dim = conv->ne[0];
  const uint64_t qk_channels = conv->ne[1] > s.linear_num_value_heads * s.linear_value_head_dim
                                   ? conv->ne[1] - s.linear_num_value_heads * s.linear_value_head_dim
                                   : 0;
  s.linear_key_head_dim = uint(key("ssm.state_size"), kMaxWidth).value_or(s.linear_value_head_dim);
  s.linear_num_key_heads =
      uint(key("ssm.group_count"), kMaxModelHeads).value_or(s.linear_key_head_dim > 0 ? qk_channels / (2 * s.linear_key_head_dim) : 0);
  for (uint64_t i = 0; i < s.num_hidden_layers; ++i) s.layer_types.push_back(linear.count(i) > 0 ? "linear_attention" : "full_attention");
  notes_.push_back(
      fmt::format("{} of {} blocks are Gated DeltaNet linear attention (a fixed state, no KV cache)", linear.size(), s.num_hidden_layers));
}

/// Mamba-2 layers (llama.cpp granitehybrid, nemotron_h, nemotron_h_moe): the blocks with ssm_d.
/// Heads from ssm_a, inner width from ssm.inner_size (else ssm_out), state and groups from
/// ssm.state_size and ssm.group_count, kernel from ssm_conv1d. Nemotron-H blocks hold one mixer
/// each: the pattern is read back from which tensors every block has.
void SpecBuilder::read_mamba(ModelSpec& s) {
  std::set<uint64_t> mamba;
  for (const TensorInfo& t : tensors_)
    if (t.layer >= 0 && t.kind == "ssm_d") mamba.insert(static_cast<uint64_t>(t.layer));
  if (mamba.empty()) return;
  const TensorInfo* a = first_of_kind("ssm_a");
  const TensorInfo* conv = first_of_kind("ssm_conv1d");
  const TensorInfo* out = first_of_kind("ssm_out");
  if (a == nullptr || conv == nullptr || out == nullptr) fail("Mamba-2 blocks (ssm_d) without ssm_a, ssm_conv1d and ssm_out tensors");
  s.mamba_n_heads = a->ne[0];
  const uint64_t inner = uint(key("ssm.inner_size"), kMaxWidth).value_or(out->ne[0]);
  s.mamba_d_head = s.mamba_n_heads > 0 ? inner / s.mamba_n_heads : 0;
  s.mamba_d_state = uint(key("ssm.state_size"), kMaxWidth).value_or(0);
  s.mamba_n_groups = uint(key("ssm.group_count"), kMaxModelHeads).value_or(1);
  s.mamba_d_conv = conv->ne[0];
  s.mamba_conv_bias = has_kind("ssm_conv1d.bias");
  if (s.mamba_d_state == 0) fail(fmt::format("Mamba-2 blocks but no {}", key("ssm.state_size")));
  if (s.model_type == "nemotron_h") {
    std::string pattern;
    for (uint64_t i = 0; i < s.num_hidden_layers; ++i) {
      const std::string p = "blk." + std::to_string(i) + ".";
      char kind = '*';
      if (mamba.count(i) > 0) {
        kind = 'M';
      } else if (tensor(p + "ffn_up_exps.weight") != nullptr) {
        kind = 'E';
      } else if (tensor(p + "ffn_up.weight") != nullptr) {
        kind = '-';
      }
      pattern += kind;
    }
    s.hybrid_override_pattern = pattern;
    s.first_k_dense_replace = 0;  // the pattern says which blocks route
    s.mlp_only_layers.clear();
    if (const TensorInfo* up = first_of_kind("ffn_up"); up != nullptr) s.intermediate_size = up->ne[1];
    // Latent MoE (Nemotron-3-Super): ffn_latent_down is hidden -> latent; the experts read the latent.
    if (const TensorInfo* latent = first_of_kind("ffn_latent_down"); latent != nullptr) s.moe_latent_size = latent->ne[1];
  } else {
    for (uint64_t i = 0; i < s.num_hidden_layers; ++i) s.layer_types.push_back(mamba.count(i) > 0 ? "mamba" : "full_attention");
  }
  notes_.push_back(fmt::format("{} of {} blocks are Mamba-2 (a fixed state, no KV cache)", mamba.size(), s.num_hidden_layers));
}

/// LFM2 short-convolution layers (llama.cpp lfm2moe): the blocks with shortconv.conv; the taps from
/// shortconv.l_cache, else the conv tensor's ne[0]; a bias when shortconv.in_proj.bias is present.
void SpecBuilder::read_short_conv(ModelSpec& s) {
  std::set<uint64_t> conv;
  for (const TensorInfo& t : tensors_)
    if (t.layer >= 0 && t.kind == "shortconv.conv") conv.insert(static_cast<uint64_t>(t.layer));
  if (conv.empty()) return;
  s.conv_L_cache = uint(key("shortconv.l_cache"), kMaxWidth).value_or(first_of_kind("shortconv.conv")->ne[0]);
  s.conv_bias = has_kind("shortconv.in_proj.bias");
  for (uint64_t i = 0; i < s.num_hidden_layers; ++i) s.layer_types.push_back(conv.count(i) > 0 ? "conv" : "full_attention");
  notes_.push_back(fmt::format("{} of {} blocks are short convolutions (a fixed state, no KV cache)", conv.size(), s.num_hidden_layers));
}

/// Gemma 3n (llama.cpp gemma3n): the per-layer input width, the per-layer table's rows, the AltUp
/// streams and the LAuReL rank from the tensors (keys where the converter writes them), and the
/// KV-shared layers from attention.shared_kv_layers, which published files write as a float.
void SpecBuilder::read_gemma3n(ModelSpec& s) {
  if (s.model_type != "gemma3n_text") return;
  const TensorInfo* table = tensor("per_layer_token_embd.weight");
  const TensorInfo* norm = tensor("per_layer_proj_norm.weight");
  const TensorInfo* altup = tensor("altup_proj.weight");
  const TensorInfo* laurel = first_of_kind("laurel_l");
  if (table == nullptr || norm == nullptr || altup == nullptr || laurel == nullptr)
    fail("a gemma3n file without its per_layer_token_embd, per_layer_proj_norm, altup_proj and laurel_l tensors");
  s.hidden_size_per_layer_input = uint(key("embedding_length_per_layer_input"), kMaxWidth).value_or(norm->ne[0]);
  s.vocab_size_per_layer_input = table->ne[1];
  s.altup_num_inputs = uint(key("altup.num_inputs"), kMaxModelHeads).value_or(altup->ne[2] + 1);
  s.laurel_rank = laurel->ne[1];
  const std::optional<double> shared = number(key("attention.shared_kv_layers"));
  if (shared && *shared >= 1 && *shared < static_cast<double>(s.num_hidden_layers)) {
    s.num_kv_shared_layers = static_cast<uint64_t>(*shared);
  } else {
    notes_.push_back(fmt::format("{} absent or out of range: every layer is taken to keep its own KV cache", key("attention.shared_kv_layers")));
  }
}

/// The model_type each modelled llama.cpp architecture reads as.
const std::map<std::string, std::string>& model_types() {
  static const std::map<std::string, std::string> kModelTypes = {{"llama", "llama"},
                                                                 {"mistral", "llama"},
                                                                 {"mistral3", "llama"},
                                                                 {"mixtral", "mixtral"},
                                                                 {"qwen2", "qwen2"},
                                                                 {"qwen3", "qwen3"},
                                                                 {"qwen3moe", "qwen3_moe"},
                                                                 {"gemma2", "gemma2"},
                                                                 {"gemma3", "gemma3_text"},
                                                                 {"gemma3n", "gemma3n_text"},
                                                                 {"phi3", "phi3"},
                                                                 {"deepseek2", "deepseek_v3"},
                                                                 {"gpt-oss", "gpt_oss"},
                                                                 {"gptoss", "gpt_oss"},
                                                                 {"minimax-m2", "minimax_m2"},
                                                                 {"qwen3next", "qwen3_next"},
                                                                 {"qwen35", "qwen3_5_text"},
                                                                 {"qwen35moe", "qwen3_5_moe_text"},
                                                                 {"nemotron_h", "nemotron_h"},
                                                                 {"nemotron_h_moe", "nemotron_h"},
                                                                 {"granitehybrid", "granitemoehybrid"},
                                                                 {"lfm2moe", "lfm2_moe"}};
  return kModelTypes;
}

void SpecBuilder::read_model_type(ModelSpec& s) {
  const auto& types = model_types();
  auto known = types.find(arch_);
  known_arch_ = known != types.end();
  s.model_type = known_arch_ ? known->second : "llama";
  if (!known_arch_)
    notes_.push_back(fmt::format("architecture '{}' is not modelled: treated as llama-like with the dimensions read from the file", arch_));
}

/// Depth: block_count, else the blocks in the tensor table; multi-token-prediction blocks are not layers.
void SpecBuilder::read_depth(ModelSpec& s) const {
  uint64_t max_layer = 0;
  for (const TensorInfo& t : tensors_)
    if (t.layer >= 0) max_layer = std::max<uint64_t>(max_layer, static_cast<uint64_t>(t.layer) + 1);
  if (auto layers = uint(key("block_count"), kMaxLayers)) {
    s.num_hidden_layers = *layers;
  } else if (max_layer > 0 && max_layer <= kMaxLayers) {
    s.num_hidden_layers = max_layer;
    notes_.push_back(fmt::format("{} absent: {} layers counted in the tensor table", key("block_count"), max_layer));
  }
  if (s.num_hidden_layers == 0) fail(fmt::format("metadata lacks {} (or it is 0)", key("block_count")));
  const uint64_t nextn = uint(key("nextn_predict_layers"), kMaxLayers).value_or(0);
  if (nextn > 0 && nextn < s.num_hidden_layers) {
    s.num_hidden_layers -= nextn;
    notes_.push_back(fmt::format("{} multi-token-prediction block(s) in the file are not counted as layers", nextn));
  }
}

/// Width: embedding_length, else token_embd's ne[0].
void SpecBuilder::read_width(ModelSpec& s) const {
  const TensorInfo* embd = tensor("token_embd.weight");
  if (auto hidden = uint(key("embedding_length"), kMaxWidth)) {
    s.hidden_size = *hidden;
  } else if (embd != nullptr && embd->ne[0] <= kMaxWidth) {
    s.hidden_size = embd->ne[0];
    notes_.push_back(fmt::format("{} absent: width {} read from token_embd", key("embedding_length"), s.hidden_size));
  }
  if (s.hidden_size == 0) fail(fmt::format("metadata lacks {} (or it is 0)", key("embedding_length")));
}

/// Vocabulary: the arch key, else the tokenizer's length; the embedding rows win when they differ.
void SpecBuilder::read_vocabulary(ModelSpec& s) const {
  const TensorInfo* embd = tensor("token_embd.weight");
  std::optional<uint64_t> vocab = uint(key("vocab_size"), kMaxWidth);
  if (!vocab) {
    if (const Value* tokens = find("tokenizer.ggml.tokens"); tokens != nullptr && tokens->type == kArray) vocab = tokens->count;
  }
  if (embd != nullptr && embd->ne[1] > 0 && embd->ne[1] <= kMaxWidth && vocab.value_or(0) != embd->ne[1]) {
    if (vocab)
      notes_.push_back(fmt::format("the vocabulary lists {} tokens but token_embd has {} rows; the rows are used", *vocab, embd->ne[1]));
    vocab = embd->ne[1];
  }
  if (!vocab || *vocab == 0 || *vocab > kMaxWidth)
    fail("no vocabulary size: neither " + key("vocab_size") + ", tokenizer.ggml.tokens nor token_embd.weight");
  s.vocab_size = *vocab;
}

ModelSpec SpecBuilder::build() {
  const auto arch = string("general.architecture");
  if (!arch || arch->empty()) fail("metadata lacks general.architecture");
  arch_ = *arch;
  ModelSpec s;
  read_model_type(s);

  const std::string general_name = string("general.name").value_or("");
  s.name = !general_name.empty() ? general_name : fs::path(name_).stem().string();
  s.id = "gguf:" + s.name;

  read_depth(s);
  read_width(s);

  // Known-architecture quirks before the generic readers.
  if (known_arch_ && arch_ == "llama" && uint(key("expert_count"), kMaxExperts).value_or(0) > 0) s.model_type = "mixtral";

  read_attention(s);
  read_experts(s);
  read_vocabulary(s);

  s.max_position_embeddings = uint(key("context_length"), kMaxContext).value_or(0);
  if (s.max_position_embeddings == 0) notes_.push_back(fmt::format("{} absent: training context unknown", key("context_length")));
  if (auto theta = number(key("rope.freq_base")); theta && *theta > 0) s.rope_theta = *theta;

  read_sliding_window(s);
  read_linear_attention(s);
  read_mamba(s);
  read_short_conv(s);
  read_gemma3n(s);
  read_traits(s);
  s.notes.push_back(fmt::format("Read from the GGUF header of {} (architecture {}).", name_, arch_));
  return s;
}

/// Checks the spec the way presets are checked and applies the model_type
/// defaults where the tensor table could not tell.
ModelSpec validated(const ModelSpec& s, bool traits_from_tensors, const std::string& name) {
  nlohmann::json doc = to_json(s);
  if (!traits_from_tensors) {
    for (const char* k : {"tie_word_embeddings", "attention_bias", "qkv_bias", "mlp_bias", "router_bias", "router_score_correction_bias",
                          "qk_norm", "sandwich_norm", "attention_sinks"})
      doc.erase(k);
  }
  std::vector<Problem> problems;
  std::optional<ModelSpec> spec = model_from_json(doc, problems);
  if (!spec) {
    const Problem& p = problems.front();
    throw bad_input(
        fmt::format("{}: inconsistent model metadata: {}{}", name, p.pointer.empty() ? "" : p.pointer.substr(1) + ": ", p.message),
        kDamagedHint);
  }
  return *spec;
}

/// The fixed header: magic, version (2 or 3, little-endian) and the two counts, within their
/// limits and the bytes left.
void read_header(Reader& r, GgufModel& out) {
  const unsigned char* magic = r.take(4, "the magic number");
  if (std::memcmp(magic, "GGUF", 4) != 0) {
    std::string shown;
    for (int i = 0; i < 4; ++i)
      shown += (magic[i] >= 0x20 && magic[i] < 0x7f) ? std::string(1, static_cast<char>(magic[i])) : fmt::format("\\x{:02x}", magic[i]);
    r.fail(fmt::format("not a GGUF file: bad magic '{}' (expected 'GGUF')", shown), kNotGgufHint);
  }
  out.version = r.u32("the version");
  if (out.version == 1)
    r.fail("GGUF version 1 is not supported (it stores 32-bit counts)",
           "convert the model again with a current llama.cpp, which writes version 3");
  if (out.version != 2 && out.version != 3) {
    const uint32_t v = out.version;
    const uint32_t swapped = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
    if (swapped == 2 || swapped == 3)
      r.fail(fmt::format("big-endian GGUF (version {}) is not supported", swapped),
             "use the little-endian file that llama.cpp writes by default");
    r.fail(fmt::format("unsupported GGUF version {} (supported: 2 and 3)", out.version), kDamagedHint);
  }
  out.tensor_count = r.u64("the tensor count");
  out.metadata_count = r.u64("the metadata count");
  if (out.tensor_count > kMaxTensors) r.fail(fmt::format("tensor count {} exceeds the limit of {}", out.tensor_count, kMaxTensors));
  if (out.metadata_count > kMaxMetadataPairs)
    r.fail(fmt::format("metadata count {} exceeds the limit of {}", out.metadata_count, kMaxMetadataPairs));
  const uint64_t least_bytes = out.metadata_count * kMinPairBytes + out.tensor_count * kMinTensorInfoBytes;
  if (least_bytes > r.left())
    r.fail(fmt::format("truncated: {} metadata pairs and {} tensor infos need at least {} bytes but {} are left", out.metadata_count,
                       out.tensor_count, least_bytes, r.left()),
           kTruncatedHint);
}

/// The metadata key/value pairs; a key given twice is damage.
std::map<std::string, Value> read_metadata(Reader& r, uint64_t metadata_count) {
  std::map<std::string, Value> meta;
  for (uint64_t i = 0; i < metadata_count; ++i) {
    std::string key = r.string(fmt::format("metadata key {}", i));
    const uint32_t type = r.u32("the value type of '" + key + "'");
    Value v = read_value(r, key, type);
    if (!meta.emplace(key, std::move(v)).second) r.fail(fmt::format("duplicate metadata key '{}'", key));
  }
  return meta;
}

/// general.alignment (a power of two), or the default.
uint64_t alignment_of(const Reader& r, const std::map<std::string, Value>& meta) {
  uint64_t alignment = kDefaultAlignment;
  if (auto it = meta.find("general.alignment"); it != meta.end()) {
    const Value& v = it->second;
    const int64_t a = is_integer(v.type) && v.type != kBool ? to_int(v.type, v.bits) : 0;
    if (a <= 0 || (a & (a - 1)) != 0 || static_cast<uint64_t>(a) > kMaxHeaderBytes)
      r.fail("general.alignment must be a power of two", kDamagedHint);
    alignment = static_cast<uint64_t>(a);
  }
  return alignment;
}

/// Every tensor inside the file and (as ggml's gguf_init requires) following the one before it in
/// table order, each padded to the alignment.
void check_tensor_offsets(const Reader& r, const std::vector<TensorInfo>& tensors, uint64_t alignment, uint64_t data_bytes,
                          uint64_t file_bytes) {
  uint64_t expected_offset = 0;
  for (const TensorInfo& t : tensors) {
    if (t.offset % alignment != 0)
      r.fail(fmt::format("tensor '{}' has data offset {}, not a multiple of the alignment {}", t.name, t.offset, alignment));
    if (t.offset > data_bytes || t.bytes > data_bytes - t.offset)
      r.fail(fmt::format("truncated: tensor '{}' needs bytes {} to {} of the data section but it holds {} "
                         "(the file has {} bytes)",
                         t.name, t.offset, saturating_add(t.offset, t.bytes), data_bytes, file_bytes),
             kTruncatedHint);
    if (t.offset != expected_offset)
      r.fail(fmt::format("tensor '{}' has data offset {}, expected {}: tensors must be contiguous and not overlap", t.name, t.offset,
                         expected_offset),
             kDamagedHint);
    // t.offset + t.bytes <= data_bytes (checked above), so the padded end cannot wrap.
    expected_offset = (t.offset + t.bytes + alignment - 1) / alignment * alignment;
  }
}

/// File type -> quant id (a note where the file type names none).
void quant_id_from_file_type(const std::map<std::string, Value>& meta, const QuantDb& db, GgufModel& out) {
  if (auto it = meta.find("general.file_type"); it != meta.end() && is_integer(it->second.type)) {
    const int64_t raw = to_int(it->second.type, it->second.bits);
    const uint64_t ftype = raw < 0 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(raw) & ~uint64_t{1024};
    if (auto ftype_name = llama_ftype_name(ftype)) {
      const std::string llama_name = "LLAMA_FTYPE_" + std::string(*ftype_name);
      for (const QuantFormat& f : db.formats())
        if (f.llama_ftype == llama_name) out.quant_id = f.id;
      if (out.quant_id.empty())
        out.notes.push_back(
            fmt::format("file type {} (general.file_type {}) has no quant id here; the tensor table "
                        "gives the exact bytes",
                        llama_name, raw));
    } else {
      out.notes.push_back(fmt::format("general.file_type {} is not a llama.cpp file type", raw));
    }
  } else {
    out.notes.push_back("general.file_type absent: the quant type is unknown; the tensor table gives the exact bytes");
  }
}

GgufModel parse(ByteSource& source, const std::string& name, const QuantDb& db) {
  Reader r(source, name);
  if (source.total() == 0) r.fail("empty file, not a GGUF model", kNotGgufHint);

  GgufModel out;
  read_header(r, out);

  const std::map<std::string, Value> meta = read_metadata(r, out.metadata_count);
  const uint64_t alignment = alignment_of(r, meta);

  r.set_limit(kMaxHeaderBytes, "header (metadata and tensor table)");
  std::vector<TensorInfo> tensors;
  std::set<std::string_view> seen;
  for (uint64_t i = 0; i < out.tensor_count; ++i) {
    tensors.push_back(read_tensor_info(r, i, db));
  }
  for (const TensorInfo& t : tensors)
    if (!seen.insert(t.name).second) r.fail(fmt::format("duplicate tensor '{}'", t.name));

  // The data section starts at the next multiple of the alignment; every
  // tensor must lie inside the file, and (as ggml's gguf_init requires) the
  // tensors follow one another in table order, each padded to the alignment.
  const uint64_t data_offset = (r.pos() + alignment - 1) / alignment * alignment;
  const uint64_t file_bytes = source.total();
  const uint64_t data_bytes = file_bytes > data_offset ? file_bytes - data_offset : 0;
  check_tensor_offsets(r, tensors, alignment, data_bytes, file_bytes);

  quant_id_from_file_type(meta, db, out);

  SpecBuilder builder(meta, tensors, name, out.notes);
  const ModelSpec raw = builder.build();
  const bool traits_from_tensors = std::any_of(tensors.begin(), tensors.end(), [](const TensorInfo& t) { return t.layer >= 0; });
  if (!traits_from_tensors) out.notes.push_back("no block tensors in the file: biases and norms follow the architecture's defaults");
  out.spec = validated(raw, traits_from_tensors, name);
  out.weights = weights_from_table(tensors, db, out.quant_id.empty() ? "gguf" : out.quant_id, data_offset, file_bytes);
  return out;
}

}  // namespace

GgufModel parse_gguf_model(std::string_view bytes, const std::string& name, const QuantDb& db) {
  ByteSource source(bytes);
  return parse(source, name, db);
}

GgufModel read_gguf_model(const std::string& path, const QuantDb& db) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw bad_input(fmt::format("{}: no such file", path), "check the path to the .gguf file");
  if (fs::is_directory(status)) throw bad_input(fmt::format("{}: is a directory, not a GGUF file", path), "pass the .gguf file itself");
  if (!fs::is_regular_file(status))  // a FIFO or device: opening could block, reading never end
    throw bad_input(fmt::format("{}: is not a regular file", path), "pass the .gguf file itself");
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw bad_input(fmt::format("{}: cannot read the file size ({})", path, ec.message()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input(fmt::format("{}: cannot open the file", path), "check the file's permissions");
  ByteSource source(in, size);
  return parse(source, path, db);
}

}  // namespace optadvisor
