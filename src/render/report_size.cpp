// SPDX-License-Identifier: MIT
#include <fmt/format.h>

#include "optadvisor/render/report_size.hpp"
#include "base/table.hpp"
#include "base/units.hpp"

namespace optadvisor {
namespace {

std::string with_commas(uint64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string param_text(uint64_t params) {
  const double p = static_cast<double>(params);
  if (p >= 1e9) return fmt::format("{} ({} B)", with_commas(params), format_sig3(p / 1e9));
  return fmt::format("{} ({} M)", with_commas(params), format_sig3(p / 1e6));
}

nlohmann::json row_json(const SizeRow& row, bool verbose) {
  const auto& w = row.weights;
  nlohmann::json j = {{"quant", {{"id", row.format->id}, {"name", row.format->name}}},
                      {"weights_bytes", w.weights_bytes},
                      {"bits_per_weight", w.bits_per_weight},
                      {"file_bytes", w.file_bytes},
                      {"file_overhead_modeled", w.file_overhead_modeled}};
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : w.groups)
    groups.push_back({{"group", g.group}, {"tensors", g.tensors}, {"elements", g.elements}, {"bytes", g.bytes}});
  j["groups"] = groups;
  if (verbose) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& t : w.tensors)
      tensors.push_back({{"name", t.name}, {"storage", t.storage}, {"elements", t.elements}, {"bytes", t.bytes}});
    j["tensors"] = tensors;
  }
  if (!w.notes.empty()) j["notes"] = w.notes;
  if (row.kv) {
    j["kv_cache_bytes"] = row.kv->bytes;
    if (row.kv->state_bytes > 0) j["kv_state_bytes"] = row.kv->state_bytes;
    j["kv_bytes_per_token"] = row.kv->bytes_per_token_full;
    j["total_bytes"] = row.total_bytes;
  }
  return j;
}

}  // namespace

nlohmann::json size_json(const SizeResult& r, bool verbose) {
  nlohmann::json model = {{"id", r.model.spec.id},
                          {"name", r.model.spec.name},
                          {"source", r.model.origin},
                          {"params", r.params},
                          {"active_params", r.active_params}};
  nlohmann::json out = {{"schema_version", kSchemaVersion}, {"model", model}, {"params", r.params}};
  if (r.kv_request.context_tokens) {
    out["context"] = r.kv_request.context_tokens;
    out["batch"] = r.kv_request.batch;
    out["kv_dtype"] = r.kv_request.kv_dtype;
  }
  if (!r.model.assumptions.empty()) out["assumptions"] = r.model.assumptions;
  if (r.rows.size() == 1) {
    // One format: its figures sit at the top level.
    const nlohmann::json row = row_json(r.rows.front(), verbose);
    for (const auto& [k, v] : row.items()) out[k] = v;
  } else {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : r.rows) rows.push_back(row_json(row, false));
    out["formats"] = rows;
  }
  return out;
}

namespace {

/// The model's name, how it was resolved, its parameter counts, native format and assumptions.
std::string size_header(const SizeResult& r, bool md, const Style& style) {
  std::string out;
  const auto& spec = r.model.spec;
  out += md ? fmt::format("# {} (`{}`)\n\n", spec.name, spec.id) : style.bold(fmt::format("{} ({})", spec.name, spec.id)) + "\n";
  if (r.model.how && r.model.how->via != "id")
    out += fmt::format("'{}' resolved to {} ({})\n", r.model.how->query, spec.id, r.model.how->via);
  out += fmt::format("parameters: {}", param_text(r.params));
  if (r.active_params != r.params) out += fmt::format(", {} active per token", param_text(r.active_params));
  out += "\n";
  if (!spec.native_format.empty() && !r.model.gguf_weights)
    out += fmt::format("native checkpoint format: {} (the default weight format on engines that run it)\n", spec.native_format);
  for (const auto& a : r.model.assumptions) out += "assumption: " + a + "\n";
  return out;
}

/// Every format in one table, with the KV cache and total columns when a context was given.
std::string formats_table(const SizeResult& r, bool md) {
  const bool with_kv = r.kv_request.context_tokens > 0;
  using A = Table::Align;
  std::vector<std::string> header = {"QUANT", "BITS/WEIGHT", "WEIGHTS GB", "WEIGHTS GiB", "FILE GB"};
  if (with_kv) header.insert(header.end(), {"KV GB", "TOTAL GB", "TOTAL GiB"});
  std::vector<A> align(header.size(), A::kRight);
  align[0] = A::kLeft;
  Table table(header, align);
  for (const auto& row : r.rows) {
    std::vector<std::string> cells = {row.format->id, fmt::format("{:.2f}", row.weights.bits_per_weight),
                                      fmt::format("{:.2f}", static_cast<double>(row.weights.weights_bytes) / kBytesPerGB),
                                      fmt::format("{:.2f}", static_cast<double>(row.weights.weights_bytes) / kBytesPerGiB),
                                      fmt::format("{:.2f}", static_cast<double>(row.weights.file_bytes) / kBytesPerGB)};
    if (with_kv && row.kv)
      cells.insert(cells.end(), {fmt::format("{:.2f}", row.kv->bytes / kBytesPerGB), fmt::format("{:.2f}", row.total_bytes / kBytesPerGB),
                                 fmt::format("{:.2f}", row.total_bytes / kBytesPerGiB)});
    table.add_row(cells);
  }
  return "\n" + (md ? table.to_markdown() : table.to_text());
}

/// The tensor groups of one format: tensors, parameters, bytes and bits per weight each.
std::string groups_table(const WeightsBreakdown& w, bool md) {
  using A = Table::Align;
  Table table({"GROUP", "TENSORS", "PARAMS", "BYTES", "GB", "BITS/WEIGHT"},
              {A::kLeft, A::kRight, A::kRight, A::kRight, A::kRight, A::kRight});
  for (const auto& g : w.groups)
    table.add_row({g.group, std::to_string(g.tensors), with_commas(g.elements), with_commas(g.bytes),
                   fmt::format("{:.3f}", static_cast<double>(g.bytes) / kBytesPerGB),
                   fmt::format("{:.3f}", g.elements ? 8.0 * static_cast<double>(g.bytes) / static_cast<double>(g.elements) : 0.0)});
  return "\n" + (md ? table.to_markdown() : table.to_text());
}

/// Storage types actually used, tensor counts and bytes: the mix at a glance.
std::string storage_table(const WeightsBreakdown& w) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_storage;
  for (const auto& t : w.tensors) {
    auto& [count, bytes] = by_storage[t.storage];
    ++count;
    bytes += t.bytes;
  }
  using A = Table::Align;
  Table table({"STORAGE", "TENSORS", "BYTES"}, {A::kLeft, A::kRight, A::kRight});
  for (const auto& [storage, cb] : by_storage) table.add_row({storage, std::to_string(cb.first), with_commas(cb.second)});
  return "\n" + table.to_text();
}

/// The KV cache for the requested context and batch, its recurrent state and sparse reads, and the total.
std::string kv_text(const SizeResult& r, const SizeRow& row) {
  const auto& kv = *row.kv;
  std::string out =
      fmt::format("\nKV cache: {} for {} x {} tokens at {} ({} per token, all layers{})\n", format_bytes(kv.bytes), r.kv_request.batch,
                  with_commas(r.kv_request.context_tokens), r.kv_request.kv_dtype, format_bytes(kv.bytes_per_token_full),
                  kv.shape.sliding_layers ? fmt::format("; {} of {} layers keep only a {}-token window", kv.shape.sliding_layers,
                                                        kv.shape.sliding_layers + kv.shape.full_layers, kv.shape.window_tokens)
                                          : std::string());
  if (const uint64_t shared = kv.shape.shared_full_layers + kv.shape.shared_sliding_layers; shared > 0)
    out += fmt::format("  ({} more layers cache nothing: they attend to the caches of the last layers of their kind before them)\n", shared);
  if (kv.shape.linear_layers > 0)
    out += fmt::format(
        "  of which {} is the fixed state of the {} recurrent layers (linear attention, Mamba-2 or short convolution; {} per "
        "sequence, any context)\n",
        format_bytes(kv.state_bytes), kv.shape.linear_layers, format_bytes(kv.state_bytes_per_sequence));
  if (kv.shape.sparse_topk > 0)
    out += fmt::format("  (sparse attention: each token reads the indexer keys of the whole context but only {} selected entries)\n",
                       with_commas(kv.shape.sparse_topk));
  if (kv.shape.compressed_layers > 0)
    out += fmt::format("  (compressed attention: {} layers also keep {} pooled elements per token of context, beside the window)\n",
                       kv.shape.compressed_layers, with_commas(kv.shape.compressed_elements_per_token));
  out += fmt::format("total: {}\n", format_bytes(row.total_bytes));
  return out;
}

/// One format in detail: weights, the file on disk, its groups and storage mix, notes and the KV cache.
std::string one_format_text(const SizeResult& r, bool md, bool verbose) {
  std::string out;
  const auto& row = r.rows.front();
  const auto& w = row.weights;
  out += fmt::format("format: {} ({})\n", row.format->id, row.format->name);
  out += fmt::format("weights: {}, {:.3f} bits per weight\n", format_bytes(static_cast<double>(w.weights_bytes)), w.bits_per_weight);
  const bool from_file = r.model.gguf_weights && r.model.gguf_weights->format_id == w.format_id;
  if (from_file)
    out += fmt::format("file on disk: {} (read from the file: {} of header and metadata before the tensor data)\n",
                       format_bytes(static_cast<double>(w.file_bytes)), format_bytes(static_cast<double>(w.header_bytes)));
  else if (w.file_overhead_modeled)
    out += fmt::format("file on disk: {} (tensor data + {} of headers and metadata, estimated)\n",
                       format_bytes(static_cast<double>(w.file_bytes)), format_bytes(static_cast<double>(w.header_bytes)));
  if (verbose || md) out += groups_table(w, md);
  if (verbose) out += storage_table(w);
  for (const auto& n : w.notes) out += "note: " + n + "\n";
  if (row.kv) out += kv_text(r, row);
  return out;
}

}  // namespace

std::string render_size(const SizeResult& r, OutputFormat format, bool verbose, const Style& style) {
  if (format == OutputFormat::kJson) return size_json(r, verbose).dump(2) + "\n";
  const bool md = format == OutputFormat::kMarkdown;
  std::string out = size_header(r, md, style);
  out += r.rows.size() > 1 ? formats_table(r, md) : one_format_text(r, md, verbose);
  out += "\nGB = 10^9 bytes, GiB = 2^30 bytes.\n";
  return out;
}

}  // namespace optadvisor
