// SPDX-License-Identifier: MIT
// `optadvisor size`: how big is a model in a format, and with its KV cache.
#include <algorithm>

#include <fmt/format.h>

#include "common.hpp"
#include "optadvisor/render/report_size.hpp"

namespace optadvisor::cli {

void register_size(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    ModelRequest model;
    std::string quant;
    int64_t context = 0;
    int64_t batch = 1;
    std::string kv_dtype = "f16";
    bool verbose = false;
    FormatOption format;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("size", "Exact weight and KV-cache bytes of a model in a quantization format");
  add_model_options(cmd, o->model);
  cmd->add_option("--quant,-q", o->quant, "Format id (q4_k_m, awq-int4, fp8, mlx-4bit, ...) or 'all'");
  cmd->add_option("--context", o->context, "Tokens of context per sequence for the KV cache");
  cmd->add_option("--batch", o->batch, "Sequences sharing the KV cache")->capture_default_str();
  cmd->add_option("--kv-dtype", o->kv_dtype, "KV-cache element type: f16, bf16, fp8, q8_0, q4_0")->capture_default_str();
  cmd->add_flag("--verbose", o->verbose, "Per-group and per-storage-type breakdown");
  o->format.attach(cmd);
  cmd->callback([o, &global] {
    const Catalog& catalog = load_catalog(global);
    SizeResult r;
    r.model = resolve_model(catalog, o->model);
    if (o->context < 0) throw bad_input(fmt::format("--context must be zero or more (got {})", o->context));
    if (o->batch < 1) throw bad_input(fmt::format("--batch must be at least 1 (got {})", o->batch));
    if (o->context > (int64_t{1} << 24)) throw bad_input("--context above 16,777,216 tokens is beyond any model");
    if (o->batch > (int64_t{1} << 20)) throw bad_input("--batch above 1,048,576 is beyond any device");
    r.kv_request.context_tokens = static_cast<uint64_t>(o->context);
    r.kv_request.batch = static_cast<uint64_t>(o->batch);
    r.kv_request.kv_dtype = o->kv_dtype;
    r.kv_request.bytes_per_element = catalog.quant().kv_bytes_per_element(o->kv_dtype);
    r.params = parameter_count(r.model.spec);
    r.active_params = active_parameter_count(r.model.spec);
    std::string quant = o->quant;
    if (quant.empty()) {
      // A GGUF file's own type, else the checkpoint's native format (gpt-oss: mxfp4).
      quant = r.model.gguf_quant_id.empty() ? r.model.spec.native_format : r.model.gguf_quant_id;
      if (quant.empty()) throw bad_input("no format given", "pass --quant ID (e.g. q4_k_m, awq-int4, fp8) or --quant all");
    }
    std::vector<const QuantFormat*> formats;
    if (quant == "all") {
      for (const auto& f : catalog.quant().formats()) formats.push_back(&f);
    } else {
      formats.push_back(&catalog.quant().resolve(quant));
    }
    for (const auto* f : formats) {
      SizeRow row;
      row.format = f;
      row.weights = model_weights(catalog, r.model, *f);
      row.total_bytes = static_cast<double>(row.weights.weights_bytes);
      if (r.kv_request.context_tokens) {
        row.kv = kv_figures(r.model.spec, r.kv_request);
        row.total_bytes += row.kv->bytes;
      }
      r.rows.push_back(std::move(row));
    }
    if (r.model.gguf_weights) r.params = r.model.gguf_weights->params;
    std::stable_sort(r.rows.begin(), r.rows.end(), [](const SizeRow& a, const SizeRow& b) {
      return a.weights.weights_bytes < b.weights.weights_bytes;
    });
    fmt::print("{}", render_size(r, o->format.get(), o->verbose, stdout_style(global)));
  });
}

}  // namespace optadvisor::cli
